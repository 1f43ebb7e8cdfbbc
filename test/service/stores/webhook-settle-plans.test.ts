import 'reflect-metadata';
import type { Database } from '../../../src/db/database';
import { WebhookStore, type BatchedSettle, type ClaimedDelivery } from '../../../src/modules/webhooks/webhook.store';
import { MailStore } from '../../../src/modules/mail/mail.store';
import { systemClock } from '../../../src/core/clock';
import { DIALECT } from '../../helpers/db';
import { plansDatabase, postgresPlans } from '../../helpers/plans';

// A batch of outcomes (WebhookStore.settleBatch) must find its deliveries by id, however many
// rows the table holds: joined on the ids alone, PostgreSQL hash-joined a sequential scan of the
// table and SQLite walked every pending row through the status index for each batch. The claims
// (webhook deliveries', the mail outbox's) likewise: joined to the rows they chose, the generic
// plan hash-joined a sequential scan of every row ever written, on each claim, and the loose scan
// for the endpoints with pending rows read through the endpoint's delivered rows first.

const planned = plansDatabase();
let db: Database;
beforeAll(() => {
  db = planned.db;
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
  const rows: string[] = [];
  const select = db.select.bind(db);
  const spy = jest.spyOn(db, 'select').mockImplementation(async (sql, bind, t) => {
    if (/UPDATE webhook_deliveries/.test(sql)) rows.push(String(bind?.[0]));
    return select(sql, bind, t);
  });
  let sql: string;
  try {
    [sql] = await planned.statementsOf(async () => {
      expect(await new WebhookStore(db).settleBatch(batch(['whd_plan_1', 'whd_plan_2']))).toEqual([null, null]);
    }, /UPDATE webhook_deliveries/);
  } finally {
    spy.mockRestore();
  }
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

const ENDPOINT = `INSERT INTO webhook_endpoints (id, account_id, mode, url, secret_sealed, events, status, created_at, updated_at)
  VALUES ('we_plan', 'acct_plan', 'test', 'https://example.com/', 's', '["*"]', 'enabled', ${TIME}, ${TIME})`;
// 5,000 mails, a tenth of them queued.
const MAILS = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000)
  INSERT INTO mail_outbox (id, account_id, mode, about_type, about_id, to_address, subject, text_body, html_body, status, attempts, next_attempt_at, created_at, updated_at)
  SELECT 'mail_plan_' || i, 'acct_plan', 'test', 'invoice', 'in_' || i, 'a@example.com', 's', 't', 'h', CASE WHEN i % 10 = 0 THEN 'queued' ELSE 'sent' END,
         0, ${TIME}, ${TIME}, ${TIME} FROM n`;

describe('claiming webhook deliveries and mails', () => {
  it('should find the endpoints with pending rows in the pending index, and claim the chosen rows by id', async () => {
    const claimSql = async () => (await planned.statementsOf(
      () => new WebhookStore(db).claim({ clock: systemClock, limit: 16, inFlight: new Map(), perEndpoint: 16, leaseMs: 60_000 }), /UPDATE webhook_deliveries/,
    ))[0];
    if (DIALECT === 'postgres') {
      const plans = await postgresPlans(db, [DELIVERIES, ENDPOINT], [{ sql: await claimSql(), args: [new Date().toISOString(), 16, '[]', 16, 60_000, 'tok_claim'] }]);
      expect(plans).toHaveLength(2);
      for (const plan of plans) {
        expect(plan).toMatch(/Index Scan (using|on) webhook_deliveries_pkey[\s\S]*Index Cond: \(\(id\)::text = ANY/);
        expect(plan).not.toMatch(/Seq Scan on webhook_deliveries|webhook_deliveries_endpoint_idx/);
        expect(plan).toMatch(/Index Only Scan using webhook_deliveries_pending_idx on webhook_deliveries\s/);
      }
      // Whichever index PostgreSQL takes, each endpoint's oldest due rows are read in order,
      // stopping at the claim's size, never all of them sorted. During a drain it took the
      // (endpoint_id, status) index over the pending one and sorted every pending row of the
      // endpoint on each claim (10 ms with 10,000 pending); migration 0030 orders that index too.
      // Here the pending index is dropped (in the transaction, rolled back) so the other is taken.
      const stale = await postgresPlans(
        db, ['DROP INDEX webhook_deliveries_pending_idx', DELIVERIES, ENDPOINT],
        [{ sql: await claimSql(), args: [new Date().toISOString(), 16, '[]', 16, 60_000, 'tok_claim'] }],
      );
      for (const plan of stale) {
        expect(plan).not.toMatch(/Sort Key: x\.next_attempt_at|Seq Scan on webhook_deliveries/);
        expect(plan).toMatch(/Index Scan using webhook_deliveries_endpoint_idx on webhook_deliveries x/);
      }
      return;
    }
    // SQLite looks before it writes: the UPDATE runs once something is due.
    await db.execute(DELIVERIES);
    await db.execute(ENDPOINT);
    try {
      const plan = (await db.select<{ detail: string }>(`EXPLAIN QUERY PLAN ${await claimSql()}`, [new Date(), 16, '[]', 16, 60_000, 'tok_claim'])).map((r) => r.detail).join('\n');
      // The endpoints' probes in the pending index, in its order (no sort of the pending rows),
      // each endpoint's rows walked in order one index probe at a time; nothing read whole.
      expect(plan).toMatch(/SCAN webhook_deliveries USING COVERING INDEX webhook_deliveries_pending_idx\n/);
      expect(plan).toMatch(/SEARCH q USING COVERING INDEX webhook_deliveries_pending_idx \(endpoint_id>\?\)/);
      expect(plan).not.toMatch(/webhook_deliveries_age_idx|SCAN (q|z|y)\b|SCAN webhook_deliveries(?! USING COVERING INDEX webhook_deliveries_pending_idx)/);
    } finally {
      await db.execute("DELETE FROM webhook_deliveries WHERE id LIKE 'whd_plan_%'");
      await db.execute("DELETE FROM webhook_endpoints WHERE id = 'we_plan'");
    }
  });

  it('should claim the mail outbox\'s chosen rows by id', async () => {
    const claimSql = async () => (await planned.statementsOf(() => new MailStore(db).claim({ now: new Date(), limit: 8, leaseMs: 60_000 }), /UPDATE mail_outbox/))[0];
    if (DIALECT === 'postgres') {
      const plans = await postgresPlans(db, [MAILS], [{ sql: await claimSql(), args: [new Date().toISOString(), 8, 60_000, 'tok_claim'] }]);
      for (const plan of plans) {
        expect(plan).toMatch(/Index Scan (using|on) mail_outbox_pkey[\s\S]*Index Cond: \(\(id\)::text = ANY/);
        expect(plan).not.toMatch(/Seq Scan on mail_outbox/);
      }
      return;
    }
    // SQLite looks before it writes: the UPDATE runs once something is due.
    await db.execute(MAILS);
    try {
      const plan = (await db.select<{ detail: string }>(`EXPLAIN QUERY PLAN ${await claimSql()}`, [new Date(), 8, 60_000, 'tok_claim'])).map((r) => r.detail).join('\n');
      expect(plan).toMatch(/SEARCH mail_outbox USING (COVERING )?INDEX sqlite_autoindex_mail_outbox_1 \(id=\?\)/);
      expect(plan).not.toMatch(/SCAN mail_outbox/);
    } finally {
      await db.execute("DELETE FROM mail_outbox WHERE id LIKE 'mail_plan_%'");
    }
  });
});
