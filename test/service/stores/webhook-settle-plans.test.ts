import 'reflect-metadata';
import type { Database } from '../../../src/db/database';
import { WebhookStore, type BatchedSettle, type ClaimedDelivery } from '../../../src/modules/webhooks/webhook.store';
import { DIALECT, type TestDatabase } from '../../helpers/db';
import { migratedDatabase } from '../../helpers/migrated-db';
import { loggedSql, postgresPlans } from '../../helpers/plans';

// A batch of outcomes (WebhookStore.settleBatch) must find its deliveries by id, however many
// rows the table holds: joined on the ids alone, PostgreSQL hash-joined a sequential scan of the
// table and SQLite walked every pending row through the status index for each batch.

let database: TestDatabase;
let db: Database;
const statements: string[] = [];

beforeAll(async () => {
  ({ database, db } = await migratedDatabase((sql) => statements.push(loggedSql(sql))));
});

afterAll(async () => {
  await db.close();
  await database.drop();
});

const claim = (id: string): ClaimedDelivery => ({
  id, accountId: 'acct_plan', mode: 'test', endpointId: 'we_plan', eventId: `evt_${id}`, eventType: 'customer.created', payload: '{}', attempt: 1,
  firstAttemptAt: new Date(), lockToken: 'tok_plan',
  endpoint: { url: 'https://example.com/', secrets: { current: 's', previous: null, previousExpiresAt: null }, status: 'enabled', deleted: false, events: ['*'], goneSince: null },
});

const batch = (ids: string[]): BatchedSettle[] => ids.map((id) => {
  const now = new Date();
  return { c: claim(id), succeeded: true, w: { status: 'delivered', nextAttemptAt: null, statusCode: 200, error: null, latencyMs: 1, deliveredAt: now, now } };
});

/** The statement that settles the deliveries of a batch, with its bound rows. */
async function settleStatement(): Promise<{ sql: string; rows: string }> {
  statements.length = 0;
  const rows: string[] = [];
  const select = db.select.bind(db);
  const spy = jest.spyOn(db, 'select').mockImplementation(async (sql, bind, t) => {
    if (/UPDATE webhook_deliveries/.test(sql)) rows.push(String(bind?.[0]));
    return select(sql, bind, t);
  });
  try {
    expect(await new WebhookStore(db).settleBatch(batch(['whd_plan_1', 'whd_plan_2']))).toEqual([null, null]);
  } finally {
    spy.mockRestore();
  }
  const [sql] = statements.filter((s) => /UPDATE webhook_deliveries/.test(s));
  return { sql, rows: rows[0] };
}

const TIME = DIALECT === 'postgres' ? 'now()' : "'2026-01-01 00:00:00.000 +00:00'";
// 5,000 deliveries of one endpoint, half of them pending (a table this small is where PostgreSQL chose the sequential scan).
const DELIVERIES = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
  INSERT INTO webhook_deliveries (id, account_id, mode, endpoint_id, event_id, event_type, payload, status, attempts, next_attempt_at, created_at, updated_at, lock_token)
  SELECT 'whd_plan_' || i, 'acct_plan', 'test', 'we_plan', 'evt_plan_' || i, 'customer.created', '{}', CASE WHEN i % 2 = 0 THEN 'pending' ELSE 'delivered' END,
         1, ${TIME}, ${TIME}, ${TIME}, 'tok_plan' FROM n`;

describe('settling a batch of webhook outcomes', () => {
  it('should look each delivery of the batch up by id', async () => {
    const { sql, rows } = await settleStatement();
    if (DIALECT === 'postgres') {
      const plans = await postgresPlans(db, [DELIVERIES], [{ sql, args: [rows] }]);
      for (const plan of plans) {
        // By id: an index scan of the primary key (a bitmap one, or a nested loop of lookups).
        expect(plan).toMatch(/Index Scan (using|on) webhook_deliveries_pkey/);
        expect(plan).not.toMatch(/Seq Scan on webhook_deliveries/);
      }
    } else {
      await db.execute(DELIVERIES);
      try {
        const plan = (await db.select<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, [rows])).map((r) => r.detail);
        expect(plan).toEqual([expect.stringMatching(/^SCAN json_each/), expect.stringMatching(/^SEARCH d USING INDEX sqlite_autoindex_webhook_deliveries_1 \(id=\?\)/)]);
      } finally {
        await db.execute("DELETE FROM webhook_deliveries WHERE id LIKE 'whd_plan_%'");
      }
    }
  });
});
