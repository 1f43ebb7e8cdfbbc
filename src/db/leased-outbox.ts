import type { Transaction } from 'sequelize';
import { randomBase62 } from '../core/ids';
import { databaseNowSql, readTime, type Database, type Dialect } from './database';

/**
 * A durable outbox table whose rows workers claim under a lease: every such table (webhook
 * deliveries, mail) has the columns `id`, `status`, `attempts`, `next_attempt_at`,
 * `first_attempt_at`, `last_error`, `locked_until`, `lock_token` and `updated_at`.
 */
export interface LeasedOutboxTable {
  table: string;
  /** The status of rows still owed: claimable once due and not leased. */
  owed: string;
  /** Statuses a row may take while its claim is in flight (held webhook deliveries): their leases are renewed too. */
  alsoLeased?: readonly string[];
  /** The columns a claim returns (plain names of `table`). */
  columns: string;
}

export interface OutboxClaim<R> {
  /** Names this claim: settling and renewing need it, so a claim that lost its lease changes nothing. */
  lockToken: string;
  rows: R[];
}

/** What one attempt made of its row, as `settle` writes it. */
export interface OutboxSettle {
  /** The row's new status: `owed` again with `nextAttemptAt` for a retry. */
  status: string;
  nextAttemptAt: Date | null;
  lastError: string | null;
  now: Date;
  /** Further columns of the table to set (bound values). */
  set?: Record<string, unknown>;
}

/**
 * A row of `spec`'s table (as `alias`) that may be claimed now: owed, due on business time (the
 * placeholder `now`), and not leased on the database's clock. For statements written once per
 * dialect (a claim of its own, as webhook deliveries' round-robin one).
 */
export function outboxDueSql(dialect: Dialect, spec: LeasedOutboxTable, alias: string, now: string): string {
  return `${alias}.status = '${spec.owed}' AND ${alias}.next_attempt_at <= ${now} AND (${alias}.locked_until IS NULL OR ${alias}.locked_until < ${databaseNowSql(dialect)})`;
}

/**
 * The statements every leased outbox shares: a row due on the caller's clock and not leased
 * (leases on the database's clock), the claim of due rows in the order they fell due (one
 * statement with SKIP LOCKED on PostgreSQL, so instances share the rows; on SQLite a cheap look,
 * then the write under the single writer lock), lease renewal and settling under the claim's
 * token. Business time (when a row is due, the retry window) is the caller's Clock, which tests
 * drive; leases are the database's, since instances compare each other's and one whose clock
 * runs ahead would take a live lease.
 */
export class LeasedOutbox {
  constructor(private readonly db: Database, readonly spec: LeasedOutboxTable) {}

  /** The condition of a row (`alias`) that may be claimed now; `now` is the placeholder bound to business now. */
  due(alias: string, now: string): string {
    return outboxDueSql(this.db.dialect, this.spec, alias, now);
  }

  /**
   * Leases up to `limit` due rows for `leaseMs`, oldest due first, and counts the attempt on
   * them (so two claims of one row, after a lease ran out, never share an attempt number).
   */
  async claim<R = Record<string, unknown>>(opts: { now: Date; limit: number; leaseMs: number }): Promise<OutboxClaim<R>> {
    const lockToken = randomBase62(24);
    if (opts.limit <= 0) return { lockToken, rows: [] };
    const { table, columns } = this.spec;
    const leaseMs = Math.ceil(opts.leaseMs);
    const set = `attempts = attempts + 1, locked_until = ${this.db.nowPlusSql('$3')}, lock_token = $4,
                 first_attempt_at = COALESCE(first_attempt_at, $1), updated_at = $1`;
    if (this.db.dialect === 'postgres') {
      // The chosen rows by primary key (`= ANY (ARRAY(…))`, an index condition): joined instead,
      // the generic plan, guessing a tenth of the table for `LIMIT $2`, hash-joined a sequential
      // scan of every row the table ever held.
      const rows = await this.db.select<R>(
        `WITH chosen AS (
           SELECT o.id FROM ${table} o WHERE ${this.due('o', '$1')} ORDER BY o.next_attempt_at, o.id LIMIT $2 FOR UPDATE SKIP LOCKED
         )
         UPDATE ${table} SET ${set} WHERE ${table}.id = ANY (ARRAY(SELECT id FROM chosen))
         RETURNING ${qualified(table, columns)}`,
        [opts.now, opts.limit, leaseMs, lockToken],
      );
      return { lockToken, rows };
    }
    // Most rounds find nothing due: look before queueing for the write lock.
    const [any] = await this.db.select(`SELECT o.id FROM ${table} o WHERE ${this.due('o', '$1')} LIMIT 1`, [opts.now]);
    if (!any) return { lockToken, rows: [] };
    const rows = await this.db.transaction(async (t) => {
      const claimed = await this.db.execute(
        `UPDATE ${table} SET ${set}
          WHERE id IN (SELECT o.id FROM ${table} o WHERE ${this.due('o', '$1')} ORDER BY o.next_attempt_at, o.id LIMIT $2)`,
        [opts.now, opts.limit, leaseMs, lockToken],
        t,
      );
      if (claimed === 0) return [];
      return this.db.select<R>(`SELECT ${columns} FROM ${table} WHERE lock_token = $1`, [lockToken], t);
    });
    return { lockToken, rows };
  }

  /** Extends the leases of the claims `tokens` still in flight to `leaseMs` from now (database time); returns the rows renewed. */
  async renew(tokens: readonly string[], leaseMs: number): Promise<number> {
    if (tokens.length === 0) return 0;
    const statuses = [this.spec.owed, ...(this.spec.alsoLeased ?? [])].map((s) => `'${s}'`).join(', ');
    return this.db.execute(
      `UPDATE ${this.spec.table} SET locked_until = ${this.db.nowPlusSql('$2')}
        WHERE ${this.db.inJsonList('lock_token', '$1')} AND status IN (${statuses})`,
      [this.db.jsonParam([...tokens]), Math.ceil(leaseMs)],
    );
  }

  /**
   * The owed rows (metrics, at scrape time): how many are due at `now` (leased ones included) and
   * how many wait for a later retry, and when the oldest due one fell due. One statement, over
   * the owed rows only (each outbox's partial index holds just those).
   */
  async depth(now: Date): Promise<{ due: number; scheduled: number; oldestDueAt: Date | null }> {
    const [row] = await this.db.select<{ owed: number | string; due: number | string | null; first_due: unknown }>(
      `SELECT COUNT(*) AS owed, SUM(CASE WHEN next_attempt_at <= $1 THEN 1 ELSE 0 END) AS due, MIN(next_attempt_at) AS first_due
         FROM ${this.spec.table} WHERE status = '${this.spec.owed}'`,
      [now],
    );
    const owed = Number(row?.owed ?? 0);
    const due = Number(row?.due ?? 0);
    const first = readTime(row?.first_due);
    return { due, scheduled: owed - due, oldestDueAt: first && first.getTime() <= now.getTime() ? first : null };
  }

  /**
   * Records an attempt's outcome on row `id` and ends the lease, in `t`, while the claim is still
   * ours (our token, the row still owed). False when it was not: the lease ran out and another
   * claim took the row, or the row was settled meanwhile.
   */
  async settle(t: Transaction, id: string, lockToken: string, w: OutboxSettle): Promise<boolean> {
    const extra = Object.entries(w.set ?? {});
    const bind: unknown[] = [w.status, w.nextAttemptAt, w.lastError, w.now, id, lockToken, ...extra.map(([, v]) => v)];
    const sets = extra.map(([column, _], i) => `, ${column} = $${7 + i}`).join('');
    const changed = await this.db.execute(
      `UPDATE ${this.spec.table}
          SET status = $1, next_attempt_at = COALESCE($2, next_attempt_at), last_error = $3, locked_until = NULL, lock_token = NULL, updated_at = $4${sets}
        WHERE id = $5 AND lock_token = $6 AND status = '${this.spec.owed}'`,
      bind,
      t,
    );
    return changed === 1;
  }
}

function qualified(table: string, columns: string): string {
  return columns.split(',').map((c) => `${table}.${c.trim()}`).join(', ');
}
