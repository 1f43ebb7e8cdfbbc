import type { Services } from '../src/services';

export interface WebhookWorker {
  stop(): Promise<void>;
}

/**
 * The webhook delivery loop of one instance (logic in WebhookDeliveryService / DeliveryLoop).
 * Several instances may run it against one PostgreSQL: claims are leased with SKIP LOCKED.
 */
export function startWebhookWorker(services: Services): WebhookWorker {
  const loop = services.webhooks.startDeliveryLoop();
  return { stop: () => loop.stop() };
}
