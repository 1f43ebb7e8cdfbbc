import { startTestApp, type TestApp, type TestAccount } from '../helpers/app';
import { DIALECT } from '../helpers/db';

let app: TestApp;
let account: TestAccount;
let key: string;
beforeAll(async () => {
  app = await startTestApp({ env: { PUBLIC_URL: 'https://pay.example.com' } });
});
// Each test in its own account: events, lists and account settings of other tests never show.
beforeEach(async () => {
  account = await app.createAccount();
  key = account.testKey;
});
afterAll(() => app.stop());

type Json = Record<string, any>;
type Res = { status: number; body: Json };
const post = async (p: string, body?: Json, k = key) => app.request('POST', p, { key: k, body });
const patch = async (p: string, body?: Json, k = key) => app.request('PATCH', p, { key: k, body });
const get = async (p: string, k = key) => app.request('GET', p, { key: k });
const ok = async (res: Promise<Res>, status = 200) => {
  const r = await res;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body.data;
};
/** A refusal: [status, code, param] of the answer. */
const refusal = async (res: Promise<Res>) => {
  const r = await res;
  return [r.status, r.body.error?.code, r.body.error?.param];
};

const clock = (frozenTime: string) => ok(post('/v1/test-clocks', { frozenTime }), 201);
const advance = (id: string, frozenTime: string) => ok(post(`/v1/test-clocks/${id}/advance`, { frozenTime }));
const price = async (unitAmount: number, recurring: Json | null = { interval: 'month' }, currency = 'usd') => {
  const product = await ok(post('/v1/products', { name: `Plan ${unitAmount}` }), 201);
  return ok(post('/v1/prices', { productId: product.id, unitAmount, currency, ...(recurring ? { recurring } : {}) }), 201);
};
const addCard = (customerId: string, card = '4242424242424242') =>
  ok(post(`/v1/customers/${customerId}/payment-methods`, { card: { number: card, expMonth: 12, expYear: 2040, cvc: '123' } }), 201);
const customer = async (testClockId?: string, card: string | null = '4242424242424242') => {
  const c = await ok(post('/v1/customers', { email: `sub-${Math.random().toString(36).slice(2)}@example.com`, ...(testClockId ? { testClockId } : {}) }), 201);
  if (card) await addCard(c.id, card);
  return ok(get(`/v1/customers/${c.id}`));
};
const subscribe = (body: Json) => ok(post('/v1/subscriptions', body), 201);
const sub = (id: string) => ok(get(`/v1/subscriptions/${id}`));
const invoicesOf = async (subId: string) => (await get(`/v1/subscriptions/${subId}/invoices?pageSize=100&sortDirection=asc`)).body.data as Json[];
const paymentsOf = async (subId: string) => (await get(`/v1/subscriptions/${subId}/payments?pageSize=100&sortDirection=asc`)).body.data as Json[];
const eventsOf = async (objectId: string) => ((await get('/v1/events?pageSize=100')).body.data as Json[])
  .filter((e) => e.data.object.id === objectId).map((e) => e.type).reverse();
const upcoming = (subId: string) => ok(get(`/v1/subscriptions/${subId}/upcoming-invoice`));
/** What an invoice line is, without its id. */
const line = (l: Json) => ({ description: l.description, quantity: l.quantity, unitAmount: l.unitAmount, amount: l.amount, periodStart: l.periodStart, periodEnd: l.periodEnd, proration: l.proration });
const amounts = (lines: Json[]) => lines.map((l) => l.amount);
const invoiceCount = async () => (await get('/v1/invoices?pageSize=1')).body.meta.total as number;

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

const APR1 = '2027-04-01T00:00:00.000Z';
const MAY1 = '2027-05-01T00:00:00.000Z';
const JUN1 = '2027-06-01T00:00:00.000Z';
const APR16 = '2027-04-16T00:00:00.000Z';

describe(`subscription create (${DIALECT})`, () => {
  it('should answer 201 active with the plan and quantity, and charge the first invoice on the default card', async () => {
    const tc = await clock(APR1);
    const c = await customer(tc.id);
    const p = await price(1999);
    const s = await subscribe({ customerId: c.id, priceId: p.id, quantity: 3, metadata: { order: '42' } });
    expect(s).toMatchObject({
      object: 'subscription', status: 'active', customerId: c.id, priceId: p.id, quantity: 3, collectionMethod: 'charge_automatically',
      currentPeriodStart: APR1, currentPeriodEnd: MAY1, billingCycleAnchor: APR1, cancelAtPeriodEnd: false, canceledAt: null, pausedAt: null, endedAt: null,
      defaultPaymentMethodId: c.defaultPaymentMethodId, testClockId: tc.id, nextPaymentAttemptAt: null, metadata: { order: '42' }, createdAt: APR1,
      plan: { priceId: p.id, productId: p.productId, productName: 'Plan 1999', unitAmount: 1999, currency: 'USD', interval: 'month', intervalCount: 1 },
    });
    expect(c.defaultPaymentMethodId).toMatch(/^pm_/);
    const invoice = await ok(get(`/v1/invoices/${s.latestInvoiceId}`));
    expect(invoice).toMatchObject({ subscriptionId: s.id, customerId: c.id, status: 'paid', total: 5997, amountPaid: 5997, currency: 'USD' });
    expect(invoice.lineItems.map(line)).toEqual([
      { description: expect.any(String), quantity: 3, unitAmount: 1999, amount: 5997, periodStart: APR1, periodEnd: MAY1, proration: false },
    ]);
    const payments = await paymentsOf(s.id);
    expect(payments.map((x) => [x.status, x.amount, x.invoiceId, x.customerId])).toEqual([['succeeded', 5997, invoice.id, c.id]]);
    expect(await eventsOf(s.id)).toContain('subscription.created');
  });

  it('should charge the given saved card rather than the default', async () => {
    const c = await customer();
    const other = await addCard(c.id, '5555555555554444');
    expect(other.id).not.toBe(c.defaultPaymentMethodId);
    const p = await price(700);
    const s = await subscribe({ customerId: c.id, priceId: p.id, paymentMethodId: other.id });
    expect(s).toMatchObject({ status: 'active', defaultPaymentMethodId: other.id });
    const [payment] = await paymentsOf(s.id);
    expect(payment).toMatchObject({ status: 'succeeded', amount: 700 });
    expect(payment.paymentMethodDetails.last4).toBe('4444');
  });

  it('should e-mail the first invoice instead of charging it with collectionMethod send_invoice (no card needed)', async () => {
    const c = await customer(undefined, null);
    const p = await price(2500);
    const s = await subscribe({ customerId: c.id, priceId: p.id, collectionMethod: 'send_invoice' });
    expect(s).toMatchObject({ status: 'active', collectionMethod: 'send_invoice', defaultPaymentMethodId: null });
    const invoice = await ok(get(`/v1/invoices/${s.latestInvoiceId}`));
    expect(invoice).toMatchObject({ status: 'sent', emailStatus: 'queued', total: 2500, amountPaid: 0, amountDue: 2500 });
    expect(await paymentsOf(s.id)).toEqual([]);
  });

  it('should refuse bad input with the right status, code and param', async () => {
    const c = await customer();
    const bare = await customer(undefined, null);
    const p = await price(1000);
    const oneTime = await price(1000, null);
    expect(await refusal(post('/v1/subscriptions', { customerId: 'cus_doesnotexist', priceId: p.id }))).toEqual([404, 'resource_not_found', 'customerId']);
    expect(await refusal(post('/v1/subscriptions', { customerId: c.id, priceId: 'price_doesnotexist' }))).toEqual([404, 'resource_not_found', 'priceId']);
    expect(await refusal(post('/v1/subscriptions', { customerId: c.id, priceId: oneTime.id }))).toEqual([400, 'invalid_parameter', 'priceId']);
    expect(await refusal(post('/v1/subscriptions', { customerId: bare.id, priceId: p.id }))).toEqual([400, 'missing_parameter', 'paymentMethodId']);
    expect((await refusal(post('/v1/subscriptions', { customerId: c.id, priceId: p.id, paymentMethodId: 'pm_doesnotexist' })))[2]).toBe('paymentMethodId');
    expect(await refusal(post('/v1/subscriptions', { customerId: c.id, priceId: p.id, quantity: 0 }))).toEqual([400, 'invalid_parameter', 'quantity']);
    const past = new Date(Date.now() - 86_400_000).toISOString();
    expect(await refusal(post('/v1/subscriptions', { customerId: c.id, priceId: p.id, billingCycleAnchor: past }))).toEqual([400, 'invalid_parameter', 'billingCycleAnchor']);
    const tooLate = new Date(Date.now() + 40 * 86_400_000).toISOString();
    expect(await refusal(post('/v1/subscriptions', { customerId: c.id, priceId: p.id, billingCycleAnchor: tooLate }))).toEqual([400, 'invalid_parameter', 'billingCycleAnchor']);
    expect(await refusal(post('/v1/subscriptions', { customerId: c.id, priceId: p.id, collectionMethod: 'cash' }))).toEqual([400, 'invalid_parameter', 'collectionMethod']);
    // Nothing was created by the refusals.
    expect((await get('/v1/subscriptions')).body.meta.total).toBe(0);
  });

  it('should bill a shorter first period up to a later billingCycleAnchor, prorated to the second, then whole periods from the anchor', async () => {
    const tc = await clock(APR1);
    const c = await customer(tc.id);
    const p = await price(3000);
    const s = await subscribe({ customerId: c.id, priceId: p.id, quantity: 2, billingCycleAnchor: '2027-04-11T00:00:00Z' });
    expect(s).toMatchObject({ status: 'active', currentPeriodStart: APR1, currentPeriodEnd: '2027-04-11T00:00:00.000Z', billingCycleAnchor: '2027-04-11T00:00:00.000Z' });
    // The whole period the anchor closes is Mar 11 – Apr 11 (31 days); Apr 1 – Apr 11 is 10 of them:
    // 2 × 3000 × 10 / 31 = 1935.48… → 1935.
    const first = await ok(get(`/v1/invoices/${s.latestInvoiceId}`));
    expect([first.status, first.total, amounts(first.lineItems)]).toEqual(['paid', 1935, [1935]]);
    expect(first.lineItems[0]).toMatchObject({ periodStart: APR1, periodEnd: '2027-04-11T00:00:00.000Z', proration: true });
    await advance(tc.id, '2027-04-12T00:00:00Z');
    const invoices = await invoicesOf(s.id);
    expect(invoices.map((i) => [i.total, i.lineItems.at(-1).periodStart, i.lineItems.at(-1).periodEnd])).toEqual([
      [1935, APR1, '2027-04-11T00:00:00.000Z'],
      [6000, '2027-04-11T00:00:00.000Z', '2027-05-11T00:00:00.000Z'],
    ]);
  });
});

describe(`subscription plan changes (${DIALECT})`, () => {
  // April 2027 has 30 days (2,592,000 s). Plan A 1999 a month, plan B 4999 a month. Values by hand:
  //  10% (Apr 4, 27 days left): 1999 × 0.9 = 1799.1 → 1799; 4999 × 0.9 = 4499.1 → 4499; 3 × 1999 × 0.9 = 5397.3 → 5397
  //  50% (Apr 16, 15 days left): 999.5 → 1000; 2499.5 → 2500; 2998.5 → 2999 (half away from zero)
  //  90% (Apr 28, 3 days left): 199.9 → 200; 499.9 → 500; 599.7 → 600
  const points = [
    { name: '10%', at: '2027-04-04T00:00:00.000Z', up: [-1799, 4499], down: [-4499, 1799], qty: [-1799, 5397] },
    { name: '50%', at: APR16, up: [-1000, 2500], down: [-2500, 1000], qty: [-1000, 2999] },
    { name: '90%', at: '2027-04-28T00:00:00.000Z', up: [-200, 500], down: [-500, 200], qty: [-200, 600] },
  ];
  it.each(points)('should prorate an upgrade, a downgrade and a quantity change $name through the period, and apply exactly the preview', async (pt) => {
    const tc = await clock(APR1);
    const a = await price(1999);
    const b = await price(4999);
    const c = await customer(tc.id);
    const up = await subscribe({ customerId: c.id, priceId: a.id });
    const down = await subscribe({ customerId: c.id, priceId: b.id });
    const qty = await subscribe({ customerId: c.id, priceId: a.id });
    await advance(tc.id, pt.at);
    const cases: Array<[Json, Json, number[]]> = [[up, { priceId: b.id }, pt.up], [down, { priceId: a.id }, pt.down], [qty, { priceId: a.id, quantity: 3 }, pt.qty]];
    for (const [s, change, expected] of cases) {
      const preview = await ok(post(`/v1/subscriptions/${s.id}/preview-proration`, change));
      expect(preview).toMatchObject({ subscriptionId: s.id, prorationDate: pt.at, currency: 'USD', total: expected[0] + expected[1] });
      expect(amounts(preview.lines)).toEqual(expected);
      expect(preview.lines.map((l: Json) => [l.periodStart, l.periodEnd])).toEqual([[pt.at, MAY1], [pt.at, MAY1]]);
      // The preview changed nothing.
      expect(await sub(s.id)).toMatchObject({ priceId: s.priceId, quantity: 1, updatedAt: s.updatedAt });
      const changed = await ok(patch(`/v1/subscriptions/${s.id}`, { ...change, prorationDate: preview.prorationDate }));
      expect(changed).toMatchObject({ status: 'active', priceId: change.priceId, quantity: change.quantity ?? 1, currentPeriodStart: APR1, currentPeriodEnd: MAY1 });
      const applied = (await upcoming(s.id)).lineItems.filter((l: Json) => l.proration);
      expect(applied.map((l: Json) => ({ description: l.description, amount: l.amount, periodStart: l.periodStart, periodEnd: l.periodEnd }))).toEqual(preview.lines);
    }
  });

  it('should apply a preview made earlier exactly when the PATCH gives its prorationDate, and prorate at the clock\'s now without one', async () => {
    const tc = await clock(APR1);
    const a = await price(1999);
    const b = await price(4999);
    const c = await customer(tc.id);
    const s1 = await subscribe({ customerId: c.id, priceId: a.id });
    const s2 = await subscribe({ customerId: c.id, priceId: a.id });
    await advance(tc.id, APR16);
    const preview = await ok(post(`/v1/subscriptions/${s1.id}/preview-proration`, { priceId: b.id }));
    expect(amounts(preview.lines)).toEqual([-1000, 2500]);
    await advance(tc.id, '2027-04-22T12:34:56Z');
    await ok(patch(`/v1/subscriptions/${s1.id}`, { priceId: b.id, prorationDate: preview.prorationDate }));
    const applied = (await upcoming(s1.id)).lineItems.filter((l: Json) => l.proration);
    expect(applied.map((l: Json) => ({ description: l.description, amount: l.amount, periodStart: l.periodStart, periodEnd: l.periodEnd }))).toEqual(preview.lines);
    // Without prorationDate: the clock's now. 8 d 11:25:04 = 732,304 s of 2,592,000 left:
    // 1999 × 732304 / 2592000 = 564.77… → 565; 4999 × … = 1412.33… → 1412.
    await ok(patch(`/v1/subscriptions/${s2.id}`, { priceId: b.id }));
    const now = (await upcoming(s2.id)).lineItems.filter((l: Json) => l.proration);
    expect(now.map((l: Json) => [l.amount, l.periodStart])).toEqual([[-565, '2027-04-22T12:34:56.000Z'], [1412, '2027-04-22T12:34:56.000Z']]);
  });

  it('create_prorations (the default) should put the lines on the next cycle invoice, not invoice now', async () => {
    const tc = await clock(APR1);
    const a = await price(1999);
    const b = await price(4999);
    const c = await customer(tc.id);
    const s = await subscribe({ customerId: c.id, priceId: a.id });
    await advance(tc.id, APR16);
    const changed = await ok(patch(`/v1/subscriptions/${s.id}`, { priceId: b.id }));
    expect(changed.latestInvoiceId).toBe(s.latestInvoiceId);
    expect(await invoicesOf(s.id)).toHaveLength(1);
    await advance(tc.id, MAY1);
    const [, next] = await invoicesOf(s.id);
    expect([next.status, next.total]).toEqual(['paid', -1000 + 2500 + 4999]);
    expect(next.lineItems.map((l: Json) => [l.amount, l.proration, l.periodStart, l.periodEnd])).toEqual([
      [-1000, true, APR16, MAY1], [2500, true, APR16, MAY1], [4999, false, MAY1, JUN1],
    ]);
    // Taken once: the invoice after carries no prorations.
    expect(amounts((await upcoming(s.id)).lineItems)).toEqual([4999]);
  });

  it('always_invoice should create and charge the proration invoice before the PATCH answers', async () => {
    const tc = await clock(APR1);
    const a = await price(1999);
    const b = await price(4999);
    const c = await customer(tc.id);
    const s = await subscribe({ customerId: c.id, priceId: a.id });
    await advance(tc.id, APR16);
    const changed = await ok(patch(`/v1/subscriptions/${s.id}`, { priceId: b.id, prorationBehavior: 'always_invoice' }));
    expect(changed).toMatchObject({ status: 'active', priceId: b.id });
    expect(changed.latestInvoiceId).not.toBe(s.latestInvoiceId);
    const invoice = await ok(get(`/v1/invoices/${changed.latestInvoiceId}`));
    expect([invoice.status, invoice.total, invoice.amountPaid, amounts(invoice.lineItems)]).toEqual(['paid', 1500, 1500, [-1000, 2500]]);
    expect((await paymentsOf(s.id)).map((x) => [x.status, x.amount])).toEqual([['succeeded', 1999], ['succeeded', 1500]]);
    expect(amounts((await upcoming(s.id)).lineItems)).toEqual([4999]);
  });

  it('prorationBehavior none should change the plan without any proration line', async () => {
    const tc = await clock(APR1);
    const a = await price(1999);
    const b = await price(4999);
    const c = await customer(tc.id);
    const s = await subscribe({ customerId: c.id, priceId: a.id });
    await advance(tc.id, APR16);
    const changed = await ok(patch(`/v1/subscriptions/${s.id}`, { priceId: b.id, quantity: 2, prorationBehavior: 'none' }));
    expect(changed).toMatchObject({ priceId: b.id, quantity: 2, latestInvoiceId: s.latestInvoiceId });
    expect(amounts((await upcoming(s.id)).lineItems)).toEqual([9998]);
    await advance(tc.id, MAY1);
    expect((await invoicesOf(s.id)).map((i) => amounts(i.lineItems))).toEqual([[1999], [9998]]);
  });

  it('billingCycleAnchor now should start a new period at the change, invoiced now with a credit for the unused time', async () => {
    const tc = await clock(APR1);
    const a = await price(1999);
    const b = await price(4999);
    const c = await customer(tc.id);
    const withPlan = await subscribe({ customerId: c.id, priceId: a.id });
    const samePlan = await subscribe({ customerId: c.id, priceId: a.id });
    await advance(tc.id, APR16);
    const moved = await ok(patch(`/v1/subscriptions/${withPlan.id}`, { priceId: b.id, billingCycleAnchor: 'now' }));
    expect(moved).toMatchObject({ status: 'active', priceId: b.id, billingCycleAnchor: APR16, currentPeriodStart: APR16, currentPeriodEnd: '2027-05-16T00:00:00.000Z' });
    const invoice = await ok(get(`/v1/invoices/${moved.latestInvoiceId}`));
    expect([invoice.status, invoice.total]).toEqual(['paid', -1000 + 4999]);
    expect(invoice.lineItems.map((l: Json) => [l.amount, l.proration, l.periodStart, l.periodEnd])).toEqual([
      [-1000, true, APR16, MAY1], [4999, false, APR16, '2027-05-16T00:00:00.000Z'],
    ]);
    // The same plan with the anchor moved: the unused half is credited too, not paid twice.
    const reset = await ok(patch(`/v1/subscriptions/${samePlan.id}`, { billingCycleAnchor: 'now' }));
    expect(reset).toMatchObject({ currentPeriodStart: APR16, currentPeriodEnd: '2027-05-16T00:00:00.000Z' });
    const resetInvoice = await ok(get(`/v1/invoices/${reset.latestInvoiceId}`));
    expect([resetInvoice.total, amounts(resetInvoice.lineItems)]).toEqual([999, [-1000, 1999]]);
    // The next invoice is a month after the new anchor.
    expect((await upcoming(withPlan.id))).toMatchObject({ periodStart: '2027-05-16T00:00:00.000Z', periodEnd: '2027-06-16T00:00:00.000Z', total: 4999 });
  });

  it('should refuse a currency or interval change with 422 proration_unavailable on priceId, in the PATCH and the preview', async () => {
    const c = await customer();
    const a = await price(1999);
    const s = await subscribe({ customerId: c.id, priceId: a.id });
    const others = [await price(1999, { interval: 'month' }, 'eur'), await price(19_990, { interval: 'year' }), await price(5000, { interval: 'month', intervalCount: 3 })];
    for (const other of others) {
      expect(await refusal(patch(`/v1/subscriptions/${s.id}`, { priceId: other.id }))).toEqual([422, 'proration_unavailable', 'priceId']);
      expect(await refusal(post(`/v1/subscriptions/${s.id}/preview-proration`, { priceId: other.id }))).toEqual([422, 'proration_unavailable', 'priceId']);
    }
    expect(await sub(s.id)).toMatchObject({ priceId: a.id, updatedAt: s.updatedAt });
  });

  it('should refuse a prorationDate outside the current period or after the clock\'s now with 422 invalid_proration_date, and one that is not an instant with 400', async () => {
    const tc = await clock(APR1);
    const a = await price(1999);
    const b = await price(4999);
    const c = await customer(tc.id);
    const s = await subscribe({ customerId: c.id, priceId: a.id });
    await advance(tc.id, APR16);
    // Outside the period or after the clock's now: 422 invalid_proration_date (API.md §10).
    for (const prorationDate of ['2027-04-16T00:00:01Z', '2027-03-31T23:59:59Z', '2027-05-02T00:00:00Z']) {
      expect(await refusal(patch(`/v1/subscriptions/${s.id}`, { priceId: b.id, prorationDate }))).toEqual([422, 'invalid_proration_date', 'prorationDate']);
      expect(await refusal(post(`/v1/subscriptions/${s.id}/preview-proration`, { priceId: b.id, prorationDate }))).toEqual([422, 'invalid_proration_date', 'prorationDate']);
    }
    // Not an instant at all: 400 invalid_parameter.
    expect(await refusal(patch(`/v1/subscriptions/${s.id}`, { priceId: b.id, prorationDate: '2027-04-10' }))).toEqual([400, 'invalid_parameter', 'prorationDate']);
    expect(await refusal(post(`/v1/subscriptions/${s.id}/preview-proration`, { priceId: b.id, prorationDate: '2027-04-10' }))).toEqual([400, 'invalid_parameter', 'prorationDate']);
    expect((await sub(s.id)).priceId).toBe(a.id);
  });

  it('should update metadata and change plans without changing the status (a past-due one stays past due)', async () => {
    const c = await customer(undefined, '4000000000000341');
    const a = await price(1999);
    const s = await subscribe({ customerId: c.id, priceId: a.id, metadata: { keep: 'yes', drop: 'x' } });
    expect(s.status).toBe('past_due');
    const updated = await ok(patch(`/v1/subscriptions/${s.id}`, { metadata: { tier: 'gold', drop: null } }));
    expect(updated).toMatchObject({ status: 'past_due', metadata: { keep: 'yes', tier: 'gold' } });
    expect(updated.metadata).not.toHaveProperty('drop');
    const more = await ok(patch(`/v1/subscriptions/${s.id}`, { quantity: 2 }));
    expect(more).toMatchObject({ status: 'past_due', quantity: 2 });
    expect((await eventsOf(s.id)).filter((t) => t === 'subscription.updated').length).toBeGreaterThanOrEqual(2);
    expect(await refusal(patch(`/v1/subscriptions/${s.id}`, { status: 'active' }))).toEqual([400, 'unknown_parameter', 'status']);
  });
});

describe(`upcoming invoice (${DIALECT})`, () => {
  it('should be exactly the invoice the run then creates, pending prorations included, and write nothing', async () => {
    const tc = await clock(APR1);
    const a = await price(1999);
    const c = await customer(tc.id);
    const s = await subscribe({ customerId: c.id, priceId: a.id, quantity: 2 });
    await advance(tc.id, APR16);
    await ok(patch(`/v1/subscriptions/${s.id}`, { quantity: 3 }));
    const before = await invoiceCount();
    const next = await upcoming(s.id);
    // 2 × 1999 × 15/30 = 1999 credited; 3 × 1999 × 15/30 = 2998.5 → 2999 charged; then 3 × 1999 for May.
    expect(next).toMatchObject({
      object: 'upcoming_invoice', subscriptionId: s.id, currency: 'USD', subtotal: -1999 + 2999 + 5997, total: -1999 + 2999 + 5997,
      periodStart: MAY1, periodEnd: JUN1, createsAt: MAY1,
    });
    expect(next.lineItems.map((l: Json) => [l.amount, l.quantity, l.unitAmount, l.proration])).toEqual([[-1999, 1, -1999, true], [2999, 1, 2999, true], [5997, 3, 1999, false]]);
    // A dry run: asked again it is the same, and no invoice was written.
    expect(await upcoming(s.id)).toEqual(next);
    expect(await invoiceCount()).toBe(before);
    await advance(tc.id, '2027-05-01T00:00:01Z');
    const created = (await invoicesOf(s.id)).at(-1) as Json;
    expect(created.lineItems.map(line)).toEqual(next.lineItems.map(line));
    expect([created.total, created.subtotal, created.currency, created.createdAt]).toEqual([next.total, next.subtotal, next.currency, next.createsAt]);
    // And the period after, without prorations.
    const then = await upcoming(s.id);
    expect(then).toMatchObject({ periodStart: JUN1, periodEnd: '2027-07-01T00:00:00.000Z', total: 5997 });
    await advance(tc.id, '2027-06-02T00:00:00Z');
    const june = (await invoicesOf(s.id)).at(-1) as Json;
    expect(june.lineItems.map(line)).toEqual(then.lineItems.map(line));
    expect(june.total).toBe(then.total);
  });
});

describe(`pause, resume, cancel (${DIALECT})`, () => {
  it('should invoice nothing while paused across several periods, and resume with a new period at the clock\'s time, invoiced', async () => {
    const tc = await clock(APR1);
    const a = await price(1999);
    const c = await customer(tc.id);
    const s = await subscribe({ customerId: c.id, priceId: a.id });
    await advance(tc.id, '2027-04-10T00:00:00Z');
    const paused = await ok(post(`/v1/subscriptions/${s.id}/pause`));
    expect(paused).toMatchObject({ status: 'paused', pausedAt: '2027-04-10T00:00:00.000Z' });
    await advance(tc.id, '2027-08-15T12:00:00Z');
    expect(await invoicesOf(s.id)).toHaveLength(1);
    expect((await sub(s.id)).status).toBe('paused');
    expect(await refusal(get(`/v1/subscriptions/${s.id}/upcoming-invoice`))).toEqual([422, 'invalid_state', undefined]);
    const resumed = await ok(post(`/v1/subscriptions/${s.id}/resume`));
    expect(resumed).toMatchObject({
      status: 'active', pausedAt: null, currentPeriodStart: '2027-08-15T12:00:00.000Z', currentPeriodEnd: '2027-09-15T12:00:00.000Z', billingCycleAnchor: '2027-08-15T12:00:00.000Z',
    });
    const invoices = await invoicesOf(s.id);
    expect(invoices.map((i) => [i.status, i.total, i.createdAt, i.lineItems.at(-1).periodStart, i.lineItems.at(-1).periodEnd])).toEqual([
      ['paid', 1999, APR1, APR1, MAY1],
      // The unused part of the period the pause interrupted (Apr 10 – May 1, 21 of 30 days) is
      // credited: 1999 × 21/30 = 1399.3 → 1399; 1999 − 1399 = 600.
      ['paid', 600, '2027-08-15T12:00:00.000Z', '2027-08-15T12:00:00.000Z', '2027-09-15T12:00:00.000Z'],
    ]);
    expect(invoices[1].lineItems.map((l: Json) => l.amount)).toEqual([-1399, 1999]);
    expect(resumed.latestInvoiceId).toBe(invoices[1].id);
    expect(await refusal(post(`/v1/subscriptions/${s.id}/resume`))).toEqual([422, 'invalid_state', undefined]);
    await advance(tc.id, '2027-09-15T12:00:00Z');
    expect((await invoicesOf(s.id)).at(-1)?.lineItems.at(-1).periodStart).toBe('2027-09-15T12:00:00.000Z');
    const types = await eventsOf(s.id);
    expect(types).toEqual(expect.arrayContaining(['subscription.created', 'subscription.paused', 'subscription.resumed', 'subscription.updated']));
    expect(types.indexOf('subscription.paused')).toBeLessThan(types.indexOf('subscription.resumed'));
  });

  it('should cancel at once: canceled with endedAt, nothing billed after, no resume', async () => {
    const tc = await clock(APR1);
    const a = await price(1999);
    const c = await customer(tc.id);
    const s = await subscribe({ customerId: c.id, priceId: a.id });
    await advance(tc.id, '2027-04-10T00:00:00Z');
    const canceled = await ok(post(`/v1/subscriptions/${s.id}/cancel`, {}));
    expect(canceled).toMatchObject({ status: 'canceled', canceledAt: '2027-04-10T00:00:00.000Z', endedAt: '2027-04-10T00:00:00.000Z', cancelAtPeriodEnd: false });
    await advance(tc.id, '2027-08-01T00:00:00Z');
    expect(await invoicesOf(s.id)).toHaveLength(1);
    expect(await refusal(post(`/v1/subscriptions/${s.id}/resume`))).toEqual([422, 'invalid_state', undefined]);
    expect(await refusal(post(`/v1/subscriptions/${s.id}/pause`))).toEqual([422, 'invalid_state', undefined]);
    expect(await refusal(post(`/v1/subscriptions/${s.id}/cancel`, {}))).toEqual([422, 'invalid_state', undefined]);
    expect(await eventsOf(s.id)).toContain('subscription.canceled');
  });

  it('should cancel at period end: cancelAtPeriodEnd until the period end passes on the clock, then canceled without a new invoice', async () => {
    const tc = await clock(APR1);
    const a = await price(1999);
    const c = await customer(tc.id);
    const s = await subscribe({ customerId: c.id, priceId: a.id });
    await advance(tc.id, '2027-04-10T00:00:00Z');
    const marked = await ok(post(`/v1/subscriptions/${s.id}/cancel`, { atPeriodEnd: true }));
    expect(marked).toMatchObject({ status: 'active', cancelAtPeriodEnd: true, endedAt: null });
    await advance(tc.id, '2027-04-30T23:59:59Z');
    expect(await sub(s.id)).toMatchObject({ status: 'active', cancelAtPeriodEnd: true, endedAt: null });
    await advance(tc.id, '2027-06-15T00:00:00Z');
    expect(await sub(s.id)).toMatchObject({ status: 'canceled', endedAt: MAY1 });
    expect(await invoicesOf(s.id)).toHaveLength(1);
    const types = await eventsOf(s.id);
    expect(types.slice(-2)).toEqual(['subscription.updated', 'subscription.canceled']);
  });
});

describe(`dunning (${DIALECT})`, () => {
  it('should follow the account\'s dunningRetryDays to past_due then canceled, with events and webhook deliveries', async () => {
    expect((await ok(patch('/v1/account', { dunningRetryDays: [2, 5] }))).dunningRetryDays).toEqual([2, 5]);
    const types = ['subscription.created', 'subscription.updated', 'subscription.past_due', 'subscription.canceled'];
    const endpoint = await ok(post('/v1/webhook-endpoints', { url: 'https://127.0.0.1:9/hooks', events: types }), 201);
    const tc = await clock('2027-03-01T00:00:00Z');
    const c = await customer(tc.id, '4000000000000341');
    const p = await price(2500);
    const s = await subscribe({ customerId: c.id, priceId: p.id });
    // Retries 2 and 5 days after the first failure (the default would be 1, 3 and 7).
    expect(s).toMatchObject({ status: 'past_due', nextPaymentAttemptAt: '2027-03-03T00:00:00.000Z' });
    await advance(tc.id, '2027-03-04T00:00:00Z');
    expect(await sub(s.id)).toMatchObject({ status: 'past_due', nextPaymentAttemptAt: '2027-03-06T00:00:00.000Z' });
    await advance(tc.id, '2027-03-07T00:00:00Z');
    expect(await sub(s.id)).toMatchObject({ status: 'canceled', endedAt: '2027-03-06T00:00:00.000Z' });
    expect((await paymentsOf(s.id)).map((x) => x.status)).toEqual(['failed', 'failed', 'failed']);
    const events = ((await get('/v1/events?pageSize=100')).body.data as Json[]).filter((e) => e.data.object.id === s.id);
    expect(new Set(events.map((e) => e.type))).toEqual(new Set(['subscription.created', 'subscription.past_due', 'subscription.updated', 'subscription.canceled']));
    // Every subscription event was queued for the endpoint in its transaction.
    const deliveries = await app.server.services.db.select<{ event_id: string; event_type: string }>(
      'SELECT event_id, event_type FROM webhook_deliveries WHERE endpoint_id = $1', [endpoint.id],
    );
    expect(deliveries.map((d) => d.event_id).sort()).toEqual(events.map((e) => e.id).sort());
    expect(deliveries.map((d) => d.event_type)).toEqual(expect.arrayContaining(['subscription.past_due', 'subscription.canceled']));
  });
});

describe(`a voided invoice under dunning (${DIALECT})`, () => {
  it('should make a past-due subscription active again when its dunned invoice is voided, and bill the next period', async () => {
    const tc = await clock('2027-06-01T00:00:00Z');
    const c = await customer(tc.id, '4000000000000341');
    const p = await price(1200);
    const s = await subscribe({ customerId: c.id, priceId: p.id });
    expect(s.status).toBe('past_due');
    await ok(post(`/v1/invoices/${s.latestInvoiceId}/void`));
    // The next retry finds the invoice void: nothing owed, active again, no retry charge.
    await advance(tc.id, '2027-06-03T00:00:00Z');
    expect(await sub(s.id)).toMatchObject({ status: 'active', nextPaymentAttemptAt: null });
    expect((await paymentsOf(s.id)).length).toBe(1);
    expect(await eventsOf(s.id)).toContain('subscription.updated');
    // Its period goes on: the next one is invoiced at its start.
    await advance(tc.id, '2027-07-01T00:00:01Z');
    const invoices = await invoicesOf(s.id);
    expect(invoices.map((i) => i.status)).toEqual(['void', expect.any(String)]);
    expect(invoices[1].lineItems.at(-1).periodStart).toBe('2027-07-01T00:00:00.000Z');
  });
});

describe(`sub-lists (${DIALECT})`, () => {
  it('should list a subscription\'s invoices, payments and gateway transactions newest first, paged with meta.total', async () => {
    const tc = await clock('2027-01-01T00:00:00Z');
    const a = await price(1999);
    const c = await customer(tc.id);
    const s = await subscribe({ customerId: c.id, priceId: a.id });
    const other = await subscribe({ customerId: c.id, priceId: a.id });
    await advance(tc.id, '2027-04-01T00:00:00Z');
    const months = ['2027-04-01T00:00:00.000Z', '2027-03-01T00:00:00.000Z', '2027-02-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z'];
    const page1 = await get(`/v1/subscriptions/${s.id}/invoices?pageSize=3`);
    expect(page1.body.meta.total).toBe(4);
    expect(page1.body.data.map((i: Json) => [i.subscriptionId, i.createdAt])).toEqual(months.slice(0, 3).map((m) => [s.id, m]));
    const page2 = await get(`/v1/subscriptions/${s.id}/invoices?pageSize=3&page=2`);
    expect(page2.body.data.map((i: Json) => i.createdAt)).toEqual(months.slice(3));
    const payments = await get(`/v1/subscriptions/${s.id}/payments?pageSize=3`);
    expect(payments.body.meta.total).toBe(4);
    expect(payments.body.data.map((x: Json) => [x.subscriptionId, x.status, x.createdAt])).toEqual(months.slice(0, 3).map((m) => [s.id, 'succeeded', m]));
    const gtx = await get(`/v1/subscriptions/${s.id}/gateway-transactions?pageSize=3`);
    expect(gtx.status).toBe(200);
    expect(gtx.body.meta.total).toBe(4);
    const allPayments = new Set(((await get(`/v1/subscriptions/${s.id}/payments?pageSize=100`)).body.data as Json[]).map((x) => x.id));
    const txs = (await get(`/v1/subscriptions/${s.id}/gateway-transactions?pageSize=100`)).body.data as Json[];
    expect(txs.every((x) => allPayments.has(x.paymentId))).toBe(true);
    const times = txs.map((x) => x.createdAt);
    expect([...times].sort().reverse()).toEqual(times);
    expect(gtx.body.data).toEqual(txs.slice(0, 3));
    expect((await get(`/v1/subscriptions/${other.id}/invoices`)).body.meta.total).toBe(4);
    expect(await refusal(get('/v1/subscriptions/sub_doesnotexist/invoices'))).toEqual([404, 'resource_not_found', 'id']);
  });
});

describe(`test clocks (${DIALECT})`, () => {
  it('should create, retrieve and advance a clock only forward', async () => {
    const tc = await clock('2030-01-01T00:00:00Z');
    expect(tc).toMatchObject({ object: 'test_clock', livemode: false, frozenTime: '2030-01-01T00:00:00.000Z', status: 'ready' });
    expect(tc.id).toMatch(/^clock_/);
    expect(await ok(get(`/v1/test-clocks/${tc.id}`))).toEqual(tc);
    const moved = await advance(tc.id, '2030-02-01T00:00:00Z');
    expect(moved).toMatchObject({ id: tc.id, frozenTime: '2030-02-01T00:00:00.000Z', status: 'ready' });
    // API.md §10: only forward, else 422.
    expect(await refusal(post(`/v1/test-clocks/${tc.id}/advance`, { frozenTime: '2030-01-31T23:59:59Z' }))).toEqual([422, 'invalid_state', 'frozenTime']);
    expect(await refusal(post(`/v1/test-clocks/${tc.id}/advance`, { frozenTime: 'tomorrow' }))).toEqual([400, 'invalid_parameter', 'frozenTime']);
    expect(await refusal(post('/v1/test-clocks', {}))).toEqual([400, 'missing_parameter', 'frozenTime']);
    expect((await ok(get(`/v1/test-clocks/${tc.id}`))).frozenTime).toBe('2030-02-01T00:00:00.000Z');
    expect(await refusal(get('/v1/test-clocks/clock_doesnotexist'))).toEqual([404, 'resource_not_found', 'id']);
  });

  it('should refuse a live key with 403 mode_mismatch on every test-clock route and on a customer with testClockId', async () => {
    const tc = await clock('2030-01-01T00:00:00Z');
    const live = account.liveKey;
    expect(await refusal(post('/v1/test-clocks', { frozenTime: '2030-01-01T00:00:00Z' }, live))).toEqual([403, 'mode_mismatch', undefined]);
    expect(await refusal(get(`/v1/test-clocks/${tc.id}`, live))).toEqual([403, 'mode_mismatch', undefined]);
    expect(await refusal(post(`/v1/test-clocks/${tc.id}/advance`, { frozenTime: '2030-02-01T00:00:00Z' }, live))).toEqual([403, 'mode_mismatch', undefined]);
    const liveCustomer = await post('/v1/customers', { email: 'live-clock@example.com', testClockId: tc.id }, live);
    expect([liveCustomer.status, liveCustomer.body.error?.code]).toEqual([403, 'mode_mismatch']);
    expect((await ok(get(`/v1/test-clocks/${tc.id}`))).frozenTime).toBe('2030-01-01T00:00:00.000Z');
  });

  it('should advance two clocks concurrently without touching each other\'s subscriptions', async () => {
    const [c1, c2] = [await clock('2027-01-01T00:00:00Z'), await clock('2030-06-03T00:00:00Z')];
    const monthly = await price(1000);
    const weekly = await price(300, { interval: 'week' });
    const s1 = await subscribe({ customerId: (await customer(c1.id)).id, priceId: monthly.id });
    const s2 = await subscribe({ customerId: (await customer(c2.id)).id, priceId: weekly.id });
    const free = await subscribe({ customerId: (await customer()).id, priceId: monthly.id });
    await Promise.all([advance(c1.id, '2027-07-01T00:00:00Z'), advance(c2.id, '2030-07-01T00:00:00Z')]);
    const starts = async (id: string) => (await invoicesOf(id)).map((i) => [i.createdAt, i.lineItems.at(-1).periodStart]);
    expect(await starts(s1.id)).toEqual(['01', '02', '03', '04', '05', '06', '07'].map((m) => [`2027-${m}-01T00:00:00.000Z`, `2027-${m}-01T00:00:00.000Z`]));
    expect(await starts(s2.id)).toEqual(['2030-06-03', '2030-06-10', '2030-06-17', '2030-06-24', '2030-07-01'].map((d) => [`${d}T00:00:00.000Z`, `${d}T00:00:00.000Z`]));
    expect(await invoicesOf(free.id)).toHaveLength(1);
    expect((await sub(s1.id)).currentPeriodEnd).toBe('2027-08-01T00:00:00.000Z');
    expect((await sub(s2.id)).currentPeriodEnd).toBe('2030-07-08T00:00:00.000Z');
    expect((await sub(free.id)).testClockId).toBeNull();
  });

  it('should bill a year of monthly periods in one advance', async () => {
    const tc = await clock('2027-01-15T08:00:00Z');
    const a = await price(1250);
    const s = await subscribe({ customerId: (await customer(tc.id)).id, priceId: a.id });
    await advance(tc.id, '2028-01-14T08:00:00Z');
    const invoices = await invoicesOf(s.id);
    expect(invoices).toHaveLength(12);
    expect(invoices.every((i) => i.status === 'paid' && i.total === 1250)).toBe(true);
    expect(invoices.map((i) => i.lineItems.at(-1).periodStart.slice(0, 10))).toEqual(
      ['2027-01', '2027-02', '2027-03', '2027-04', '2027-05', '2027-06', '2027-07', '2027-08', '2027-09', '2027-10', '2027-11', '2027-12'].map((m) => `${m}-15`),
    );
    expect(await sub(s.id)).toMatchObject({ status: 'active', currentPeriodStart: '2027-12-15T08:00:00.000Z', currentPeriodEnd: '2028-01-15T08:00:00.000Z' });
  });
});

describe(`subscription list (${DIALECT})`, () => {
  it('should filter by customerId and status, page with meta.total, and refuse unknown filters', async () => {
    const a = await price(1000);
    const x = await customer();
    const y = await customer();
    const x1 = await subscribe({ customerId: x.id, priceId: a.id });
    const x2 = await subscribe({ customerId: x.id, priceId: a.id });
    const y1 = await subscribe({ customerId: y.id, priceId: a.id });
    await ok(post(`/v1/subscriptions/${x2.id}/pause`));
    const ids = async (q: string) => {
      const r = await get(`/v1/subscriptions${q}`);
      expect(r.status).toBe(200);
      return [r.body.meta.total, r.body.data.map((s: Json) => s.id).sort()];
    };
    expect(await ids('')).toEqual([3, [x1.id, x2.id, y1.id].sort()]);
    expect(await ids(`?customerId=${x.id}`)).toEqual([2, [x1.id, x2.id].sort()]);
    expect(await ids('?status=paused')).toEqual([1, [x2.id]]);
    expect(await ids(`?customerId=${x.id}&status=active`)).toEqual([1, [x1.id]]);
    expect(await ids(`?customerId=${y.id}&status=paused`)).toEqual([0, []]);
    const p1 = await get('/v1/subscriptions?pageSize=2&sortDirection=asc');
    const p2 = await get('/v1/subscriptions?pageSize=2&page=2&sortDirection=asc');
    expect([p1.body.meta.total, p1.body.data.length, p2.body.data.length]).toEqual([3, 2, 1]);
    expect(new Set([...p1.body.data, ...p2.body.data].map((s: Json) => s.id)).size).toBe(3);
    expect(p1.body.data[0].plan).toMatchObject({ priceId: a.id, unitAmount: 1000 });
    expect(await refusal(get('/v1/subscriptions?color=red'))).toEqual([400, 'unknown_parameter', 'color']);
    expect(await refusal(get('/v1/subscriptions?status=trialing'))).toEqual([400, 'invalid_parameter', 'status']);
  });
});
