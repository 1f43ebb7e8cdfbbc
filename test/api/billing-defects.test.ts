/**
 * The money defects a review of billing on test clocks found (issue 33), each with its amounts
 * worked out by hand in the test from API.md §10 and §12:
 * proration to the second at the plan's own rate, measured against the whole period (a short
 * first period included); a prorationDate never before an earlier change in the period; an
 * invoice never left a draft; an unpaid invoice of a past-due subscription collectable through
 * pause and resume; resume crediting the paid time the pause left unused; a failed charge
 * counted once per attempt.
 */
import { systemContext } from '../../src/core/context';
import { startTestApp, type TestApp, type TestAccount } from '../helpers/app';
import { DIALECT } from '../helpers/db';

let app: TestApp;
let account: TestAccount;
let key: string;
beforeAll(async () => {
  app = await startTestApp({ env: { PUBLIC_URL: 'https://pay.example.com' } });
});
beforeEach(async () => {
  account = await app.createAccount();
  key = account.testKey;
});
afterAll(() => app.stop());

type Json = Record<string, any>;
type Res = { status: number; body: Json };
const post = async (p: string, body?: Json) => app.request('POST', p, { key, body });
const patch = async (p: string, body?: Json) => app.request('PATCH', p, { key, body });
const get = async (p: string) => app.request('GET', p, { key });
const ok = async (res: Promise<Res>, status = 200) => {
  const r = await res;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body.data;
};
const refusal = async (res: Promise<Res>) => {
  const r = await res;
  return [r.status, r.body.error?.code, r.body.error?.param];
};
const clock = (frozenTime: string) => ok(post('/v1/test-clocks', { frozenTime }), 201);
const advance = (id: string, frozenTime: string) => ok(post(`/v1/test-clocks/${id}/advance`, { frozenTime }));
const price = async (unitAmount: number, recurring: Json = { interval: 'month' }) => {
  const product = await ok(post('/v1/products', { name: `Plan ${unitAmount}` }), 201);
  return ok(post('/v1/prices', { productId: product.id, unitAmount, currency: 'usd', recurring }), 201);
};
const addCard = (customerId: string, number: string, setDefault = true) =>
  ok(post(`/v1/customers/${customerId}/payment-methods`, { card: { number, expMonth: 12, expYear: 2040, cvc: '123' }, setDefault }), 201);
const customer = async (testClockId: string, card = '4242424242424242') => {
  const c = await ok(post('/v1/customers', { email: `bill-${Math.random().toString(36).slice(2)}@example.com`, testClockId }), 201);
  await addCard(c.id, card);
  return ok(get(`/v1/customers/${c.id}`));
};
const subscribe = (body: Json) => ok(post('/v1/subscriptions', body), 201);
const sub = (id: string) => ok(get(`/v1/subscriptions/${id}`));
const invoicesOf = async (subId: string) => (await get(`/v1/subscriptions/${subId}/invoices?pageSize=100&sortDirection=asc`)).body.data as Json[];
const paymentsOf = async (subId: string) => (await get(`/v1/subscriptions/${subId}/payments?pageSize=100&sortDirection=asc`)).body.data as Json[];
const upcomingAmounts = async (subId: string) => ((await ok(get(`/v1/subscriptions/${subId}/upcoming-invoice`))).lineItems as Json[]).map((l) => l.amount);
const DECLINING = '4000000000000341';

/** No invoice of the subscription is left a draft by billing. */
async function expectNoDraft(subId: string): Promise<void> {
  expect((await invoicesOf(subId)).filter((i) => i.status === 'draft').map((i) => i.id)).toEqual([]);
}

describe(`prorations in a short first period (${DIALECT})`, () => {
  // Monthly 10000 from Jan 1 with the anchor on Jan 11: the first period is Jan 1–11, 10 days of
  // the whole period Dec 11–Jan 11 (31 days), invoiced 10000 × 10/31 = 3225.8 → 3226.
  it('should credit and charge a downgrade at the plan\'s own rate: −1613 and +161, not −5000 and +500', async () => {
    const tc = await clock('2027-01-01T00:00:00Z');
    const [big, small] = [await price(10000), await price(1000)];
    const c = await customer(tc.id);
    const s = await subscribe({ customerId: c.id, priceId: big.id, billingCycleAnchor: '2027-01-11T00:00:00Z' });
    expect((await invoicesOf(s.id)).map((i) => i.total)).toEqual([3226]);
    await advance(tc.id, '2027-01-06T00:00:00Z');
    await ok(patch(`/v1/subscriptions/${s.id}`, { priceId: small.id }));
    // 5 days left of the 31-day whole period: 10000 × 5/31 = 1612.9 → 1613; 1000 × 5/31 = 161.3 → 161.
    expect(await upcomingAmounts(s.id)).toEqual([-1613, 161, 1000]);
  });

  it('should charge an upgrade in a short period at the plan\'s own rate too (−161, +1613), in the preview and the invoice alike', async () => {
    const tc = await clock('2027-01-01T00:00:00Z');
    const [small, big] = [await price(1000), await price(10000)];
    const c = await customer(tc.id);
    const s = await subscribe({ customerId: c.id, priceId: small.id, billingCycleAnchor: '2027-01-11T00:00:00Z' });
    // 1000 × 10/31 = 322.6 → 323.
    expect((await invoicesOf(s.id)).map((i) => i.total)).toEqual([323]);
    await advance(tc.id, '2027-01-06T00:00:00Z');
    const preview = await ok(post(`/v1/subscriptions/${s.id}/preview-proration`, { priceId: big.id }));
    expect(preview.lines.map((l: Json) => l.amount)).toEqual([-161, 1613]);
    await ok(patch(`/v1/subscriptions/${s.id}`, { priceId: big.id, prorationBehavior: 'always_invoice', prorationDate: preview.prorationDate }));
    const invoices = await invoicesOf(s.id);
    expect(invoices.map((i) => [i.status, i.total])).toEqual([['paid', 323], ['paid', 1452]]);
    expect((await paymentsOf(s.id)).map((p) => p.amount)).toEqual([323, 1452]);
    // From the anchor on, whole periods at the new price.
    await advance(tc.id, '2027-01-11T00:00:00Z');
    expect((await invoicesOf(s.id)).at(-1)?.total).toBe(10000);
  });
});

describe(`a negative invoice total becomes credit (${DIALECT})`, () => {
  it('should carry a downgrade\'s −7709 as the customer\'s credit and pay the next invoices from it, charging only the rest', async () => {
    const tc = await clock('2027-03-01T00:00:00Z');
    const [big, small] = [await price(10000), await price(1000)];
    const c = await customer(tc.id);
    const s = await subscribe({ customerId: c.id, priceId: big.id });
    await advance(tc.id, '2027-03-02T00:00:00Z');
    // 30 of March's 31 days left: −10000 × 30/31 = −9677.4 → −9677; +1000 × 30/31 = 967.7 → 968.
    await ok(patch(`/v1/subscriptions/${s.id}`, { priceId: small.id }));
    await advance(tc.id, '2027-04-01T00:00:00Z');
    let invoices = await invoicesOf(s.id);
    // April: −9677 + 968 + 1000 = −7709: paid, nothing due, the 7709 the customer's credit.
    expect(invoices.map((i) => [i.status, i.total, i.amountDue, i.creditApplied])).toEqual([['paid', 10000, 0, 0], ['paid', -7709, 0, 0]]);
    expect((await ok(get(`/v1/customers/${c.id}`))).creditBalance).toEqual({ USD: 7709 });
    // May to November take 1000 each from the credit; December takes the last 709 and is charged 291.
    await advance(tc.id, '2027-12-01T00:00:00Z');
    invoices = await invoicesOf(s.id);
    expect(invoices.slice(2).map((i) => [i.status, i.total, i.creditApplied, i.amountDue, i.amountPaid])).toEqual([
      ...Array.from({ length: 7 }, () => ['paid', 1000, 1000, 0, 0]),
      ['paid', 1000, 709, 0, 291],
    ]);
    expect((await ok(get(`/v1/customers/${c.id}`))).creditBalance).toEqual({});
    expect((await paymentsOf(s.id)).map((p) => p.amount)).toEqual([10000, 291]);
    // The ledger: the credit, then each application, newest first.
    const ledger = (await get(`/v1/customers/${c.id}/balance-transactions?pageSize=100`)).body.data as Json[];
    expect(ledger.map((t) => [t.type, t.amount, t.invoiceId])).toEqual([
      ['applied_to_invoice', -709, invoices[9].id],
      ...[8, 7, 6, 5, 4, 3, 2].map((k) => ['applied_to_invoice', -1000, invoices[k].id]),
      ['invoice_credit', 7709, invoices[1].id],
    ]);
    // What the customer paid + the credit left (none) = the sum of what was invoiced: 10000 − 7709 + 8 × 1000.
    const paid = (await paymentsOf(s.id)).filter((p) => p.status === 'succeeded').reduce((sum, p) => sum + p.amount, 0);
    expect([paid, invoices.reduce((sum, i) => sum + i.total, 0)]).toEqual([10291, 10000 - 7709 + 8 * 1000]);
  });
});

describe(`prorationDate before an earlier change (${DIALECT})`, () => {
  // Period Apr 1–May 1 (30 days); A 3000, B 6000.
  it('should refuse a prorationDate before the previous change in the period with 422 invalid_proration_date, and prorate a later one from that change', async () => {
    const tc = await clock('2027-04-01T00:00:00Z');
    const [a, b] = [await price(3000), await price(6000)];
    const c = await customer(tc.id);
    const s = await subscribe({ customerId: c.id, priceId: a.id });
    await advance(tc.id, '2027-04-21T00:00:00Z');
    // Day 20 of 30: A → B: −3000 × 10/30 = −1000, +6000 × 10/30 = +2000.
    await ok(patch(`/v1/subscriptions/${s.id}`, { priceId: b.id }));
    for (const prorationDate of ['2027-04-01T00:00:00Z', '2027-04-20T23:59:59Z']) {
      expect(await refusal(patch(`/v1/subscriptions/${s.id}`, { priceId: a.id, prorationDate }))).toEqual([422, 'invalid_proration_date', 'prorationDate']);
      expect(await refusal(post(`/v1/subscriptions/${s.id}/preview-proration`, { priceId: a.id, prorationDate }))).toEqual([422, 'invalid_proration_date', 'prorationDate']);
    }
    // Nothing written by the refusals: the plan is still B.
    expect((await sub(s.id)).priceId).toBe(b.id);
    // Back to A at the same instant as the change: the B time is all credited (−2000) and A's charged again (+1000).
    await ok(patch(`/v1/subscriptions/${s.id}`, { priceId: a.id, prorationDate: '2027-04-21T00:00:00Z' }));
    expect(await upcomingAmounts(s.id)).toEqual([-1000, 2000, -2000, 1000, 3000]);
    // The next period is a new one: its start is a valid prorationDate again.
    await advance(tc.id, '2027-05-01T00:00:00Z');
    await ok(patch(`/v1/subscriptions/${s.id}`, { priceId: b.id, prorationDate: '2027-05-01T00:00:00Z', prorationBehavior: 'none' }));
    // What was charged adds up: 3000 (April on A) + 3000 − 1000 + 2000 − 2000 + 1000 (May's invoice).
    expect((await invoicesOf(s.id)).map((i) => i.total)).toEqual([3000, 3000]);
    await expectNoDraft(s.id);
  });
});

describe(`invoices never left a draft (${DIALECT})`, () => {
  it('should refuse always_invoice and billingCycleAnchor now on a past-due subscription with 422 invalid_state, creating no invoice', async () => {
    const tc = await clock('2027-03-01T00:00:00Z');
    const [a, b] = [await price(2500), await price(5000)];
    const c = await customer(tc.id, DECLINING);
    const s = await subscribe({ customerId: c.id, priceId: a.id });
    expect(s.status).toBe('past_due');
    await advance(tc.id, '2027-03-01T12:00:00Z');
    expect(await refusal(patch(`/v1/subscriptions/${s.id}`, { priceId: b.id, prorationBehavior: 'always_invoice' }))).toEqual([422, 'invalid_state', undefined]);
    expect(await refusal(patch(`/v1/subscriptions/${s.id}`, { billingCycleAnchor: 'now' }))).toEqual([422, 'invalid_state', undefined]);
    expect((await invoicesOf(s.id)).map((i) => [i.status, i.total])).toEqual([['sent', 2500]]);
    expect(await sub(s.id)).toMatchObject({ priceId: a.id, status: 'past_due' });
    // A change that invoices later is still taken (its lines wait for the next invoice).
    await ok(patch(`/v1/subscriptions/${s.id}`, { priceId: b.id }));
    await expectNoDraft(s.id);
  });

  it('should refuse billingCycleAnchor now on a paused subscription with 422 invalid_state', async () => {
    const tc = await clock('2027-03-01T00:00:00Z');
    const a = await price(2500);
    const c = await customer(tc.id);
    const s = await subscribe({ customerId: c.id, priceId: a.id });
    await ok(post(`/v1/subscriptions/${s.id}/pause`));
    expect(await refusal(patch(`/v1/subscriptions/${s.id}`, { billingCycleAnchor: 'now' }))).toEqual([422, 'invalid_state', undefined]);
    expect(await invoicesOf(s.id)).toHaveLength(1);
    await expectNoDraft(s.id);
  });
});

describe(`pause and resume (${DIALECT})`, () => {
  it('should credit the unused paid time on resume: paid Jun 1–Jul 1, paused Jun 3, resumed Jun 4 → −2800 and 3000 for Jun 4–Jul 4', async () => {
    const tc = await clock('2027-06-01T00:00:00Z');
    const a = await price(3000);
    const c = await customer(tc.id);
    const s = await subscribe({ customerId: c.id, priceId: a.id });
    await advance(tc.id, '2027-06-03T00:00:00Z');
    await ok(post(`/v1/subscriptions/${s.id}/pause`));
    await advance(tc.id, '2027-06-04T00:00:00Z');
    const resumed = await ok(post(`/v1/subscriptions/${s.id}/resume`));
    expect(resumed).toMatchObject({ status: 'active', currentPeriodStart: '2027-06-04T00:00:00.000Z', currentPeriodEnd: '2027-07-04T00:00:00.000Z' });
    const invoices = await invoicesOf(s.id);
    // Jun 3 → Jul 1: 28 of the 30 paid days unused: 3000 × 28/30 = 2800.
    expect(invoices.map((i) => [i.status, i.lineItems.map((l: Json) => l.amount), i.total])).toEqual([
      ['paid', [3000], 3000],
      ['paid', [-2800, 3000], 200],
    ]);
    expect(invoices[1].lineItems[0]).toMatchObject({ proration: true, periodStart: '2027-06-03T00:00:00.000Z', periodEnd: '2027-07-01T00:00:00.000Z' });
    // Charged in all: 30 days of June (3000 for Jun 1–Jul 1) less the 28 unused, plus Jun 4–Jul 4 in full.
    expect((await paymentsOf(s.id)).reduce((sum, p) => sum + p.amount, 0)).toBe(3000 - 2800 + 3000);
  });

  it('should keep a past-due subscription\'s unpaid invoice collectable through pause and resume, and collect the resume invoice once it is paid', async () => {
    const tc = await clock('2027-03-01T00:00:00Z');
    const a = await price(2500);
    const c = await customer(tc.id, DECLINING);
    const s = await subscribe({ customerId: c.id, priceId: a.id });
    expect(s).toMatchObject({ status: 'past_due', nextPaymentAttemptAt: '2027-03-02T00:00:00.000Z' });
    const [unpaid] = await invoicesOf(s.id);
    await ok(post(`/v1/subscriptions/${s.id}/pause`));
    await advance(tc.id, '2027-03-01T06:00:00Z');
    const resumed = await ok(post(`/v1/subscriptions/${s.id}/resume`));
    // Still past due, the unpaid invoice still dunned on its schedule (day 1 after the first failure).
    expect(resumed).toMatchObject({ status: 'past_due', nextPaymentAttemptAt: '2027-03-02T00:00:00.000Z', currentPeriodStart: '2027-03-01T06:00:00.000Z' });
    let invoices = await invoicesOf(s.id);
    // The new period's invoice waits, finalised, with no credit for a period that was not paid.
    expect(invoices.map((i) => [i.id === unpaid.id, i.status, i.paymentStatus, i.total])).toEqual([
      [true, 'sent', 'failed', 2500],
      [false, 'sent', 'unpaid', 2500],
    ]);
    // retry-payment still reaches the unpaid invoice: a good card as the customer's default pays it.
    await addCard(c.id, '4242424242424242');
    const session = await ok(post(`/v1/subscriptions/${s.id}/retry-payment`));
    expect(session.status).toBe('complete');
    // Then the resume invoice is collected by the next step.
    await advance(tc.id, '2027-03-01T06:00:01Z');
    invoices = await invoicesOf(s.id);
    expect(invoices.map((i) => [i.status, i.amountPaid])).toEqual([['paid', 2500], ['paid', 2500]]);
    expect(await sub(s.id)).toMatchObject({ status: 'active', nextPaymentAttemptAt: null });
    expect((await paymentsOf(s.id)).map((p) => [p.status, p.amount])).toEqual([['failed', 2500], ['succeeded', 2500], ['succeeded', 2500]]);
    await expectNoDraft(s.id);
  });

  it('should keep dunning an unpaid invoice across pause and resume: its retries run after the resume, and the last cancels', async () => {
    const tc = await clock('2027-03-01T00:00:00Z');
    const a = await price(2500);
    const c = await customer(tc.id, DECLINING);
    const s = await subscribe({ customerId: c.id, priceId: a.id });
    await ok(post(`/v1/subscriptions/${s.id}/pause`));
    // Paused past the day-1 retry: resumed, that retry runs at once.
    await advance(tc.id, '2027-03-02T12:00:00Z');
    await ok(post(`/v1/subscriptions/${s.id}/resume`));
    expect((await sub(s.id)).nextPaymentAttemptAt).toBe('2027-03-02T12:00:00.000Z');
    await advance(tc.id, '2027-03-02T12:00:01Z');
    expect(await sub(s.id)).toMatchObject({ status: 'past_due', nextPaymentAttemptAt: '2027-03-04T00:00:00.000Z' });
    await advance(tc.id, '2027-03-09T00:00:00Z');
    expect((await sub(s.id)).status).toBe('canceled');
    expect((await paymentsOf(s.id)).map((p) => p.status)).toEqual(['failed', 'failed', 'failed', 'failed']);
  });
});

describe(`a failed charge counted once (${DIALECT})`, () => {
  it('should not count the create request\'s failed attempt again when a run read the subscription before it was counted (the day-1 retry stays)', async () => {
    const tc = await clock('2027-03-01T00:00:00Z');
    const a = await price(2500);
    const c = await customer(tc.id, DECLINING);
    const s = await subscribe({ customerId: c.id, priceId: a.id });
    expect(s).toMatchObject({ status: 'past_due', nextPaymentAttemptAt: '2027-03-02T00:00:00.000Z' });
    const billing = app.server.services.billing;
    const current = await billing.store.find(s.id);
    if (!current) throw new Error('no subscription');
    // The run's read, made before the request counted its failure: nothing seen, active.
    const stale = { ...current, status: 'active' as const, dunningFailures: 0, firstFailedAt: null, invoiceAttemptsSeen: 0, nextBillingAt: current.currentPeriodStart };
    const find = jest.spyOn(billing.store, 'find').mockResolvedValueOnce(stale);
    try {
      await billing.collect(systemContext(account.accountId, 'test', new Date('2027-03-01T00:00:00Z'), 'test'), s.id);
    } finally {
      find.mockRestore();
    }
    // Without the check the same attempt counted twice: the day-3 retry next, the day-1 one skipped.
    expect(await sub(s.id)).toMatchObject({ status: 'past_due', nextPaymentAttemptAt: '2027-03-02T00:00:00.000Z' });
    expect(await paymentsOf(s.id)).toHaveLength(1);
    await advance(tc.id, '2027-03-02T00:00:00Z');
    expect((await paymentsOf(s.id)).map((p) => p.status)).toEqual(['failed', 'failed']);
    expect((await sub(s.id)).nextPaymentAttemptAt).toBe('2027-03-04T00:00:00.000Z');
  });
});

describe(`credit on a merchant's own invoices (${DIALECT})`, () => {
  const manual = (customerId: string, unitAmount: number) =>
    ok(post('/v1/invoices', { customerId, currency: 'usd', lineItems: [{ description: 'Work', unitAmount }] }), 201);
  const balance = async (customerId: string) => (await ok(get(`/v1/customers/${customerId}`))).creditBalance;

  it('should take the credit as an invoice is sent or charged as a draft, and charge only the rest', async () => {
    const tc = await clock('2027-03-01T00:00:00Z');
    const c = await customer(tc.id);
    await ok(post(`/v1/customers/${c.id}/balance-transactions`, { currency: 'usd', amount: 1500, description: 'Goodwill' }), 201);
    // Sent: 1000 of the 1500 taken, nothing left to pay.
    const first = await ok(post(`/v1/invoices/${(await manual(c.id, 1000)).id}/send`));
    expect(first).toMatchObject({ status: 'paid', creditApplied: 1000, amountDue: 0, amountPaid: 0 });
    expect(await balance(c.id)).toEqual({ USD: 500 });
    // Paid as a draft with the saved card: the last 500 taken, 1500 charged.
    const second = await ok(post(`/v1/invoices/${(await manual(c.id, 2000)).id}/pay`, {}));
    expect(second).toMatchObject({ status: 'paid', creditApplied: 500, amountPaid: 1500, amountDue: 0 });
    expect((await ok(get(`/v1/payments/${second.latestPaymentId}`))).amount).toBe(1500);
    expect(await balance(c.id)).toEqual({});
  });

  it('should give the credit back when an invoice that took it is voided', async () => {
    const tc = await clock('2027-03-01T00:00:00Z');
    const c = await customer(tc.id);
    await ok(post(`/v1/customers/${c.id}/balance-transactions`, { currency: 'usd', amount: 700, description: 'Goodwill' }), 201);
    const sent = await ok(post(`/v1/invoices/${(await manual(c.id, 1000)).id}/send`));
    expect(sent).toMatchObject({ status: 'sent', creditApplied: 700, amountDue: 300 });
    expect(await balance(c.id)).toEqual({});
    await ok(post(`/v1/invoices/${sent.id}/void`));
    expect(await balance(c.id)).toEqual({ USD: 700 });
    const ledger = (await get(`/v1/customers/${c.id}/balance-transactions`)).body.data as Json[];
    expect(ledger.map((t) => [t.type, t.amount])).toEqual([['invoice_credit', 700], ['applied_to_invoice', -700], ['adjustment', 700]]);
  });
});
