import type { Services } from '../src/services';

export interface WebhookWorker {
  stop(): Promise<void>;
}

/** The webhook delivery loop of one instance. */
export function startWebhookWorker(services: Services): WebhookWorker {
  void services;
  return { async stop() {} };
}
