import fs from 'node:fs';
import type net from 'node:net';
import type { Database } from '../../db/database';
import type { Clock } from '../../core/clock';
import type { EventBus } from '../../core/event-bus';
import { SecretBox, deriveKey } from '../../core/crypto';
import type { Logger } from '../../logger';
import { ConfigError, type Config } from '../../config';
import type { EventService } from '../events/event.service';
import type { ResolveHost } from '../../core/network/address-policy';
import { createRetrySchedule } from '../../core/backoff';
import { DEFAULT_DELIVERY_TIMEOUT_MS } from './http-delivery';
import { WebhookEndpointService } from './endpoint.service';
import { WebhookDeliveryService } from './delivery.service';
import { DeliveryLoop } from './delivery-loop';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import type { Metrics } from '../../observability/metrics';

export { WebhookEndpointService, type WebhookEndpoint } from './endpoint.service';
export { WebhookDeliveryService, type DeliveryResult } from './delivery.service';
export type { WebhookAttempt, ClaimedDelivery } from './webhook.store';
export { DeliveryLoop } from './delivery-loop';

export interface WebhookOptions {
  /** Overrides of the retry schedule (tests shorten it). */
  retry?: { baseMs?: number; maxMs?: number; windowMs?: number };
  /** How often the worker looks for due deliveries besides being woken by events; default 200 ms. */
  pollMs?: number;
  /** Per delivery attempt; default 10 s. */
  timeoutMs?: number;
  /** How long a claimed delivery stays leased to its worker (renewed while it is sent); default timeoutMs + 30 s. */
  leaseMs?: number;
  /** How long a receiver must keep answering 410 before its endpoint is disabled; default 24 h. */
  goneWindowMs?: number;
  /** Deliveries in flight per instance (DEFAULT_CONCURRENCY) and per endpoint (DEFAULT_PER_ENDPOINT_CONCURRENCY). */
  concurrency?: number;
  perEndpointConcurrency?: number;
  /** Replace DNS for registration checks and for connections (tests); the address policy still applies. */
  resolveHost?: ResolveHost;
  lookup?: net.LookupFunction;
  /** Where `webhook-timestamp` is read (default: the system clock; tests shift it). */
  signingClock?: Clock;
}

export interface WebhookServices {
  endpoints: WebhookEndpointService;
  deliveries: WebhookDeliveryService;
  /** Starts this instance's delivery loop (the worker); stop() waits for deliveries in flight. */
  startDeliveryLoop(): DeliveryLoop;
}

export const DEFAULT_POLL_MS = 200;
export const DEFAULT_CONCURRENCY = 64;
// One slow receiver can hold at most a quarter of the slots; the rest serve everyone else.
export const DEFAULT_PER_ENDPOINT_CONCURRENCY = 16;
const LEASE_MARGIN_MS = 30_000;
export const DEFAULT_GONE_WINDOW_MS = 24 * 60 * 60 * 1000;

/** Builds the webhook services and plugs the outbox into event recording. */
export function createWebhookServices(deps: {
  db: Database;
  events: EventService;
  bus: EventBus;
  clock: Clock;
  logger: Logger;
  config: Config;
  /** The service's master key (secrets are sealed under a sub-key derived from it). */
  encryptionKey: Buffer;
  options?: WebhookOptions;
  idempotency: IdempotencyService;
  metrics?: Metrics;
}): WebhookServices {
  const { db, events, bus, clock, logger, config } = deps;
  const options = deps.options ?? {};
  const env = config.webhooks;

  const retry = createRetrySchedule({
    baseMs: options.retry?.baseMs ?? env.retryBaseMs,
    maxMs: options.retry?.maxMs ?? env.retryMaxMs,
    windowMs: options.retry?.windowMs ?? env.retryWindowMs,
  });
  const timeoutMs = options.timeoutMs ?? env.timeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS;
  const leaseMs = options.leaseMs ?? env.leaseMs ?? timeoutMs + LEASE_MARGIN_MS;
  if (leaseMs <= timeoutMs) throw new ConfigError('Invalid configuration: WEBHOOK_LEASE_MS must be longer than the delivery timeout');
  const goneWindowMs = options.goneWindowMs ?? env.goneWindowMs ?? DEFAULT_GONE_WINDOW_MS;
  const pollMs = options.pollMs ?? env.pollMs ?? DEFAULT_POLL_MS;
  const concurrency = options.concurrency ?? env.concurrency ?? DEFAULT_CONCURRENCY;
  const perEndpointConcurrency = Math.min(options.perEndpointConcurrency ?? env.endpointConcurrency ?? DEFAULT_PER_ENDPOINT_CONCURRENCY, concurrency);

  let ca: string | undefined;
  if (config.webhookCaFile) {
    try {
      ca = fs.readFileSync(config.webhookCaFile, 'utf8');
    } catch (err) {
      throw new ConfigError(`Invalid configuration: WEBHOOK_CA_FILE cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }

  // Webhook secrets must be readable to sign, so they are sealed (not hashed) under their own sub-key.
  const box = new SecretBox(deriveKey(deps.encryptionKey, 'webhook-secrets'));

  const endpoints = new WebhookEndpointService(db, box, { allowPrivate: config.webhookAllowPrivate, resolveHost: options.resolveHost }, deps.idempotency);
  const deliveries = new WebhookDeliveryService(db, endpoints, clock, logger, {
    retry,
    timeoutMs,
    leaseMs,
    goneWindowMs,
    allowPrivate: config.webhookAllowPrivate,
    ca,
    lookup: options.lookup,
    concurrency,
    perEndpointConcurrency,
    signingClock: options.signingClock,
    metrics: deps.metrics,
  }, deps.idempotency);

  // The durable outbox: deliveries are written in the same transaction as the event.
  events.onWrite({
    inTransaction: (event, ctx, t) => deliveries.enqueue(event, ctx, t).then(() => undefined),
    batchStatementPart: (events, p, eventCte) => deliveries.batchPart(events, p, eventCte),
  });

  return {
    endpoints,
    deliveries,
    startDeliveryLoop: () =>
      new DeliveryLoop(deliveries, bus, logger, { pollMs, concurrency, perEndpointConcurrency, renewLeasesMs: Math.max(Math.floor(leaseMs / 3), 1) }),
  };
}
