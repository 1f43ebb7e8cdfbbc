import { waitFor } from '../helpers/wait';
import { startTestApp, type TestApp, type TestAccount } from '../helpers/app';
import { DIALECT } from '../helpers/db';

/** Waits until the clock is past `createdAt`'s millisecond, so the next change's createdAt orders after it in the list. */
const afterMs = (createdAt: string) => waitFor(() => Date.now() > Date.parse(createdAt), { what: 'the next millisecond' });

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

async function newCustomer(account: TestAccount, key = account.testKey): Promise<{ id: string; updatedAt: string }> {
  const res = await app.request('POST', '/v1/customers', { key, body: { email: `credit${Math.random()}@example.com` } });
  expect(res.status).toBe(201);
  expect(res.body.data.creditBalance).toEqual({});
  return res.body.data;
}

const adjust = (key: string, customerId: string, body: unknown, headers?: Record<string, string>) =>
  app.request('POST', `/v1/customers/${customerId}/balance-transactions`, { key, body, headers });
const transactions = (key: string, customerId: string, query = '') => app.request('GET', `/v1/customers/${customerId}/balance-transactions${query}`, { key });
const balance = async (key: string, customerId: string) => (await app.request('GET', `/v1/customers/${customerId}`, { key })).body.data.creditBalance;
const updatedEvents = async (key: string, customerId: string) =>
  (await app.request('GET', '/v1/events?type=customer.updated&pageSize=100', { key })).body.data.filter((e: { data: { object: { id: string } } }) => e.data.object.id === customerId);

describe('customer credit over REST', () => {
  let account: TestAccount;
  beforeAll(async () => {
    account = await app.createAccount();
  });

  it('should add and take credit, list every change newest first, and show creditBalance on the customer, its list and its event', async () => {
    const key = account.testKey;
    const customer = await newCustomer(account);
    const added = await adjust(key, customer.id, { currency: 'eur', amount: 2500, description: 'Goodwill credit' });
    expect(added.status).toBe(201);
    expect(added.body.data).toEqual({
      id: expect.stringMatching(/^cbtxn_[0-9A-Za-z]{20,}$/), object: 'balance_transaction', livemode: false, customerId: customer.id, currency: 'EUR',
      amount: 2500, type: 'adjustment', invoiceId: null, description: 'Goodwill credit', createdAt: expect.any(String), updatedAt: added.body.data.createdAt,
    });
    await afterMs(added.body.data.createdAt);
    const taken = await adjust(key, customer.id, { currency: 'EUR', amount: -1000, description: '  Used for an order  ' });
    expect(taken.status).toBe(201);
    expect(taken.body.data).toMatchObject({ amount: -1000, description: 'Used for an order' });
    await afterMs(taken.body.data.createdAt);
    await adjust(key, customer.id, { currency: 'JPY', amount: 700, description: 'Yen' });

    const retrieved = await app.request('GET', `/v1/customers/${customer.id}`, { key });
    expect(retrieved.body.data.creditBalance).toEqual({ EUR: 1500, JPY: 700 });
    expect(retrieved.body.data.updatedAt > customer.updatedAt).toBe(true);
    const listed = await app.request('GET', `/v1/customers?email=${encodeURIComponent(retrieved.body.data.email)}`, { key });
    expect(listed.body.data).toEqual([retrieved.body.data]);

    const list = await transactions(key, customer.id);
    expect(list.status).toBe(200);
    expect(list.body.meta).toEqual({ total: 3, page: 1, pageSize: 20, hasMore: false });
    expect(list.body.data.map((t: { amount: number; currency: string }) => [t.amount, t.currency])).toEqual([[700, 'JPY'], [-1000, 'EUR'], [2500, 'EUR']]);
    expect(list.body.data[2]).toEqual(added.body.data);
    const oldestFirst = await transactions(key, customer.id, '?sortDirection=asc&pageSize=2&page=2');
    expect(oldestFirst.body.data.map((t: { amount: number }) => t.amount)).toEqual([700]);

    // Each change is a customer.updated carrying the customer as it then was.
    const events = await updatedEvents(key, customer.id);
    expect(events.map((e: { data: { object: { creditBalance: unknown } } }) => e.data.object.creditBalance)).toEqual([{ EUR: 1500, JPY: 700 }, { EUR: 1500 }, { EUR: 2500 }]);
    expect(events[0].data.object).toEqual(retrieved.body.data);
  });

  it('should refuse a debit past the balance with 422 insufficient_credit naming amount, and change nothing', async () => {
    const key = account.testKey;
    const customer = await newCustomer(account);
    await adjust(key, customer.id, { currency: 'USD', amount: 500, description: 'In' });
    for (const [currency, amount] of [['USD', -501], ['GBP', -1]] as const) {
      const res = await adjust(key, customer.id, { currency, amount, description: 'Out' });
      expect([res.status, res.body.error.code, res.body.error.param]).toEqual([422, 'insufficient_credit', 'amount']);
      expect(res.body.error.message).toContain(currency);
    }
    expect(await balance(key, customer.id)).toEqual({ USD: 500 });
    expect((await transactions(key, customer.id)).body.meta.total).toBe(1);
    expect(await updatedEvents(key, customer.id)).toHaveLength(1);
    // All of it may go: the balance is then 0, shown as none.
    expect((await adjust(key, customer.id, { currency: 'USD', amount: -500, description: 'All' })).status).toBe(201);
    expect(await balance(key, customer.id)).toEqual({});
  });

  it.each([
    [{ amount: 100, description: 'x' }, 'missing_parameter', 'currency'],
    [{ currency: 'EUR', description: 'x' }, 'missing_parameter', 'amount'],
    [{ currency: 'EUR', amount: 100 }, 'missing_parameter', 'description'],
    [{ currency: 'XYZ', amount: 100, description: 'x' }, 'invalid_parameter', 'currency'],
    [{ currency: 'EUR', amount: 0, description: 'x' }, 'invalid_parameter', 'amount'],
    [{ currency: 'EUR', amount: 1.5, description: 'x' }, 'invalid_parameter', 'amount'],
    [{ currency: 'EUR', amount: '100', description: 'x' }, 'invalid_parameter', 'amount'],
    [{ currency: 'EUR', amount: 1e20, description: 'x' }, 'invalid_parameter', 'amount'],
    [{ currency: 'EUR', amount: -1e13, description: 'x' }, 'invalid_parameter', 'amount'],
    [{ currency: 'EUR', amount: 100, description: ' ' }, 'invalid_parameter', 'description'],
    [{ currency: 'EUR', amount: 100, description: 'a description of 501 characters '.padEnd(501, '.') }, 'invalid_parameter', 'description'],
    [{ currency: 'EUR', amount: 100, description: 'x', invoiceId: 'in_1' }, 'unknown_parameter', 'invoiceId'],
  ])('should refuse %j with 400 %s naming %s', async (body, code, param) => {
    const customer = await newCustomer(account);
    const res = await adjust(account.testKey, customer.id, body);
    expect([res.status, res.body.error.code, res.body.error.param]).toEqual([400, code, param]);
    expect((await transactions(account.testKey, customer.id)).body.meta.total).toBe(0);
  });

  it('should answer 404 for an unknown customer and 400 for an unknown list parameter', async () => {
    const key = account.testKey;
    const post = await adjust(key, 'cus_nope', { currency: 'EUR', amount: 1, description: 'x' });
    expect([post.status, post.body.error.code, post.body.error.param]).toEqual([404, 'resource_not_found', 'id']);
    const get = await transactions(key, 'cus_nope');
    expect([get.status, get.body.error.code]).toEqual([404, 'resource_not_found']);
    const customer = await newCustomer(account);
    const odd = await transactions(key, customer.id, '?type=adjustment');
    expect([odd.status, odd.body.error.code, odd.body.error.param]).toEqual([400, 'unknown_parameter', 'type']);
  });

  it('should replay a retry with the same Idempotency-Key byte for byte, adjusting once; a refused request leaves the key unused', async () => {
    const key = account.testKey;
    const customer = await newCustomer(account);
    const headers = { 'Idempotency-Key': `credit-${Math.random()}` };
    const body = { currency: 'EUR', amount: 1200, description: 'Once' };
    const first = await adjust(key, customer.id, body, headers);
    const again = await adjust(key, customer.id, body, headers);
    expect([first.status, again.status]).toEqual([201, 201]);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    expect(await balance(key, customer.id)).toEqual({ EUR: 1200 });
    const other = await adjust(key, customer.id, { ...body, amount: 1300 }, headers);
    expect([other.status, other.body.error.code]).toEqual([409, 'idempotency_key_reused']);

    const unused = { 'Idempotency-Key': `credit-${Math.random()}` };
    const refused = await adjust(key, customer.id, { currency: 'EUR', amount: -5000, description: 'Too much' }, unused);
    expect(refused.status).toBe(422);
    const fixed = await adjust(key, customer.id, { currency: 'EUR', amount: -200, description: 'Right' }, unused);
    expect(fixed.status).toBe(201);
    expect(fixed.headers['idempotent-replayed']).toBeUndefined();
    expect(await balance(key, customer.id)).toEqual({ EUR: 1000 });
    expect(await updatedEvents(key, customer.id)).toHaveLength(2);
  });

  it('should keep the modes apart: a live key sees no test customer, and each mode has its own credit', async () => {
    const test = await newCustomer(account);
    await adjust(account.testKey, test.id, { currency: 'EUR', amount: 300, description: 'Test credit' });
    const post = await adjust(account.liveKey, test.id, { currency: 'EUR', amount: 100, description: 'x' });
    expect([post.status, post.body.error.code]).toEqual([404, 'resource_not_found']);
    expect((await transactions(account.liveKey, test.id)).status).toBe(404);
    const live = await newCustomer(account, account.liveKey);
    const added = await adjust(account.liveKey, live.id, { currency: 'EUR', amount: 50, description: 'Live credit' });
    expect(added.body.data).toMatchObject({ livemode: true, amount: 50 });
    expect(await balance(account.liveKey, live.id)).toEqual({ EUR: 50 });
    expect(await balance(account.testKey, test.id)).toEqual({ EUR: 300 });
    expect((await transactions(account.testKey, live.id)).status).toBe(404);
  });

  it('should need customers:write to adjust and customers:read to list', async () => {
    const customer = await newCustomer(account);
    const reader = await app.request('POST', '/v1/api-keys', { key: account.testKey, body: { permissions: ['customers:read'] } });
    const refused = await adjust(reader.body.data.secret, customer.id, { currency: 'EUR', amount: 1, description: 'x' });
    expect([refused.status, refused.body.error.code]).toEqual([403, 'permission_denied']);
    expect((await transactions(reader.body.data.secret, customer.id)).status).toBe(200);
    const other = await app.request('POST', '/v1/api-keys', { key: account.testKey, body: { permissions: ['payments:read'] } });
    expect((await transactions(other.body.data.secret, customer.id)).status).toBe(403);
  });

  it(`should never take the balance below 0 when debits race (${DIALECT})`, async () => {
    const key = account.testKey;
    const customer = await newCustomer(account);
    await adjust(key, customer.id, { currency: 'EUR', amount: 1000, description: 'In' });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => adjust(key, customer.id, { currency: 'EUR', amount: -300, description: `Debit ${i}` })));
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 201, 422, 422, 422, 422, 422, 422, 422]);
    for (const r of results.filter((x) => x.status === 422)) expect(r.body.error).toMatchObject({ code: 'insufficient_credit', param: 'amount' });
    expect(await balance(key, customer.id)).toEqual({ EUR: 100 });
    const list = await transactions(key, customer.id, '?pageSize=100');
    expect(list.body.data.reduce((sum: number, t: { amount: number }) => sum + t.amount, 0)).toBe(100);
  });

  it('should read a page of customers\' balances in one statement', async () => {
    const fresh = await app.createAccount();
    for (let i = 0; i < 5; i++) {
      const c = await newCustomer(fresh);
      await adjust(fresh.testKey, c.id, { currency: 'EUR', amount: 10 + i, description: 'x' });
    }
    const before = app.sql.length;
    const page = await app.request('GET', '/v1/customers?pageSize=5', { key: fresh.testKey });
    expect(page.body.data.map((c: { creditBalance: unknown }) => c.creditBalance)).toEqual([14, 13, 12, 11, 10].map((EUR) => ({ EUR })));
    expect(app.sql.slice(before).filter((q) => /\bFROM customer_balances\b/.test(q))).toHaveLength(1);
  });
});
