import fs from 'node:fs';
import type net from 'node:net';
import type { Database } from '../../db/database';
import type { Clock } from '../../core/clock';
import type { EventBus } from '../../core/event-bus';
import { SecretBox, deriveKey, loadEncryptionKey } from '../../core/crypto';
import type { Logger } from '../../logger';
import { ConfigError, type Config } from '../../config';
import type { EventService } from '../events/event.service';
import type { ResolveHost } from '../../webhooks/address-policy';
import { createRetrySchedule } from '../../webhooks/backoff';
import { DEFAULT_DELIVERY_TIMEOUT_MS } from '../../webhooks/http-delivery';
import { WebhookEndpointService } from './endpoint.service';
import { WebhookDeliveryService } from './delivery.service';
import { DeliveryLoop } from './delivery-loop';
import type { IdempotencyService } from '../idempotency/idempotency.service';

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

/** Optional tuning from the environment (operators, and spawned test instances). */
function envMs(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new ConfigError(`Invalid configuration: ${name} must be a positive number of milliseconds`);
  return value;
}

function envInt(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const value = envMs(env, name);
  if (value !== undefined && !Number.isInteger(value)) throw new ConfigError(`Invalid configuration: ${name} must be a positive integer`);
  return value;
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
  idempotency: IdempotencyService;
}): WebhookServices {
  const { db, events, bus, clock, logger, config } = deps;
  const options = deps.options ?? {};
  const env = process.env;

  const retry = createRetrySchedule({
    baseMs: options.retry?.baseMs ?? envMs(env, 'WEBHOOK_RETRY_BASE_MS'),
    maxMs: options.retry?.maxMs ?? envMs(env, 'WEBHOOK_RETRY_MAX_MS'),
    windowMs: options.retry?.windowMs ?? envMs(env, 'WEBHOOK_RETRY_WINDOW_MS'),
  });
  const timeoutMs = options.timeoutMs ?? envMs(env, 'WEBHOOK_TIMEOUT_MS') ?? DEFAULT_DELIVERY_TIMEOUT_MS;
  const leaseMs = options.leaseMs ?? envMs(env, 'WEBHOOK_LEASE_MS') ?? timeoutMs + LEASE_MARGIN_MS;
  if (leaseMs <= timeoutMs) throw new ConfigError('Invalid configuration: WEBHOOK_LEASE_MS must be longer than the delivery timeout');
  const goneWindowMs = options.goneWindowMs ?? envMs(env, 'WEBHOOK_GONE_WINDOW_MS') ?? DEFAULT_GONE_WINDOW_MS;
  const pollMs = options.pollMs ?? envMs(env, 'WEBHOOK_POLL_MS') ?? DEFAULT_POLL_MS;
  const concurrency = options.concurrency ?? envInt(env, 'WEBHOOK_CONCURRENCY') ?? DEFAULT_CONCURRENCY;
  const perEndpointConcurrency = Math.min(
    options.perEndpointConcurrency ?? envInt(env, 'WEBHOOK_ENDPOINT_CONCURRENCY') ?? DEFAULT_PER_ENDPOINT_CONCURRENCY,
    concurrency,
  );

  let ca: string | undefined;
  if (config.webhookCaFile) {
    try {
      ca = fs.readFileSync(config.webhookCaFile, 'utf8');
    } catch (err) {
      throw new ConfigError(`Invalid configuration: WEBHOOK_CA_FILE cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }

  // Webhook secrets must be readable to sign, so they are sealed (not hashed) under their own sub-key.
  const masterKey = loadEncryptionKey({ encryptionKey: config.encryptionKey, dataDir: config.dataDir });
  const box = new SecretBox(deriveKey(masterKey, 'webhook-secrets'));

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
