import 'reflect-metadata';
import type { Database } from '../../../src/db/database';
import { SubscriptionStore } from '../../../src/modules/subscriptions/subscription.store';
import { DIALECT } from '../../helpers/db';
import { plansDatabase, postgresPlans } from '../../helpers/plans';

// The billing run's claim (SubscriptionStore.claimDue) must update the subscriptions it chose by
// id, however many the table holds: as `id IN (SELECT … LIMIT $2)` PostgreSQL's generic plan
// hash-joined a sequential scan of every subscription on each claim.

const planned = plansDatabase();
let db: Database;
beforeAll(() => {
  db = planned.db;
});

const TIME = DIALECT === 'postgres' ? 'now()' : "'2026-01-01 00:00:00.000 +00:00'";
// 5,000 subscriptions, a third of them due.
const SUBSCRIPTIONS = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
  INSERT INTO subscriptions (id, account_id, mode, customer_id, price_id, quantity, status, collection_method, current_period_start, current_period_end,
                             billing_cycle_anchor, created_at, updated_at, next_billing_at)
  SELECT 'sub_plan_' || i, 'acct_plan', 'test', 'cus_plan', 'price_plan', 1, 'active', 'charge_automatically', ${TIME}, ${TIME}, ${TIME}, ${TIME}, ${TIME},
         CASE WHEN i % 3 = 0 THEN ${TIME} ELSE NULL END FROM n`;

describe('claiming due subscriptions for a billing run', () => {
  it('should update the subscriptions it chose by id', async () => {
    const claimSql = async () => (await planned.statementsOf(
      () => new SubscriptionStore(db).claimDue(new Date(Date.now() + 86_400_000), 100, 60_000, 'tok_plan', null), /UPDATE subscriptions SET billing_locked_until/,
    ))[0];
    const args = [new Date(Date.now() + 86_400_000).toISOString(), 100, 60_000, 'tok_plan'];
    if (DIALECT === 'postgres') {
      const plans = await postgresPlans(db, [SUBSCRIPTIONS], [{ sql: await claimSql(), args }]);
      expect(plans).toHaveLength(2);
      for (const plan of plans) {
        expect(plan).toMatch(/Index Scan (using|on) subscriptions_pkey[\s\S]*Index Cond: \(\(id\)::text = ANY/);
        expect(plan).not.toMatch(/Seq Scan on subscriptions/);
      }
      return;
    }
    await db.execute(SUBSCRIPTIONS);
    try {
      const plan = (await db.select<{ detail: string }>(`EXPLAIN QUERY PLAN ${await claimSql()}`, args)).map((r) => r.detail).join('\n');
      expect(plan).toMatch(/SEARCH subscriptions USING (COVERING )?INDEX sqlite_autoindex_subscriptions_1 \(id=\?\)/);
      expect(plan).not.toMatch(/SCAN subscriptions\b/);
    } finally {
      await db.execute("DELETE FROM subscriptions WHERE id LIKE 'sub_plan_%'");
    }
  });
});
