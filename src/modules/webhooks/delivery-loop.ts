import type { EventBus } from '../../core/event-bus';
import { errorForLog, type Logger } from '../../logger';
import { closeDeliveryAgents } from './http-delivery';
import type { WebhookDeliveryService } from './delivery.service';
import type { ClaimedDelivery } from './webhook.store';

const MAX_ERROR_BACKOFF_MS = 10_000;

export interface DeliveryLoopOptions {
  pollMs: number;
  /** Deliveries in flight in this process. */
  concurrency: number;
  /** Deliveries in flight per endpoint, so one slow receiver cannot hold every slot. */
  perEndpointConcurrency: number;
  /** How often the leases of deliveries in flight are extended; none when absent. */
  renewLeasesMs?: number;
}

/**
 * The delivery loop of one instance: claims due deliveries whenever there is a free slot —
 * every `pollMs`, when a committed event is published (this or another instance), when a
 * resend is queued, and when a delivery finishes while more were waiting — and sends them
 * without ever blocking request handling.
 */
export class DeliveryLoop {
  private readonly perEndpoint = new Map<string, number>();
  /** Claim tokens of deliveries in flight, with how many each still has. */
  private readonly leases = new Map<string, number>();
  private renewTimer?: NodeJS.Timeout;
  private readonly tasks = new Set<Promise<void>>();
  private active = 0;
  private timer?: NodeJS.Timeout;
  private ticking?: Promise<void>;
  private again = false;
  private backlog = false;
  private stopped = false;
  private stopping?: Promise<void>;
  /** Consecutive failed claim rounds (database unreachable…): polling slows down meanwhile. */
  private failures = 0;
  private readonly unsubscribe: Array<() => void>;

  constructor(
    private readonly service: WebhookDeliveryService,
    bus: EventBus,
    private readonly logger: Logger,
    private readonly options: DeliveryLoopOptions,
  ) {
    this.unsubscribe = [bus.subscribe(() => this.wake()), service.onWake(() => this.wake())];
    if (options.renewLeasesMs) {
      this.renewTimer = setInterval(() => this.renewLeases(), options.renewLeasesMs);
      this.renewTimer.unref();
    }
    this.wake();
  }

  /** A delivery's settle can outlast its lease (a slow database, a long receiver): keep the lease while it is ours. */
  private renewLeases(): void {
    if (this.leases.size === 0) return;
    this.service.renewLeases([...this.leases.keys()]).catch((err) => {
      this.logger.warn({ err: errorForLog(err) }, 'webhook lease renewal failed');
    });
  }

  /** Runs a claim round now, or right after the one in progress. */
  wake(): void {
    if (this.stopped || this.failures > 0) return; // while failing, only the (slower) timer retries
    this.run();
  }

  private run(): void {
    if (this.stopped) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.ticking = this.tick().finally(() => {
      this.ticking = undefined;
      if (this.stopped) return;
      if (this.again && this.failures === 0) {
        this.again = false;
        this.run();
      } else {
        this.again = false;
        const delay = this.failures === 0 ? this.options.pollMs : Math.min(this.options.pollMs * 2 ** this.failures, MAX_ERROR_BACKOFF_MS);
        this.timer = setTimeout(() => this.run(), delay);
        this.timer.unref();
      }
    });
  }

  /** Stops claiming, waits for the deliveries in flight, then drops pooled connections. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.stopped = true;
      if (this.timer) clearTimeout(this.timer);
      for (const off of this.unsubscribe) off();
      // Renewal goes on while the deliveries in flight finish.
      await this.ticking;
      await Promise.allSettled([...this.tasks]);
      if (this.renewTimer) clearInterval(this.renewTimer);
      closeDeliveryAgents();
    })();
    return this.stopping;
  }

  get inFlight(): number {
    return this.active;
  }

  private async tick(): Promise<void> {
    do {
      this.again = false;
      const free = this.options.concurrency - this.active;
      if (free <= 0) {
        this.backlog = true;
        return;
      }
      const saturated = [...this.perEndpoint.values()].some((n) => n >= this.options.perEndpointConcurrency);
      let claimed: ClaimedDelivery[];
      try {
        // What this instance already sends per endpoint counts against that endpoint's turn.
        claimed = await this.service.claim(free, this.perEndpoint);
      } catch (err) {
        this.failures += 1;
        if (!this.stopped && (this.failures === 1 || this.failures % 10 === 0)) {
          this.logger.error({ err: errorForLog(err), failures: this.failures }, 'webhook claim failed');
        }
        return;
      }
      this.failures = 0;
      // Anything claimed, or endpoints left out for being busy, means more may be due after a delivery.
      this.backlog = claimed.length > 0 || saturated;
      for (const c of claimed) this.launch(c);
    } while (this.again && !this.stopped);
  }

  private launch(c: ClaimedDelivery): void {
    this.active += 1;
    this.perEndpoint.set(c.endpointId, (this.perEndpoint.get(c.endpointId) ?? 0) + 1);
    this.leases.set(c.lockToken, (this.leases.get(c.lockToken) ?? 0) + 1);
    const task: Promise<void> = this.service
      .deliver(c)
      .then(
        () => undefined,
        (err) => this.logger.error({ deliveryId: c.id, err: errorForLog(err) }, 'webhook delivery failed to settle; it is retried when its lease ends'),
      )
      .finally(() => {
        this.active -= 1;
        const left = (this.perEndpoint.get(c.endpointId) ?? 1) - 1;
        if (left > 0) this.perEndpoint.set(c.endpointId, left);
        else this.perEndpoint.delete(c.endpointId);
        const sharing = (this.leases.get(c.lockToken) ?? 1) - 1;
        if (sharing > 0) this.leases.set(c.lockToken, sharing);
        else this.leases.delete(c.lockToken);
        this.tasks.delete(task);
        if (this.backlog) this.wake();
      });
    this.tasks.add(task);
  }
}
