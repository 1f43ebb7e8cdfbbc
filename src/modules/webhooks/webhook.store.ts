import { Op, type Transaction } from 'sequelize';
import type { z } from 'zod';
import { Params } from '../../db/params';
import type { Database } from '../../db/database';
import { databaseNowPlusSql, isoTime, readBool, readJson, readTime } from '../../db/database';
import { LeasedOutbox, outboxDueSql, type LeasedOutboxTable } from '../../db/leased-outbox';
import { Filter, groupBy, likePattern, listPage, newestPerParent, pagePerParent } from '../../db/list';
import type { Clock } from '../../core/clock';
import { DomainError } from '../../core/errors';
import { randomBase62 } from '../../core/ids';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';
import type { BatchedEvent } from '../events/event.service';
import { eventJsonSql, type ApiEvent } from '../events/event.store';
import type { listAttemptsInput, listEndpointsInput } from './webhook.inputs';
import { WebhookDeliveryModel } from './webhook-delivery.model';

type Scope = { accountId: string; mode: string };

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

/** An endpoint's sealed signing secrets: the replaced one is used until `previousExpiresAt`. */
export interface SealedSecrets {
  current: string;
  previous: string | null;
  previousExpiresAt: Date | null;
}

/** The sealed secrets a delivery sent at `now` is signed with: the replaced one only while its overlap lasts. */
export function secretsInUse(secrets: SealedSecrets, now: Date): { current: string; previous: string | null } {
  const inOverlap = secrets.previous !== null && secrets.previousExpiresAt !== null && secrets.previousExpiresAt.getTime() > now.getTime();
  return { current: secrets.current, previous: inOverlap ? secrets.previous : null };
}

/** A delivery this worker has leased, with what it needs to send it (its endpoint's secrets too: no read per delivery). */
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
  endpoint: { url: string; secrets: SealedSecrets; status: string; deleted: boolean; events: string[]; goneSince: Date | null };
}

/** What one attempt made of its delivery, as `settleClaim` writes it. */
export interface SettleWrite {
  status: DeliveryStatus;
  nextAttemptAt: Date | null;
  statusCode: number | null;
  error: string | null;
  latencyMs: number;
  deliveredAt: Date | null;
  now: Date;
}

/** An attempt log row. */
export interface AttemptWrite {
  accountId: string;
  mode: string;
  endpointId: string;
  deliveryId: string;
  eventId: string;
  eventType: string;
  attempt: number;
  succeeded: boolean;
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
  nextRetryAt: Date | null;
  createdAt: Date;
}

/** A raw endpoint row of a list page. */
export interface EndpointRow {
  id: string;
  account_id: string;
  mode: string;
  url: string;
  description: string | null;
  events: string;
  secret_sealed: string;
  status: string;
  disabled_reason: string | null;
  created_at: unknown;
  updated_at: unknown;
  deleted_at?: unknown;
}

const ENDPOINT_COLUMNS = 'id, account_id, mode, url, description, events, secret_sealed, status, disabled_reason, created_at, updated_at';

/**
 * An attempt's `next_retry_at` as it stands now, not as the attempt left it: none after a 2xx,
 * and none while its endpoint is disabled or deleted (its deliveries are held or given up). The
 * delivery's latest attempt shows when the delivery is due next (enabling makes a held one due
 * at once), or none once it is no longer pending; an earlier attempt keeps when the retry after
 * it was due. Two primary-key probes per row of a page.
 */
const NEXT_RETRY_AT = `(SELECT CASE
      WHEN webhook_attempts.succeeded OR e.status <> 'enabled' OR e.deleted_at IS NOT NULL THEN NULL
      WHEN webhook_attempts.attempt < d.attempts THEN webhook_attempts.next_retry_at
      WHEN d.status = 'pending' THEN d.next_attempt_at
    END
    FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
   WHERE d.id = webhook_attempts.delivery_id) AS next_retry_at`;

const ATTEMPT_COLUMNS =
  `id, mode, endpoint_id, delivery_id, event_id, event_type, attempt, succeeded, status_code, latency_ms, error, ${NEXT_RETRY_AT}, created_at`;

/** Rows each purge transaction deletes at most. */
const PURGE_BATCH = 1000;

/**
 * The outbox statements shared with the mail outbox (LeasedOutbox): the due condition, the lease
 * on the database's clock, renewal. Leases are measured on the database's clock, never an
 * instance's: instances compare each other's leases, and one whose clock runs ahead would take a
 * live lease (or, behind, leave a dead one alone). Business time (when an attempt is due, the
 * delivery window, the gone window) stays on the caller's Clock, which tests drive. The claim
 * itself is this store's own: round-robin per endpoint, which the shared oldest-first claim is not.
 */
// `columns` is unused here: the claim is this store's own.
const OUTBOX: LeasedOutboxTable = { table: 'webhook_deliveries', owed: 'pending', alsoLeased: ['held'], columns: 'id' };

/** A row that may be claimed now ($1: business now). */
const dueSql = (dialect: Database['dialect'], d: string) => outboxDueSql(dialect, OUTBOX, d, '$1');

/**
 * The endpoints that have pending rows: one probe of webhook_deliveries_pending_idx each (a loose
 * index scan). Ordered as that index is (endpoint_id, next_attempt_at): ordered by endpoint_id
 * alone, the probe could as well be answered by webhook_deliveries_endpoint_idx (endpoint_id,
 * status), which PostgreSQL took, and whose first pending entry comes after every delivered
 * ('delivered' < 'pending') and failed row of the endpoint: a claim then read through all the
 * endpoint's past deliveries, slower as they grew.
 */
const pendingEndpoints = (dialect: Database['dialect']) => {
  // SQLite, without statistics, would rather walk (status, updated_at) and sort every pending row.
  const indexed = dialect === 'sqlite' ? ' INDEXED BY webhook_deliveries_pending_idx' : '';
  return `pending_endpoint(endpoint_id) AS (
    SELECT (SELECT endpoint_id FROM webhook_deliveries${indexed} WHERE status = 'pending' ORDER BY endpoint_id, next_attempt_at LIMIT 1)
    UNION ALL
    SELECT (SELECT q.endpoint_id FROM webhook_deliveries q${indexed} WHERE q.status = 'pending' AND q.endpoint_id > p.endpoint_id ORDER BY q.endpoint_id, q.next_attempt_at LIMIT 1)
      FROM pending_endpoint p WHERE p.endpoint_id IS NOT NULL
  )`;
};

const CLAIMED_COLUMNS = `d.id, d.account_id, d.mode, d.endpoint_id, d.event_id, d.event_type, d.payload, d.attempts, d.first_attempt_at,
       e.url, e.secret_sealed, e.previous_secret_sealed, e.previous_secret_expires_at, e.status AS endpoint_status, e.deleted_at AS endpoint_deleted_at, e.events AS endpoint_events, e.gone_since AS endpoint_gone_since`;

/*
 * Claims: $1 business now, $2 how many, $3 JSON [{endpoint_id, used}] of this worker's deliveries
 * in flight, $4 per-endpoint concurrency, $5 lease in ms, $6 the claim's token. Each endpoint's
 * oldest due rows are ranked 1, 2, … after the ones it already has in flight, and the claim takes
 * the lowest ranks first: round-robin over endpoints, oldest first within a round. The chosen rows
 * are updated through the primary key (`= ANY (ARRAY(…))`, an index condition): joined to them
 * instead, the prepared statement's generic plan, guessing a tenth of the table for `LIMIT $2`,
 * hash-joined a sequential scan of every delivery ever made, on each claim.
 */
const CLAIM_PG = `WITH RECURSIVE ${pendingEndpoints('postgres')},
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
   SET attempts = d.attempts + 1, locked_until = ${databaseNowPlusSql('postgres', '$5')}, lock_token = $6,
       first_attempt_at = COALESCE(d.first_attempt_at, $1), updated_at = $1
  FROM webhook_endpoints e
 WHERE d.id = ANY (ARRAY(SELECT id FROM chosen)) AND e.id = d.endpoint_id
RETURNING ${CLAIMED_COLUMNS}`;

/** SQLite has no LATERAL: each endpoint's due rows are walked one index probe at a time instead. */
const FAIR_DUE_SQLITE = `WITH RECURSIVE ${pendingEndpoints('sqlite')},
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

const ANY_DUE_SQLITE = `${FAIR_DUE_SQLITE} SELECT id FROM ranked WHERE turn <= $4 LIMIT $2`;

const CLAIM_SQLITE = `${FAIR_DUE_SQLITE}
UPDATE webhook_deliveries
   SET attempts = attempts + 1, locked_until = ${databaseNowPlusSql('sqlite', '$5')}, lock_token = $6,
       first_attempt_at = COALESCE(first_attempt_at, $1), updated_at = $1
 WHERE id IN (SELECT id FROM ranked WHERE turn <= $4 ORDER BY turn, next_attempt_at, id LIMIT $2)`;

const CLAIMED_SQLITE = `SELECT ${CLAIMED_COLUMNS} FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE d.lock_token = $1`;

/** Still ours (our token) while pending, or held since it was claimed: a held row stays held. */
const SETTLE = `UPDATE webhook_deliveries
            SET status = CASE WHEN status = 'held' AND $1 = 'pending' THEN 'held' ELSE $1 END,
                next_attempt_at = COALESCE($2, next_attempt_at), last_status_code = $3, last_error = $4, last_latency_ms = $5,
                delivered_at = $6, locked_until = NULL, lock_token = NULL, updated_at = $7
          WHERE id = $8 AND lock_token = $9 AND status IN ('pending', 'held')
         RETURNING status`;

const LATE_DELIVERED = `UPDATE webhook_deliveries
                SET status = 'delivered', last_status_code = $1, last_error = NULL, last_latency_ms = $2, delivered_at = $3,
                    locked_until = NULL, lock_token = NULL, updated_at = $3
              WHERE id = $4 AND status <> 'delivered'`;

/*
 * Settling a batch of outcomes: $1 JSON rows of SETTLE_INPUT, one per delivery (never two of one
 * delivery). Each delivery is settled as SETTLE settles one, under the same guard (our token, still
 * pending or held); the rows that are not (their claim was lost) are left alone and get no attempt
 * row here: the caller settles them one by one, as before.
 */
const SETTLE_INPUT = 'id text, lock_token text, status text, next_attempt_at timestamptz, status_code integer, error text, latency_ms integer, '
  + 'delivered_at timestamptz, at timestamptz, attempt_id text, account_id text, mode text, endpoint_id text, event_id text, event_type text, attempt integer, succeeded boolean';

const SETTLE_SET = (d: string, i: string) => `status = CASE WHEN ${d}.status = 'held' AND ${i}.status = 'pending' THEN 'held' ELSE ${i}.status END,
       next_attempt_at = COALESCE(${i}.next_attempt_at, ${d}.next_attempt_at), last_status_code = ${i}.status_code, last_error = ${i}.error,
       last_latency_ms = ${i}.latency_ms, delivered_at = ${i}.delivered_at, locked_until = NULL, lock_token = NULL, updated_at = ${i}.at`;

const ATTEMPT_INSERT_COLUMNS = 'id, account_id, mode, endpoint_id, delivery_id, event_id, event_type, attempt, succeeded, status_code, latency_ms, error, next_retry_at, created_at';

/**
 * PostgreSQL: the deliveries and their attempt rows in one statement; an attempt of a delivery
 * held meanwhile shows no retry time. The ids as an array are an index condition: joined on
 * `d.id = i.id` alone, the planner (counting on json_to_recordset's 100 rows) hash-joined a
 * sequential scan of the table, 3.2 ms a batch of 8 against 4,650 rows, growing with the table.
 * A row another transaction has locked (an endpoint being disabled holds its deliveries, a lease
 * renewal) is skipped, not waited for: a statement locking many rows while waiting for others
 * could deadlock with those, which lock many too. The skipped row is settled alone, as a lost
 * claim is, and waits there.
 */
const SETTLE_BATCH_PG = `WITH input AS MATERIALIZED (SELECT * FROM json_to_recordset($1::json) AS i(${SETTLE_INPUT})),
  free AS (
    SELECT d.id FROM webhook_deliveries d WHERE d.id = ANY (ARRAY(SELECT id FROM input)) ORDER BY d.id FOR UPDATE SKIP LOCKED),
  settled AS (
    UPDATE webhook_deliveries d SET ${SETTLE_SET('d', 'i')}
      FROM input i, free f
     WHERE d.id = f.id AND d.id = i.id AND d.lock_token = i.lock_token AND d.status IN ('pending', 'held')
    RETURNING d.id, d.status),
  logged AS (
    INSERT INTO webhook_attempts (${ATTEMPT_INSERT_COLUMNS})
    SELECT i.attempt_id, i.account_id, i.mode, i.endpoint_id, i.id, i.event_id, i.event_type, i.attempt, i.succeeded, i.status_code, i.latency_ms, i.error,
           CASE WHEN s.status = 'held' THEN NULL ELSE i.next_attempt_at END, i.at
      FROM input i JOIN settled s ON s.id = i.id)
SELECT id, status FROM settled`;

/** SQLite's rows of $1 (JSON), as json_to_recordset gives them on PostgreSQL. */
const sqliteRecordset = (columns: string) => `(SELECT ${columns.split(',').map((c) => c.trim().split(' ')[0]).map((c) => `json_extract(value, '$.${c}') AS ${c}`).join(', ')} FROM json_each($1))`;

/**
 * SQLite (no data-modifying CTEs): the deliveries, then the attempt rows of those settled, in one
 * transaction. `+d.status` keeps the planner off the status index: walking every pending row and
 * scanning the batch for each took 60-140 ms a batch of 16 against 4,000 pending rows, where
 * looking each row of the batch up by id takes well under one.
 */
const SETTLE_BATCH_SQLITE = `UPDATE webhook_deliveries AS d SET ${SETTLE_SET('d', 'i')}
  FROM ${sqliteRecordset(SETTLE_INPUT)} AS i
 WHERE d.id = i.id AND d.lock_token = i.lock_token AND +d.status IN ('pending', 'held')
RETURNING id, status`;

const ATTEMPT_BATCH_SQLITE = `INSERT INTO webhook_attempts (${ATTEMPT_INSERT_COLUMNS})
SELECT attempt_id, account_id, mode, endpoint_id, id, event_id, event_type, attempt, succeeded, status_code, latency_ms, error, next_attempt_at, at
  FROM ${sqliteRecordset(SETTLE_INPUT)}`;

/** One outcome of a batch: the claim, what its attempt made of the delivery, and whether the receiver took it. */
export interface BatchedSettle {
  c: ClaimedDelivery;
  w: SettleWrite;
  succeeded: boolean;
}

const INSERT_ATTEMPT = `INSERT INTO webhook_attempts (id, account_id, mode, endpoint_id, delivery_id, event_id, event_type, attempt, succeeded, status_code, latency_ms, error, next_retry_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`;

const RELEASE_UNSENT = `UPDATE webhook_deliveries SET status = $1, attempts = attempts - 1, last_error = $2, locked_until = NULL, lock_token = NULL, updated_at = $3
          WHERE id = $4 AND lock_token = $5 AND status IN ('pending', 'held')`;

/**
 * The type of a test delivery (`POST /v1/webhook-endpoints/{id}/test`): sent to the one endpoint
 * asked for, whatever it subscribes to, tried once, and never an event row.
 */
export const PING_EVENT_TYPE = 'ping';

/** What a delivery sends: the event as the API shows it. */
const deliveryPayload = (event: ApiEvent): string => JSON.stringify({
  id: event.id, object: 'event', type: event.type, createdAt: event.createdAt, livemode: event.livemode, data: event.data,
});

/** The start of one event's delivery ids (whd_ + 20 random characters); each endpoint's id's random part ends it. */
const deliveryIdPrefix = (): string => `whd_${randomBase62(20)}`;

/**
 * Where the webhooks module reads and writes its tables (webhook_endpoints, webhook_deliveries,
 * webhook_attempts). The outbox insert (in the event's transaction, or as a part of the
 * PostgreSQL batch statement) and the claim are measured hot paths: one statement each (on
 * SQLite the claim looks first, then writes under the single writer lock). The dialects differ
 * only here. Times are the caller's (its Clock); leases are on the database's clock.
 */
export class WebhookStore {
  private readonly outbox: LeasedOutbox;

  constructor(private readonly db: Database) {
    this.outbox = new LeasedOutbox(db, OUTBOX);
  }

  /**
   * One statement inserts a delivery for every enabled endpoint of the account and mode
   * subscribed to the event's type, in the event's transaction `t`. Row ids: whd_ + 20 random
   * characters shared by this batch + the endpoint id's random part. Returns how many.
   */
  async insertDeliveries(t: Transaction, scope: Scope, event: ApiEvent, now: Date): Promise<number> {
    const payload = deliveryPayload(event);
    const p = new Params();
    // Parameters in a SELECT list have no column to take a type from on PostgreSQL.
    const pg = this.db.dialect === 'postgres';
    const text = (v: string) => (pg ? p.add(v, 'text') : `CAST(${p.add(v)} AS TEXT)`);
    const time = pg ? p.add(now, 'timestamptz') : p.add(now);
    const sql = `INSERT INTO webhook_deliveries
         (id, account_id, mode, endpoint_id, event_id, event_type, payload, status, attempts, next_attempt_at, created_at, updated_at)
       SELECT ${text(deliveryIdPrefix())} || substr(e.id, 4), e.account_id, e.mode, e.id, ${text(event.id)}, ${text(event.type)}, ${text(payload)},
              'pending', 0, ${time}, ${time}, ${time}
         FROM webhook_endpoints e
        WHERE e.account_id = ${p.add(scope.accountId)} AND e.mode = ${p.add(scope.mode)} AND e.status = 'enabled' AND e.deleted_at IS NULL
          AND (e.events LIKE '%"*"%' OR e.events LIKE ${p.add(likePattern(`"${event.type}"`))} ESCAPE '\\')`;
    return this.db.execute(sql, p.values, t);
  }

  /**
   * A test delivery of `event` (type ping) to one endpoint of the scope, due now, in `t`; only
   * while the endpoint is enabled and not deleted. Its id, or null when no such endpoint.
   */
  async insertPing(t: Transaction, scope: Scope, endpointId: string, event: ApiEvent, now: Date): Promise<string | null> {
    const id = `${deliveryIdPrefix()}${endpointId.slice(3)}`;
    const p = new Params();
    // Parameters in a SELECT list have no column to take a type from on PostgreSQL.
    const pg = this.db.dialect === 'postgres';
    const text = (v: string) => (pg ? p.add(v, 'text') : `CAST(${p.add(v)} AS TEXT)`);
    const time = pg ? p.add(now, 'timestamptz') : p.add(now);
    const inserted = await this.db.execute(
      `INSERT INTO webhook_deliveries
         (id, account_id, mode, endpoint_id, event_id, event_type, payload, status, attempts, next_attempt_at, created_at, updated_at)
       SELECT ${text(id)}, e.account_id, e.mode, e.id, ${text(event.id)}, ${text(event.type)}, ${text(deliveryPayload(event))}, 'pending', 0, ${time}, ${time}, ${time}
         FROM webhook_endpoints e
        WHERE e.id = ${p.add(endpointId)} AND e.account_id = ${p.add(scope.accountId)} AND e.mode = ${p.add(scope.mode)}
          AND e.status = 'enabled' AND e.deleted_at IS NULL`,
      p.values,
      t,
    );
    return inserted === 1 ? id : null;
  }

  /**
   * The same inserts as a data-modifying CTE body of one PostgreSQL statement, for each event the
   * CTE `eventCte` inserted (ids as in `insertDeliveries`; the payload is the event's JSON,
   * built from its row). The text does not depend on the number of events.
   */
  deliveriesBatchPart(events: BatchedEvent[], p: Params, eventCte: string, now: Date): string {
    const rows = events.map(({ event }) => ({ event_id: event.id, prefix: deliveryIdPrefix() }));
    const time = p.add(now, 'timestamptz');
    return `INSERT INTO webhook_deliveries
         (id, account_id, mode, endpoint_id, event_id, event_type, payload, status, attempts, next_attempt_at, created_at, updated_at)
       SELECT v.prefix || substr(e.id, 4), e.account_id, e.mode, e.id, ev.id, ev.type, ${eventJsonSql('ev')}, 'pending', 0, ${time}, ${time}, ${time}
         FROM json_to_recordset(${p.add(this.db.jsonParam(rows), 'json')}) AS v(event_id text, prefix text)
         JOIN ${eventCte} ev ON ev.id = v.event_id
         JOIN webhook_endpoints e ON e.account_id = ev.account_id AND e.mode = ev.mode AND e.status = 'enabled' AND e.deleted_at IS NULL
          AND (e.events LIKE '%"*"%' OR e.events LIKE '%"' || replace(replace(replace(ev.type, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '"%' ESCAPE '\\')`;
  }

  /**
   * Leases up to `limit` due deliveries (due on `clock`), round-robin per endpoint after what
   * `inFlight` says this worker already sends per endpoint, at most `perEndpoint` each; the
   * attempt counter moves on at claim time. One statement on PostgreSQL (SKIP LOCKED shares the
   * rows between instances); on SQLite a cheap look first, then the write under the writer lock.
   */
  async claim(opts: { clock: Clock; limit: number; inFlight: ReadonlyMap<string, number>; perEndpoint: number; leaseMs: number }): Promise<ClaimedDelivery[]> {
    const { clock, limit, perEndpoint } = opts;
    if (limit <= 0) return [];
    const busy = this.db.jsonParam([...opts.inFlight].map(([endpoint_id, used]) => ({ endpoint_id, used })));
    const leaseMs = Math.ceil(opts.leaseMs);
    const token = randomBase62(24);
    if (this.db.dialect === 'postgres') {
      const rows = await this.db.select(CLAIM_PG, [clock.now(), limit, busy, perEndpoint, leaseMs, token]);
      return rows.map((r) => claimedDelivery(r, token));
    }
    // Most wake-ups (every committed event) find nothing due: look before queueing for the write lock.
    const [due] = await this.db.select(ANY_DUE_SQLITE, [clock.now(), 1, busy, perEndpoint]);
    if (!due) return [];
    return this.db.transaction(async (t) => {
      const claimed = await this.db.execute(CLAIM_SQLITE, [clock.now(), limit, busy, perEndpoint, leaseMs, token], t);
      if (claimed === 0) return [];
      return (await this.db.select(CLAIMED_SQLITE, [token], t)).map((r) => claimedDelivery(r, token));
    });
  }

  /** The pending deliveries, due and waiting for a retry (metrics). */
  async queueDepth(now: Date): Promise<{ due: number; scheduled: number; oldestDueAt: Date | null }> {
    return this.outbox.depth(now);
  }

  /** Extends the leases of the claims `tokens` still pending or held (an endpoint disabled while they are in flight) to `leaseMs` from now (database time). */
  async renewLeases(tokens: string[], leaseMs: number): Promise<number> {
    return this.outbox.renew(tokens, leaseMs);
  }

  /**
   * Records an attempt's outcome on its delivery while the claim is still ours (a row held
   * meanwhile stays held unless this attempt ends it) and ends the lease. Returns the status
   * written, or null when the claim was not ours any more.
   */
  async settleClaim(t: Transaction, c: ClaimedDelivery, w: SettleWrite): Promise<DeliveryStatus | null> {
    const [row] = await this.db.select<{ status: DeliveryStatus }>(
      SETTLE,
      [w.status, w.nextAttemptAt, w.statusCode, w.error, w.latencyMs, w.deliveredAt, w.now, c.id, c.lockToken],
      t,
    );
    return row ? row.status : null;
  }

  /**
   * Settles every delivery of `items` whose claim is still ours and logs their attempts: one
   * statement on PostgreSQL, one transaction of two (deliveries, attempts) on SQLite. Returns
   * per item the status written, or null where the claim was not ours any more, or (PostgreSQL)
   * another transaction held the row: nothing written for it, the caller settles it alone. Items
   * must name distinct deliveries.
   */
  async settleBatch(items: readonly BatchedSettle[]): Promise<Array<DeliveryStatus | null>> {
    if (items.length === 0) return [];
    const sqlite = this.db.dialect === 'sqlite';
    // Times as each database stores them (SQLite compares its text form).
    const time = (d: Date | null) => (d === null ? null : sqlite ? this.db.encode(d) : d.toISOString());
    const rows = items.map(({ c, w, succeeded }) => ({
      id: c.id, lock_token: c.lockToken, status: w.status, next_attempt_at: time(w.nextAttemptAt), status_code: w.statusCode, error: w.error,
      latency_ms: w.latencyMs, delivered_at: time(w.deliveredAt), at: time(w.now), attempt_id: `wha_${randomBase62(24)}`,
      account_id: c.accountId, mode: c.mode, endpoint_id: c.endpointId, event_id: c.eventId, event_type: c.eventType, attempt: c.attempt,
      succeeded: sqlite ? (succeeded ? 1 : 0) : succeeded,
    }));
    let settled: Array<{ id: string; status: DeliveryStatus }>;
    if (!sqlite) {
      settled = await this.db.select(SETTLE_BATCH_PG, [this.db.jsonParam(rows)]);
    } else {
      settled = await this.db.transaction(async (t) => {
        const done = await this.db.select<{ id: string; status: DeliveryStatus }>(SETTLE_BATCH_SQLITE, [this.db.jsonParam(rows)], t);
        const status = new Map(done.map((r) => [r.id, r.status]));
        const attempts = rows
          .filter((r) => status.has(r.id))
          .map((r) => (status.get(r.id) === 'held' ? { ...r, next_attempt_at: null } : r));
        if (attempts.length > 0) await this.db.execute(ATTEMPT_BATCH_SQLITE, [this.db.jsonParam(attempts)], t);
        return done;
      });
    }
    const status = new Map(settled.map((r) => [r.id, r.status]));
    return items.map(({ c }) => status.get(c.id) ?? null);
  }

  /** Ends the lease of a claim whose row was given up while it was sent; true when the token was still on it. */
  async dropLease(t: Transaction, c: ClaimedDelivery): Promise<boolean> {
    return (await this.db.execute('UPDATE webhook_deliveries SET locked_until = NULL, lock_token = NULL WHERE id = $1 AND lock_token = $2', [c.id, c.lockToken], t)) === 1;
  }

  /**
   * A 2xx answered to a claim that was lost or given up: the receiver has the event, so the row
   * is delivered and no later attempt sends it again. True when this changed the row.
   */
  async recordLateDelivery(t: Transaction, deliveryId: string, w: { statusCode: number | null; latencyMs: number; now: Date }): Promise<boolean> {
    return (await this.db.execute(LATE_DELIVERED, [w.statusCode, w.latencyMs, w.now, deliveryId], t)) === 1;
  }

  async deliveryStatus(t: Transaction, deliveryId: string): Promise<DeliveryStatus | null> {
    const [row] = await this.db.select<{ status: DeliveryStatus }>('SELECT status FROM webhook_deliveries WHERE id = $1', [deliveryId], t);
    return row ? row.status : null;
  }

  async insertAttempt(t: Transaction, a: AttemptWrite): Promise<void> {
    await this.db.execute(INSERT_ATTEMPT, [
      `wha_${randomBase62(24)}`, a.accountId, a.mode, a.endpointId, a.deliveryId, a.eventId, a.eventType, a.attempt, a.succeeded,
      a.statusCode, a.latencyMs, a.error, a.nextRetryAt, a.createdAt,
    ], t);
  }

  /** Gives a claim back unsent (the attempt is not counted): `held` until its endpoint is enabled, or `abandoned`. */
  async releaseUnsent(c: ClaimedDelivery, status: 'held' | 'abandoned', reason: string, now: Date): Promise<void> {
    await this.db.transaction((t) => this.db.execute(RELEASE_UNSENT, [status, reason, now, c.id, c.lockToken], t));
  }

  /** Deletes attempts, and finished deliveries, last changed before `cutoff` (pending and held ones stay). */
  async purge(cutoff: Date): Promise<{ deliveries: number; attempts: number }> {
    // Small batches, each its own transaction: other writers (SQLite's single lock) keep moving.
    const sweep = async (table: string, condition: string) => {
      let total = 0;
      for (;;) {
        const n = await this.db.transaction((t) =>
          this.db.execute(`DELETE FROM ${table} WHERE id IN (SELECT id FROM ${table} WHERE ${condition} LIMIT ${PURGE_BATCH})`, [cutoff], t),
        );
        total += n;
        if (n < PURGE_BATCH) return total;
      }
    };
    const attempts = await sweep('webhook_attempts', 'created_at < $1');
    const deliveries = await sweep('webhook_deliveries', "status IN ('delivered', 'failed', 'abandoned') AND updated_at < $1");
    return { deliveries, attempts };
  }

  /** The attempt log of an endpoint (deleted ones included). */
  async listAttempts<O extends ListOptions = Counted>(scope: Scope, endpointId: string, input: z.infer<typeof listAttemptsInput>, options?: O): Promise<PageFor<WebhookAttempt, O>> {
    const filter = new Filter({
      account_id: scope.accountId,
      mode: scope.mode,
      endpoint_id: endpointId,
      event_id: input.eventId,
    });
    attemptOutcome(filter, input.status);
    return listPage(this.db, {
      table: 'webhook_attempts', columns: ATTEMPT_COLUMNS, filter, params: input, sortColumns: { createdAt: 'created_at' }, toApi: toApiAttempt,
    }, options);
  }

  /** The same page of several endpoints' attempt logs (deleted endpoints included), in one statement (and one for the totals). */
  async listAttemptsFor<O extends ListOptions = Counted>(
    scope: Scope, endpointIds: readonly string[], input: z.infer<typeof listAttemptsInput>, options?: O,
  ): Promise<Map<string, PageFor<WebhookAttempt, O>>> {
    if (input.startingAfter !== undefined || input.endingBefore !== undefined) {
      // A cursor is an attempt of one endpoint's log: such a page is that endpoint's own keyset
      // page, read as its list reads it. Asked of several endpoints at once it is refused (the
      // cursor belongs to one of them), which also keeps a document's statements bounded.
      const ids = [...new Set(endpointIds)];
      if (ids.length > 1) {
        const param = input.startingAfter !== undefined ? 'after' : 'before';
        throw new DomainError('invalid_parameter', `A cursor pages one endpoint's log; read it under one endpoint (webhookEndpoint(id))`, param);
      }
      if (ids.length === 0) return new Map();
      return new Map([[ids[0], await this.listAttempts(scope, ids[0], input, options)]]);
    }
    const filter = new Filter({
      account_id: scope.accountId,
      mode: scope.mode,
      event_id: input.eventId,
    });
    attemptOutcome(filter, input.status);
    return pagePerParent(this.db, {
      table: 'webhook_attempts', columns: ATTEMPT_COLUMNS, filter, params: input, sortColumns: { createdAt: 'created_at' }, toApi: toApiAttempt,
      parentColumn: 'endpoint_id', parentIds: endpointIds, parentOf: (attempt) => attempt.endpointId,
    }, options);
  }

  /** The endpoints of the scope that are not deleted, each through `toApi`. */
  async listEndpoints<T, O extends ListOptions = Counted>(
    scope: Scope, input: z.infer<typeof listEndpointsInput>, toApi: (row: EndpointRow) => T, options?: O,
  ): Promise<PageFor<T, O>> {
    const filter = new Filter({ account_id: scope.accountId, mode: scope.mode }).anyOf('status', input.status).raw(() => 'deleted_at IS NULL');
    return listPage(this.db, {
      table: 'webhook_endpoints', columns: ENDPOINT_COLUMNS, filter, params: input, sortColumns: { createdAt: 'created_at' }, toApi,
    }, options);
  }

  /**
   * The sealed secrets a delivery sent at `now` is signed with: the replaced one only while its
   * overlap lasts. Null when there is no such endpoint.
   */
  async sealedSigningSecrets(endpointId: string, now: Date): Promise<{ current: string; previous: string | null } | null> {
    const [row] = await this.db.select<{ secret_sealed: string; previous_secret_sealed: string | null; previous_secret_expires_at: unknown }>(
      'SELECT secret_sealed, previous_secret_sealed, previous_secret_expires_at FROM webhook_endpoints WHERE id = $1',
      [endpointId],
    );
    if (!row) return null;
    return secretsInUse({ current: row.secret_sealed, previous: row.previous_secret_sealed, previousExpiresAt: readTime(row.previous_secret_expires_at) }, now);
  }

  /** Queued deliveries of the types the endpoint no longer subscribes to are not owed any more. */
  async abandonUnsubscribed(t: Transaction, endpointId: string, events: string[], now: Date): Promise<void> {
    await WebhookDeliveryModel.update(
      { status: 'abandoned', lastError: 'endpoint no longer subscribed to this event type', updatedAt: now },
      { where: { endpointId, status: { [Op.in]: ['pending', 'held'] }, eventType: { [Op.notIn]: [...events, PING_EVENT_TYPE] } }, transaction: t },
    );
  }

  /**
   * Queued deliveries of an endpoint that was disabled wait for it to be enabled again. Those in
   * flight are held too; their attempt still settles them (a 2xx as delivered, a failure held).
   */
  async holdPending(t: Transaction, endpointId: string, now: Date, reason: string): Promise<void> {
    await WebhookDeliveryModel.update({ status: 'held', lastError: reason, updatedAt: now }, { where: { endpointId, status: 'pending' }, transaction: t });
  }

  /**
   * Enabled again: held deliveries are due at once, each with a fresh retry window. The lease of
   * one still in flight is kept, so its attempt settles it as usual and it is not sent twice.
   */
  async requeueHeld(t: Transaction, endpointId: string, now: Date): Promise<void> {
    await WebhookDeliveryModel.update(
      { status: 'pending', nextAttemptAt: now, firstAttemptAt: null, lastError: null, updatedAt: now },
      { where: { endpointId, status: 'held' }, transaction: t },
    );
  }

  /** A deleted endpoint's queued and held deliveries are given up; ones in flight settle as not the owner. */
  async abandonPending(t: Transaction, endpointId: string, now: Date, reason: string): Promise<void> {
    await WebhookDeliveryModel.update(
      { status: 'abandoned', lastError: reason, updatedAt: now },
      { where: { endpointId, status: { [Op.in]: ['pending', 'held'] } }, transaction: t },
    );
  }

  /** Several attempts of the account and mode by id (primary key), in one statement whatever their number (GraphQL's `node`). */
  async findAttempts(scope: Scope, ids: readonly string[]): Promise<WebhookAttempt[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.select<Record<string, unknown>>(
      `SELECT ${ATTEMPT_COLUMNS} FROM webhook_attempts WHERE ${this.db.inJsonList('id', '$1')} AND account_id = $2 AND mode = $3`,
      [JSON.stringify([...new Set(ids)]), scope.accountId, scope.mode],
    );
    return rows.map(toApiAttempt);
  }

  /**
   * The newest attempts (at most `limit`) of each of several events, every endpoint's, in one
   * statement (GraphQL's `Event.deliveries`). No index leads with `event_id` yet: the statement
   * reads the scope's attempts (kept 30 days, see purge), not only the event's.
   */
  async attemptsForEvents(scope: Scope, eventIds: readonly string[], limit: number): Promise<Map<string, WebhookAttempt[]>> {
    const rows = await newestPerParent<Record<string, unknown>>(this.db, {
      columns: ATTEMPT_COLUMNS, from: 'webhook_attempts', parentColumn: 'event_id', accountId: scope.accountId, mode: scope.mode, parentIds: eventIds, limit,
    });
    return groupBy(rows.map(toApiAttempt), (a) => a.eventId);
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
      secrets: {
        current: r.secret_sealed as string,
        previous: (r.previous_secret_sealed as string | null) ?? null,
        previousExpiresAt: readTime(r.previous_secret_expires_at),
      },
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

/**
 * The attempts' `status` filter (succeeded, failed or both). Written `NOT succeeded` / `succeeded`
 * in the statement's text, as the partial index of failed attempts is (migration 0027), so both
 * databases see that the index holds every row asked for.
 */
function attemptOutcome(filter: Filter, status: ReadonlyArray<'succeeded' | 'failed'> | undefined): void {
  if (!status || status.length !== 1) return;
  filter.raw(() => (status[0] === 'failed' ? 'NOT succeeded' : 'succeeded'));
}
