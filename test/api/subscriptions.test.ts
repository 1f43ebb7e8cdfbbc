import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';

let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp({ env: { PUBLIC_URL: 'https://pay.example.com' } });
  key = app.account.testKey;
});
afterAll(() => app.stop());

type Json = Record<string, any>;
const post = async (p: string, body?: Json, k = key) => app.request('POST', p, { key: k, body });
const get = async (p: string, k = key) => app.request('GET', p, { key: k });
const ok = async (res: Promise<{ status: number; body: Json }>, status = 200) => {
  const r = await res;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body.data;
};

const clock = (frozenTime: string) => ok(post('/v1/test-clocks', { frozenTime }), 201);
const advance = (id: string, frozenTime: string) => ok(post(`/v1/test-clocks/${id}/advance`, { frozenTime }));
const price = async (unitAmount: number, recurring: Json = { interval: 'month' }, currency = 'usd') => {
  const product = await ok(post('/v1/products', { name: `Plan ${unitAmount}` }), 201);
  return ok(post('/v1/prices', { productId: product.id, unitAmount, currency, recurring }), 201);
};
const customer = async (testClockId?: string, card = '4242424242424242') => {
  const c = await ok(post('/v1/customers', { email: `sub-${Math.random().toString(36).slice(2)}@example.com`, ...(testClockId ? { testClockId } : {}) }), 201);
  await ok(post(`/v1/customers/${c.id}/payment-methods`, { card: { number: card, expMonth: 12, expYear: 2040, cvc: '123' } }), 201);
  return c;
};
const invoicesOf = async (subId: string) => (await get(`/v1/subscriptions/${subId}/invoices?pageSize=100&sortDirection=asc`)).body.data as Json[];
const eventsOf = async (objectId: string) => ((await get('/v1/events?pageSize=100')).body.data as Json[])
  .filter((e) => e.data.object.id === objectId).map((e) => e.type).reverse();

describe(`subscriptions (${DIALECT})`, () => {
  it('should keep the anchor day across month ends in a leap year (Jan 31 → Feb 29 → Mar 31 → Apr 30)', async () => {
    const tc = await clock('2028-01-31T10:00:00Z');
    const c = await customer(tc.id);
    const p = await price(1000);
    const sub = await ok(post('/v1/subscriptions', { customerId: c.id, priceId: p.id }), 201);
    expect(sub).toMatchObject({ status: 'active', testClockId: tc.id, currentPeriodStart: '2028-01-31T10:00:00.000Z', currentPeriodEnd: '2028-02-29T10:00:00.000Z' });
    await advance(tc.id, '2028-05-01T00:00:00Z');
    const now = await ok(get(`/v1/subscriptions/${sub.id}`));
    expect([now.currentPeriodStart, now.currentPeriodEnd]).toEqual(['2028-04-30T10:00:00.000Z', '2028-05-31T10:00:00.000Z']);
    const invoices = await invoicesOf(sub.id);
    expect(invoices.map((i) => [i.status, i.lineItems.at(-1).periodStart, i.lineItems.at(-1).periodEnd])).toEqual([
      ['paid', '2028-01-31T10:00:00.000Z', '2028-02-29T10:00:00.000Z'],
      ['paid', '2028-02-29T10:00:00.000Z', '2028-03-31T10:00:00.000Z'],
      ['paid', '2028-03-31T10:00:00.000Z', '2028-04-30T10:00:00.000Z'],
      ['paid', '2028-04-30T10:00:00.000Z', '2028-05-31T10:00:00.000Z'],
    ]);
    // Objects on the clock are stamped with its time.
    expect(invoices.map((i) => i.createdAt)).toEqual(['2028-01-31T10:00:00.000Z', '2028-02-29T10:00:00.000Z', '2028-03-31T10:00:00.000Z', '2028-04-30T10:00:00.000Z']);
  });

  it('should answer a failed first charge past_due in the 201, then retry on the dunning schedule and cancel after the last', async () => {
    const tc = await clock('2027-03-01T00:00:00Z');
    const c = await customer(tc.id, '4000000000000341');
    const p = await price(2500);
    const sub = await ok(post('/v1/subscriptions', { customerId: c.id, priceId: p.id }), 201);
    expect(sub.status).toBe('past_due');
    expect(sub.nextPaymentAttemptAt).toBe('2027-03-02T00:00:00.000Z');
    // Both at the clock's instant (their order within one instant is not defined).
    expect((await eventsOf(sub.id)).sort()).toEqual(['subscription.created', 'subscription.past_due']);
    await advance(tc.id, '2027-03-03T00:00:00Z');
    expect((await ok(get(`/v1/subscriptions/${sub.id}`))).nextPaymentAttemptAt).toBe('2027-03-04T00:00:00.000Z');
    await advance(tc.id, '2027-03-09T00:00:00Z');
    const ended = await ok(get(`/v1/subscriptions/${sub.id}`));
    expect(ended).toMatchObject({ status: 'canceled', endedAt: '2027-03-08T00:00:00.000Z' });
    expect((await eventsOf(sub.id)).at(-1)).toBe('subscription.canceled');
    const payments = (await get(`/v1/subscriptions/${sub.id}/payments?pageSize=100`)).body.data as Json[];
    expect(payments.map((x) => x.status)).toEqual(['failed', 'failed', 'failed', 'failed']);
  });
});
