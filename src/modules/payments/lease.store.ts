import type { Database } from '../../db/database';

/** The tables whose pending rows carry a `lease_until` (see LeaseKeeper). */
export type LeasedTable = 'payments' | 'refunds';

/**
 * The lease statements payments and refunds share: the heartbeat of rows this process is working
 * on, and recovery's takeover of a row whose lease ran out. Only pending rows are leased.
 */
export class LeaseStore {
  constructor(private readonly db: Database) {}

  /**
   * Pushes the lease of the pending rows among `ids` to `now + leaseMs`, but only of rows whose
   * lease is still a heartbeat's: not run out (recovery may take those) and not further ahead
   * than one lease (recovery's claim is, see recoverRows). Returns the ids renewed; a row left out
   * is no longer this process's. Ids are bound as one JSON array (one plan whatever their number).
   */
  async renew(table: LeasedTable, ids: readonly string[], now: Date, leaseMs: number): Promise<Set<string>> {
    const until = new Date(now.getTime() + leaseMs);
    const rows = await this.db.select<{ id: string }>(
      `UPDATE ${table} SET lease_until = $1
        WHERE status = 'pending' AND id IN (${this.db.jsonTextList('$2')}) AND lease_until > $3 AND lease_until <= $1
        RETURNING id`,
      [until, JSON.stringify(ids), now],
    );
    return new Set(rows.map((r) => r.id));
  }

  /**
   * Takes over a pending row whose lease ran out before `now`, leasing it until `until`: of
   * several callers exactly one gets it. Returns whether this caller did.
   */
  async claimPastLease(table: LeasedTable, id: string, now: Date, until: Date): Promise<boolean> {
    const claimed = await this.db.execute(`UPDATE ${table} SET lease_until = $1 WHERE id = $2 AND status = 'pending' AND lease_until < $3`, [until, id, now]);
    return claimed === 1;
  }
}
