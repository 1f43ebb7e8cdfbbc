import { startTestApp, type TestApp } from '../helpers/app';

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

  it('should refuse an empty or too long objectId, and REST should not take it (API.md lists only `type`)', async () => {
    const key = app.account.testKey;
    for (const id of ['', 'x'.repeat(65)]) {
      const res = await gql(key, BY_OBJECT, { id });
      expect(res.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'objectId' });
    }
    const rest = await app.request('GET', '/v1/events?objectId=pay_x', { key });
    expect(rest.status).toBe(400);
    expect(rest.body.error).toMatchObject({ code: 'unknown_parameter', param: 'objectId' });
  });
});
