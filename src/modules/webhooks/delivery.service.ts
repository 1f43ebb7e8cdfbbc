import type net from 'node:net';
import type { Transaction } from 'sequelize';
import { Params } from '../../db/params';
import type { Database } from '../../db/database';
import { isoTime, readBool, readTime } from '../../db/database';
import { Filter, likePattern, rawPage } from '../../db/list';
import type { Clock } from '../../core/clock';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { notFound } from '../../core/errors';
import { randomBase62 } from '../../core/ids';
import { parseInput } from '../../core/validation';
import type { Page } from '../../core/pagination';
import { errorForLog, type Logger } from '../../logger';
import { eventJsonSql, toApiEvent, type ApiEvent, type BatchedEvent } from '../events/event.service';
import type { RetrySchedule } from '../../webhooks/backoff';
import { deliverWebhook, type DeliveryOutcome } from '../../webhooks/http-delivery';
import { buildDeliveryHeaders } from '../../webhooks/signature';
import type { WebhookEndpointService } from './endpoint.service';
import { listAttemptsInput, resendInput } from './webhook.inputs';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'abandoned';

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
  endpoint: { url: string; secretSealed: string; status: string; deleted: boolean };
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
  /** How long a claim is owned before another worker may take the row again. */
  leaseMs: number;
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
  async resend(ctx: RequestContext, eventId: string, input: unknown): Promise<ResendResult> {
    requirePermission(ctx, 'webhook_endpoints', 'write');
    parseInput(resendInput, input);
    const [row] = await this.db.select('SELECT id, type, data, created_at, mode FROM events WHERE id = $1 AND account_id = $2 AND mode = $3', [
      eventId, ctx.accountId, ctx.mode,
    ]);
    if (!row) throw notFound('event', eventId);
    const event: ApiEvent = toApiEvent(row);
    const queued = await this.db.transaction((t) => this.insertDeliveries(t, { accountId: ctx.accountId, mode: ctx.mode }, event));
    if (queued > 0) this.wake();
    return { object: 'event_resend', eventId: event.id, deliveriesQueued: queued };
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
    const { rows, total } = await rawPage<Record<string, unknown>>(this.db, {
      table: 'webhook_attempts', columns: ATTEMPT_COLUMNS, filter, sortColumn: 'created_at', params: input,
    });
    return { data: rows.map(toApiAttempt), total, page: input.page, pageSize: input.pageSize };
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
   * Leases up to `limit` due deliveries, at most `room(endpoint)` per endpoint, none of the
   * `exclude`d endpoints. The attempt counter moves on at claim time, so two claims of one row
   * (after a lease expired) never send the same attempt number.
   */
  async claim(limit: number, room: (endpointId: string) => number = () => this.options.perEndpointConcurrency, exclude: string[] = []): Promise<ClaimedDelivery[]> {
    if (limit <= 0) return [];
    const pg = this.db.dialect === 'postgres';
    const dueSql = (first: number) =>
      `status = 'pending' AND next_attempt_at <= $1 AND (locked_until IS NULL OR locked_until < $1)` +
      (exclude.length ? ` AND endpoint_id NOT IN (${exclude.map((_, i) => `$${i + first}`).join(', ')})` : '');
    // Look before opening a claim transaction: most wake-ups (every committed event) find nothing
    // due, and on SQLite the claim would otherwise queue for the single write lock.
    const [due] = await this.db.select(`SELECT id FROM webhook_deliveries WHERE ${dueSql(2)} LIMIT 1`, [this.clock.now(), ...exclude]);
    if (!due) return [];
    return this.db.transaction(async (t) => {
      const now = this.clock.now();
      const scan = Math.min(Math.max(limit * 4, 16), 500);
      const candidates = await this.db.select<{ id: string; endpoint_id: string }>(
        `SELECT id, endpoint_id FROM webhook_deliveries WHERE ${dueSql(2)} ORDER BY next_attempt_at, id LIMIT ${scan}${pg ? ' FOR UPDATE SKIP LOCKED' : ''}`,
        [now, ...exclude],
        t,
      );
      const taken = new Map<string, number>();
      const ids: string[] = [];
      for (const c of candidates) {
        if (ids.length >= limit) break;
        const used = taken.get(c.endpoint_id) ?? 0;
        if (used >= room(c.endpoint_id)) continue;
        taken.set(c.endpoint_id, used + 1);
        ids.push(c.id);
      }
      if (ids.length === 0) return [];
      const token = randomBase62(24);
      const list = ids.map((_, i) => `$${i + 4}`).join(', ');
      await this.db.execute(
        `UPDATE webhook_deliveries SET attempts = attempts + 1, locked_until = $1, lock_token = $2,
                first_attempt_at = COALESCE(first_attempt_at, $3), updated_at = $3
          WHERE id IN (${list}) AND status = 'pending' AND (locked_until IS NULL OR locked_until < $3)`,
        [new Date(now.getTime() + this.options.leaseMs), token, now, ...ids],
        t,
      );
      const rows = await this.db.select(
        `SELECT d.id, d.account_id, d.mode, d.endpoint_id, d.event_id, d.event_type, d.payload, d.attempts, d.first_attempt_at,
                e.url, e.secret_sealed, e.status AS endpoint_status, e.deleted_at AS endpoint_deleted_at
           FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
          WHERE d.id IN (${ids.map((_, i) => `$${i + 2}`).join(', ')}) AND d.lock_token = $1`,
        [token, ...ids],
        t,
      );
      return rows.map((r) => ({
        id: r.id as string,
        accountId: r.account_id as string,
        mode: r.mode as string,
        endpointId: r.endpoint_id as string,
        eventId: r.event_id as string,
        eventType: r.event_type as string,
        payload: r.payload as string,
        attempt: Number(r.attempts),
        firstAttemptAt: readTime(r.first_attempt_at) ?? now,
        lockToken: token,
        endpoint: {
          url: r.url as string,
          secretSealed: r.secret_sealed as string,
          status: r.endpoint_status as string,
          deleted: r.endpoint_deleted_at !== null && r.endpoint_deleted_at !== undefined,
        },
      }));
    });
  }

  /** Sends one claimed delivery and records the outcome. Never throws for a receiver's failure. */
  async deliver(c: ClaimedDelivery): Promise<DeliveryResult> {
    if (c.endpoint.deleted || c.endpoint.status !== 'enabled') {
      await this.abandonClaimed(c, c.endpoint.deleted ? 'endpoint deleted' : 'endpoint disabled');
      return { deliveryId: c.id, attempt: c.attempt - 1, status: 'abandoned', outcome: null, nextAttemptAt: null };
    }
    let outcome: DeliveryOutcome;
    let secret: string | undefined;
    try {
      secret = this.endpoints.openSecret(c.endpoint.secretSealed);
    } catch (err) {
      this.logger.error({ deliveryId: c.id, endpointId: c.endpointId, err: errorForLog(err) }, 'webhook secret could not be opened');
    }
    if (secret === undefined) {
      outcome = { delivered: false, statusCode: null, latencyMs: 0, error: 'endpoint secret could not be read', retryAfterMs: null, gone: false };
    } else {
      outcome = await deliverWebhook({
        url: c.endpoint.url,
        body: c.payload,
        headers: buildDeliveryHeaders(secret, c.payload, c.eventId, c.attempt),
        timeoutMs: this.options.timeoutMs,
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
    else if (outcome.gone) status = 'abandoned';
    else {
      nextAttemptAt = this.options.retry.nextAttemptAt(c.attempt, c.firstAttemptAt, now, outcome.retryAfterMs);
      status = nextAttemptAt ? 'pending' : 'failed';
    }
    const error = outcome.error ? outcome.error.slice(0, MAX_ERROR) : null;
    await this.db.transaction(async (t) => {
      const owned = await this.db.execute(
        `UPDATE webhook_deliveries
            SET status = $1, next_attempt_at = COALESCE($2, next_attempt_at), last_status_code = $3, last_error = $4, last_latency_ms = $5,
                delivered_at = $6, locked_until = NULL, lock_token = NULL, updated_at = $7
          WHERE id = $8 AND lock_token = $9 AND status = 'pending'`,
        [status, nextAttemptAt, outcome.statusCode, error, Math.round(outcome.latencyMs), outcome.delivered ? now : null, now, c.id, c.lockToken],
        t,
      );
      if (owned !== 1) {
        // The lease ran out (or the endpoint was disabled) while we were sending; the attempt is still logged.
        this.logger.warn({ deliveryId: c.id, attempt: c.attempt }, 'webhook delivery settled after its claim was lost');
      }
      await this.db.execute(
        `INSERT INTO webhook_attempts (id, account_id, mode, endpoint_id, delivery_id, event_id, event_type, attempt, succeeded, status_code, latency_ms, error, next_retry_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
        [
          `wha_${randomBase62(24)}`, c.accountId, c.mode, c.endpointId, c.id, c.eventId, c.eventType, c.attempt, outcome.delivered,
          outcome.statusCode, Math.round(outcome.latencyMs), error, owned === 1 ? nextAttemptAt : null, now,
        ],
        t,
      );
      if (outcome.gone) await this.endpoints.disableGone(t, { accountId: c.accountId, mode: c.mode }, c.endpointId, now);
    });
    if (!outcome.delivered) {
      this.logger.info(
        { deliveryId: c.id, endpointId: c.endpointId, eventId: c.eventId, attempt: c.attempt, statusCode: outcome.statusCode, error, status, nextAttemptAt },
        'webhook delivery attempt failed',
      );
    }
    return { deliveryId: c.id, attempt: c.attempt, status, outcome, nextAttemptAt };
  }

  /** The endpoint was disabled or deleted after the delivery was queued: nothing is sent. */
  private async abandonClaimed(c: ClaimedDelivery, reason: string): Promise<void> {
    const now = this.clock.now();
    await this.db.transaction((t) =>
      this.db.execute(
        `UPDATE webhook_deliveries SET status = 'abandoned', attempts = attempts - 1, last_error = $1, locked_until = NULL, lock_token = NULL, updated_at = $2
          WHERE id = $3 AND lock_token = $4 AND status = 'pending'`,
        [reason, now, c.id, c.lockToken],
        t,
      ),
    );
  }
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
