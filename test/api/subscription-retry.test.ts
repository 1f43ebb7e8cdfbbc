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
const post = async (p: string, body?: Json, headers: Record<string, string> = {}) => app.request('POST', p, { key, body, headers });
const get = async (p: string) => app.request('GET', p, { key });
const ok = async (res: Promise<{ status: number; body: Json }>, status = 200) => {
  const r = await res;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body.data;
};
const card = (number: string) => ({ number, expMonth: 12, expYear: 2040, cvc: '123' });
const GOOD = '4242424242424242';
/** Saved without trouble, declined at every charge. */
const FAILS_AT_CHARGE = '4000000000000341';
/** Declined as it is saved. */
const DECLINED = '4000000000000002';

const price = async (unitAmount: number) => {
  const product = await ok(post('/v1/products', { name: `Plan ${unitAmount}` }), 201);
  return ok(post('/v1/prices', { productId: product.id, unitAmount, currency: 'eur', recurring: { interval: 'month' } }), 201);
};
const saveCard = (customerId: string, number: string, setDefault = true) =>
  ok(post(`/v1/customers/${customerId}/payment-methods`, { card: card(number), setDefault }), 201);
/** A subscription whose first charge failed: past due. */
const pastDue = async (amount = 1500) => {
  const c = await ok(post('/v1/customers', { email: `retry-${Math.random().toString(36).slice(2)}@example.com` }), 201);
  await saveCard(c.id, FAILS_AT_CHARGE);
  const p = await price(amount);
  const sub = await ok(post('/v1/subscriptions', { customerId: c.id, priceId: p.id }), 201);
  expect(sub.status).toBe('past_due');
  return { customer: c, price: p, sub };
};
const publicPay = (sessionId: string, body: Json, headers: Record<string, string> = {}) =>
  app.request('POST', `/v1/public/checkout-sessions/${sessionId}/pay`, { body, headers });
const eventsOf = async (objectId: string) => ((await get('/v1/events?pageSize=100')).body.data as Json[])
  .filter((e) => e.data.object.id === objectId).map((e) => e.type);

describe(`subscription retry payment and subscription checkout (${DIALECT})`, () => {
  it('should refuse a retry of a subscription that is not past due with 422 invalid_state', async () => {
    const c = await ok(post('/v1/customers', { email: `active-${Math.random().toString(36).slice(2)}@example.com` }), 201);
    await saveCard(c.id, GOOD);
    const sub = await ok(post('/v1/subscriptions', { customerId: c.id, priceId: (await price(700)).id }), 201);
    expect(sub.status).toBe('active');
    const res = await post(`/v1/subscriptions/${sub.id}/retry-payment`);
    expect([res.status, res.body.error.code]).toEqual([422, 'invalid_state']);
    const missing = await post('/v1/subscriptions/sub_nope/retry-payment');
    expect(missing.status).toBe(404);
  });

  it('should answer a failed retry with an open session for the invoice, leaving the dunning schedule where it was', async () => {
    const { sub } = await pastDue(1500);
    const session = await ok(post(`/v1/subscriptions/${sub.id}/retry-payment`));
    expect(session).toMatchObject({
      object: 'checkout_session', mode: 'payment', status: 'open', amount: 1500, currency: 'EUR', paymentId: null,
      invoiceId: sub.latestInvoiceId, subscriptionId: sub.id, customerId: sub.customerId,
    });
    expect(session.url).toBe(`https://pay.example.com/checkout/${session.id}`);
    const after = await ok(get(`/v1/subscriptions/${sub.id}`));
    expect(after).toMatchObject({ status: 'past_due', nextPaymentAttemptAt: sub.nextPaymentAttemptAt });
    // The retry charged the invoice (a second attempt under its own key): two failed payments.
    const payments = (await get(`/v1/subscriptions/${sub.id}/payments?pageSize=100`)).body.data as Json[];
    expect(payments.map((p) => [p.status, p.invoiceId])).toEqual([['failed', sub.latestInvoiceId], ['failed', sub.latestInvoiceId]]);
    expect((await ok(get(`/v1/checkout-sessions/${session.id}`))).status).toBe('open');
  });

  it('should leave the dunning schedule where it was when a retry\'s charge is still pending at the end of the request', async () => {
    const { sub } = await pastDue(1600);
    const invoices = app.server.services.invoices;
    const real = invoices.chargeManyForSubscriptions.bind(invoices);
    // As a gateway that has not answered by the end of the request: the payment still pending.
    let pending = 0;
    const spy = jest.spyOn(invoices, 'chargeManyForSubscriptions').mockImplementationOnce(async (items, width) => {
      const outcomes = await real(items, width);
      pending += outcomes.size;
      for (const [id, outcome] of outcomes) if ('payment' in outcome) outcomes.set(id, { payment: { ...outcome.payment, status: 'pending' } });
      return outcomes;
    });
    try {
      expect((await post(`/v1/subscriptions/${sub.id}/retry-payment`)).status).toBe(200);
    } finally {
      spy.mockRestore();
    }
    expect(pending).toBe(1);
    expect(await ok(get(`/v1/subscriptions/${sub.id}`))).toMatchObject({ status: 'past_due', nextPaymentAttemptAt: sub.nextPaymentAttemptAt });
  });

  it('should answer a retry that succeeded (a working card made the default first) with a complete session and an active subscription', async () => {
    const { customer, sub } = await pastDue(1800);
    const good = await saveCard(customer.id, GOOD);
    const session = await ok(post(`/v1/subscriptions/${sub.id}/retry-payment`));
    expect(session).toMatchObject({ status: 'complete', mode: 'payment', invoiceId: sub.latestInvoiceId, subscriptionId: sub.id, amount: 1800 });
    expect(session.paymentId).toMatch(/^pay_/);
    const payment = await ok(get(`/v1/payments/${session.paymentId}`));
    expect(payment).toMatchObject({ status: 'succeeded', amount: 1800, invoiceId: sub.latestInvoiceId, subscriptionId: sub.id });
    expect(await ok(get(`/v1/subscriptions/${sub.id}`))).toMatchObject({ status: 'active', defaultPaymentMethodId: good.id, nextPaymentAttemptAt: null });
    expect(await ok(get(`/v1/invoices/${sub.latestInvoiceId}`))).toMatchObject({ status: 'paid', amountDue: 0, amountPaid: 1800 });
    expect(await eventsOf(session.id)).toEqual(['checkout.session.completed']);
    // Completed: its page can no longer be paid.
    const again = await publicPay(session.id, { card: card(GOOD) });
    expect([again.status, again.body.error.code]).toEqual([422, 'invalid_state']);
  });

  it('should replay a retry sent again with the same Idempotency-Key', async () => {
    const { sub } = await pastDue(1200);
    const headers = { 'Idempotency-Key': `retry-${sub.id}` };
    const first = await ok(post(`/v1/subscriptions/${sub.id}/retry-payment`, undefined, headers));
    const second = await ok(post(`/v1/subscriptions/${sub.id}/retry-payment`, undefined, headers));
    expect(second).toEqual(first);
    const payments = (await get(`/v1/subscriptions/${sub.id}/payments?pageSize=100`)).body.data as Json[];
    expect(payments).toHaveLength(2);
  });

  it('should pay the invoice through the retry session over the public API: card saved as default, subscription active, with events', async () => {
    const { customer, sub } = await pastDue(2500);
    const session = await ok(post(`/v1/subscriptions/${sub.id}/retry-payment`));
    expect(session.status).toBe('open');
    const view = await ok(app.request('GET', `/v1/public/checkout-sessions/${session.id}`));
    expect(view).toMatchObject({ mode: 'payment', status: 'open', amount: 2500, currency: 'EUR', customerEmail: customer.email });

    // A decline leaves the session open and the subscription past due, its dunning schedule unchanged.
    const declined = await ok(publicPay(session.id, { card: card(FAILS_AT_CHARGE) }));
    expect(declined).toMatchObject({ status: 'failed', failureCode: 'card_declined' });
    expect((await ok(get(`/v1/checkout-sessions/${session.id}`))).status).toBe('open');
    expect(await ok(get(`/v1/subscriptions/${sub.id}`))).toMatchObject({ status: 'past_due', nextPaymentAttemptAt: sub.nextPaymentAttemptAt });

    const paid = await ok(publicPay(session.id, { card: card(GOOD) }));
    expect(paid).toMatchObject({ status: 'succeeded', subscriptionId: sub.id });
    expect(paid.paymentId).toMatch(/^pay_/);
    expect(paid.paymentMethodId).toMatch(/^pm_/);
    expect(await ok(get(`/v1/invoices/${sub.latestInvoiceId}`))).toMatchObject({ status: 'paid', amountPaid: 2500, latestPaymentId: paid.paymentId });
    expect(await ok(get(`/v1/payments/${paid.paymentId}`))).toMatchObject({
      status: 'succeeded', amount: 2500, invoiceId: sub.latestInvoiceId, subscriptionId: sub.id, checkoutSessionId: session.id, customerId: customer.id,
    });
    expect((await ok(get(`/v1/customers/${customer.id}`))).defaultPaymentMethodId).toBe(paid.paymentMethodId);
    expect(await ok(get(`/v1/subscriptions/${sub.id}`))).toMatchObject({ status: 'active', defaultPaymentMethodId: paid.paymentMethodId, nextPaymentAttemptAt: null });
    expect(await ok(get(`/v1/checkout-sessions/${session.id}`))).toMatchObject({
      status: 'complete', paymentId: paid.paymentId, paymentMethodId: paid.paymentMethodId, invoiceId: sub.latestInvoiceId, subscriptionId: sub.id,
    });
    expect(await eventsOf(session.id)).toEqual(['checkout.session.completed']);
    expect(await eventsOf(sub.latestInvoiceId)).toContain('invoice.paid');
    const subEvents = await eventsOf(sub.id);
    expect(subEvents.filter((t) => t === 'subscription.updated').length).toBeGreaterThanOrEqual(2); // active again, then its new card
    expect(await eventsOf(customer.id)).toContain('customer.updated');
    // The invoice's payments: the failed first charge, the failed retry, the declined page attempt, then the paid one.
    const payments = (await get(`/v1/subscriptions/${sub.id}/payments?pageSize=100`)).body.data as Json[];
    expect(payments.map((p) => p.status)).toEqual(['succeeded', 'failed', 'failed', 'failed']);
  });

  it('should create the subscription when a subscription-mode session is paid, naming it on the session', async () => {
    const p = await price(900);
    const email = `new-${Math.random().toString(36).slice(2)}@example.com`;
    const session = await ok(post('/v1/checkout-sessions', { mode: 'subscription', priceId: p.id, customerEmail: email }), 201);
    expect(session).toMatchObject({ mode: 'subscription', status: 'open', amount: 900, currency: 'EUR', subscriptionId: null });
    const view = await ok(app.request('GET', `/v1/public/checkout-sessions/${session.id}`));
    expect(view.recurring).toEqual({ interval: 'month', intervalCount: 1 });

    const headers = { 'Idempotency-Key': `sub-pay-${session.id}` };
    const paid = await ok(publicPay(session.id, { card: card(GOOD) }, headers));
    expect(paid).toMatchObject({ status: 'succeeded' });
    expect(paid.subscriptionId).toMatch(/^sub_/);
    const sub = await ok(get(`/v1/subscriptions/${paid.subscriptionId}`));
    expect(sub).toMatchObject({ status: 'active', priceId: p.id, quantity: 1, defaultPaymentMethodId: paid.paymentMethodId });
    const customer = await ok(get(`/v1/customers/${sub.customerId}`));
    expect(customer).toMatchObject({ email, defaultPaymentMethodId: paid.paymentMethodId });
    expect(await ok(get(`/v1/invoices/${sub.latestInvoiceId}`))).toMatchObject({ status: 'paid', amountPaid: 900, latestPaymentId: paid.paymentId });
    expect(await ok(get(`/v1/checkout-sessions/${session.id}`))).toMatchObject({
      status: 'complete', subscriptionId: sub.id, customerId: sub.customerId, paymentId: paid.paymentId, paymentMethodId: paid.paymentMethodId,
    });
    expect(await eventsOf(session.id)).toEqual(['checkout.session.completed']);
    // The same pay again replays its answer; a new pay of the complete session is refused.
    expect(await ok(publicPay(session.id, { card: card(GOOD) }, headers))).toMatchObject({ status: 'succeeded', paymentId: paid.paymentId, subscriptionId: sub.id });
    const again = await publicPay(session.id, { card: card(GOOD) });
    expect([again.status, again.body.error.code]).toEqual([422, 'invalid_state']);
    expect((await get(`/v1/subscriptions?customerId=${sub.customerId}`)).body.data).toHaveLength(1);
  });

  it('should leave a subscription-mode session open after a decline, and complete it with the same subscription on the next card', async () => {
    const p = await price(1100);
    const c = await ok(post('/v1/customers', { email: `sess-${Math.random().toString(36).slice(2)}@example.com` }), 201);
    const session = await ok(post('/v1/checkout-sessions', { mode: 'subscription', priceId: p.id, customerId: c.id }), 201);

    // Declined as the card is saved: nothing is created.
    expect(await ok(publicPay(session.id, { card: card(DECLINED) }))).toMatchObject({ status: 'failed', subscriptionId: null });
    expect((await get(`/v1/subscriptions?customerId=${c.id}`)).body.data).toHaveLength(0);

    // Saved, then declined at the first charge: the subscription exists past due, tied to the open session.
    const failed = await ok(publicPay(session.id, { card: card(FAILS_AT_CHARGE) }));
    expect(failed).toMatchObject({ status: 'failed', failureCode: 'card_declined' });
    expect(failed.subscriptionId).toMatch(/^sub_/);
    expect(await ok(get(`/v1/checkout-sessions/${session.id}`))).toMatchObject({ status: 'open', subscriptionId: failed.subscriptionId });
    expect((await ok(get(`/v1/subscriptions/${failed.subscriptionId}`))).status).toBe('past_due');

    const paid = await ok(publicPay(session.id, { card: card(GOOD) }));
    expect(paid).toMatchObject({ status: 'succeeded', subscriptionId: failed.subscriptionId });
    expect(await ok(get(`/v1/subscriptions/${failed.subscriptionId}`))).toMatchObject({ status: 'active', defaultPaymentMethodId: paid.paymentMethodId });
    expect(await ok(get(`/v1/checkout-sessions/${session.id}`))).toMatchObject({ status: 'complete', subscriptionId: failed.subscriptionId, paymentId: paid.paymentId });
    expect((await get(`/v1/subscriptions?customerId=${c.id}`)).body.data).toHaveLength(1);
  });
});
