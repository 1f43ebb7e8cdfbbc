import type net from 'node:net';
import type { Transaction } from 'sequelize';
import { Params } from '../../db/params';
import type { Database } from '../../db/database';
import { isoTime, readBool, readJson, readTime } from '../../db/database';
import { Filter, likePattern, listPage } from '../../db/list';
import type { Clock } from '../../core/clock';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { notFound } from '../../core/errors';
import { randomBase62 } from '../../core/ids';
import { parseInput } from '../../core/validation';
import type { Page } from '../../core/pagination';
import { errorForLog, type Logger } from '../../logger';
import { eventJsonSql, findEvent, type ApiEvent, type BatchedEvent } from '../events/event.service';
import type { RetrySchedule } from '../../webhooks/backoff';
import { deliverWebhook, type DeliveryOutcome } from '../../webhooks/http-delivery';
import { buildDeliveryHeaders, type SigningSecrets } from '../../webhooks/signature';
import type { WebhookEndpointService } from './endpoint.service';
import { WILDCARD, listAttemptsInput, resendInput } from './webhook.inputs';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import type { IdempotencyKey } from '../../core/idempotency';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';

/** `held`: waiting for its disabled endpoint to be enabled again. */
export type DeliveryStatus = 'pending' | 'held' | 'delivered' | 'failed' | 'abandoned';

/** One HTTP attempt, as `GET /v1/webhook-endpoints/{id}/deliveries` lists it. */
export interface WebhookAttempt {
  id: string;
  object: 'webhook_delivery_attempt';
  livemode: boolean;
  endpointId: string;
  deliveryId: string;
  eventId: string;
  eventType: string;
  /** 1 for the first try of a delivery, then 2, 3, … (the X-Service-Delivery-Attempt header). */
  attempt: number;
  status: 'succeeded' | 'failed';
  statusCode: number | null;
  latencyMs: number;
  /** Short reason (never the receiver's body); null on success. */
  error: string | null;
  /** When the next attempt is due; null when delivered or given up. */
  nextRetryAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ResendResult {
  object: 'event_resend';
  eventId: string;
  deliveriesQueued: number;
}

/** A delivery this worker has leased, with what it needs to send it. */
export interface ClaimedDelivery {
  id: string;
  accountId: string;
  mode: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  payload: string;
  /** The number of this attempt (already counted on the row). */
  attempt: number;
  firstAttemptAt: Date;
  lockToken: string;
  endpoint: { url: string; secretSealed: string; status: string; deleted: boolean; events: string[]; goneSince: Date | null };
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
  /** Replaces dns.lookup under the address policy (tests). */
  lookup?: net.LookupFunction;
  /** Deliveries in flight per process, and per endpoint. */
  concurrency: number;
  perEndpointConcurrency: number;
}

const ATTEMPT_COLUMNS =
  'id, mode, endpoint_id, delivery_id, event_id, event_type, attempt, succeeded, status_code, latency_ms, error, next_retry_at, created_at';

const MAX_ERROR = 255;

/**
 * Leases are measured on the database's clock, never an instance's: instances compare each
 * other's leases, and one whose clock runs ahead would take a live lease (or, behind, leave a
 * dead one alone). Business time (when an attempt is due, the delivery window, the gone
 * window) stays on the injected Clock, which tests drive.
 */
function dbNowSql(dialect: Database['dialect']): string {
  // SQLite: the text form the models write (sqliteTime), so comparisons stay textual.
  return dialect === 'postgres' ? 'statement_timestamp()' : "(strftime('%Y-%m-%d %H:%M:%f', 'now') || ' +00:00')";
}

function leaseEndSql(dialect: Database['dialect'], ms: string): string {
  return dialect === 'postgres'
    ? `(statement_timestamp() + ${ms}::integer * interval '1 millisecond')`
    : `(strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.3f seconds', ${ms} / 1000.0)) || ' +00:00')`;
}

/** A row that may be claimed now ($1: business now). */
const dueSql = (dialect: Database['dialect'], d: string) =>
  `${d}.status = 'pending' AND ${d}.next_attempt_at <= $1 AND (${d}.locked_until IS NULL OR ${d}.locked_until < ${dbNowSql(dialect)})`;

/** The endpoints that have pending rows: one probe of webhook_deliveries_pending_idx each (a loose index scan). */
const PENDING_ENDPOINTS = `pending_endpoint(endpoint_id) AS (
    SELECT (SELECT endpoint_id FROM webhook_deliveries WHERE status = 'pending' ORDER BY endpoint_id LIMIT 1)
    UNION ALL
    SELECT (SELECT q.endpoint_id FROM webhook_deliveries q WHERE q.status = 'pending' AND q.endpoint_id > p.endpoint_id ORDER BY q.endpoint_id LIMIT 1)
      FROM pending_endpoint p WHERE p.endpoint_id IS NOT NULL
  )`;

const CLAIMED_COLUMNS = `d.id, d.account_id, d.mode, d.endpoint_id, d.event_id, d.event_type, d.payload, d.attempts, d.first_attempt_at,
       e.url, e.secret_sealed, e.status AS endpoint_status, e.deleted_at AS endpoint_deleted_at, e.events AS endpoint_events, e.gone_since AS endpoint_gone_since`;

/*
 * Claims: $1 business now, $2 how many, $3 JSON [{endpoint_id, used}] of this worker's deliveries
 * in flight, $4 per-endpoint concurrency, $5 lease in ms, $6 the claim's token. Each endpoint's
 * oldest due rows are ranked 1, 2, … after the ones it already has in flight, and the claim takes
 * the lowest ranks first: round-robin over endpoints, oldest first within a round.
 */
const CLAIM_PG = `WITH RECURSIVE ${PENDING_ENDPOINTS},
  busy AS (SELECT endpoint_id, used FROM json_to_recordset($3::json) AS b(endpoint_id text, used integer)),
  ranked AS (
    SELECT c.id, c.next_attempt_at, COALESCE(b.used, 0) + row_number() OVER (PARTITION BY p.endpoint_id ORDER BY c.next_attempt_at, c.id) AS turn
      FROM pending_endpoint p
      LEFT JOIN busy b ON b.endpoint_id = p.endpoint_id
      CROSS JOIN LATERAL (
        SELECT x.id, x.next_attempt_at FROM webhook_deliveries x
         WHERE x.endpoint_id = p.endpoint_id AND ${dueSql('postgres', 'x')}
         ORDER BY x.next_attempt_at, x.id
         LIMIT GREATEST($4::integer - COALESCE(b.used, 0), 0)
           FOR UPDATE SKIP LOCKED
      ) c
     WHERE p.endpoint_id IS NOT NULL
  ),
  chosen AS (SELECT id FROM ranked ORDER BY turn, next_attempt_at, id LIMIT $2)
UPDATE webhook_deliveries d
   SET attempts = d.attempts + 1, locked_until = ${leaseEndSql('postgres', '$5')}, lock_token = $6,
       first_attempt_at = COALESCE(d.first_attempt_at, $1), updated_at = $1
  FROM chosen, webhook_endpoints e
 WHERE d.id = chosen.id AND e.id = d.endpoint_id
RETURNING ${CLAIMED_COLUMNS}`;

/** SQLite has no LATERAL: each endpoint's due rows are walked one index probe at a time instead. */
const FAIR_DUE_SQLITE = `WITH RECURSIVE ${PENDING_ENDPOINTS},
  walk(endpoint_id, id, next_attempt_at, k) AS (
    SELECT p.endpoint_id, y.id, y.next_attempt_at, 1
      FROM pending_endpoint p
      JOIN webhook_deliveries y ON y.id = (
        SELECT z.id FROM webhook_deliveries z WHERE z.endpoint_id = p.endpoint_id AND ${dueSql('sqlite', 'z')}
         ORDER BY z.next_attempt_at, z.id LIMIT 1)
    UNION ALL
    SELECT w.endpoint_id, y.id, y.next_attempt_at, w.k + 1
      FROM walk w
      JOIN webhook_deliveries y ON y.id = (
        SELECT z.id FROM webhook_deliveries z WHERE z.endpoint_id = w.endpoint_id AND ${dueSql('sqlite', 'z')}
           AND (z.next_attempt_at, z.id) > (w.next_attempt_at, w.id)
         ORDER BY z.next_attempt_at, z.id LIMIT 1)
     WHERE w.k < $4
  ),
  busy AS (SELECT json_extract(value, '$.endpoint_id') AS endpoint_id, json_extract(value, '$.used') AS used FROM json_each($3)),
  ranked AS (
    SELECT w.id, w.next_attempt_at, COALESCE(b.used, 0) + w.k AS turn FROM walk w LEFT JOIN busy b ON b.endpoint_id = w.endpoint_id
  )`;

const CLAIM_SQLITE = `${FAIR_DUE_SQLITE}
UPDATE webhook_deliveries
   SET attempts = attempts + 1, locked_until = ${leaseEndSql('sqlite', '$5')}, lock_token = $6,
       first_attempt_at = COALESCE(first_attempt_at, $1), updated_at = $1
 WHERE id IN (SELECT id FROM ranked WHERE turn <= $4 ORDER BY turn, next_attempt_at, id LIMIT $2)`;

/**
 * The webhook outbox: a delivery row per (event, subscribed endpoint) written in the event's own
 * transaction, claimed by workers under a lease (SKIP LOCKED on PostgreSQL), POSTed, and settled
 * with retry scheduling. Every HTTP attempt is logged.
 */
export class WebhookDeliveryService {
  private readonly wakeListeners = new Set<() => void>();

  constructor(
    private readonly db: Database,
    private readonly endpoints: WebhookEndpointService,
    private readonly clock: Clock,
    private readonly logger: Logger,
    readonly options: DeliveryServiceOptions,
    /** Resends answer their Idempotency-Key through it (tests of delivery alone go without). */
    private readonly idempotency?: IdempotencyService,
  ) {}

  /** Drops finished deliveries and attempt rows older than `keepDays` (pending ones stay). */
  async purgeOld(keepDays = 30): Promise<{ deliveries: number; attempts: number }> {
    const cutoff = new Date(this.clock.now().getTime() - keepDays * 86_400_000);
    // Small batches, each its own transaction: other writers (SQLite's single lock) keep moving.
    const sweep = async (table: string, condition: string) => {
      let total = 0;
      for (;;) {
        const n = await this.db.transaction((t) =>
          this.db.execute(`DELETE FROM ${table} WHERE id IN (SELECT id FROM ${table} WHERE ${condition} LIMIT 1000)`, [cutoff], t),
        );
        total += n;
        if (n < 1000) return total;
      }
    };
    const attempts = await sweep('webhook_attempts', 'created_at < $1');
    const deliveries = await sweep('webhook_deliveries', "status IN ('delivered', 'failed', 'abandoned') AND updated_at < $1");
    return { deliveries, attempts };
  }

  /**
   * The outbox hook, run inside the transaction that records the event: one statement inserts a
   * delivery for every enabled endpoint of the account and mode subscribed to the type. On
   * SQLite an in-memory index skips even that when no endpoint can match.
   */
  async enqueue(event: ApiEvent, ctx: RequestContext, t: Transaction): Promise<number> {
    const scope = { accountId: ctx.accountId, mode: ctx.mode };
    return this.insertDeliveries(t, scope, event);
  }

  /** `POST /v1/events/{id}/resend`: a fresh delivery to every endpoint subscribed now. */
  async resend(ctx: RequestContext, eventId: string, input: unknown, idem?: IdempotencyKey): Promise<ResendResult> {
    requirePermission(ctx, 'webhook_endpoints', 'write');
    parseInput(resendInput, input);
    const event = await findEvent(ctx, eventId);
    if (!event) throw notFound('event', eventId);
    if (idem && !this.idempotency) throw new Error('resend with an Idempotency-Key needs the idempotency service');
    const result = await this.db.transaction((t) => {
      const queue = async (): Promise<ResendResult> => {
        const queued = await this.insertDeliveries(t, { accountId: ctx.accountId, mode: ctx.mode }, event);
        return { object: 'event_resend', eventId: event.id, deliveriesQueued: queued };
      };
      return this.idempotency ? this.idempotency.once(t, idem, IDEMPOTENT_OPERATIONS.resendEvent, queue) : queue();
    });
    if (result.deliveriesQueued > 0) this.wake();
    return result;
  }

  /** The attempt log of an endpoint, newest first. */
  async attempts(ctx: RequestContext, endpointId: string, query: unknown): Promise<Page<WebhookAttempt>> {
    requirePermission(ctx, 'webhook_endpoints', 'read');
    const input = parseInput(listAttemptsInput, query);
    await this.endpoints.row(ctx, endpointId, { includeDeleted: true }); // the log outlives the endpoint
    const filter = new Filter({
      account_id: ctx.accountId,
      mode: ctx.mode,
      endpoint_id: endpointId,
      event_id: input.eventId,
      succeeded: input.status === undefined ? undefined : input.status === 'succeeded',
    });
    return listPage(this.db, {
      table: 'webhook_attempts', columns: ATTEMPT_COLUMNS, filter, params: input, sortColumns: { createdAt: 'created_at' }, toApi: toApiAttempt,
    });
  }

  /** Subscribes to "new deliveries were queued here" (the local worker loop). */
  onWake(listener: () => void): () => void {
    this.wakeListeners.add(listener);
    return () => this.wakeListeners.delete(listener);
  }

  wake(): void {
    for (const listener of this.wakeListeners) listener();
  }

  private async insertDeliveries(t: Transaction, scope: { accountId: string; mode: string }, event: ApiEvent): Promise<number> {
    const p = new Params();
    const sql = this.deliveriesSql(p, scope, event, JSON.stringify({
      id: event.id,
      object: 'event',
      type: event.type,
      createdAt: event.createdAt,
      livemode: event.livemode,
      data: event.data,
    }));
    return this.db.execute(sql, p.values, t);
  }

  /**
   * The outbox hook as a part of one PostgreSQL statement: a delivery for every enabled endpoint
   * subscribed to each event the CTE `eventCte` inserted (ids as in `deliveriesSql`; the payload
   * is the event's JSON, built from its row).
   */
  batchPart(events: BatchedEvent[], p: Params, eventCte: string): string {
    const rows = events.map(({ event }) => ({ event_id: event.id, prefix: `whd_${randomBase62(20)}` }));
    const now = p.add(this.clock.now(), 'timestamptz');
    return `INSERT INTO webhook_deliveries
         (id, account_id, mode, endpoint_id, event_id, event_type, payload, status, attempts, next_attempt_at, created_at, updated_at)
       SELECT v.prefix || substr(e.id, 4), e.account_id, e.mode, e.id, ev.id, ev.type, ${eventJsonSql('ev')}, 'pending', 0, ${now}, ${now}, ${now}
         FROM json_to_recordset(${p.add(this.db.jsonParam(rows), 'json')}) AS v(event_id text, prefix text)
         JOIN ${eventCte} ev ON ev.id = v.event_id
         JOIN webhook_endpoints e ON e.account_id = ev.account_id AND e.mode = ev.mode AND e.status = 'enabled' AND e.deleted_at IS NULL
          AND (e.events LIKE '%"*"%' OR e.events LIKE '%"' || replace(replace(replace(ev.type, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '"%' ESCAPE '\\')`;
  }

  /**
   * One statement inserts a delivery for every enabled endpoint of the account and mode
   * subscribed to the event's type. Row ids: whd_ + 20 random characters shared by this batch +
   * the endpoint id's random part.
   */
  private deliveriesSql(p: Params, scope: { accountId: string; mode: string }, event: ApiEvent, payload: string): string {
    // Parameters in a SELECT list have no column to take a type from on PostgreSQL.
    const pg = this.db.dialect === 'postgres';
    const text = (v: string) => (pg ? p.add(v, 'text') : `CAST(${p.add(v)} AS TEXT)`);
    const time = pg ? p.add(this.clock.now(), 'timestamptz') : p.add(this.clock.now());
    return `INSERT INTO webhook_deliveries
         (id, account_id, mode, endpoint_id, event_id, event_type, payload, status, attempts, next_attempt_at, created_at, updated_at)
       SELECT ${text(`whd_${randomBase62(20)}`)} || substr(e.id, 4), e.account_id, e.mode, e.id, ${text(event.id)}, ${text(event.type)}, ${text(payload)},
              'pending', 0, ${time}, ${time}, ${time}
         FROM webhook_endpoints e
        WHERE e.account_id = ${p.add(scope.accountId)} AND e.mode = ${p.add(scope.mode)} AND e.status = 'enabled' AND e.deleted_at IS NULL
          AND (e.events LIKE '%"*"%' OR e.events LIKE ${p.add(likePattern(`"${event.type}"`))} ESCAPE '\\')`;
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
    if (limit <= 0) return [];
    const busy = this.db.jsonParam([...inFlight].map(([endpoint_id, used]) => ({ endpoint_id, used })));
    const per = this.options.perEndpointConcurrency;
    const token = randomBase62(24);
    if (this.db.dialect === 'postgres') {
      const rows = await this.db.select(CLAIM_PG, [this.clock.now(), limit, busy, per, Math.ceil(this.options.leaseMs), token]);
      return rows.map((r) => claimedDelivery(r, token));
    }
    // Most wake-ups (every committed event) find nothing due: look before queueing for the write lock.
    const [due] = await this.db.select(`${FAIR_DUE_SQLITE} SELECT id FROM ranked WHERE turn <= $4 LIMIT $2`, [this.clock.now(), 1, busy, per]);
    if (!due) return [];
    return this.db.transaction(async (t) => {
      const now = this.clock.now();
      const claimed = await this.db.execute(CLAIM_SQLITE, [now, limit, busy, per, Math.ceil(this.options.leaseMs), token], t);
      if (claimed === 0) return [];
      const rows = await this.db.select(`SELECT ${CLAIMED_COLUMNS} FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.lock_token = $1`, [token], t);
      return rows.map((r) => claimedDelivery(r, token));
    });
  }

  /**
   * Extends the leases of claims still being sent (the delivery loop calls it while they are in
   * flight), so a slow settle is not mistaken for a dead worker. Database time, as in claims.
   */
  async renewLeases(tokens: string[]): Promise<number> {
    if (tokens.length === 0) return 0;
    const pg = this.db.dialect === 'postgres';
    const list = pg ? 'SELECT json_array_elements_text($1::json)' : 'SELECT value FROM json_each($1)';
    return this.db.execute(
      `UPDATE webhook_deliveries SET locked_until = ${leaseEndSql(this.db.dialect, '$2')} WHERE lock_token IN (${list}) AND status = 'pending'`,
      [this.db.jsonParam(tokens), Math.ceil(this.options.leaseMs)],
    );
  }

  /** Sends one claimed delivery and records the outcome. Never throws for a receiver's failure. */
  async deliver(c: ClaimedDelivery): Promise<DeliveryResult> {
    // The endpoint changed after the row was queued (by another instance, or an event committed
    // while the endpoint was being updated): nothing is sent.
    const unsent: { status: 'held' | 'abandoned'; reason: string } | null = c.endpoint.deleted
      ? { status: 'abandoned', reason: 'endpoint deleted' }
      : c.endpoint.status !== 'enabled'
        ? { status: 'held', reason: 'endpoint disabled' }
        : !c.endpoint.events.includes(WILDCARD) && !c.endpoint.events.includes(c.eventType)
          ? { status: 'abandoned', reason: 'endpoint no longer subscribed to this event type' }
          : null;
    if (unsent) {
      await this.releaseUnsent(c, unsent.status, unsent.reason);
      return { deliveryId: c.id, attempt: c.attempt - 1, status: unsent.status, outcome: null, nextAttemptAt: null };
    }
    let outcome: DeliveryOutcome;
    let secrets: SigningSecrets | undefined;
    try {
      // Read at send time: a rotation's overlap (old and new secret) is judged by the clock now.
      secrets = await this.endpoints.signingSecrets(c.endpointId, this.clock.now());
    } catch (err) {
      this.logger.error({ deliveryId: c.id, endpointId: c.endpointId, err: errorForLog(err) }, 'webhook secret could not be opened');
    }
    if (secrets === undefined) {
      outcome = { delivered: false, statusCode: null, latencyMs: 0, error: 'endpoint secret could not be read', retryAfterMs: null, gone: false };
    } else {
      outcome = await deliverWebhook({
        url: c.endpoint.url,
        body: c.payload,
        headers: buildDeliveryHeaders(secrets, c.payload, c.eventId, c.attempt),
        timeoutMs: this.options.timeoutMs,
        livemode: c.mode === 'live',
        allowPrivate: this.options.allowPrivate,
        ca: this.options.ca,
        lookup: this.options.lookup,
      });
    }
    return this.settle(c, outcome);
  }

  /** Claims what is due now and delivers it all, waiting for the outcomes (tests, one-shot runs). */
  async deliverDue(limit = this.options.concurrency): Promise<DeliveryResult[]> {
    const claimed = await this.claim(limit);
    return Promise.all(claimed.map((c) => this.deliver(c)));
  }

  private async settle(c: ClaimedDelivery, outcome: DeliveryOutcome): Promise<DeliveryResult> {
    const now = this.clock.now();
    let status: DeliveryStatus;
    let nextAttemptAt: Date | null = null;
    if (outcome.delivered) status = 'delivered';
    else {
      // A 410 is retried like any failure: the endpoint is disabled only once 410s persist (disableGone).
      nextAttemptAt = this.options.retry.nextAttemptAt(c.attempt, c.firstAttemptAt, now, outcome.retryAfterMs);
      status = nextAttemptAt ? 'pending' : 'failed';
    }
    const error = outcome.error ? outcome.error.slice(0, MAX_ERROR) : null;
    const latencyMs = Math.round(outcome.latencyMs);
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
      // Still ours (our token) while pending, or held since it was claimed: a held row stays held.
      const settled = await this.db.select<{ status: DeliveryStatus }>(
        `UPDATE webhook_deliveries
            SET status = CASE WHEN status = 'held' AND $1 = 'pending' THEN 'held' ELSE $1 END,
                next_attempt_at = COALESCE($2, next_attempt_at), last_status_code = $3, last_error = $4, last_latency_ms = $5,
                delivered_at = $6, locked_until = NULL, lock_token = NULL, updated_at = $7
          WHERE id = $8 AND lock_token = $9 AND status IN ('pending', 'held')
         RETURNING status`,
        [status, nextAttemptAt, outcome.statusCode, error, latencyMs, outcome.delivered ? now : null, now, c.id, c.lockToken],
        t,
      );
      const mine = settled.length;
      if (mine === 1 && settled[0].status === 'held') {
        status = 'held';
        nextAttemptAt = null;
      }
      if (mine !== 1) {
        // Our token still on the row: it was given up (endpoint deleted, event type dropped) while
        // we were sending, and our lease ends now. Otherwise the lease ran out and another claim
        // took the row.
        const givenUp = (await this.db.execute('UPDATE webhook_deliveries SET locked_until = NULL, lock_token = NULL WHERE id = $1 AND lock_token = $2', [c.id, c.lockToken], t)) === 1;
        const log = { deliveryId: c.id, attempt: c.attempt };
        if (outcome.delivered) {
          // The receiver answered 2xx: it has the event. Recording that stops any later attempt
          // from sending it again (one already under way elsewhere settles as not the owner).
          const late = await this.db.execute(
            `UPDATE webhook_deliveries
                SET status = 'delivered', last_status_code = $1, last_error = NULL, last_latency_ms = $2, delivered_at = $3,
                    locked_until = NULL, lock_token = NULL, updated_at = $3
              WHERE id = $4 AND status <> 'delivered'`,
            [outcome.statusCode, latencyMs, now, c.id],
            t,
          );
          if (late === 1 && givenUp) this.logger.info(log, 'webhook delivery answered 2xx after it was given up; recorded as delivered');
          else if (late === 1) this.logger.warn(log, 'webhook delivery answered 2xx after its claim was lost; recorded as delivered');
        } else if (!givenUp) {
          this.logger.warn(log, 'webhook delivery settled after its claim was lost'); // the attempt is still logged
        }
        // Report where the row stands, not what this attempt would have made of it.
        const [row] = await this.db.select<{ status: DeliveryStatus }>('SELECT status FROM webhook_deliveries WHERE id = $1', [c.id], t);
        if (row) status = row.status;
        nextAttemptAt = null;
      }
      await this.db.execute(
        `INSERT INTO webhook_attempts (id, account_id, mode, endpoint_id, delivery_id, event_id, event_type, attempt, succeeded, status_code, latency_ms, error, next_retry_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
        [
          `wha_${randomBase62(24)}`, c.accountId, c.mode, c.endpointId, c.id, c.eventId, c.eventType, c.attempt, outcome.delivered,
          outcome.statusCode, latencyMs, error, nextAttemptAt, now,
        ],
        t,
      );
    });
    if (!outcome.delivered) {
      this.logger.info(
        { deliveryId: c.id, endpointId: c.endpointId, eventId: c.eventId, attempt: c.attempt, statusCode: outcome.statusCode, error, status, nextAttemptAt },
        'webhook delivery attempt failed',
      );
    }
    return { deliveryId: c.id, attempt: c.attempt, status, outcome, nextAttemptAt };
  }

  /** Gives a claim back without sending it: held until its endpoint is enabled, or abandoned. */
  private async releaseUnsent(c: ClaimedDelivery, status: 'held' | 'abandoned', reason: string): Promise<void> {
    const now = this.clock.now();
    await this.db.transaction((t) =>
      this.db.execute(
        `UPDATE webhook_deliveries SET status = $1, attempts = attempts - 1, last_error = $2, locked_until = NULL, lock_token = NULL, updated_at = $3
          WHERE id = $4 AND lock_token = $5 AND status = 'pending'`,
        [status, reason, now, c.id, c.lockToken],
        t,
      ),
    );
  }
}

function claimedDelivery(r: Record<string, unknown>, lockToken: string): ClaimedDelivery {
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    mode: r.mode as string,
    endpointId: r.endpoint_id as string,
    eventId: r.event_id as string,
    eventType: r.event_type as string,
    payload: r.payload as string,
    attempt: Number(r.attempts),
    firstAttemptAt: readTime(r.first_attempt_at) as Date,
    lockToken,
    endpoint: {
      url: r.url as string,
      secretSealed: r.secret_sealed as string,
      status: r.endpoint_status as string,
      deleted: r.endpoint_deleted_at !== null && r.endpoint_deleted_at !== undefined,
      events: readJson<string[]>(r.endpoint_events, []),
      goneSince: readTime(r.endpoint_gone_since),
    },
  };
}

function toApiAttempt(row: Record<string, unknown>): WebhookAttempt {
  const createdAt = isoTime(row.created_at) as string;
  const succeeded = readBool(row.succeeded);
  return {
    id: row.id as string,
    object: 'webhook_delivery_attempt',
    livemode: row.mode === 'live',
    endpointId: row.endpoint_id as string,
    deliveryId: row.delivery_id as string,
    eventId: row.event_id as string,
    eventType: row.event_type as string,
    attempt: Number(row.attempt),
    status: succeeded ? 'succeeded' : 'failed',
    statusCode: row.status_code === null || row.status_code === undefined ? null : Number(row.status_code),
    latencyMs: Number(row.latency_ms),
    error: (row.error as string | null) ?? null,
    nextRetryAt: isoTime(row.next_retry_at),
    createdAt,
    updatedAt: createdAt,
  };
}
