import { startTestApp, type TestApp } from '../helpers/app';

let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp();
  key = app.account.testKey;
});
afterAll(() => app.stop());

const post = (body: unknown) => app.request('POST', '/v1/customers', { key, body });

describe('customers', () => {
  it('should create, retrieve and partially update a customer', async () => {
    const created = await post({ email: 'Jane@Example.com', name: 'Jane', country: 'de', phone: '+49 30 123456', metadata: { plan: 'gold' } });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({ email: 'Jane@Example.com', name: 'Jane', country: 'DE', metadata: { plan: 'gold' } });
    const id = created.body.data.id;
    const patched = await app.request('PATCH', `/v1/customers/${id}`, { key, body: { name: 'Jane D.', metadata: { tier: '2' } } });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ name: 'Jane D.', country: 'DE', phone: '+49 30 123456', metadata: { plan: 'gold', tier: '2' } });
    const removed = await app.request('PATCH', `/v1/customers/${id}`, { key, body: { metadata: { plan: null } } });
    expect(removed.body.data.metadata).toEqual({ tier: '2' });
    const fetched = await app.request('GET', `/v1/customers/${id}`, { key });
    expect(fetched.body.data).toEqual(removed.body.data);
  });

  it('should refuse a duplicate e-mail case-insensitively with 409 duplicate_email', async () => {
    await post({ email: 'dup@example.com' });
    const again = await post({ email: 'DUP@example.COM' });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatchObject({ code: 'duplicate_email', param: 'email' });
  });

  it('should refuse a PATCH to an e-mail another customer has', async () => {
    await post({ email: 'taken@example.com' });
    const other = await post({ email: 'free@example.com' });
    const res = await app.request('PATCH', `/v1/customers/${other.body.data.id}`, { key, body: { email: 'Taken@example.com' } });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('duplicate_email');
  });

  it('should let exactly one of concurrent creates with the same e-mail win', async () => {
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => post({ email: i % 2 ? 'race@example.com' : 'RACE@example.com' })));
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(9);
    for (const r of results.filter((x) => x.status === 409)) expect(r.body.error.code).toBe('duplicate_email');
  });

  it.each([
    [{}, 'missing_parameter', 'email'],
    [{ email: 'not-an-email' }, 'invalid_parameter', 'email'],
    [{ email: 'a@b.co', country: 'DEU' }, 'invalid_parameter', 'country'],
    [{ email: 'a@b.co', phone: 'call me' }, 'invalid_parameter', 'phone'],
    [{ email: 'a@b.co', nickname: 'x' }, 'unknown_parameter', 'nickname'],
    [{ email: 'a@b.co', metadata: { k: 1 } }, 'invalid_parameter', 'metadata.k'],
    [{ email: 'a@b.co', metadata: 'x' }, 'invalid_parameter', 'metadata'],
    [{ email: 'a@b.co', metadata: { ['k'.repeat(41)]: 'v' } }, 'invalid_parameter', `metadata.${'k'.repeat(41)}`],
    [{ email: 'a@b.co', metadata: { k: 'v'.repeat(501) } }, 'invalid_parameter', 'metadata.k'],
    [{ email: 'a@b.co', metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) }, 'invalid_parameter', 'metadata'],
    [{ email: 42 }, 'invalid_parameter', 'email'],
  ])('should refuse %j with %s on %s', async (body, code, param) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe(code);
    expect(res.body.error.param).toBe(param);
  });

  it('should refuse a PATCH of a field that is not writable', async () => {
    const c = await post({ email: 'ro@example.com' });
    const res = await app.request('PATCH', `/v1/customers/${c.body.data.id}`, { key, body: { id: 'cus_other' } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'unknown_parameter', param: 'id' });
    const unchanged = await app.request('GET', `/v1/customers/${c.body.data.id}`, { key });
    expect(unchanged.body.data.updatedAt).toBe(c.body.data.updatedAt);
  });
});

describe('customer lists', () => {
  // A separate account gives the list tests a known, empty starting point.
  let fresh: { request: TestApp['request']; account: { testKey: string } };
  const ids: string[] = [];
  beforeAll(async () => {
    fresh = { request: (m, p, o) => app.request(m, p, o), account: await app.createAccount() };
    for (let i = 0; i < 7; i++) {
      const res = await fresh.request('POST', '/v1/customers', {
        key: fresh.account.testKey,
        body: { email: `user${i}@list.example`, name: i === 3 ? 'Zed Searchable' : `User ${i}` },
      });
      ids.push(res.body.data.id);
    }
  });
  it('should page newest first with meta', async () => {
    const page1 = await fresh.request('GET', '/v1/customers?pageSize=3', { key: fresh.account.testKey });
    expect(page1.body.meta).toEqual({ total: 7, page: 1, pageSize: 3, hasMore: true });
    expect(page1.body.data.map((c: { id: string }) => c.id)).toEqual([ids[6], ids[5], ids[4]]);
    const page3 = await fresh.request('GET', '/v1/customers?pageSize=3&page=3', { key: fresh.account.testKey });
    expect(page3.body.data.map((c: { id: string }) => c.id)).toEqual([ids[0]]);
  });

  it('should sort ascending on request', async () => {
    const asc = await fresh.request('GET', '/v1/customers?sortField=createdAt&sortDirection=asc&pageSize=2', { key: fresh.account.testKey });
    expect(asc.body.data.map((c: { id: string }) => c.id)).toEqual([ids[0], ids[1]]);
  });

  it('should search over e-mail and name case-insensitively', async () => {
    const byName = await fresh.request('GET', '/v1/customers?search=zed%20SEARCH', { key: fresh.account.testKey });
    expect(byName.body.data.map((c: { id: string }) => c.id)).toEqual([ids[3]]);
    const byEmail = await fresh.request('GET', '/v1/customers?search=USER5@', { key: fresh.account.testKey });
    expect(byEmail.body.data.map((c: { id: string }) => c.id)).toEqual([ids[5]]);
    const wildcard = await fresh.request('GET', '/v1/customers?search=%25', { key: fresh.account.testKey });
    expect(wildcard.body.meta.total).toBe(0);
  });
});

describe('customer events', () => {
  it('should record customer.created and customer.updated with the API object', async () => {
    const c = await post({ email: 'evented@example.com' });
    const u = await app.request('PATCH', `/v1/customers/${c.body.data.id}`, { key, body: { name: 'Evented' } });
    const created = await app.request('GET', '/v1/events?type=customer.created&pageSize=100', { key });
    const ev = created.body.data.find((e: any) => e.data.object.id === c.body.data.id);
    expect(ev).toMatchObject({ object: 'event', type: 'customer.created', livemode: false, data: { object: c.body.data } });
    const updated = await app.request('GET', '/v1/events?type=customer.updated', { key });
    const upd = updated.body.data.find((e: any) => e.data.object.id === c.body.data.id);
    expect(upd.data.object).toEqual(u.body.data);
    const one = await app.request('GET', `/v1/events/${ev.id}`, { key });
    expect(one.body.data).toEqual(ev);
  });

  it('should write no event and no customer when the change fails half-way', async () => {
    const before = await app.request('GET', '/v1/events?pageSize=1', { key });
    const events = app.server.services.events as unknown as { record: (...a: unknown[]) => Promise<unknown> };
    const original = events.record;
    events.record = async () => {
      throw new Error('event store down');
    };
    try {
      const res = await post({ email: 'halfway@example.com' });
      expect(res.status).toBe(500);
    } finally {
      events.record = original;
    }
    const list = await app.request('GET', '/v1/customers?search=halfway', { key });
    expect(list.body.meta.total).toBe(0);
    const after = await app.request('GET', '/v1/events?pageSize=1', { key });
    expect(after.body.meta.total).toBe(before.body.meta.total);
  });
});
