import type { Database } from '../../db/database';
import type { Clock } from '../../core/clock';
import type { EventBus } from '../../core/event-bus';
import type { Logger } from '../../logger';
import type { Config } from '../../config';
import type { EventService } from '../events/event.service';

export interface WebhookOptions {
  /** Overrides of the retry schedule (tests shorten it). */
  retry?: { baseMs?: number; maxMs?: number; windowMs?: number };
  pollMs?: number;
  timeoutMs?: number;
}

export interface WebhookServices {
  endpoints: unknown;
  deliveries: unknown;
}

/** Builds the webhook services and plugs the outbox into event recording. */
export function createWebhookServices(deps: {
  db: Database;
  events: EventService;
  bus: EventBus;
  clock: Clock;
  logger: Logger;
  config: Config;
  options?: WebhookOptions;
}): WebhookServices {
  void deps;
  return { endpoints: undefined, deliveries: undefined };
}
