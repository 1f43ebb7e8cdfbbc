import { readTime, type Database } from '../../src/db/database';

/**
 * As if `ms` passed on the database's clock for pending payments and refunds (those of `ids`, or
 * all): their leases (`lease_until`) and `pending_since` move back by `ms`. Leases, and the ages
 * recovery goes by, are measured on the database's clock (LeaseStore), which a test cannot move;
 * the services' Clock does not touch them. A row some live request still holds keeps its lease
 * only if that request's heartbeats renew it, and none renews a lease that has run out: moving
 * one back also stands for heartbeats that failed that long.
 */
export async function elapseDatabaseTime(db: Database, ms: number, ids?: readonly string[]): Promise<void> {
  const back = (value: unknown) => {
    const at = readTime(value);
    return at ? new Date(at.getTime() - ms) : null;
  };
  for (const table of ['payments', 'refunds']) {
    const rows = await db.select<{ id: string; lease_until: unknown; pending_since: unknown }>(
      `SELECT id, lease_until, pending_since FROM ${table} WHERE status = 'pending'`,
    );
    for (const row of rows) {
      if (ids && !ids.includes(row.id)) continue;
      await db.execute(`UPDATE ${table} SET lease_until = $1, pending_since = $2 WHERE id = $3 AND status = 'pending'`, [back(row.lease_until), back(row.pending_since), row.id]);
    }
  }
}
