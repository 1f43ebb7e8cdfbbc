import type { Database } from '../../db/database';

/** The tables whose pending rows carry a `lease_until` (see LeaseKeeper). */
export type LeasedTable = 'payments' | 'refunds';

/**
 * The lease statements payments and refunds share: the heartbeat of rows this process is working
 * on, and recovery's takeover of a row whose lease ran out. Only pending rows are leased.
 */
export class LeaseStore {
  constructor(private readonly db: Database) {}

  /** Pushes the lease of every pending row among `ids` to `until`; ids bound as one JSON array (one prepared plan whatever their number). */
  async renew(table: LeasedTable, ids: readonly string[], until: Date): Promise<void> {
    const idList = this.db.jsonTextList('$2');
    await this.db.execute(`UPDATE ${table} SET lease_until = $1 WHERE status = 'pending' AND id IN (${idList})`, [until, JSON.stringify(ids)]);
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
