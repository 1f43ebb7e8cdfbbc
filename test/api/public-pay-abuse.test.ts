import { FixedClock } from '../../src/core/clock';
import { startTestApp, type TestApp, type TestAccount } from '../helpers/app';
import type { RequestOptions } from '../helpers/http';
import { seeded } from '../helpers/seeded';

/**
 * Issue 31: the public pay routes (hosted checkout, payment links, invoice pages) under an
 * adversarial payer. Each case was reproduced against the code before the fix: an anonymous
 * payer took over an existing customer's billing, declined cards were limited only per IP, and
 * any Content-Type was parsed as JSON.
 */

const clock = new FixedClock(new Date('2026-11-29T10:00:00.000Z'));
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ clock });
});
afterAll(() => app.stop());

const HOUR = 60 * 60 * 1000;
const card = (number: string) => ({ number, expMonth: 12, expYear: 2034, cvc: '123' });
const GOOD = '4242424242424242';
const DECLINED = '4000000000000002';
const SAVES_BUT_DECLINES = '4000000000000341';

/** An account of its own per test: the per-account cap counts every public pay of it. */
async function merchant(): Promise<TestAccount & { req(method: string, path: string, body?: unknown, mode?: 'test' | 'live'): Promise<any> }> {
  const account = await app.createAccount();
  return {
    ...account,
    async req(method, path, body, mode = 'test') {
      const res = await app.request(method, path, { key: mode === 'live' ? account.liveKey : account.testKey, body });
      if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${res.text}`);
      return res.body.data;
    },
  };
}

const publicPay = (path: string, body: unknown, opts: RequestOptions = {}) => app.request('POST', `/v1/public/${path}/pay`, { body, ...opts });
const from = (n: number): RequestOptions => ({ localAddress: `127.0.0.${n}` });

async function recurringPrice(m: Awaited<ReturnType<typeof merchant>>) {
  const product = await m.req('POST', '/v1/products', { name: 'Pro plan' });
  return m.req('POST', '/v1/prices', { productId: product.id, unitAmount: 1000, currency: 'usd', recurring: { interval: 'month' } });
}

describe('an anonymous payer never touches an existing customer', () => {
  it('should refuse a subscription pay with a customer\'s e-mail in any letter case: no card planted, no subscription, and the merchant\'s invoice pay still charges the customer\'s own card', async () => {
    const m = await merchant();
    const ada = await m.req('POST', '/v1/customers', { email: 'ada@example.com', name: 'Ada' });
    const own = await m.req('POST', `/v1/customers/${ada.id}/payment-methods`, { card: card(GOOD) });
    const price = await recurringPrice(m);
    const session = await m.req('POST', '/v1/checkout-sessions', { mode: 'subscription', priceId: price.id });

    const res = await publicPay(`checkout-sessions/${session.id}`, { card: card(SAVES_BUT_DECLINES), email: 'ADA@Example.COM', name: 'Mallory' });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: 'customer_exists', param: 'email' });

    // Nothing of Ada's changed, and nothing was made for the payer.
    expect((await m.req('GET', `/v1/customers/${ada.id}`)).defaultPaymentMethodId).toBe(own.id);
    expect(await m.req('GET', `/v1/customers/${ada.id}/payment-methods`)).toHaveLength(1);
    expect(await m.req('GET', `/v1/subscriptions?customerId=${ada.id}`)).toEqual([]);
    expect(await m.req('GET', '/v1/customers')).toHaveLength(1);
    expect(await m.req('GET', `/v1/checkout-sessions/${session.id}`)).toMatchObject({ status: 'open', customerId: null, subscriptionId: null });
    // The merchant's next charge of Ada's invoice takes Ada's own card.
    const invoice = await m.req('POST', '/v1/invoices', { customerId: ada.id, currency: 'usd', lineItems: [{ description: 'Support', unitAmount: 5000 }] });
    const paid = await m.req('POST', `/v1/invoices/${invoice.id}/pay`, {});
    expect(paid).toMatchObject({ status: 'paid', paymentStatus: 'paid' });
    const payment = await m.req('GET', `/v1/payments/${paid.latestPaymentId}`);
    expect(payment).toMatchObject({ status: 'succeeded', customerId: ada.id, paymentMethod: own.id, paymentMethodDetails: { last4: '4242' } });
  });

  it('should refuse a setup pay for a customer\'s e-mail, given by the merchant\'s session or typed, saving no card', async () => {
    const m = await merchant();
    const ada = await m.req('POST', '/v1/customers', { email: 'ada@example.com' });
    const byMerchant = await m.req('POST', '/v1/checkout-sessions', { mode: 'setup', customerEmail: 'Ada@example.com' });
    const res = await publicPay(`checkout-sessions/${byMerchant.id}`, { card: card(GOOD) });
    expect([res.status, res.body.error?.code]).toEqual([422, 'customer_exists']);
    expect(await m.req('GET', `/v1/customers/${ada.id}/payment-methods`)).toEqual([]);
    expect((await m.req('GET', `/v1/customers/${ada.id}`)).defaultPaymentMethodId).toBeNull();
    // A session made with customerId is that customer's: the card is saved for Ada.
    const hers = await m.req('POST', '/v1/checkout-sessions', { mode: 'setup', customerId: ada.id });
    const saved = await publicPay(`checkout-sessions/${hers.id}`, { card: card(GOOD) });
    expect(saved.body.data).toMatchObject({ status: 'succeeded', paymentMethodId: expect.stringMatching(/^pm_/) });
    expect((await m.req('GET', `/v1/customers/${ada.id}`)).defaultPaymentMethodId).toBe(saved.body.data.paymentMethodId);
  });

  it('should create a new customer from a subscription pay only once the card is saved', async () => {
    const m = await merchant();
    const price = await recurringPrice(m);
    const session = await m.req('POST', '/v1/checkout-sessions', { mode: 'subscription', priceId: price.id });
    const declined = await publicPay(`checkout-sessions/${session.id}`, { card: card(DECLINED), email: 'new@example.com', name: 'Nia' });
    expect(declined.body.data).toMatchObject({ status: 'failed', failureCode: 'card_declined' });
    expect(await m.req('GET', '/v1/customers')).toEqual([]);
    const paid = await publicPay(`checkout-sessions/${session.id}`, { card: card(GOOD), email: 'new@example.com', name: 'Nia' });
    expect(paid.body.data).toMatchObject({ status: 'succeeded', subscriptionId: expect.stringMatching(/^sub_/) });
    const customers = await m.req('GET', '/v1/customers');
    expect(customers).toEqual([expect.objectContaining({ email: 'new@example.com', name: 'Nia', defaultPaymentMethodId: paid.body.data.paymentMethodId })]);
    expect(await m.req('GET', `/v1/subscriptions/${paid.body.data.subscriptionId}`)).toMatchObject({ status: 'active', customerId: customers[0].id });
  });

  it('should attach no customer to a link or payment-mode pay, whatever e-mail is typed, and create none for declines', async () => {
    const m = await merchant();
    const ada = await m.req('POST', '/v1/customers', { email: 'ada@example.com' });
    const link = await m.req('POST', '/v1/payment-links', { name: 'Donation', amount: 1000, currency: 'usd' });
    const paid = await publicPay(`payment-links/${link.slug}`, { card: card(GOOD), email: 'ADA@example.com' });
    const payment = await m.req('GET', `/v1/payments/${paid.body.data.paymentId}`);
    expect(payment).toMatchObject({ status: 'succeeded', customerId: null, receiptEmail: 'ADA@example.com' });
    expect(await m.req('GET', `/v1/payments?customerId=${ada.id}`)).toEqual([]);
    // The receipt e-mail is searchable (a support tool finds an anonymous payer's payment).
    expect((await m.req('GET', '/v1/payments?search=ada%40example.com')).map((p: { id: string }) => p.id)).toEqual([payment.id]);

    const session = await m.req('POST', '/v1/checkout-sessions', { mode: 'payment', amount: 500, currency: 'usd', customerEmail: 'ada@example.com' });
    const sessionPay = await publicPay(`checkout-sessions/${session.id}`, { card: card(GOOD) });
    expect(await m.req('GET', `/v1/payments/${sessionPay.body.data.paymentId}`)).toMatchObject({ customerId: null, receiptEmail: 'ada@example.com' });
    expect(await m.req('GET', `/v1/checkout-sessions/${session.id}`)).toMatchObject({ status: 'complete', customerId: null });

    // 20 declined pays with made-up e-mails (from four addresses, under the per-address cap): no customer.
    const declines = [];
    for (let i = 0; i < 20; i++) declines.push(await publicPay(`payment-links/${link.slug}`, { card: card(DECLINED), email: `made-up-${i}@example.com` }, from(10 + (i % 4))));
    expect(declines.map((r) => r.body.data?.status)).toEqual(Array(20).fill('failed'));
    expect((await m.req('GET', '/v1/customers')).map((c: { id: string }) => c.id)).toEqual([ada.id]);
  });
});

describe('receiptEmail', () => {
  it('should keep a receiptEmail sent with POST /v1/payments, and refuse one that is not an e-mail', async () => {
    const m = await merchant();
    const payment = await m.req('POST', '/v1/payments', { amount: 500, currency: 'usd', paymentMethod: 'pm_card_visa', receiptEmail: ' kim@example.com ' });
    expect(payment).toMatchObject({ status: 'succeeded', customerId: null, receiptEmail: 'kim@example.com' });
    const bad = await app.request('POST', '/v1/payments', { key: m.testKey, body: { amount: 500, currency: 'usd', paymentMethod: 'pm_card_visa', receiptEmail: 'kim' } });
    expect([bad.status, bad.body.error.code, bad.body.error.param]).toEqual([400, 'invalid_parameter', 'receiptEmail']);
  });
});

describe('caps on failed public pays', () => {
  it('should close a checkout session after 5 failed pays in all, from any address, before any gateway is asked', async () => {
    const m = await merchant();
    const session = await m.req('POST', '/v1/checkout-sessions', { mode: 'payment', amount: 700, currency: 'eur' });
    for (let i = 0; i < 5; i++) {
      const res = await publicPay(`checkout-sessions/${session.id}`, { card: card(DECLINED) }, from(20 + i));
      expect(res.body.data).toMatchObject({ status: 'failed' });
    }
    for (const number of [DECLINED, GOOD]) {
      const refused = await publicPay(`checkout-sessions/${session.id}`, { card: card(number) }, from(30));
      expect(refused.status).toBe(429);
      expect(refused.body.error).toMatchObject({ code: 'too_many_attempts', message: expect.stringContaining('can no longer be paid') });
    }
    // The refused attempts reached no gateway: five payments, five calls.
    const payments = (await m.req('GET', '/v1/payments?pageSize=100')).filter((p: { checkoutSessionId: string }) => p.checkoutSessionId === session.id);
    expect(payments).toHaveLength(5);
    expect((await app.request('GET', `/v1/public/checkout-sessions/${session.id}`)).body.data).toMatchObject({ status: 'open', payable: false });
    const page = await app.request('GET', `/checkout/${session.id}`);
    expect(page.text).toContain('This checkout can no longer be paid');
    expect(page.text).not.toContain('id="card-form"');
  });

  it('should take at most 5 failed pays of a link per client address in an hour; other addresses go on, and the hour passes', async () => {
    const m = await merchant();
    const link = await m.req('POST', '/v1/payment-links', { name: 'Ticket', amount: 1900, currency: 'usd' });
    const path = `payment-links/${link.slug}`;
    // A success in between does not count: five declines, then a card that works, then refused.
    for (let i = 0; i < 4; i++) expect((await publicPay(path, { card: card(DECLINED) }, from(40))).body.data.status).toBe('failed');
    expect((await publicPay(path, { card: card(GOOD) }, from(40))).body.data.status).toBe('succeeded');
    expect((await publicPay(path, { card: card(DECLINED) }, from(40))).body.data.status).toBe('failed');
    const refused = await publicPay(path, { card: card(GOOD) }, from(40));
    expect([refused.status, refused.body.error?.code]).toEqual([429, 'too_many_attempts']);
    expect(refused.body.error.message).toMatch(/from your connection; try again in 60 minutes/);
    expect((await publicPay(path, { card: card(GOOD) }, from(41))).body.data.status).toBe('succeeded');
    const payments = (await m.req('GET', '/v1/payments?pageSize=100')).filter((p: { paymentLinkId: string }) => p.paymentLinkId === link.id);
    expect(payments).toHaveLength(7);
    clock.advance(HOUR + 1000);
    expect((await publicPay(path, { card: card(GOOD) }, from(40))).body.data.status).toBe('succeeded');
  });

  it('should take at most 5 failed pays of an invoice page per client address in an hour', async () => {
    const m = await merchant();
    const customer = await m.req('POST', '/v1/customers', { email: 'bill@example.com' });
    const invoice = await m.req('POST', '/v1/invoices', { customerId: customer.id, currency: 'eur', lineItems: [{ description: 'Audit', unitAmount: 12000 }] });
    await m.req('POST', `/v1/invoices/${invoice.id}/send`);
    const path = `invoices/${invoice.id}`;
    for (let i = 0; i < 5; i++) expect((await publicPay(path, { card: card(DECLINED) }, from(50))).body.data.status).toBe('failed');
    const refused = await publicPay(path, { card: card(GOOD) }, from(50));
    expect([refused.status, refused.body.error?.code]).toEqual([429, 'too_many_attempts']);
    expect((await m.req('GET', `/v1/invoices/${invoice.id}`)).status).toBe('sent');
    expect((await publicPay(path, { card: card(GOOD) }, from(51))).body.data.status).toBe('succeeded');
    expect((await m.req('GET', `/v1/invoices/${invoice.id}`)).status).toBe('paid');
  });

  it('should refuse every public pay of an account and mode past publicDeclinesPerHour, with one event, until the hour has passed', async () => {
    const m = await merchant();
    expect((await m.req('GET', '/v1/account')).publicDeclinesPerHour).toBe(50);
    expect((await m.req('PATCH', '/v1/account', { publicDeclinesPerHour: 6 })).publicDeclinesPerHour).toBe(6);
    const links = await Promise.all([1, 2, 3].map((i) => m.req('POST', '/v1/payment-links', { name: `L${i}`, amount: 300, currency: 'usd' })));
    // Six declines spread over three links and six addresses: no per-link or per-address cap is near.
    for (let i = 0; i < 6; i++) {
      expect((await publicPay(`payment-links/${links[i % 3].slug}`, { card: card(DECLINED) }, from(60 + i))).body.data.status).toBe('failed');
    }
    const session = await m.req('POST', '/v1/checkout-sessions', { mode: 'payment', amount: 900, currency: 'usd' });
    const refusals = [
      await publicPay(`checkout-sessions/${session.id}`, { card: card(GOOD) }, from(70)),
      await publicPay(`payment-links/${links[0].slug}`, { card: card(GOOD) }, from(71)),
      await publicPay(`payment-links/${links[1].slug}`, { card: card(DECLINED) }, from(72)),
    ];
    for (const r of refusals) {
      expect([r.status, r.body.error?.code]).toEqual([429, 'too_many_attempts']);
      expect(r.body.error.message).toContain("Too many failed payments on this merchant's pages");
    }
    const events = await m.req('GET', '/v1/events?type=account.public_declines_exceeded');
    expect(events).toHaveLength(1);
    expect(events[0].data.object).toMatchObject({ object: 'account', id: m.accountId, livemode: false, publicDeclinesPerHour: 6 });
    // Live mode has its own count.
    const live = await m.req('POST', '/v1/gateways', { name: 'Live sim', type: 'simulator' }, 'live');
    expect(live.id).toMatch(/^gw_/);
    const liveLink = await m.req('POST', '/v1/payment-links', { name: 'Live', amount: 300, currency: 'usd' }, 'live');
    expect((await publicPay(`payment-links/${liveLink.slug}`, { card: card(GOOD) }, from(73))).body.data.status).toBe('succeeded');
    // The rolling hour passes: public pays of test mode go through again.
    clock.advance(HOUR + 1000);
    expect((await publicPay(`checkout-sessions/${session.id}`, { card: card(GOOD) }, from(70))).body.data.status).toBe('succeeded');
    expect(await m.req('GET', '/v1/events?type=account.public_declines_exceeded')).toHaveLength(1);
  });

  it('should keep concurrent declines of one link from one address within its cap', async () => {
    const m = await merchant();
    const link = await m.req('POST', '/v1/payment-links', { name: 'Burst', amount: 100, currency: 'usd' });
    const results = await Promise.all(Array.from({ length: 20 }, () => publicPay(`payment-links/${link.slug}`, { card: card(DECLINED) }, from(80))));
    const processed = results.filter((r) => r.status === 200);
    expect(processed.length).toBeLessThanOrEqual(5);
    expect(results.filter((r) => r.status === 429)).toHaveLength(20 - processed.length);
    const payments = (await m.req('GET', '/v1/payments?pageSize=100')).filter((p: { paymentLinkId: string }) => p.paymentLinkId === link.id);
    expect(payments).toHaveLength(processed.length);
  });

  it('should purge attempts past every window', async () => {
    const m = await merchant();
    const link = await m.req('POST', '/v1/payment-links', { name: 'Old', amount: 100, currency: 'usd' });
    await publicPay(`payment-links/${link.slug}`, { card: card(DECLINED) }, from(90));
    const count = async () => Number((await app.server.services.db.select<{ n: number }>('SELECT COUNT(*) AS n FROM public_pay_attempts WHERE target_id = $1', [link.id]))[0].n);
    expect(await count()).toBe(1);
    expect(await app.server.services.publicAttempts.purge(clock.now())).toBe(0);
    clock.advance(25 * HOUR + 1000);
    expect(await app.server.services.publicAttempts.purge(clock.now())).toBeGreaterThanOrEqual(1);
    expect(await count()).toBe(0);
  });
});

describe('random sequences of public pays against a model of the caps', () => {
  // What API.md §11 says, written apart from the service: which attempt is refused, which charges,
  // and so how much is charged and how many declines are let through, for any order of attempts.
  it.each([7, 31, 2026])('should charge and refuse exactly as the rules say (seed %i)', async (seed) => {
    const random = seeded(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
    const m = await merchant();
    const LIMIT = 20;
    await m.req('PATCH', '/v1/account', { publicDeclinesPerHour: LIMIT });
    const sessions = await Promise.all([300, 700, 1100].map((amount) => m.req('POST', '/v1/checkout-sessions', { mode: 'payment', amount, currency: 'eur' })));
    const links = await Promise.all([250, 900].map((amount) => m.req('POST', '/v1/payment-links', { name: `L${amount}`, amount, currency: 'eur' })));
    const addresses = [150, 151];
    // The model.
    const model = { charged: 0, declinesThrough: 0, accountFailed: 0, refusedByAccount: 0, sessionFailed: new Map<string, number>(), complete: new Set<string>(), linkFailed: new Map<string, number>() };
    for (let i = 0; i < 70; i++) {
      const good = random() < 0.3;
      const address = pick(addresses);
      const onSession = random() < 0.5;
      const target = onSession ? pick(sessions) : pick(links);
      const res = await publicPay(onSession ? `checkout-sessions/${target.id}` : `payment-links/${target.slug}`, { card: card(good ? GOOD : DECLINED) }, from(address));
      const targetKey = onSession ? target.id : `${target.id}/${address}`;
      const failedHere = (onSession ? model.sessionFailed : model.linkFailed).get(targetKey) ?? 0;
      let expected: string;
      if (onSession && model.complete.has(target.id)) expected = '422 invalid_state';
      else if (model.accountFailed >= LIMIT) {
        expected = '429 too_many_attempts';
        model.refusedByAccount += 1;
      } else if (failedHere >= 5) expected = '429 too_many_attempts';
      else if (good) {
        expected = '200 succeeded';
        model.charged += target.amount;
        if (onSession) model.complete.add(target.id);
      } else {
        expected = '200 failed';
        model.declinesThrough += 1;
        model.accountFailed += 1;
        (onSession ? model.sessionFailed : model.linkFailed).set(targetKey, failedHere + 1);
      }
      expect(`${i}: ${res.status} ${res.body.data?.status ?? res.body.error?.code}`).toBe(`${i}: ${expected}`);
    }
    // What the service recorded adds up to the model: the amounts charged, and the declines let through.
    const payments = await m.req('GET', '/v1/payments?pageSize=100');
    const succeeded = payments.filter((p: { status: string }) => p.status === 'succeeded');
    expect(succeeded.reduce((sum: number, p: { amount: number }) => sum + p.amount, 0)).toBe(model.charged);
    expect(payments.filter((p: { status: string }) => p.status === 'failed')).toHaveLength(model.declinesThrough);
    expect(payments).toHaveLength(succeeded.length + model.declinesThrough);
    expect(model.declinesThrough).toBeLessThanOrEqual(LIMIT);
    // Each seed reaches every cap (the sequence, not the seed, is what is random).
    expect([Math.max(...model.sessionFailed.values()), Math.max(...model.linkFailed.values()), model.refusedByAccount > 0]).toEqual([5, 5, true]);
    expect(await m.req('GET', '/v1/events?type=account.public_declines_exceeded')).toHaveLength(model.refusedByAccount > 0 ? 1 : 0);
  });
});

describe('public POST routes take JSON only', () => {
  it('should answer 415 to a text/plain, form or multipart pay and create no payment', async () => {
    const m = await merchant();
    const link = await m.req('POST', '/v1/payment-links', { name: 'Cross-site', amount: 100, currency: 'usd' });
    const session = await m.req('POST', '/v1/checkout-sessions', { mode: 'payment', amount: 100, currency: 'usd' });
    const body = JSON.stringify({ card: card(GOOD) });
    for (const path of [`payment-links/${link.slug}`, `checkout-sessions/${session.id}`]) {
      for (const type of ['text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json-patch+json']) {
        const res = await app.request('POST', `/v1/public/${path}/pay`, { rawBody: body, headers: { 'content-type': type, origin: 'https://evil.example' } });
        expect([type, res.status, res.body.error?.code, res.body.error?.param]).toEqual([type, 415, 'unsupported_media_type', 'Content-Type']);
        expect(res.headers['access-control-allow-origin']).toBeUndefined();
      }
      const none = await app.request('POST', `/v1/public/${path}/pay`, { rawBody: body, headers: { 'content-type': '' } });
      expect(none.status).toBe(415);
    }
    expect(await m.req('GET', '/v1/payments')).toEqual([]);
    // JSON with its charset is JSON.
    const ok = await app.request('POST', `/v1/public/payment-links/${link.slug}/pay`, { rawBody: body, headers: { 'content-type': 'application/json; charset=utf-8' } });
    expect(ok.body.data.status).toBe('succeeded');
  });

  it('should grant no CORS preflight and no cross-origin read', async () => {
    const m = await merchant();
    const link = await m.req('POST', '/v1/payment-links', { name: 'Preflight', amount: 100, currency: 'usd' });
    const preflight = await app.request('OPTIONS', `/v1/public/payment-links/${link.slug}/pay`, {
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    expect(preflight.status).toBeGreaterThanOrEqual(400);
    for (const h of Object.keys(preflight.headers)) expect(h).not.toMatch(/^access-control-/);
    const view = await app.request('GET', `/v1/public/payment-links/${link.slug}`, { headers: { origin: 'https://evil.example' } });
    for (const h of Object.keys(view.headers)) expect(h).not.toMatch(/^access-control-/);
  });
});
