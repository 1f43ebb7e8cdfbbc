import type { EventBus } from '../../core/event-bus';
import { LeasedOutboxLoop } from '../../core/leased-outbox-loop';
import type { Logger } from '../../logger';
import { closeDeliveryAgents } from './http-delivery';
import type { WebhookDeliveryService } from './delivery.service';
import type { ClaimedDelivery } from './webhook.store';

export interface DeliveryLoopOptions {
  pollMs: number;
  /** Deliveries in flight in this process. */
  concurrency: number;
  /** Requests open per endpoint, so one slow receiver cannot hold every slot (an answered delivery whose outcome is being written no longer counts). */
  perEndpointConcurrency: number;
  /** How often the leases of deliveries in flight are extended; none when absent. */
  renewLeasesMs?: number;
}

/**
 * The delivery loop of one instance: the leased-outbox loop over webhook deliveries, grouped by
 * endpoint. It claims whenever there is a free slot — every `pollMs`, when a committed event is
 * published (this or another instance), when a resend is queued, and when a delivery finishes
 * while more were waiting — and sends without ever blocking request handling.
 */
export class DeliveryLoop extends LeasedOutboxLoop<ClaimedDelivery> {
  constructor(service: WebhookDeliveryService, bus: EventBus, logger: Logger, options: DeliveryLoopOptions) {
    super(
      {
        claim: (limit, inFlight) => service.claim(limit, inFlight),
        process: (c, sent) => service.deliver(c, sent),
        renewLeases: (tokens) => service.renewLeases(tokens),
      },
      logger,
      {
        pollMs: options.pollMs,
        concurrency: options.concurrency,
        renewLeasesMs: options.renewLeasesMs,
        group: { of: (c) => c.endpointId, concurrency: options.perEndpointConcurrency },
        wakeSources: [(wake) => bus.subscribe(wake), (wake) => service.onWake(wake)],
        messages: {
          claimFailed: 'webhook claim failed',
          renewFailed: 'webhook lease renewal failed',
          settleFailed: 'webhook delivery failed to settle; it is retried when its lease ends',
        },
        describe: (c) => ({ deliveryId: c.id }),
        // Pooled connections to receivers go once the deliveries in flight are done.
        onStopped: closeDeliveryAgents,
      },
    );
  }
}
