import 'reflect-metadata';
import type { Database } from '../../../src/db/database';
import { Filter, newestPerParent, pagePerParent } from '../../../src/db/list';
import { EventStore } from '../../../src/modules/events/event.store';
import { DIALECT } from '../../helpers/db';
import { plansDatabase, postgresPlans } from '../../helpers/plans';

// Lists of ids bound as one JSON array (Database.inJsonList): on PostgreSQL each id must be an
// index condition, not `IN (SELECT …)` hash-joined over a sequential scan of the account's rows,
// in the custom plan and in a prepared statement's generic one.

const planned = plansDatabase();
let db: Database;
beforeAll(() => {
  db = planned.db;
});

// The plans are PostgreSQL's; on SQLite the file checks what the helpers select (below).
const pg = (name: string, fn: () => Promise<void>) => {
  if (DIALECT === 'postgres') it(name, fn);
};

// 30,000 webhook attempts of one account and mode, 100 per endpoint (300 endpoints).
const ATTEMPTS = `INSERT INTO webhook_attempts (id, account_id, mode, endpoint_id, delivery_id, event_id, event_type, attempt, succeeded, latency_ms, created_at)
  SELECT 'wa_plan_' || g, 'acct_plan', 'test', 'we_plan_' || (g % 300), 'wd_plan_' || g, 'evt_plan_' || g, 'payment.created', 1, true, 10, now() - g * interval '1 second'
    FROM generate_series(1, 30000) g`;

const TYPES = ['payment.created', 'payment.succeeded', 'payment.failed', 'refund.created', 'refund.succeeded', 'customer.created', 'customer.updated', 'invoice.paid'];
// 30,000 events of one account and mode, of eight types.
const EVENTS = `INSERT INTO events (id, account_id, mode, type, object_id, data, created_at)
  SELECT 'evt_plan_' || g, 'acct_plan', 'test', (ARRAY['${TYPES.join("','")}'])[1 + g % ${TYPES.length}], 'obj_' || (g / 3), '{"object":{}}', now() - g * interval '1 second'
    FROM generate_series(1, 30000) g`;

/** The statements `run` sends. */
const sent = (run: () => Promise<unknown>) => planned.statementsOf(run);

describe('lists of ids bound as one JSON array', () => {
  it('should select exactly the rows whose column is among the ids (inJsonList) or not among them (notInJsonList), none or all for an empty list', async () => {
    const ids = (rows: Array<{ id: string }>) => rows.map((r) => r.id).sort();
    const among = (list: string[]) => db.select<{ id: string }>(`SELECT id FROM accounts WHERE ${db.inJsonList('id', '$1')}`, [JSON.stringify(list)]);
    const notAmong = (list: string[]) => db.select<{ id: string }>(`SELECT id FROM accounts WHERE id LIKE 'acct_list_%' AND ${db.notInJsonList('id', '$1')}`, [JSON.stringify(list)]);
    for (const id of ['acct_list_1', 'acct_list_2', 'acct_list_3']) {
      await db.execute('INSERT INTO accounts (id, name, created_at, updated_at) VALUES ($1, $1, $2, $2)', [id, new Date('2026-01-01T00:00:00.000Z')]);
    }
    expect(ids(await among(['acct_list_1', 'acct_list_3', 'acct_none']))).toEqual(['acct_list_1', 'acct_list_3']);
    expect(ids(await among([]))).toEqual([]);
    expect(ids(await notAmong(['acct_list_2']))).toEqual(['acct_list_1', 'acct_list_3']);
    expect(ids(await notAmong([]))).toEqual(['acct_list_1', 'acct_list_2', 'acct_list_3']);
  });

  pg('should page each parent (pagePerParent) from the parent index, reading no further than the page, rows and totals', async () => {
    const ids = ['we_plan_1', 'we_plan_2'];
    const sqls = await sent(() => pagePerParent(db, {
      table: 'webhook_attempts', columns: 'id, endpoint_id, created_at', filter: new Filter({ account_id: 'acct_plan', mode: 'test' }),
      params: { page: 1, pageSize: 20, sortField: 'createdAt', sortDirection: 'desc' }, sortColumns: { createdAt: 'created_at' },
      toApi: (row: { endpoint_id: string }) => row, parentColumn: 'endpoint_id', parentIds: ids, parentOf: (row) => row.endpoint_id,
    }));
    expect(sqls).toHaveLength(2);
    const json = JSON.stringify(ids);
    const plans = await postgresPlans(db, [ATTEMPTS], sqls.map((sql) => ({ sql, args: /COUNT\(\*\)/.test(sql) ? ['acct_plan', 'test', json] : ['acct_plan', 'test', json, 0, 20] })));
    expect(plans).toHaveLength(4);
    for (const [i, plan] of plans.entries()) {
      expect(plan).not.toMatch(/Seq Scan on webhook_attempts/);
      // The page: each parent's rows read alone from its index, no further than the page's end
      // (a LIMIT under the loop over the parents), not every row of every parent ranked.
      if (i < 2) expect(plan).toMatch(/Nested Loop[\s\S]*Limit[\s\S]*Index Cond: .*endpoint_id\S* = parent\.id/);
      else expect(plan).toMatch(/Index Cond: .*endpoint_id\S* = ANY/);
    }
  });

  pg('should read each parent\'s newest rows (newestPerParent) from the parent index, no more than the limit', async () => {
    const ids = ['we_plan_1', 'we_plan_2'];
    const sqls = await sent(() => newestPerParent(db, {
      columns: 'id, endpoint_id, created_at', from: 'webhook_attempts', parentColumn: 'endpoint_id', accountId: 'acct_plan', mode: 'test', parentIds: ids,
    }));
    expect(sqls).toHaveLength(1);
    const plans = await postgresPlans(db, [ATTEMPTS], [{ sql: sqls[0], args: ['acct_plan', 'test', 100, JSON.stringify(ids)] }]);
    expect(plans).toHaveLength(2);
    for (const plan of plans) {
      expect(plan).toMatch(/Nested Loop[\s\S]*Limit[\s\S]*Index Cond: .*endpoint_id\S* = parent\.id/);
      expect(plan).not.toMatch(/Seq Scan on webhook_attempts/);
    }
  });

  pg('should list the events of the types a restricted key may read without a sequential scan of the account\'s events', async () => {
    const store = new EventStore(db);
    const types = ['payment.created', 'refund.created'];
    const sqls = await sent(() => store.list(
      { accountId: 'acct_plan', mode: 'test' }, { page: 1, pageSize: 20, sortField: 'createdAt', sortDirection: 'desc' }, types, { countTotal: false },
    ));
    expect(sqls).toHaveLength(1);
    const plans = await postgresPlans(db, [EVENTS], [{ sql: sqls[0], args: ['acct_plan', 'test', JSON.stringify(types), 20, 0] }]);
    expect(plans).toHaveLength(2);
    for (const plan of plans) {
      expect(plan).toMatch(/type\S* = ANY/);
      expect(plan).not.toMatch(/Seq Scan on events/);
    }
  });
});
