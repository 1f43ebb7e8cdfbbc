import { startTestApp, type TestApp } from '../helpers/app';
import { postgresPlans } from '../helpers/plans';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const gql = (key: string, query: string, variables: Record<string, unknown> = {}) => app.request('POST', '/graphql', { key, body: { query, variables } });
const BY_OBJECT = 'query($id: ID) { events(objectId: $id, pageSize: 100) { total nodes { id type data } } }';
type EventNode = { id: string; type: string; data: { object: { id: string } } };

describe('GraphQL events(objectId:)', () => {
  it('should list the events of one object, however many newer events the account has, from its own index', async () => {
    const key = app.account.testKey;
    const paid = await app.request('POST', '/v1/payments', { key, body: { amount: 2500, currency: 'eur', paymentMethod: 'pm_card_visa' } });
    expect(paid.status).toBe(201);
    const payment = paid.body.data;
    const refund = await app.request('POST', `/v1/payments/${payment.id}/refunds`, { key, body: { amount: 500 } });
    expect(refund.status).toBe(201);
    // More than a page of newer events of other objects.
    for (let i = 0; i < 105; i += 15) {
      await Promise.all(Array.from({ length: 15 }, (_, j) => app.request('POST', '/v1/customers', { key, body: { email: `evt-${i + j}@example.com` } })));
    }
    // Every event REST lists, read to the end: those whose object is the payment are the answer.
    const all: EventNode[] = [];
    for (let page = 1; ; page++) {
      const res = await app.request('GET', `/v1/events?pageSize=100&page=${page}`, { key });
      all.push(...res.body.data);
      if (res.body.data.length < 100) break;
    }
    const expected = all.filter((e) => e.data.object.id === payment.id);
    expect(expected.length).toBeGreaterThanOrEqual(1);
    expect(all.findIndex((e) => e.id === expected[0].id)).toBeGreaterThanOrEqual(100);

    const before = app.sql.length;
    const res = await gql(key, BY_OBJECT, { id: payment.id });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.events.total).toBe(expected.length);
    expect(res.body.data.events.nodes).toEqual(expected.map((e) => ({ id: e.id, type: e.type, data: e.data })));
    expect(app.sql.slice(before).some((q) => /FROM events WHERE .*object_id = \$/s.test(q))).toBe(true);
    // The refund's events are the refund's own, and other filters still apply.
    const refunds = await gql(key, 'query($id: ID) { events(objectId: $id, type: "refund.created") { nodes { type data } } }', { id: refund.body.data.id });
    expect(refunds.body.data.events.nodes).toEqual([{ type: 'refund.created', data: { object: expect.objectContaining({ id: refund.body.data.id, paymentId: payment.id }) } }]);
  });

  it('should scope the filter by account, mode and the types the key may read', async () => {
    const key = app.account.testKey;
    const paid = await app.request('POST', '/v1/payments', { key, body: { amount: 700, currency: 'usd', paymentMethod: 'pm_card_visa' } });
    const id = paid.body.data.id;
    expect((await gql(key, BY_OBJECT, { id })).body.data.events.total).toBeGreaterThanOrEqual(1);
    expect((await gql(app.account.liveKey, BY_OBJECT, { id })).body.data.events).toEqual({ total: 0, nodes: [] });
    const other = await app.createAccount();
    expect((await gql(other.testKey, BY_OBJECT, { id })).body.data.events).toEqual({ total: 0, nodes: [] });
    const restricted = await app.request('POST', '/v1/api-keys', { key, body: { name: 'no payments', permissions: ['events:read', 'customers:read'] } });
    expect((await gql(restricted.body.data.secret, BY_OBJECT, { id })).body.data.events).toEqual({ total: 0, nodes: [] });
  });

  it('should refuse an empty or too long objectId, over GraphQL and REST (API.md §2 lists objectId for events)', async () => {
    const key = app.account.testKey;
    for (const id of ['', 'x'.repeat(65)]) {
      const res = await gql(key, BY_OBJECT, { id });
      expect(res.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'objectId' });
      const rest = await app.request('GET', `/v1/events?objectId=${id}`, { key });
      expect(rest.status).toBe(400);
      expect(rest.body.error).toMatchObject({ code: 'invalid_parameter', param: 'objectId' });
    }
    expect((await app.request('GET', '/v1/events?objectId=pay_x', { key })).body).toMatchObject({ data: [], meta: { total: 0 } });
  });
});

const BY_OBJECTS = 'query($ids: [ID!], $page: Int, $pageSize: Int) { events(objectIds: $ids, page: $page, pageSize: $pageSize) { total page pageSize nodes { id type data } } }';
/** The statements that listed events by objectIds since `from`, as the database got their text. */
const objectIdsStatements = (from: number) => app.sql.slice(from).map((q) => q.replace(/^Executing \([^)]*\): /, '')).filter((q) => /FROM events( INDEXED BY events_object_idx)? WHERE .*object_id (IN \(|= ANY \(ARRAY\()/s.test(q));

describe('GraphQL events(objectIds:)', () => {
  it('should list the events of any of several objects, newest first, paged with their total, in one statement whatever their number', async () => {
    const key = app.account.testKey;
    const paid = await app.request('POST', '/v1/payments', { key, body: { amount: 9000, currency: 'eur', paymentMethod: 'pm_card_visa' } });
    const payment = paid.body.data;
    const refundIds: string[] = [];
    for (let i = 0; i < 4; i++) {
      const refund = await app.request('POST', `/v1/payments/${payment.id}/refunds`, { key, body: { amount: 100 + i } });
      expect(refund.status).toBe(201);
      refundIds.push(refund.body.data.id);
    }
    // Events of objects not asked for, before and after: another payment, customers.
    const other = await app.request('POST', '/v1/payments', { key, body: { amount: 800, currency: 'eur', paymentMethod: 'pm_card_visa' } });
    await app.request('POST', `/v1/payments/${other.body.data.id}/refunds`, { key, body: { amount: 100 } });
    await Promise.all(Array.from({ length: 5 }, (_, i) => app.request('POST', '/v1/customers', { key, body: { email: `objs-${i}@example.com` } })));

    const all: EventNode[] = [];
    for (let page = 1; ; page++) {
      const res = await app.request('GET', `/v1/events?pageSize=100&page=${page}`, { key });
      all.push(...res.body.data);
      if (res.body.data.length < 100) break;
    }
    const ids = [payment.id, ...refundIds];
    const expected = all.filter((e) => ids.includes(e.data.object.id)).map((e) => ({ id: e.id, type: e.type, data: e.data }));
    // The payment's events and each refund's (refund.created at least).
    expect(expected.filter((e) => e.data.object.id === payment.id).length).toBeGreaterThanOrEqual(1);
    for (const id of refundIds) expect(expected.some((e) => e.data.object.id === id && e.type === 'refund.created')).toBe(true);

    const before = app.sql.length;
    const res = await gql(key, BY_OBJECTS, { ids, pageSize: 100 });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.events).toEqual({ total: expected.length, page: 1, pageSize: 100, nodes: expected });
    // Page by page, the same list, each page with the whole total.
    const paged: unknown[] = [];
    for (let page = 1; page <= Math.ceil(expected.length / 3); page++) {
      const p = await gql(key, BY_OBJECTS, { ids, page, pageSize: 3 });
      expect(p.body.data.events).toMatchObject({ total: expected.length, page, pageSize: 3 });
      paged.push(...p.body.data.events.nodes);
    }
    expect(paged).toEqual(expected);
    // Fewer ids (repeated ones count once), or one: the same statement text, the ids bound as one parameter.
    const two = await gql(key, BY_OBJECTS, { ids: [refundIds[0], refundIds[0], refundIds[1]], pageSize: 100 });
    expect(two.body.data.events.nodes).toEqual(expected.filter((e) => e.data.object.id === refundIds[0] || e.data.object.id === refundIds[1]));
    const statements = objectIdsStatements(before);
    expect(statements.length).toBeGreaterThanOrEqual(2);
    expect(new Set(statements.filter((q) => !/COUNT\(\*\)/.test(q))).size).toBe(1);
    expect(new Set(statements.filter((q) => /COUNT\(\*\)/.test(q))).size).toBe(1);
    expect(statements.join('\n')).not.toContain(payment.id);
    // No ids: no events.
    expect((await gql(key, BY_OBJECTS, { ids: [] })).body.data.events).toMatchObject({ total: 0, nodes: [] });
  });

  it('should read the list and its total from events_object_idx, one lookup per id, not the account\'s events in order', async () => {
    const before = app.sql.length;
    await gql(app.account.testKey, BY_OBJECTS, { ids: ['pay_a', 're_b'] });
    const statements = objectIdsStatements(before);
    expect(statements).toHaveLength(2);
    const db = app.server.services.db;
    const ids = JSON.stringify(['obj_7', 'obj_10']);
    if (db.dialect === 'sqlite') {
      // Each id a SEARCH on all three leading columns (SQLite keeps no statistics unless ANALYZEd).
      for (const sql of statements) {
        const plan = JSON.stringify(await db.select(`EXPLAIN QUERY PLAN ${sql}`, [app.account.accountId, 'test', ids, 20, 0].slice(0, /COUNT/.test(sql) ? 3 : 5)));
        expect(plan).toMatch(/SEARCH events USING (COVERING )?INDEX events_object_idx \(account_id=\? AND mode=\? AND object_id=\?\)/);
        expect(plan).not.toMatch(/SCAN events/);
      }
      return;
    }
    // PostgreSQL: the plans, custom and generic (a prepared statement's), with 30,000 events of
    // one account and mode analyzed (a single-account install: `IN (SELECT …)` hash-joined a
    // sequential scan of them there); the rows are rolled back.
    const plans = await postgresPlans(db, [`INSERT INTO events (id, account_id, mode, type, object_id, data, created_at)
        SELECT 'evt_plan_' || g, 'acct_plan', 'test', 'customer.created', 'obj_' || (g / 3), '{"object":{}}', now() - g * interval '1 second'
          FROM generate_series(1, 30000) g`], statements.map((sql) => ({ sql, args: /COUNT/.test(sql) ? ['acct_plan', 'test', ids] : ['acct_plan', 'test', ids, 20, 0] })));
    expect(plans).toHaveLength(4);
    for (const plan of plans) {
      expect(plan).toMatch(/Index (Only )?Scan using events_object_idx on events/);
      expect(plan).toMatch(/Index Cond: .*object_id\S* = ANY/);
      expect(plan).not.toMatch(/Seq Scan on events|events_list_idx/);
    }
    expect(Number((await db.select<{ n: string }>("SELECT COUNT(*) AS n FROM events WHERE account_id = 'acct_plan'"))[0].n)).toBe(0);
  });

  it('should scope the list by account, mode and the types the key may read, and need events:read', async () => {
    const key = app.account.testKey;
    const paid = await app.request('POST', '/v1/payments', { key, body: { amount: 1700, currency: 'usd', paymentMethod: 'pm_card_visa' } });
    const refund = await app.request('POST', `/v1/payments/${paid.body.data.id}/refunds`, { key, body: { amount: 200 } });
    const customer = await app.request('POST', '/v1/customers', { key, body: { email: 'scoped-objs@example.com' } });
    const ids = [paid.body.data.id, refund.body.data.id, customer.body.data.id];
    const own = (await gql(key, BY_OBJECTS, { ids })).body.data.events;
    expect(new Set(own.nodes.map((e: EventNode) => e.data.object.id))).toEqual(new Set(ids));
    // The live mode's events of the same account, and another account's, are none of these.
    const liveCustomer = await app.request('POST', '/v1/customers', { key: app.account.liveKey, body: { email: 'live-objs@example.com' } });
    expect(liveCustomer.status).toBe(201);
    expect((await gql(app.account.liveKey, BY_OBJECTS, { ids })).body.data.events).toMatchObject({ total: 0, nodes: [] });
    expect((await gql(key, BY_OBJECTS, { ids: [liveCustomer.body.data.id] })).body.data.events).toMatchObject({ total: 0, nodes: [] });
    expect((await gql(app.account.liveKey, BY_OBJECTS, { ids: [liveCustomer.body.data.id] })).body.data.events.total).toBe(1);
    const other = await app.createAccount();
    expect((await gql(other.testKey, BY_OBJECTS, { ids })).body.data.events).toMatchObject({ total: 0, nodes: [] });
    // A key that may not read payments or refunds sees only the customer's events, and counts only those.
    const restricted = await app.request('POST', '/v1/api-keys', { key, body: { name: 'customers only', permissions: ['events:read', 'customers:read'] } });
    const seen = (await gql(restricted.body.data.secret, BY_OBJECTS, { ids })).body.data.events;
    expect(seen.nodes.map((e: EventNode) => e.type)).toEqual(['customer.created']);
    expect(seen.total).toBe(1);
    const noEvents = await app.request('POST', '/v1/api-keys', { key, body: { name: 'no events', permissions: ['payments:read', 'refunds:read'] } });
    const refused = await gql(noEvents.body.data.secret, BY_OBJECTS, { ids });
    expect(refused.body.data.events).toBeNull();
    expect(refused.body.errors[0].extensions).toMatchObject({ code: 'permission_denied' });
  });

  it('should refuse more than 100 ids, an empty or too long id, objectId with objectIds, and REST should not take it', async () => {
    const key = app.account.testKey;
    const hundred = Array.from({ length: 100 }, (_, i) => `pay_${i}`);
    expect((await gql(key, BY_OBJECTS, { ids: hundred })).body.data.events).toMatchObject({ total: 0, nodes: [] });
    const tooMany = await gql(key, BY_OBJECTS, { ids: [...hundred, 'pay_100'] });
    expect(tooMany.body.data.events).toBeNull();
    expect(tooMany.body.errors[0].message).toMatch(/at most 100/);
    expect(tooMany.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'objectIds' });
    for (const bad of ['', 'x'.repeat(65)]) {
      const res = await gql(key, BY_OBJECTS, { ids: ['pay_1', bad] });
      expect(res.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'objectIds[1]' });
    }
    const both = await gql(key, 'query { events(objectId: "pay_1", objectIds: ["pay_2"]) { total } }');
    expect(both.body.errors[0]).toMatchObject({ message: expect.stringContaining('not both'), extensions: { code: 'invalid_parameter', param: 'objectIds' } });
    const rest = await app.request('GET', '/v1/events?objectIds=pay_x', { key });
    expect(rest.status).toBe(400);
    expect(rest.body.error).toMatchObject({ code: 'unknown_parameter', param: 'objectIds' });
  });
});
