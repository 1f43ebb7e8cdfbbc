import { startTestApp, type TestApp } from '../helpers/app';

let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp({ env: { PUBLIC_URL: 'https://pay.example.com' } });
  key = app.account.testKey;
});
afterAll(() => app.stop());

const card = (number = '4242424242424242') => ({ number, expMonth: 12, expYear: 2034, cvc: '123' });
const create = (body: Record<string, unknown>) => app.request('POST', '/v1/payment-links', { key, body });
const link = async (body: Record<string, unknown> = {}) => {
  const res = await create({ name: 'Donation', amount: 1000, currency: 'usd', ...body });
  expect(res.status).toBe(201);
  return res.body.data;
};
const pay = (slug: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  app.request('POST', `/v1/public/payment-links/${slug}/pay`, { body, headers });

describe('payment links API', () => {
  it('should create an active link with an unguessable slug and its url, and its event', async () => {
    const l = await link({ description: 'Thank you', metadata: { campaign: 'winter' } });
    expect(l).toMatchObject({ object: 'payment_link', livemode: false, name: 'Donation', description: 'Thank you', amount: 1000, currency: 'USD', status: 'active', metadata: { campaign: 'winter' } });
    expect(l.id).toMatch(/^plink_[0-9A-Za-z]{24}$/);
    // 22 base62 characters: about 131 bits, URL-safe.
    expect(l.slug).toMatch(/^[0-9A-Za-z]{22}$/);
    expect(l.url).toBe(`https://pay.example.com/pay/${l.slug}`);
    const slugs = new Set(await Promise.all(Array.from({ length: 20 }, async () => (await link()).slug)));
    expect(slugs.size).toBe(20);
    const events = (await app.request('GET', '/v1/events?type=payment_link.created&pageSize=100', { key })).body.data;
    expect(events.some((e: { data: { object: { id: string } } }) => e.data.object.id === l.id)).toBe(true);
  });

  it('should take a one-time price and refuse a recurring one', async () => {
    const product = (await app.request('POST', '/v1/products', { key, body: { name: 'Mug' } })).body.data;
    const once = (await app.request('POST', '/v1/prices', { key, body: { productId: product.id, unitAmount: 1500, currency: 'jpy' } })).body.data;
    const monthly = (await app.request('POST', '/v1/prices', { key, body: { productId: product.id, unitAmount: 1500, currency: 'jpy', recurring: { interval: 'month' } } })).body.data;
    expect(await link({ amount: undefined, currency: undefined, priceId: once.id })).toMatchObject({ amount: 1500, currency: 'JPY', priceId: once.id });
    const refused = await create({ name: 'Sub', priceId: monthly.id });
    expect([refused.status, refused.body.error.param]).toEqual([400, 'priceId']);
    for (const [body, param] of [[{ amount: 100, currency: 'usd' }, 'name'], [{ name: 'x', amount: 100 }, 'currency'], [{ name: 'x', amount: 1.5, currency: 'usd' }, 'amount']] as const) {
      const res = await create(body);
      expect([res.status, res.body.error.param]).toEqual([400, param]);
    }
  });

  it('should update name, description and status (event payment_link.updated), and refuse other fields', async () => {
    const l = await link();
    const res = await app.request('PATCH', `/v1/payment-links/${l.id}`, { key, body: { name: 'Tip jar', status: 'inactive' } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ name: 'Tip jar', status: 'inactive', amount: 1000 });
    expect((await app.request('PATCH', `/v1/payment-links/${l.id}`, { key, body: { amount: 5 } })).body.error).toMatchObject({ code: 'unknown_parameter', param: 'amount' });
    expect((await app.request('PATCH', `/v1/payment-links/${l.id}`, { key, body: { status: 'deleted' } })).body.error).toMatchObject({ code: 'invalid_parameter', param: 'status' });
    const events = (await app.request('GET', '/v1/events?type=payment_link.updated&pageSize=100', { key })).body.data;
    expect(events.some((e: { data: { object: { id: string; status: string } } }) => e.data.object.id === l.id && e.data.object.status === 'inactive')).toBe(true);
  });

  it('should list with search, status, paging and sorting', async () => {
    const a = await link({ name: 'Zebra fund', amount: 5 });
    const b = await link({ name: 'Zebra fund 2', amount: 50 });
    await app.request('PATCH', `/v1/payment-links/${b.id}`, { key, body: { status: 'inactive' } });
    const found = await app.request('GET', '/v1/payment-links?search=zebra&sortField=amount&sortDirection=asc', { key });
    expect(found.body.data.map((l: { id: string }) => l.id)).toEqual([a.id, b.id]);
    expect(found.body.meta).toMatchObject({ total: 2, page: 1, pageSize: 20 });
    const active = await app.request('GET', '/v1/payment-links?search=zebra&status=active', { key });
    expect(active.body.data.map((l: { id: string }) => l.id)).toEqual([a.id]);
    expect((await app.request('GET', `/v1/payment-links?search=${a.slug}`, { key })).body.data.map((l: { id: string }) => l.id)).toEqual([a.id]);
  });
});

describe('the public payment link', () => {
  it('should resolve by slug without internals, 410 when inactive and 404 when unknown', async () => {
    const l = await link({ metadata: { internal: 'yes' } });
    const res = await app.request('GET', `/v1/public/payment-links/${l.slug}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ object: 'payment_link', livemode: false, slug: l.slug, name: 'Donation', description: null, amount: 1000, currency: 'USD', merchantName: 'Test account', status: 'active' });
    expect(res.text).not.toContain(l.id);
    expect(res.text).not.toContain('internal');
    await app.request('PATCH', `/v1/payment-links/${l.id}`, { key, body: { status: 'inactive' } });
    const gone = await app.request('GET', `/v1/public/payment-links/${l.slug}`);
    expect([gone.status, gone.body.error.code]).toEqual([410, 'payment_link_inactive']);
    const payGone = await pay(l.slug, { card: card() });
    expect([payGone.status, payGone.body.error.code]).toEqual([410, 'payment_link_inactive']);
    expect((await app.request('GET', '/v1/public/payment-links/nope')).status).toBe(404);
  });

  it('should make every pay its own payment carrying paymentLinkId, and answer declines with 200', async () => {
    const l = await link();
    const first = await pay(l.slug, { card: card(), email: 'donor@example.com', name: 'Grace' });
    const second = await pay(l.slug, { card: card('5555555555554444') });
    const declined = await pay(l.slug, { card: card('4000000000000002') });
    expect(first.body.data).toMatchObject({ status: 'succeeded', redirectUrl: null });
    expect(second.body.data.status).toBe('succeeded');
    expect(declined.status).toBe(200);
    expect(declined.body.data).toMatchObject({ status: 'failed', failureCode: 'card_declined' });
    expect(new Set([first.body.data.paymentId, second.body.data.paymentId, declined.body.data.paymentId]).size).toBe(3);
    const payment = (await app.request('GET', `/v1/payments/${first.body.data.paymentId}`, { key })).body.data;
    expect(payment).toMatchObject({ amount: 1000, currency: 'USD', paymentLinkId: l.id, description: 'Donation' });
    // The payer is anonymous: no customer, the e-mail is the receipt's.
    expect(payment).toMatchObject({ customerId: null, receiptEmail: 'donor@example.com' });
  });

  it('should replay a pay under the same Idempotency-Key, scoped to the link', async () => {
    const l = await link();
    const first = await pay(l.slug, { card: card() }, { 'Idempotency-Key': 'link-pay-1' });
    const again = await pay(l.slug, { card: card() }, { 'Idempotency-Key': 'link-pay-1' });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    const other = await link();
    const elsewhere = await pay(other.slug, { card: card() }, { 'Idempotency-Key': 'link-pay-1' });
    expect(elsewhere.headers['idempotent-replayed']).toBeUndefined();
    expect(elsewhere.body.data.paymentId).not.toBe(first.body.data.paymentId);
  });
});
