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

/**
 * As if the leases of the outbox rows still leased in `table` (mail_outbox, webhook_deliveries)
 * ran out on the database's clock: the lease of a worker that died (kill -9) is not renewed, and
 * another worker may then take the row. A test cannot wait the lease out (a minute by default).
 */
export async function endOutboxLeases(db: Database, table: 'mail_outbox' | 'webhook_deliveries', ids?: readonly string[]): Promise<number> {
  const only = ids ? ` AND id IN (${db.jsonTextList('$2')})` : '';
  return db.execute(
    `UPDATE ${table} SET locked_until = ${db.nowPlusSql('$1')} WHERE locked_until IS NOT NULL${only}`,
    ids ? [-1_000, db.jsonParam([...ids])] : [-1_000],
  );
}
