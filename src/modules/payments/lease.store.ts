import type { Database } from '../../db/database';

/** The tables whose pending rows carry a `lease_until` (see LeaseKeeper). */
export type LeasedTable = 'payments' | 'refunds';

/**
 * The lease statements payments and refunds share: the heartbeat of rows this process is working
 * on, and recovery's takeover of a row whose lease ran out. Only pending rows are leased.
 *
 * Leases (and `pending_since`, when a row was written pending) are on the database's clock, never
 * an instance's: instances compare each other's leases, and one whose clock jumped ahead would
 * take a live lease, then find a gateway's "not found" old enough to be final while the owner's
 * call is still on its way. Business time (`created_at`, `updated_at`) stays on the Clock.
 */
export class LeaseStore {
  constructor(private readonly db: Database) {}

  /**
   * Pushes the lease of the pending rows among `ids` to `leaseMs` from now, but only of rows whose
   * lease is still a heartbeat's: not run out (recovery may take those) and not further ahead
   * than one lease (recovery's claim is, see recoverRows). Returns the ids renewed; a row left out
   * is no longer this process's. Ids are bound as one JSON array (one plan whatever their number).
   */
  async renew(table: LeasedTable, ids: readonly string[], leaseMs: number): Promise<Set<string>> {
    const until = this.db.nowPlusSql('$1');
    const rows = await this.db.select<{ id: string }>(
      `UPDATE ${table} SET lease_until = ${until}
        WHERE status = 'pending' AND ${this.db.inJsonList('id', '$2')} AND lease_until > ${this.db.nowSql} AND lease_until <= ${until}
        RETURNING id`,
      [Math.ceil(leaseMs), JSON.stringify(ids)],
    );
    return new Set(rows.map((r) => r.id));
  }

  /**
   * Takes over a pending row whose lease has run out, leasing it for `leaseMs`: of several callers
   * exactly one gets it. Returns whether this caller did. A row without `pending_since` (see
   * pendingForMs) is dated now, as first seen.
   */
  async claimPastLease(table: LeasedTable, id: string, leaseMs: number): Promise<boolean> {
    const claimed = await this.db.execute(
      `UPDATE ${table} SET lease_until = ${this.db.nowPlusSql('$1')}, pending_since = COALESCE(pending_since, ${this.db.nowSql})
        WHERE id = $2 AND status = 'pending' AND lease_until < ${this.db.nowSql}`,
      [Math.ceil(leaseMs), id],
    );
    return claimed === 1;
  }
}

/**
 * How long a pending row has been pending on the database's clock (`now` and `pending_since` as
 * read with it). A row an earlier version wrote without `pending_since` (during a rolling
 * upgrade) counts as pending since recovery first saw it: 0 now, and claimPastLease dates it
 * then. Never its `created_at`, business time on another instance's clock (a test clock can put
 * it years back), which could make a gateway's "not found" final at once: taking a row for
 * younger than it is only delays recovery.
 */
export function pendingForMs(dbNow: Date | null, pendingSince: Date | null): number {
  if (!dbNow || !pendingSince) return 0;
  return Math.max(0, dbNow.getTime() - pendingSince.getTime());
}
