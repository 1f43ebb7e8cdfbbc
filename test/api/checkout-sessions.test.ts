import { startTestApp, type TestApp } from '../helpers/app';
import { FixedClock } from '../../src/core/clock';
import { DIALECT } from '../helpers/db';
import { CheckoutStore } from '../../src/modules/checkout/checkout.store';
import { LEASE_MS } from '../../src/modules/payments/lease-keeper';
import { elapseDatabaseTime } from '../helpers/database-time';

let app: TestApp;
let key: string;
const clock = new FixedClock(new Date('2026-11-27T10:00:00.000Z'));
beforeAll(async () => {
  app = await startTestApp({ clock, env: { PUBLIC_URL: 'https://pay.example.com' } });
  key = app.account.testKey;
});
afterAll(() => app.stop());

const card = (number = '4242424242424242', extra: Record<string, unknown> = {}) => ({ number, expMonth: 12, expYear: 2034, cvc: '123', ...extra });
const create = (body: Record<string, unknown>, k = key) => app.request('POST', '/v1/checkout-sessions', { key: k, body });
const session = async (body: Record<string, unknown> = {}) => {
  const res = await create({ mode: 'payment', amount: 2500, currency: 'eur', ...body });
  expect(res.status).toBe(201);
  return res.body.data;
};
const pay = (id: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  app.request('POST', `/v1/public/checkout-sessions/${id}/pay`, { body, headers });

describe('checkout sessions API', () => {
  it('should create a payment session with its hosted url, a 24 h expiry and metadata', async () => {
    const res = await create({ mode: 'payment', amount: 2500, currency: 'eur', successUrl: 'https://shop.example.com/ok', cancelUrl: 'https://shop.example.com/cancel', metadata: { order: '42' } });
    expect(res.status).toBe(201);
    const s = res.body.data;
    expect(s).toMatchObject({
      object: 'checkout_session', livemode: false, mode: 'payment', status: 'open', amount: 2500, currency: 'EUR',
      successUrl: 'https://shop.example.com/ok', cancelUrl: 'https://shop.example.com/cancel', metadata: { order: '42' }, paymentId: null,
    });
    expect(s.id).toMatch(/^cs_[0-9A-Za-z]{24}$/);
    expect(s.url).toBe(`https://pay.example.com/checkout/${s.id}`);
    expect(s.expiresAt).toBe('2026-11-28T10:00:00.000Z');
    expect((await app.request('GET', `/v1/checkout-sessions/${s.id}`, { key })).body.data).toEqual(s);
  });

  it('should take expiresInSeconds from 30 minutes to 24 hours and refuse anything else', async () => {
    expect((await session({ expiresInSeconds: 1800 })).expiresAt).toBe('2026-11-27T10:30:00.000Z');
    for (const bad of [1799, 86401, 3600.5, '3600']) {
      const res = await create({ mode: 'payment', amount: 100, currency: 'usd', expiresInSeconds: bad });
      expect([bad, res.status, res.body.error.code, res.body.error.param]).toEqual([bad, 400, 'invalid_parameter', 'expiresInSeconds']);
    }
  });

  it('should refuse what a session cannot be, naming the field', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ mode: 'payment', currency: 'eur' }, 'amount'],
      [{ mode: 'payment', amount: 100 }, 'currency'],
      [{ mode: 'refund', amount: 100, currency: 'eur' }, 'mode'],
      [{ mode: 'payment', amount: 100, currency: 'eur', successUrl: 'http://shop.example.com/ok' }, 'successUrl'],
      [{ mode: 'payment', amount: 100, currency: 'eur', cancelUrl: 'javascript:alert(1)' }, 'cancelUrl'],
      [{ mode: 'payment', amount: 100, currency: 'eur', customerId: 'cus_x', customerEmail: 'a@example.com' }, 'customerEmail'],
      [{ mode: 'setup' }, 'customerId'],
      [{ mode: 'setup', customerEmail: 'a@example.com', amount: 100 }, 'amount'],
      [{ mode: 'payment', amount: 100, currency: 'eur', colour: 'red' }, 'colour'],
    ];
    for (const [body, param] of cases) {
      const res = await create(body);
      expect([body, res.status, res.body.error.param]).toEqual([body, 400, param]);
    }
    const unknownCustomer = await create({ mode: 'payment', amount: 100, currency: 'eur', customerId: 'cus_nope' });
    expect([unknownCustomer.status, unknownCustomer.body.error.param]).toEqual([404, 'customerId']);
  });

  it('should accept http success URLs on localhost in test mode only', async () => {
    expect((await session({ successUrl: 'http://localhost:3000/ok' })).successUrl).toBe('http://localhost:3000/ok');
    const live = await create({ mode: 'payment', amount: 100, currency: 'eur', successUrl: 'http://localhost:3000/ok' }, app.account.liveKey);
    expect([live.status, live.body.error.param]).toEqual([400, 'successUrl']);
  });

  it('should create a subscription session from a recurring price, and refuse a one-time price for it', async () => {
    const product = (await app.request('POST', '/v1/products', { key, body: { name: 'Plan' } })).body.data;
    const price = (await app.request('POST', '/v1/prices', { key, body: { productId: product.id, unitAmount: 900, currency: 'eur', recurring: { interval: 'month', intervalCount: 1 } } })).body.data;
    const res = await create({ mode: 'subscription', priceId: price.id, customerEmail: 'plan@example.com' });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ mode: 'subscription', status: 'open', amount: 900, currency: 'EUR', priceId: price.id, description: 'Plan', subscriptionId: null, invoiceId: null });
    const oneTime = (await app.request('POST', '/v1/prices', { key, body: { productId: product.id, unitAmount: 900, currency: 'eur' } })).body.data;
    const refused = await create({ mode: 'subscription', priceId: oneTime.id });
    expect([refused.status, refused.body.error.param]).toEqual([400, 'priceId']);
  });

  it('should take a one-time price for amount, currency and description', async () => {
    const product = (await app.request('POST', '/v1/products', { key, body: { name: 'T-shirt' } })).body.data;
    const price = (await app.request('POST', '/v1/prices', { key, body: { productId: product.id, unitAmount: 1900, currency: 'usd' } })).body.data;
    expect(await session({ amount: undefined, currency: undefined, priceId: price.id })).toMatchObject({ amount: 1900, currency: 'USD', priceId: price.id, description: 'T-shirt' });
    const both = await create({ mode: 'payment', priceId: price.id, amount: 5, currency: 'usd' });
    expect([both.status, both.body.error.param]).toEqual([400, 'amount']);
  });

  it('should list with status and mode filters, paging and sorting', async () => {
    const a = await session({ amount: 111 });
    const b = await session({ amount: 999 });
    await app.request('POST', `/v1/checkout-sessions/${a.id}/expire`, { key });
    const open = await app.request('GET', '/v1/checkout-sessions?status=open&mode=payment&pageSize=100&sortField=amount&sortDirection=desc', { key });
    expect(open.status).toBe(200);
    const ids = open.body.data.map((s: { id: string }) => s.id);
    expect(ids).toContain(b.id);
    expect(ids).not.toContain(a.id);
    const amounts = open.body.data.map((s: { amount: number }) => s.amount);
    expect(amounts).toEqual([...amounts].sort((x, y) => y - x));
    const expired = await app.request('GET', '/v1/checkout-sessions?status=expired&pageSize=100', { key });
    expect(expired.body.data.map((s: { id: string }) => s.id)).toContain(a.id);
    expect((await app.request('GET', '/v1/checkout-sessions?status=paid', { key })).body.error).toMatchObject({ code: 'invalid_parameter', param: 'status' });
    expect((await app.request('GET', '/v1/checkout-sessions?mode=setup&pageSize=1', { key })).body.meta).toMatchObject({ page: 1, pageSize: 1 });
  });
});

describe('the public pay of a checkout session', () => {
  it('should show the hosted page what it needs and nothing internal', async () => {
    const customer = (await app.request('POST', '/v1/customers', { key, body: { email: 'view@example.com' } })).body.data;
    const s = await session({ customerId: customer.id, description: 'Order 7', metadata: { secret: 'x' }, successUrl: 'https://shop.example.com/ok' });
    const res = await app.request('GET', `/v1/public/checkout-sessions/${s.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      id: s.id, object: 'checkout_session', livemode: false, mode: 'payment', status: 'open', amount: 2500, currency: 'EUR',
      description: 'Order 7', merchantName: 'Test account', customerEmail: null, expiresAt: s.expiresAt,
      successUrl: 'https://shop.example.com/ok', cancelUrl: null, recurring: null, payable: true,
    });
    expect(res.text).not.toContain(app.account.accountId);
    expect(res.text).not.toContain(customer.id);
    expect((await app.request('GET', '/v1/public/checkout-sessions/cs_nope')).status).toBe(404);
  });

  it('should charge through routing as POST /v1/payments does, complete the session and redirect', async () => {
    const s = await session({ successUrl: 'https://shop.example.com/ok?order=9', customerEmail: 'payer@example.com' });
    const res = await pay(s.id, { card: card() });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'succeeded', redirectUrl: 'https://shop.example.com/ok?order=9', failureCode: null });
    const payment = (await app.request('GET', `/v1/payments/${res.body.data.paymentId}`, { key })).body.data;
    expect(payment).toMatchObject({ status: 'succeeded', amount: 2500, currency: 'EUR', checkoutSessionId: s.id, paymentMethodDetails: { last4: '4242' } });
    const after = (await app.request('GET', `/v1/checkout-sessions/${s.id}`, { key })).body.data;
    expect(after).toMatchObject({ status: 'complete', paymentId: payment.id, completedAt: expect.any(String) });
    // The payer is anonymous: no customer on either, the e-mail is the payment's receipt e-mail.
    expect([payment.customerId, after.customerId, payment.receiptEmail]).toEqual([null, null, 'payer@example.com']);
    const events = (await app.request('GET', '/v1/events?type=checkout.session.completed&pageSize=100', { key })).body.data;
    expect(events.find((e: { data: { object: { id: string } } }) => e.data.object.id === s.id).data.object.status).toBe('complete');
    const again = await pay(s.id, { card: card() });
    expect([again.status, again.body.error.code]).toEqual([422, 'invalid_state']);
  });

  it('should answer a decline with its code and message and leave the session open for another card', async () => {
    const s = await session();
    const declined = await pay(s.id, { card: card('4000000000000002') });
    expect(declined.status).toBe(200);
    expect(declined.body.data).toMatchObject({ status: 'failed', failureCode: 'card_declined', redirectUrl: null });
    expect(declined.body.data.failureMessage).toMatch(/declined/i);
    expect((await app.request('GET', `/v1/checkout-sessions/${s.id}`, { key })).body.data.status).toBe('open');
    expect((await pay(s.id, { card: card() })).body.data.status).toBe('succeeded');
  });

  it('should refuse a bad card before anything is charged, naming the field', async () => {
    const s = await session();
    const res = await pay(s.id, { card: card('4242424242424241') });
    expect([res.status, res.body.error.param]).toEqual([400, 'card.number']);
    expect(res.text).not.toContain('4242424242424241');
    expect((await pay(s.id, { card: card(), extra: 1 })).body.error).toMatchObject({ code: 'unknown_parameter', param: 'extra' });
    expect((await pay(s.id, { card: card() })).body.data.status).toBe('succeeded');
  });

  it('should be expired for reads and pays once past its time, before the job runs, and the job then writes it and its event', async () => {
    const s = await session({ expiresInSeconds: 1800 });
    clock.advance(1800 * 1000);
    try {
      expect((await app.request('GET', `/v1/checkout-sessions/${s.id}`, { key })).body.data.status).toBe('expired');
      expect((await app.request('GET', `/v1/public/checkout-sessions/${s.id}`)).body.data.status).toBe('expired');
      const res = await pay(s.id, { card: card() });
      expect([res.status, res.body.error.code]).toEqual([422, 'invalid_state']);
      const done = await app.server.services.checkoutSessions.expireDue(clock.now());
      expect(done.expired).toBeGreaterThanOrEqual(1);
      const stored = (await app.request('GET', `/v1/checkout-sessions/${s.id}`, { key })).body.data;
      expect(stored).toMatchObject({ status: 'expired', expiredAt: clock.now().toISOString() });
      const events = (await app.request('GET', '/v1/events?type=checkout.session.expired&pageSize=100', { key })).body.data;
      expect(events.some((e: { data: { object: { id: string } } }) => e.data.object.id === s.id)).toBe(true);
    } finally {
      clock.advance(-1800 * 1000);
    }
  });

  it('should expire on request and then refuse pays and a second expire', async () => {
    const s = await session();
    const res = await app.request('POST', `/v1/checkout-sessions/${s.id}/expire`, { key });
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe('expired');
    expect((await app.request('POST', `/v1/checkout-sessions/${s.id}/expire`, { key })).body.error.code).toBe('invalid_state');
    expect((await pay(s.id, { card: card() })).body.error.code).toBe('invalid_state');
  });

  it('should save the card as the customer\'s default in setup mode, creating the customer from customerEmail', async () => {
    const s = (await create({ mode: 'setup', customerEmail: 'setup-new@example.com', successUrl: 'https://shop.example.com/saved' })).body.data;
    const res = await pay(s.id, { card: card('5555555555554444'), name: 'Ada' });
    expect(res.body.data).toMatchObject({ status: 'succeeded', paymentId: null, redirectUrl: 'https://shop.example.com/saved' });
    const done = (await app.request('GET', `/v1/checkout-sessions/${s.id}`, { key })).body.data;
    expect(done).toMatchObject({ status: 'complete', paymentMethodId: res.body.data.paymentMethodId });
    const customer = (await app.request('GET', `/v1/customers/${done.customerId}`, { key })).body.data;
    expect(customer).toMatchObject({ email: 'setup-new@example.com', name: 'Ada', defaultPaymentMethodId: res.body.data.paymentMethodId });
    const methods = (await app.request('GET', `/v1/customers/${customer.id}/payment-methods`, { key })).body.data;
    expect(methods).toEqual([expect.objectContaining({ id: res.body.data.paymentMethodId, isDefault: true, card: expect.objectContaining({ last4: '4444' }) })]);
  });

  it('should replay a pay under the same Idempotency-Key, scoped to the session', async () => {
    const s = await session();
    const first = await pay(s.id, { card: card() }, { 'Idempotency-Key': 'pay-once' });
    const second = await pay(s.id, { card: card() }, { 'Idempotency-Key': 'pay-once' });
    expect(second.status).toBe(200);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.text).toBe(first.text);
    const other = await pay(s.id, { card: card('5555555555554444') }, { 'Idempotency-Key': 'pay-once' });
    expect(other.body.error.code).toBe('idempotency_key_reused');
    // The same key on another session is another key.
    const s2 = await session();
    expect((await pay(s2.id, { card: card() }, { 'Idempotency-Key': 'pay-once' })).headers['idempotent-replayed']).toBeUndefined();
    const payments = (await app.request('GET', `/v1/payments?pageSize=100`, { key })).body.data.filter((p: { checkoutSessionId: string }) => p.checkoutSessionId === s.id);
    expect(payments).toHaveLength(1);
  });

  it(`should charge at most once when twenty pays of one session race (${DIALECT})`, async () => {
    const s = await session();
    const results = await Promise.all(Array.from({ length: 20 }, () => pay(s.id, { card: card() })));
    const succeeded = results.filter((r) => r.status === 200 && r.body.data.status === 'succeeded');
    expect(succeeded).toHaveLength(1);
    // The others: in use (409), complete already (422), or refused before anything as one of too many
    // attempts at once (429: attempts still running count against the session's cap on failures).
    for (const r of results) if (r !== succeeded[0]) expect([409, 422, 429]).toContain(r.status);
    const payments = (await app.request('GET', `/v1/payments?pageSize=100`, { key })).body.data.filter((p: { checkoutSessionId: string }) => p.checkoutSessionId === s.id);
    expect(payments).toHaveLength(1);
    expect((await app.request('GET', `/v1/checkout-sessions/${s.id}`, { key })).body.data).toMatchObject({ status: 'complete', paymentId: payments[0].id });
  });

  it('should commit the completion with the payment\'s settling write: when that write fails, neither is written, recovery settles the payment and the job completes the session with its event', async () => {
    const s = await session({ customerEmail: 'late-complete@example.com' });
    // The completion is refused by the database (PostgreSQL: its part of the settling statement;
    // SQLite: its statement in the settling transaction), so the whole settling write fails.
    const part = jest.spyOn(CheckoutStore.prototype, 'completePart').mockImplementation((name: string, source: string) => ({
      name, sql: `UPDATE checkout_sessions s SET updated_at = h.hold_now FROM ${source} h WHERE s.id = h.id AND 1 / (length(h.id) * 0) = 1 RETURNING s.id`,
    }));
    const alone = jest.spyOn(CheckoutStore.prototype, 'completeIn').mockRejectedValue(new Error('connection lost'));
    let res;
    try {
      res = await pay(s.id, { card: card() }, { 'Idempotency-Key': 'settle-fails' });
    } finally {
      part.mockRestore();
      alone.mockRestore();
    }
    // The charge went through but its outcome could not be recorded: never a 5xx, the payment is left to recovery.
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe('processing');
    const paymentId = res.body.data.paymentId as string;
    const db = app.server.services.db;
    // Neither the payment's success nor the session's completion was written without the other.
    expect((await db.select<{ status: string }>('SELECT status FROM payments WHERE id = $1', [paymentId]))[0].status).toBe('pending');
    const [row] = await db.select<{ status: string; paying_token: string | null }>('SELECT status, paying_token FROM checkout_sessions WHERE id = $1', [s.id]);
    expect(row.status).toBe('open');
    expect(row.paying_token).not.toBeNull();
    // The pending payment holds the session: another pay is refused, not charged.
    expect((await pay(s.id, { card: card() })).body.error.code).toBe('checkout_session_in_use');
    // Recovery asks the gateway and settles the payment as succeeded.
    await elapseDatabaseTime(db, LEASE_MS + 1_000, [paymentId]);
    expect(await app.server.services.payments.recoverPending(clock.now())).toBeGreaterThanOrEqual(1);
    expect((await db.select<{ status: string }>('SELECT status FROM payments WHERE id = $1', [paymentId]))[0].status).toBe('succeeded');
    // Once the claim's lease has run out, the job completes the session from its payment, with its one event.
    await db.execute('UPDATE checkout_sessions SET paying_until = $1 WHERE id = $2', [new Date('2000-01-01T00:00:00Z'), s.id]);
    const done = await app.server.services.checkoutSessions.expireDue(clock.now());
    expect(done.completed).toBe(1);
    const after = (await app.request('GET', `/v1/checkout-sessions/${s.id}`, { key })).body.data;
    // An anonymous payment-mode pay attaches no customer: the session's e-mail is the payment's receipt e-mail.
    expect(after).toMatchObject({ status: 'complete', paymentId, customerId: null });
    expect((await app.request('GET', `/v1/payments/${paymentId}`, { key })).body.data).toMatchObject({ customerId: null, receiptEmail: 'late-complete@example.com' });
    const events = (await app.request('GET', '/v1/events?type=checkout.session.completed&pageSize=100', { key })).body.data;
    expect(events.filter((e: { data: { object: { id: string } } }) => e.data.object.id === s.id)).toHaveLength(1);
  });

  it('should write the completion, its event and the payment\'s success together, the event carrying the session as stored', async () => {
    const s = await session({ successUrl: 'https://shop.example.com/ok', metadata: { order: '12' } });
    const res = await pay(s.id, { card: card() });
    expect(res.body.data.status).toBe('succeeded');
    const stored = (await app.request('GET', `/v1/checkout-sessions/${s.id}`, { key })).body.data;
    expect(stored).toMatchObject({ status: 'complete', paymentId: res.body.data.paymentId, completedAt: clock.now().toISOString(), updatedAt: clock.now().toISOString() });
    const [event] = await app.server.services.db.select<{ data: string }>(
      "SELECT data FROM events WHERE type = 'checkout.session.completed' AND data LIKE $1", [`%"id":"${s.id}"%`],
    );
    expect(JSON.parse(event.data)).toEqual({ object: stored });
    const [claim] = await app.server.services.db.select<{ paying_token: string | null; paying_until: unknown }>('SELECT paying_token, paying_until FROM checkout_sessions WHERE id = $1', [s.id]);
    expect(claim).toEqual({ paying_token: null, paying_until: null });
  });

  it(`should pay with its read as its only statement, its claim and completion riding on the payments' shared writes (${DIALECT})`, async () => {
    // Warm what a pay reads once (routing, gateways).
    expect((await pay((await session()).id, { card: card() })).body.data.status).toBe('succeeded');
    const sessions = await Promise.all(Array.from({ length: 12 }, () => session()));
    app.sql.length = 0;
    const results = await Promise.all(sessions.map((x) => pay(x.id, { card: card() }, { 'Idempotency-Key': `shared-${x.id}` })));
    const burst = [...app.sql];
    for (const [i, r] of results.entries()) {
      expect(r.body.data.status).toBe('succeeded');
      expect((await app.request('GET', `/v1/checkout-sessions/${sessions[i].id}`, { key })).body.data).toMatchObject({ status: 'complete', paymentId: r.body.data.paymentId });
    }
    // The pay's read: the session with its Idempotency-Key, in one statement.
    const reads = burst.filter((q) => /FROM checkout_sessions s\b/.test(q) && /key_request_hash/.test(q));
    const sessionWrites = burst.filter((q) => /UPDATE checkout_sessions/.test(q));
    if (DIALECT === 'postgres') {
      // At most one read per pay (pays arriving together share one); everything else is the
      // payments' pending inserts (with the claims) and settling writes (with the completions,
      // their events and deliveries), shared by concurrent pays.
      expect(reads.length).toBeGreaterThanOrEqual(1);
      expect(reads.length).toBeLessThanOrEqual(12);
      // The caps on failed attempts: each pay writes its attempt, reads the counts, and settles it.
      const attempts = burst.filter((q) => /public_pay_attempts/.test(q));
      expect(attempts.length).toBeLessThanOrEqual(3 * 12);
      // (The account's routing and gateways, cached for every payment, may be read again meanwhile.)
      const rest = burst.filter((q) => !reads.includes(q) && !attempts.includes(q) && !/FROM "(routing_configs|gateways)"/.test(q));
      expect(rest.every((q) => /INSERT INTO payments/.test(q) || /UPDATE payments p SET status/.test(q))).toBe(true);
      expect(rest.length).toBeLessThan(2 * 12);
      expect(sessionWrites.every((q) => /INSERT INTO payments|UPDATE payments p SET status/.test(q))).toBe(true);
    } else {
      // SQLite reads and writes each pay alone; the claim and the completion run in its payment's transactions.
      expect(reads).toHaveLength(12);
      expect(sessionWrites).toHaveLength(24);
    }
  });

  it('should free a claim whose pay charged nothing, once its lease has run out', async () => {
    const s = await session();
    const store = new CheckoutStore(app.server.services.db);
    expect(await store.claimForPay({ accountId: app.account.accountId, mode: 'test' }, s.id, 'dead-request', 60_000, clock.now())).toBe(true);
    expect((await pay(s.id, { card: card() })).body.error.code).toBe('checkout_session_in_use');
    await app.server.services.db.execute('UPDATE checkout_sessions SET paying_until = $1 WHERE id = $2', [new Date('2000-01-01T00:00:00Z'), s.id]);
    await app.server.services.checkoutSessions.expireDue(clock.now());
    expect((await pay(s.id, { card: card() })).body.data.status).toBe('succeeded');
  });
});
