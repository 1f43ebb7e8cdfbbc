import type net from 'node:net';
import type { Transaction } from 'sequelize';
import { isStatementRefused, type Database } from '../../db/database';
import { WriteBatcher } from '../../db/batcher';
import type { Params } from '../../db/params';
import { systemClock, type Clock } from '../../core/clock';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { DomainError, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { parseInput } from '../../core/validation';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';
import { errorForLog, type Logger } from '../../logger';
import { requireEventTypePermission, type BatchedEvent } from '../events/event.service';
import { findEvent, type ApiEvent } from '../events/event.store';
import type { RetrySchedule } from '../../core/backoff';
import { deliverWebhook, type DeliveryOutcome } from './http-delivery';
import { buildDeliveryHeaders, unixSeconds, type SigningSecrets } from './signature';
import type { WebhookEndpointService } from './endpoint.service';
import { WILDCARD, listAttemptsInput, resendInput, testEndpointInput } from './webhook.inputs';
import {
  PING_EVENT_TYPE, WebhookStore, type BatchedSettle, type ClaimedDelivery, type DeliveryStatus, type SettleWrite, type WebhookAttempt,
} from './webhook.store';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import type { IdempotencyKey } from '../../core/idempotency';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';
import type { Metrics } from '../../observability/metrics';

export interface ResendResult {
  object: 'event_resend';
  eventId: string;
  deliveriesQueued: number;
}

/** The answer of `POST /v1/webhook-endpoints/{id}/test`: the ping queued for the endpoint. */
export interface EndpointTestResult {
  object: 'webhook_endpoint_test';
  endpointId: string;
  /** The ping's id: its `webhook-id`, `X-Service-Event-Id` and body `id` (not an event row). */
  eventId: string;
  eventType: 'ping';
  /** The delivery; its attempt shows in `GET /v1/webhook-endpoints/{id}/deliveries?eventId=`. */
  deliveryId: string;
  status: 'pending';
}

export interface DeliveryResult {
  deliveryId: string;
  attempt: number;
  status: DeliveryStatus;
  outcome: DeliveryOutcome | null;
  nextAttemptAt: Date | null;
}

export interface DeliveryServiceOptions {
  retry: RetrySchedule;
  timeoutMs: number;
  /** How long a claim is owned before another worker may take the row again (database time; renewed while sent). */
  leaseMs: number;
  /** How long a receiver must keep answering 410 before its endpoint is disabled. */
  goneWindowMs: number;
  allowPrivate: boolean;
  ca?: string;
  /** Replaces the DNS resolver (HostResolver) under the address policy (tests). */
  lookup?: net.LookupFunction;
  /** Deliveries in flight per process, and per endpoint. */
  concurrency: number;
  perEndpointConcurrency: number;
  /**
   * Where `webhook-timestamp` is read: wall time (systemClock), never the business Clock, since
   * receivers hold it against their own clocks. Tests shift it to send stale timestamps.
   */
  signingClock?: Clock;
  /** Counts and times each attempt when enabled. */
  metrics?: Metrics;
}

const MAX_ERROR = 255;

/** Most outcomes one settling statement carries (the loop has at most its concurrency in flight). */
const SETTLE_BATCH = 64;

/**
 * The webhook outbox: a delivery row per (event, subscribed endpoint) written in the event's own
 * transaction, claimed by workers under a lease (SKIP LOCKED on PostgreSQL), POSTed, and settled
 * with retry scheduling. Every HTTP attempt is logged.
 */
export class WebhookDeliveryService {
  private readonly wakeListeners = new Set<() => void>();
  private readonly store: WebhookStore;
  /** The outcomes being written, one statement for all that are ready (group commit). */
  private readonly settling: WriteBatcher<BatchedSettle, DeliveryStatus | null>;

  constructor(
    private readonly db: Database,
    private readonly endpoints: WebhookEndpointService,
    private readonly clock: Clock,
    private readonly logger: Logger,
    readonly options: DeliveryServiceOptions,
    /** Resends answer their Idempotency-Key through it. */
    private readonly idempotency: IdempotencyService,
  ) {
    this.store = new WebhookStore(db);
    this.settling = new WriteBatcher({
      run: (items) => this.store.settleBatch(items),
      maxBatch: SETTLE_BATCH,
      // One at a time: on two cores fewer, larger statements cost less per row (as for payments).
      maxInFlight: 1,
      // Two claims of one delivery (a lease lost and taken again here) are settled apart.
      conflictKey: (item) => item.c.id,
      // A SQLite batch is one local transaction: whatever failed, it was rolled back and nothing
      // of it was written. On PostgreSQL only a refused statement is known to have written nothing.
      isRefusal: (err) => db.dialect === 'sqlite' || isStatementRefused(err),
    });
  }

  /** Drops finished deliveries and attempt rows older than `keepDays` (pending ones stay). */
  async purgeOld(keepDays = 30): Promise<{ deliveries: number; attempts: number }> {
    return this.store.purge(new Date(this.clock.now().getTime() - keepDays * 86_400_000));
  }

  /**
   * The outbox hook, run inside the transaction that records the event: one statement inserts a
   * delivery for every enabled endpoint of the account and mode subscribed to the type.
   */
  async enqueue(event: ApiEvent, ctx: RequestContext, t: Transaction): Promise<number> {
    return this.store.insertDeliveries(t, { accountId: ctx.accountId, mode: ctx.mode }, event, this.clock.now());
  }

  /** The outbox hook as a part of one PostgreSQL statement (EventWriteHook.batchStatementPart). */
  batchPart(events: BatchedEvent[], p: Params, eventCte: string): string {
    return this.store.deliveriesBatchPart(events, p, eventCte, this.clock.now());
  }

  /** `POST /v1/events/{id}/resend`: a fresh delivery to every endpoint subscribed now. */
  async resend(ctx: RequestContext, eventId: string, input: unknown, idem?: IdempotencyKey): Promise<ResendResult> {
    requirePermission(ctx, 'webhook_endpoints', 'write');
    parseInput(resendInput, input);
    const event = await findEvent(ctx, eventId);
    if (!event) throw notFound('event', eventId);
    requireEventTypePermission(ctx, event.type, 'resending');
    const result = await this.db.transaction((t) => {
      const queue = async (): Promise<ResendResult> => {
        const queued = await this.store.insertDeliveries(t, { accountId: ctx.accountId, mode: ctx.mode }, event, this.clock.now());
        return { object: 'event_resend', eventId: event.id, deliveriesQueued: queued };
      };
      return this.idempotency.once(t, idem, IDEMPOTENT_OPERATIONS.resendEvent, queue);
    });
    if (result.deliveriesQueued > 0) this.wake();
    return result;
  }

  /**
   * `POST /v1/webhook-endpoints/{id}/test`: queues a `ping` for this one endpoint, sent by the
   * delivery loop like any event (signed the same way) but tried once. The ping is no event row:
   * it stays out of `GET /v1/events`, exports and the events stream, and cannot be resent. Its
   * `data.object` is the endpoint as the API shows it. A disabled endpoint is refused (422
   * invalid_state): it sends nothing until it is enabled.
   */
  async sendTest(ctx: RequestContext, endpointId: string, input: unknown, idem?: IdempotencyKey): Promise<EndpointTestResult> {
    requirePermission(ctx, 'webhook_endpoints', 'write');
    parseInput(testEndpointInput, input);
    const endpoint = await this.endpoints.retrieve(ctx, endpointId);
    if (endpoint.status !== 'enabled') {
      throw new DomainError('invalid_state', `Webhook endpoint ${endpointId} is disabled; enable it to send it a test event`);
    }
    const now = this.clock.now();
    const event: ApiEvent = {
      id: newId('evt'), object: 'event', type: PING_EVENT_TYPE, createdAt: now.toISOString(), livemode: ctx.mode === 'live', data: { object: { ...endpoint } },
    };
    const result = await this.db.transaction((t) => {
      const queue = async (): Promise<EndpointTestResult> => {
        const deliveryId = await this.store.insertPing(t, { accountId: ctx.accountId, mode: ctx.mode }, endpointId, event, now);
        // Deleted or disabled since it was read.
        if (deliveryId === null) throw new DomainError('invalid_state', `Webhook endpoint ${endpointId} is disabled or deleted; nothing was sent`);
        return { object: 'webhook_endpoint_test', endpointId, eventId: event.id, eventType: PING_EVENT_TYPE, deliveryId, status: 'pending' };
      };
      return this.idempotency.once(t, idem, IDEMPOTENT_OPERATIONS.testWebhookEndpoint, queue);
    });
    this.wake();
    return result;
  }

  /** The attempt log of an endpoint, newest first. */
  async attempts<O extends ListOptions = Counted>(ctx: RequestContext, endpointId: string, query: unknown, options?: O): Promise<PageFor<WebhookAttempt, O>> {
    requirePermission(ctx, 'webhook_endpoints', 'read');
    const input = parseInput(listAttemptsInput, query);
    await this.endpoints.row(ctx, endpointId, { includeDeleted: true }); // the log outlives the endpoint
    return this.store.listAttempts(ctx, endpointId, input, options);
  }

  /**
   * The same page of several endpoints' attempt logs, for DataLoader (GraphQL's
   * `WebhookEndpoint.deliveries`): one statement for the rows and one for the totals, however
   * many endpoints. The ids are those of endpoints already read in this scope, and the statement
   * is scoped by account and mode, so an id of another scope lists nothing.
   */
  async attemptsFor<O extends ListOptions = Counted>(
    ctx: RequestContext, endpointIds: readonly string[], query: unknown, options?: O,
  ): Promise<Map<string, PageFor<WebhookAttempt, O>>> {
    requirePermission(ctx, 'webhook_endpoints', 'read');
    const input = parseInput(listAttemptsInput, query);
    return this.store.listAttemptsFor(ctx, endpointIds, input, options);
  }

  /** Subscribes to "new deliveries were queued here" (the local worker loop). */
  onWake(listener: () => void): () => void {
    this.wakeListeners.add(listener);
    return () => this.wakeListeners.delete(listener);
  }

  wake(): void {
    for (const listener of this.wakeListeners) listener();
  }

  /**
   * Leases up to `limit` due deliveries, round-robin per endpoint: every endpoint with due rows
   * gets its oldest one before any endpoint gets a second (`inFlight`: what this worker already
   * sends per endpoint, which counts against its `perEndpointConcurrency`), so a receiver with a
   * large backlog cannot push other endpoints' deliveries back. The attempt counter moves on at
   * claim time, so two claims of one row (after a lease expired) never send the same attempt
   * number. One statement on PostgreSQL (SKIP LOCKED shares the rows between instances); on
   * SQLite a cheap look first, then one write under the single writer lock.
   */
  async claim(limit: number, inFlight: ReadonlyMap<string, number> = new Map()): Promise<ClaimedDelivery[]> {
    return this.store.claim({ clock: this.clock, limit, inFlight, perEndpoint: this.options.perEndpointConcurrency, leaseMs: this.options.leaseMs });
  }

  /**
   * Extends the leases of claims still being sent (the delivery loop calls it while they are in
   * flight), so a slow settle is not mistaken for a dead worker. Database time, as in claims.
   */
  async renewLeases(tokens: string[]): Promise<number> {
    return this.store.renewLeases(tokens, this.options.leaseMs);
  }

  /**
   * Sends one claimed delivery and records the outcome. Never throws for a receiver's failure.
   * `sent` is called once the receiver is done with it (answered, failed, or nothing was sent),
   * before the outcome is written: the endpoint's next delivery may go meanwhile.
   */
  async deliver(c: ClaimedDelivery, sent?: () => void): Promise<DeliveryResult> {
    // The endpoint changed after the row was queued (by another instance, or an event committed
    // while the endpoint was being updated): nothing is sent.
    const unsent: { status: 'held' | 'abandoned'; reason: string } | null = c.endpoint.deleted
      ? { status: 'abandoned', reason: 'endpoint deleted' }
      : c.endpoint.status !== 'enabled'
        ? { status: 'held', reason: 'endpoint disabled' }
        : c.eventType !== PING_EVENT_TYPE && !c.endpoint.events.includes(WILDCARD) && !c.endpoint.events.includes(c.eventType)
          ? { status: 'abandoned', reason: 'endpoint no longer subscribed to this event type' }
          : null;
    if (unsent) {
      await this.store.releaseUnsent(c, unsent.status, unsent.reason, this.clock.now());
      this.options.metrics?.observeWebhookDelivery(unsent.status, false, null);
      return { deliveryId: c.id, attempt: c.attempt - 1, status: unsent.status, outcome: null, nextAttemptAt: null };
    }
    let outcome: DeliveryOutcome;
    let secrets: SigningSecrets | undefined;
    try {
      // Read with the claim; a rotation's overlap (old and new secret) is judged by the clock now.
      secrets = this.endpoints.claimedSigningSecrets(c.endpoint.secrets, this.clock.now());
    } catch (err) {
      this.logger.error({ deliveryId: c.id, endpointId: c.endpointId, err: errorForLog(err) }, 'webhook secret could not be opened');
    }
    if (secrets === undefined) {
      outcome = { delivered: false, statusCode: null, latencyMs: 0, error: 'endpoint secret could not be read', retryAfterMs: null, gone: false };
    } else {
      outcome = await deliverWebhook({
        url: c.endpoint.url,
        body: c.payload,
        headers: buildDeliveryHeaders(secrets, c.payload, c.eventId, c.attempt, unixSeconds((this.options.signingClock ?? systemClock).now())),
        timeoutMs: this.options.timeoutMs,
        livemode: c.mode === 'live',
        allowPrivate: this.options.allowPrivate,
        ca: this.options.ca,
        lookup: this.options.lookup,
      });
    }
    sent?.();
    const result = await this.settle(c, outcome);
    this.options.metrics?.observeWebhookDelivery(result.status === 'pending' ? 'retrying' : result.status, outcome.delivered, outcome.latencyMs / 1000);
    return result;
  }

  /** The pending deliveries at `now`: due (in flight included) and waiting for a retry (metrics, at scrape time). */
  async queueDepth(now: Date): Promise<{ due: number; scheduled: number; oldestDueAt: Date | null }> {
    return this.store.queueDepth(now);
  }

  /** Claims what is due now and delivers it all, waiting for the outcomes (tests, one-shot runs). */
  async deliverDue(limit = this.options.concurrency): Promise<DeliveryResult[]> {
    const claimed = await this.claim(limit);
    return Promise.all(claimed.map((c) => this.deliver(c)));
  }

  /**
   * Records an attempt's outcome. The common case (no endpoint to change: not a 410, no run of
   * 410s to end) joins the batch of outcomes being written (one statement for the deliveries and
   * their attempt rows, see WebhookStore.settleBatch); a delivery whose claim turns out lost there,
   * and the outcomes that change their endpoint, are settled alone in a transaction of their own.
   */
  private async settle(c: ClaimedDelivery, outcome: DeliveryOutcome): Promise<DeliveryResult> {
    const now = this.clock.now();
    let status: DeliveryStatus;
    let nextAttemptAt: Date | null = null;
    if (outcome.delivered) status = 'delivered';
    else {
      // A 410 is retried like any failure: the endpoint is disabled only once 410s persist (disableGone).
      // A test ping is tried once: its answer is what the caller wanted to see.
      nextAttemptAt = c.eventType === PING_EVENT_TYPE ? null : this.options.retry.nextAttemptAt(c.attempt, c.firstAttemptAt, now, outcome.retryAfterMs);
      status = nextAttemptAt ? 'pending' : 'failed';
    }
    const error = outcome.error ? outcome.error.slice(0, MAX_ERROR) : null;
    const latencyMs = Math.round(outcome.latencyMs);
    const write: SettleWrite = { status, nextAttemptAt, statusCode: outcome.statusCode, error, latencyMs, deliveredAt: outcome.delivered ? now : null, now };
    const endpointChanges = outcome.gone || (outcome.statusCode !== null && c.endpoint.goneSince !== null);
    const batched = endpointChanges ? null : await this.settling.submit({ c, w: write, succeeded: outcome.delivered });
    if (batched !== null) {
      if (batched === 'held') {
        status = 'held';
        nextAttemptAt = null;
      }
    } else {
      ({ status, nextAttemptAt } = await this.settleAlone(c, outcome, write));
    }
    if (!outcome.delivered) {
      this.logger.info(
        { deliveryId: c.id, endpointId: c.endpointId, eventId: c.eventId, attempt: c.attempt, statusCode: outcome.statusCode, error, status, nextAttemptAt },
        'webhook delivery attempt failed',
      );
    }
    return { deliveryId: c.id, attempt: c.attempt, status, outcome, nextAttemptAt };
  }

  /** One outcome in a transaction of its own, with the endpoint changes it brings; also for a claim found lost. */
  private async settleAlone(c: ClaimedDelivery, outcome: DeliveryOutcome, write: SettleWrite): Promise<{ status: DeliveryStatus; nextAttemptAt: Date | null }> {
    const { now, error, latencyMs } = write;
    let { status, nextAttemptAt } = write;
    const scope = { accountId: c.accountId, mode: c.mode };
    await this.db.transaction(async (t) => {
      // The endpoint first, its deliveries after, as every transaction that writes both does
      // (endpoint updates too): two 410s settling at once then queue instead of deadlocking.
      if (outcome.gone) {
        // Holds the endpoint's pending deliveries, this one included, when it disables it.
        await this.endpoints.disableGone(t, scope, c.endpointId, now, this.options.goneWindowMs);
      } else if (outcome.statusCode !== null && c.endpoint.goneSince) {
        await this.endpoints.clearGone(t, scope, c.endpointId);
      }
      const settled = await this.store.settleClaim(t, c, write);
      if (settled === 'held') {
        status = 'held';
        nextAttemptAt = null;
      }
      if (settled === null) {
        // Our token still on the row: it was given up (endpoint deleted, event type dropped) while
        // we were sending, and our lease ends now. Otherwise the lease ran out and another claim
        // took the row.
        const givenUp = await this.store.dropLease(t, c);
        const log = { deliveryId: c.id, attempt: c.attempt };
        if (outcome.delivered) {
          // The receiver answered 2xx: it has the event. Recording that stops any later attempt
          // from sending it again (one already under way elsewhere settles as not the owner).
          const late = await this.store.recordLateDelivery(t, c.id, { statusCode: outcome.statusCode, latencyMs, now });
          if (late && givenUp) this.logger.info(log, 'webhook delivery answered 2xx after it was given up; recorded as delivered');
          else if (late) this.logger.warn(log, 'webhook delivery answered 2xx after its claim was lost; recorded as delivered');
        } else if (!givenUp) {
          this.logger.warn(log, 'webhook delivery settled after its claim was lost'); // the attempt is still logged
        }
        // Report where the row stands, not what this attempt would have made of it.
        status = (await this.store.deliveryStatus(t, c.id)) ?? status;
        nextAttemptAt = null;
      }
      await this.store.insertAttempt(t, {
        accountId: c.accountId, mode: c.mode, endpointId: c.endpointId, deliveryId: c.id, eventId: c.eventId, eventType: c.eventType,
        attempt: c.attempt, succeeded: outcome.delivered, statusCode: outcome.statusCode, latencyMs, error, nextRetryAt: nextAttemptAt, createdAt: now,
      });
    });
    return { status, nextAttemptAt };
  }

  /** Several attempts by id (GraphQL's `node`, batched), read as the endpoints' logs are (webhook_endpoints:read). */
  async findAttempts(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, WebhookAttempt>> {
    requirePermission(ctx, 'webhook_endpoints', 'read');
    return new Map((await this.store.findAttempts(ctx, ids)).map((a) => [a.id, a]));
  }

  /** The newest attempts of several events, every endpoint's (GraphQL's `Event.deliveries`, batched). */
  async attemptsForEvents(ctx: RequestContext, eventIds: readonly string[], limit: number): Promise<Map<string, WebhookAttempt[]>> {
    requirePermission(ctx, 'webhook_endpoints', 'read');
    return this.store.attemptsForEvents(ctx, eventIds, limit);
  }
}
