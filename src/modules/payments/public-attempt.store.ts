import type { Transaction } from 'sequelize';
import { readTime, type Database } from '../../db/database';
import type { Mode } from '../../core/context';
import { PUBLIC_PAY_ATTEMPT_MOVES } from './public-attempt-states';

/** Which attempts a cap counts: the account and mode's in the window, or one target's (per address, or in all). */
export type AttemptScope =
  | { cap: 'account'; accountId: string; mode: Mode; since: Date }
  | { cap: 'target'; targetId: string; clientAddress: string | null; since: Date | null };

/** How many attempts count against each cap as an attempt sees them, itself included. */
export interface AttemptCounts {
  /** The account's `publicDeclinesPerHour`. */
  accountLimit: number;
  account: number;
  accountFailed: number;
  target: number;
  targetFailed: number;
}

function where(scope: AttemptScope, first: number): { sql: string; bind: unknown[] } {
  if (scope.cap === 'account') {
    return { sql: `account_id = $${first} AND mode = $${first + 1} AND created_at > $${first + 2}`, bind: [scope.accountId, scope.mode, scope.since] };
  }
  const bind: unknown[] = [scope.targetId];
  let sql = `target_id = $${first}`;
  if (scope.clientAddress !== null) {
    bind.push(scope.clientAddress);
    sql += ` AND client_address = $${first + bind.length - 1}`;
  }
  if (scope.since !== null) {
    bind.push(scope.since);
    sql += ` AND created_at > $${first + bind.length - 1}`;
  }
  return { sql, bind };
}

/**
 * The public pay attempts (migration 0020): three statements on a public pay's path (the
 * attempt's insert, the counts it sees, and its outcome), each bound and served by an index.
 */
export class PublicAttemptStore {
  constructor(private readonly db: Database) {}

  async insertRunning(row: { id: string; accountId: string; mode: Mode; targetId: string; clientAddress: string; createdAt: Date }): Promise<void> {
    await this.db.executeAlone(
      'INSERT INTO public_pay_attempts (id, account_id, mode, target_id, client_address, status, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
      [row.id, row.accountId, row.mode, row.targetId, row.clientAddress, PUBLIC_PAY_ATTEMPT_MOVES.rule('start').to, row.createdAt],
    );
  }

  /** Every cap's count in one statement (one snapshot), with the account's limit. */
  async counts(accountScope: Extract<AttemptScope, { cap: 'account' }>, targetScope: Extract<AttemptScope, { cap: 'target' }>): Promise<AttemptCounts> {
    const account = where(accountScope, 1);
    const target = where(targetScope, 1 + account.bind.length);
    const count = (w: string, failed: boolean) => `(SELECT COUNT(*) FROM public_pay_attempts WHERE ${w}${failed ? " AND status = 'failed'" : ''})`;
    const [row] = await this.db.select<Record<keyof AttemptCounts, number | string>>(
      `SELECT (SELECT public_declines_per_hour FROM accounts WHERE id = $1) AS "accountLimit",
              ${count(account.sql, false)} AS "account", ${count(account.sql, true)} AS "accountFailed",
              ${count(target.sql, false)} AS "target", ${count(target.sql, true)} AS "targetFailed"`,
      [...account.bind, ...target.bind],
    );
    return {
      accountLimit: Number(row.accountLimit), account: Number(row.account), accountFailed: Number(row.accountFailed),
      target: Number(row.target), targetFailed: Number(row.targetFailed),
    };
  }

  /**
   * When the `cap`-th newest attempt of the scope (failed ones only, if asked) was made: once it
   * leaves the window a place is free. Null when there are fewer.
   */
  async capthNewest(scope: AttemptScope, cap: number, failedOnly: boolean, t?: Transaction): Promise<Date | null> {
    const w = where(scope, 1);
    const [row] = await this.db.select<{ created_at: unknown }>(
      `SELECT created_at FROM public_pay_attempts WHERE ${w.sql}${failedOnly ? " AND status = 'failed'" : ''} ORDER BY created_at DESC LIMIT 1 OFFSET ${Math.max(0, Math.floor(cap) - 1)}`,
      w.bind, t,
    );
    return row ? readTime(row.created_at) : null;
  }

  async markFailed(id: string): Promise<void> {
    await this.db.executeAlone(`UPDATE public_pay_attempts SET ${PUBLIC_PAY_ATTEMPT_MOVES.sqlSet('fail')} WHERE id = $1 AND ${PUBLIC_PAY_ATTEMPT_MOVES.sqlFrom('fail')}`, [id]);
  }

  async remove(id: string): Promise<void> {
    await this.db.executeAlone('DELETE FROM public_pay_attempts WHERE id = $1', [id]);
  }

  async failedFor(targetId: string): Promise<number> {
    const [row] = await this.db.select<{ n: number | string }>("SELECT COUNT(*) AS n FROM public_pay_attempts WHERE target_id = $1 AND status = 'failed'", [targetId]);
    return Number(row.n);
  }

  async purgeBefore(before: Date): Promise<number> {
    return this.db.executeAlone('DELETE FROM public_pay_attempts WHERE created_at < $1', [before]);
  }

  /** Serialises the account and mode's writers until `t` ends (PostgreSQL; SQLite has one writer). */
  async lockAccountMode(t: Transaction, accountId: string, mode: Mode): Promise<void> {
    if (this.db.dialect !== 'postgres') return;
    await this.db.select('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`payorch.public_pay.${accountId}.${mode}`], t);
  }
}
