import { startTestApp, type TestApp, type TestAccount } from '../helpers/app';
import { loggedSql, postgresPlans } from '../helpers/plans';
import { systemClock } from '../../src/core/clock';
import { waitFor } from '../helpers/wait';

/**
 * The events list filters (API.md §2): `types` (several, comma-separated over REST, a list over
 * GraphQL), `objectId`, `createdAfter`/`createdBefore`, and `type` as before; each read from an
 * index, as the stream's read back after a position is (EXPLAIN on both databases).
 */

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

type ApiEvent = { id: string; type: string; createdAt: string; data: { object: { id: string } } };
const list = async (account: TestAccount, query: string): Promise<ApiEvent[]> => {
  const res = await app.request('GET', `/v1/events?pageSize=100&${query}`, { key: account.testKey });
  expect([query, res.status]).toEqual([query, 200]);
  return res.body.data;
};

/** A customer created and updated, a product, a payment and its refund: events of five types. */
async function history(account: TestAccount) {
  const key = account.testKey;
  const customer = (await app.request('POST', '/v1/customers', { key, body: { email: `filters-${account.accountId}@example.com` } })).body.data;
  await app.request('PATCH', `/v1/customers/${customer.id}`, { key, body: { name: 'Filtered' } });
  await app.request('POST', '/v1/products', { key, body: { name: 'Filtered product' } });
  const payment = (await app.request('POST', '/v1/payments', { key, body: { amount: 1000, currency: 'usd', paymentMethod: 'pm_card_visa', customerId: customer.id } })).body.data;
  await app.request('POST', `/v1/payments/${payment.id}/refunds`, { key, body: { amount: 100 } });
  return { customerId: customer.id as string, paymentId: payment.id as string };
}

describe('GET /v1/events filters', () => {
  it('should filter by several types, comma-separated, by objectId and by creation time, alone and together; type still works', async () => {
    const account = await app.createAccount();
    const { customerId, paymentId } = await history(account);
    const all = await list(account, '');
    const types = (events: ApiEvent[]) => events.map((e) => e.type);
    const ofTypes = (...wanted: string[]) => all.filter((e) => wanted.includes(e.type));
    expect(await list(account, 'types=customer.created,refund.created')).toEqual(ofTypes('customer.created', 'refund.created'));
    expect(await list(account, 'types=customer.created, refund.created,customer.created')).toEqual(ofTypes('customer.created', 'refund.created'));
    expect(await list(account, 'types=product.created')).toEqual(ofTypes('product.created'));
    expect(await list(account, 'type=product.created')).toEqual(ofTypes('product.created'));
    expect(await list(account, `objectId=${customerId}`)).toEqual(all.filter((e) => e.data.object.id === customerId));
    expect(types(await list(account, `objectId=${customerId}&types=customer.updated`))).toEqual(['customer.updated']);
    expect(types(await list(account, `objectId=${paymentId}&types=customer.updated`))).toEqual([]);
    const oldestFirst = [...all].reverse();
    const middle = oldestFirst[2].createdAt;
    expect(await list(account, `createdAfter=${encodeURIComponent(middle)}&types=${[...new Set(types(all))].join(',')}`)).toEqual(all.filter((e) => e.createdAt > middle));
    expect(await list(account, `createdBefore=${encodeURIComponent(middle)}&types=customer.created,customer.updated,product.created`))
      .toEqual(all.filter((e) => e.createdAt < middle && ['customer.created', 'customer.updated', 'product.created'].includes(e.type)));
    const counted = await app.request('GET', '/v1/events?types=customer.created,customer.updated', { key: account.testKey });
    expect(counted.body.meta.total).toBe(2);
  });

  it('should refuse an unknown type, a wildcard, an empty list, or type with types, naming the parameter', async () => {
    const account = await app.createAccount();
    for (const [query, param] of [
      ['types=customer.created,payment.refunded', 'types[1]'],
      ['types=payment.*', 'types[0]'],
      ['types=', 'types[0]'],
      ['types=customer.created&type=customer.created', 'types'],
    ]) {
      const res = await app.request('GET', `/v1/events?${query}`, { key: account.testKey });
      expect([query, res.status, res.body.error?.code, res.body.error?.param]).toEqual([query, 400, 'invalid_parameter', param]);
    }
  });

  it('should need the read permission of every type asked for, and list only what the key may read', async () => {
    const account = await app.createAccount();
    await history(account);
    const restricted = (await app.request('POST', '/v1/api-keys', { key: account.testKey, body: { name: 'customers', permissions: ['events:read', 'customers:read'] } })).body.data.secret;
    const denied = await app.request('GET', '/v1/events?types=customer.created,payment.succeeded', { key: restricted });
    expect(denied.status).toBe(403);
    expect(denied.body.error).toMatchObject({ code: 'permission_denied', param: 'types[1]' });
    const allowed = await app.request('GET', '/v1/events?types=customer.created,customer.updated', { key: restricted });
    expect(allowed.body.data.map((e: ApiEvent) => e.type)).toEqual(['customer.updated', 'customer.created']);
  });

  it('should filter the GraphQL events list by types as well', async () => {
    const account = await app.createAccount();
    await history(account);
    const res = await app.request('POST', '/graphql', { key: account.testKey, body: { query: '{ events(types: ["refund.created", "product.created"]) { total nodes { type } } }' } });
    expect(res.body.data.events).toEqual({ total: 2, nodes: [{ type: 'refund.created' }, { type: 'product.created' }] });
    const refused = await app.request('POST', '/graphql', { key: account.testKey, body: { query: '{ events(types: ["refund.created"], type: "refund.created") { total } }' } });
    expect(refused.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'types' });
  });

  it('should read the filtered lists, their totals and the stream\'s pages after a position from the events indexes', async () => {
    const account = await app.createAccount();
    const key = account.testKey;
    const before = app.sql.length;
    await app.request('GET', '/v1/events?types=payment.succeeded,refund.created', { key });
    await app.request('GET', '/v1/events?types=payment.succeeded,refund.created&objectId=pay_x', { key });
    await app.request('GET', '/v1/events?type=payment.succeeded&createdAfter=2026-01-01', { key });
    // A stream resuming after an event: its first page, of every type and of some.
    await app.request('POST', '/v1/customers', { key, body: { email: `plans-${account.accountId}@example.com` } });
    const [cursor] = (await app.request('GET', '/v1/events', { key })).body.data;
    const rc = { accountId: account.accountId, mode: 'test' as const, permissions: ['*'], requestId: 'req_plans', clock: systemClock };
    const PAGE_AFTER = /seq > \(SELECT seq FROM events WHERE id = \$3 .*ORDER BY seq/s;
    for (const types of [null, ['payment.succeeded', 'refund.created']]) {
      const mark = app.sql.length;
      const stream = await app.server.services.events.stream(rc, { after: cursor.id }, { resource: 'events', types });
      const read = stream.next();
      await waitFor(() => app.sql.slice(mark).some((q) => PAGE_AFTER.test(q)), { what: 'the stream to read its first page' });
      await stream.return();
      await read;
    }
    const statements = app.sql.slice(before).map(loggedSql).filter((q) => /FROM events WHERE account_id/.test(q));
    const pagesAfter = statements.filter((q) => PAGE_AFTER.test(q));
    const lists = statements.filter((q) => !PAGE_AFTER.test(q) && /type = |object_id = |ANY|IN \(/.test(q));
    expect(lists).toHaveLength(6); // three lists, each a page and its total
    expect(pagesAfter).toHaveLength(2);

    const db = app.server.services.db;
    const types = JSON.stringify(['payment.succeeded', 'refund.created']);
    const argsFor = (sql: string, accountId: string, after = 'evt_x') => {
      const values: Record<string, unknown> = { 1: accountId, 2: 'test' };
      if (PAGE_AFTER.test(sql)) Object.assign(values, { 3: after, 4: types });
      else if (/object_id = \$3/.test(sql)) Object.assign(values, { 3: 'obj_7', 4: types, 5: 20, 6: 0 });
      else if (/type = \$3/.test(sql)) Object.assign(values, { 3: 'payment.succeeded', 4: '2026-01-01T00:00:00Z', 5: 20, 6: 0 });
      else Object.assign(values, { 3: types, 4: 20, 5: 0 });
      const used = Math.max(...[...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
      return Array.from({ length: used }, (_, i) => values[i + 1]);
    };
    if (db.dialect === 'sqlite') {
      for (const sql of [...lists, ...pagesAfter]) {
        const plan = JSON.stringify(await db.select(`EXPLAIN QUERY PLAN ${sql}`, argsFor(sql, account.accountId)));
        expect([sql, plan]).toEqual([sql, expect.stringMatching(/SEARCH events USING (COVERING )?INDEX events_(list|type|object|stream)_idx \(account_id=\? AND mode=\?/)]);
        expect([sql, plan]).not.toEqual([sql, expect.stringMatching(/SCAN events/)]);
      }
      for (const sql of pagesAfter) {
        const plan = JSON.stringify(await db.select(`EXPLAIN QUERY PLAN ${sql}`, argsFor(sql, account.accountId)));
        expect(plan).toMatch(/events_stream_idx \(account_id=\? AND mode=\? AND seq>\?\)/);
        expect(plan).not.toMatch(/TEMP B-TREE/);
      }
      return;
    }
    // PostgreSQL: custom and generic plans with 30,000 events of three accounts and twelve types,
    // analyzed, then rolled back.
    const seeded = ['customer.created', 'payment.succeeded', 'refund.created', 'invoice.paid', 'payment.updated', 'customer.updated', 'invoice.created',
      'invoice.sent', 'subscription.created', 'subscription.updated', 'price.created', 'product.created'];
    // evt_plan_29989 is one of acct_plan_1's, near its newest (seq follows g).
    const plans = await postgresPlans(db, [`INSERT INTO events (id, account_id, mode, type, object_id, data, created_at, seq)
        SELECT 'evt_plan_' || g, 'acct_plan_' || (g % 3), 'test', (ARRAY['${seeded.join("','")}'])[1 + (g / 3) % 12], 'obj_' || (g / 3), '{"object":{}}', now() - g * interval '1 second', nextval('events_stream_seq')
          FROM generate_series(1, 30000) g`], [...lists, ...pagesAfter].map((sql) => ({ sql, args: argsFor(sql, 'acct_plan_1', 'evt_plan_29989') })));
    expect(plans).toHaveLength(2 * (lists.length + pagesAfter.length));
    for (const plan of plans) {
      expect(plan).toMatch(/(Index (Only )?Scan (Backward )?using|Bitmap Index Scan on) events_(list|type|object|stream)_idx/);
      expect(plan).not.toMatch(/Seq Scan on events/);
    }
    // A page after a position starts the index range there (its seq, looked up by id), in order, not at the account's oldest event.
    for (const plan of plans.slice(-4)) {
      expect(plan).toMatch(/Index Scan using events_stream_idx on events[\s\S]*Index Cond: .*seq > /);
      expect(plan).not.toMatch(/Sort/);
    }
    expect(Number((await db.select<{ n: string }>("SELECT COUNT(*) AS n FROM events WHERE account_id LIKE 'acct_plan_%'"))[0].n)).toBe(0);
  });
});
