import type { Database } from '../../db/database';
import type { Logger } from '../../logger';
import { errorForLog } from '../../logger';

type Scope = { accountId: string; mode: string };

/** Delta rows (one per statement and move) a reader may find waiting before it asks for a fold itself (the job folds every 2 s). */
const FOLD_WHEN_WAITING = 10_000;

/**
 * The payments list's totals without counting payments (migration 0019): the counts the
 * triggers keep per account, mode and status, plus on PostgreSQL the deltas appended since the
 * last fold. Both are read in one statement, so one snapshot: a fold moves rows from the deltas
 * into the counts in one transaction, and a total never sees them twice or not at all.
 */
export class PaymentCountStore {
  private folding: Promise<number> | null = null;

  private readonly foldWhenWaiting: number;

  constructor(private readonly db: Database, private readonly logger?: Logger, options: { foldWhenWaiting?: number } = {}) {
    this.foldWhenWaiting = options.foldWhenWaiting ?? FOLD_WHEN_WAITING;
  }

  /** Payments of the account and mode, in `status` (one or any of several) if given: exact as of the statement's snapshot. */
  async total(scope: Scope, status?: string | readonly string[]): Promise<number> {
    const statuses = status === undefined ? [] : typeof status === 'string' ? [status] : [...status];
    const list = statuses.map((_s, i) => `$${i + 3}`).join(', ');
    const inStatus = statuses.length === 0 ? '' : ` AND status IN (${list})`;
    const added = statuses.length === 0 ? 'new_status IS NOT NULL' : `new_status IN (${list})`;
    const removed = statuses.length === 0 ? 'old_status IS NOT NULL' : `old_status IN (${list})`;
    const [row] = await this.db.select<{ total: number | string; waiting: number | string }>(
      `SELECT c.n + COALESCE(d.n, 0) AS total, d.waiting
         FROM (SELECT COALESCE(SUM(n), 0) AS n FROM payment_counts WHERE account_id = $1 AND mode = $2${inStatus}) c,
              (SELECT SUM(CASE WHEN ${added} THEN n ELSE 0 END) - SUM(CASE WHEN ${removed} THEN n ELSE 0 END) AS n, COUNT(*) AS waiting
                 FROM payment_count_deltas WHERE account_id = $1 AND mode = $2) d`,
      [scope.accountId, scope.mode, ...statuses],
    );
    // Should the job not be running anywhere, the deltas would grow with every payment and so
    // would this read: the first reader to find many waiting folds them (in the background).
    if (Number(row.waiting) > this.foldWhenWaiting) void this.foldOnce();
    return Number(row.total);
  }

  /**
   * Moves the deltas committed so far into the counts, in one transaction; returns how many
   * delta rows it folded. One fold at a time across instances (a transaction-scoped advisory lock): a fold
   * that finds another running does nothing. Deltas of transactions still open are not visible
   * to it and wait for the next fold. Nothing to do on SQLite, where the triggers keep the counts.
   */
  async fold(): Promise<number> {
    if (this.db.dialect !== 'postgres') return 0;
    return this.db.transaction(async (t) => {
      const [lock] = await this.db.select<{ ok: boolean }>("SELECT pg_try_advisory_xact_lock(hashtext('payorch.payment_counts.fold')) AS ok", [], t);
      if (!lock.ok) return 0;
      const [row] = await this.db.select<{ folded: number | string }>(
        `WITH folded AS (DELETE FROM payment_count_deltas RETURNING account_id, mode, old_status, new_status, n),
              moves AS (SELECT account_id, mode, new_status AS status, n FROM folded WHERE new_status IS NOT NULL
                        UNION ALL
                        SELECT account_id, mode, old_status, -n FROM folded WHERE old_status IS NOT NULL),
              written AS (INSERT INTO payment_counts (account_id, mode, status, n)
                          SELECT account_id, mode, status, SUM(n) FROM moves GROUP BY account_id, mode, status
                          ON CONFLICT (account_id, mode, status) DO UPDATE SET n = payment_counts.n + EXCLUDED.n
                          RETURNING 1)
         SELECT (SELECT COUNT(*) FROM folded) AS folded, (SELECT COUNT(*) FROM written) AS groups`,
        [], t,
      );
      return Number(row.folded);
    });
  }

  /** fold(), once at a time in this process; a failure is logged, not thrown (a reader's background fold). */
  private foldOnce(): Promise<number> {
    this.folding ??= this.fold()
      .catch((err) => {
        this.logger?.error({ err: errorForLog(err) }, 'folding the payment counts failed');
        return 0;
      })
      .finally(() => {
        this.folding = null;
      });
    return this.folding;
  }
}
