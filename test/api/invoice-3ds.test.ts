import { FixedClock } from '../../src/core/clock';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';

/**
 * Invoices and subscriptions through 3-D Secure (issue 36 point 4, API.md §9 and §12): a charge
 * that needs the customer's authentication leaves the invoice `sent` with `paymentStatus:
 * requires_action`, the subscription `past_due`, an e-mail pointing at the hosted invoice page, and
 * no second charge; the challenge's outcome settles the invoice (paid, or failed with the usual
 * dunning). Money check: what was captured is what the invoices were paid, each period once.
 */
const clock = new FixedClock(new Date('2026-06-01T10:00:00Z'));
let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp({ clock });
  key = app.account.testKey;
});
afterAll(() => app.stop());

type Json = Record<string, any>;
const post = (p: string, body?: Json) => app.request('POST', p, { key, body });
const get = (p: string) => app.request('GET', p, { key });
const ok = async (res: Promise<{ status: number; body: Json }>, status = 200) => {
  const r = await res;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body.data;
};
const card = (number: string) => ({ number, expMonth: 12, expYear: 2040, cvc: '123' });
/** Challenges at every charge, a saved card's too. */
const ALWAYS = '4000000000003220';
/** Challenges only when typed (a saved one charges without). */
const TYPED = '4000002500003155';

const customerWith = async (number: string | null) => {
  const c = await ok(post('/v1/customers', { email: `tds-${Math.random().toString(36).slice(2)}@example.com`, name: 'Ada' }), 201);
  if (number) await ok(post(`/v1/customers/${c.id}/payment-methods`, { card: card(number), setDefault: true }), 201);
  return c;
};
const monthly = async (unitAmount: number) => {
  const product = await ok(post('/v1/products', { name: `Plan ${unitAmount}` }), 201);
  return ok(post('/v1/prices', { productId: product.id, unitAmount, currency: 'eur', recurring: { interval: 'month' } }), 201);
};
const invoice = (id: string) => ok(get(`/v1/invoices/${id}`));
const payment = (id: string) => ok(get(`/v1/payments/${id}`));
const subscription = (id: string) => ok(get(`/v1/subscriptions/${id}`));
const paymentsOf = async (subId: string) => (await get(`/v1/subscriptions/${subId}/payments?pageSize=100&sortDirection=asc`)).body.data as Json[];
const mailsAbout = (invoiceId: string) =>
  app.server.services.db.select<{ subject: string; text_body: string }>('SELECT subject, text_body FROM mail_outbox WHERE about_id = $1 ORDER BY created_at', [invoiceId]);
const eventsOf = async (objectId: string) => ((await get('/v1/events?pageSize=100')).body.data as Json[])
  .filter((e) => e.data.object.id === objectId).map((e) => e.type).reverse();

/** Answers the simulator's challenge as the customer would; returns the path it sends them back to. */
const answer = async (url: string, choice: 'complete' | 'fail') => {
  const path = new URL(url).pathname;
  const answered = await app.request('POST', `${path}/${choice}`);
  expect(answered.status).toBe(200);
  const back = /http-equiv="refresh" content="0;url=([^"]+)"/.exec(answered.text)?.[1] as string;
  return new URL(back.replace(/&amp;/g, '&')).pathname;
};
/** The customer comes back from the challenge: the return page, then where it sends them. */
const comeBack = async (path: string) => {
  const returned = await app.request('GET', path);
  expect(returned.status).toBe(303);
  return returned.headers.location as string;
};

describe(`invoices and subscriptions through 3-D Secure (${DIALECT})`, () => {
  it('should leave a subscription\'s first invoice requires_action (sent, hosted page, e-mail), past_due, and settle it paid once the challenge is completed', async () => {
    const c = await customerWith(ALWAYS);
    const plan = await monthly(1900);
    const sub = await ok(post('/v1/subscriptions', { customerId: c.id, priceId: plan.id }), 201);
    expect(sub.status).toBe('past_due');
    const inv = await invoice(sub.latestInvoiceId);
    expect(inv).toMatchObject({ status: 'sent', paymentStatus: 'requires_action', amountDue: 1900, amountPaid: 0 });
    expect(inv.hostedUrl).toMatch(new RegExp(`/invoice/${inv.id}$`));
    const pay = await payment(inv.latestPaymentId);
    expect(pay).toMatchObject({ status: 'requires_action', invoiceId: inv.id, amountCaptured: 0 });
    // Written at the same instant: compared as sets.
    expect((await eventsOf(sub.id)).sort()).toEqual(['subscription.created', 'subscription.past_due']);
    expect((await eventsOf(inv.id)).sort()).toEqual(['invoice.created', 'invoice.payment_action_required', 'invoice.sent']);

    // The customer is told by e-mail to authenticate on the hosted page.
    const mails = await mailsAbout(inv.id);
    expect(mails).toHaveLength(1);
    expect(mails[0].subject).toContain(inv.number);
    expect(mails[0].text_body).toContain(inv.hostedUrl);
    expect(mails[0].text_body).toMatch(/authenticat/i);

    // The hosted page offers the challenge; no card form while it is open.
    const view = await app.request('GET', `/v1/public/invoices/${inv.id}`);
    expect(view.body.data).toMatchObject({ paymentStatus: 'requires_action', nextActionUrl: pay.nextAction.url });
    const page = await app.request('GET', `/invoice/${inv.id}`);
    expect(page.text).toContain(`href="${pay.nextAction.url}"`);
    expect(page.text).not.toContain('id="card-form"');

    // Complete → back to the hosted invoice page, which shows it paid (a second later: events are listed by time).
    clock.advance(1000);
    const back = await comeBack(await answer(pay.nextAction.url, 'complete'));
    expect(back).toBe(`${inv.hostedUrl}?payment_id=${pay.id}`);
    const paidPage = await app.request('GET', new URL(back).pathname);
    expect(paidPage.text).toContain('This invoice is paid');
    expect(await invoice(inv.id)).toMatchObject({ status: 'paid', paymentStatus: 'paid', amountPaid: 1900, amountDue: 0, latestPaymentId: pay.id });
    expect(await subscription(sub.id)).toMatchObject({ status: 'active', nextPaymentAttemptAt: null });
    const invoiceEvents = await eventsOf(inv.id);
    expect([...invoiceEvents.slice(0, 3).sort(), ...invoiceEvents.slice(3)]).toEqual(['invoice.created', 'invoice.payment_action_required', 'invoice.sent', 'invoice.paid']);
    expect((await eventsOf(sub.id)).slice(-1)).toEqual(['subscription.updated']);
    // Money: one payment, captured once for the invoice's amount.
    expect((await paymentsOf(sub.id)).map((p) => [p.status, p.amountCaptured])).toEqual([['succeeded', 1900]]);
  });

  it('should not charge a renewal again while its challenge is open, and fail it into dunning when the challenge expires; the retry is authenticated and paid', async () => {
    const c = await customerWith(ALWAYS);
    const plan = await monthly(2500);
    const sub = await ok(post('/v1/subscriptions', { customerId: c.id, priceId: plan.id }), 201);
    // The first invoice's challenge completed: active, on a saved card that wants one every time.
    const firstInvoice = await invoice(sub.latestInvoiceId);
    await comeBack(await answer((await payment(firstInvoice.latestPaymentId)).nextAction.url, 'complete'));
    await app.request('GET', `/invoice/${firstInvoice.id}`);
    expect((await subscription(sub.id)).status).toBe('active');

    // The period ends: the renewal's charge asks for authentication.
    clock.set(new Date(sub.currentPeriodEnd));
    clock.advance(1000);
    await app.server.services.billing.billDue(clock.now());
    const renewed = await subscription(sub.id);
    expect(renewed.status).toBe('past_due');
    const inv = await invoice(renewed.latestInvoiceId);
    expect(inv).toMatchObject({ status: 'sent', paymentStatus: 'requires_action', amountDue: 2500 });
    const first = await payment(inv.latestPaymentId);
    expect(first.status).toBe('requires_action');
    expect((await mailsAbout(inv.id)).length).toBe(1);

    // The run, the step and a merchant's pay do not charge it again while the challenge is open.
    clock.advance(5 * 60_000);
    await app.server.services.billing.billDue(clock.now());
    await app.server.services.billing.step(sub.id, clock.now());
    const again = await post(`/v1/invoices/${inv.id}/pay`, {});
    expect([again.status, again.body.error?.code]).toEqual([409, 'invoice_payment_in_progress']);
    for (const action of ['void', 'mark-paid']) {
      const refused = await post(`/v1/invoices/${inv.id}/${action}`);
      expect([refused.status, refused.body.error?.code]).toEqual([409, 'invoice_payment_in_progress']);
    }
    const publicPay = await app.request('POST', `/v1/public/invoices/${inv.id}/pay`, { body: { card: card('4242424242424242') } });
    expect([publicPay.status, publicPay.body.error?.code]).toEqual([409, 'invoice_payment_in_progress']);
    expect((await paymentsOf(sub.id)).filter((p) => p.invoiceId === inv.id)).toHaveLength(1);
    expect(await invoice(inv.id)).toMatchObject({ paymentStatus: 'requires_action', latestPaymentId: first.id });

    // Unanswered for 30 minutes: the payment fails (authentication_expired), the invoice follows, dunning counts it.
    clock.advance(31 * 60_000);
    await app.server.services.paymentActions.expireDue(clock.now());
    expect(await payment(first.id)).toMatchObject({ status: 'failed', failureCode: 'authentication_expired' });
    await app.server.services.invoices.reconcileCharges(clock.now());
    expect(await invoice(inv.id)).toMatchObject({ status: 'sent', paymentStatus: 'failed', amountDue: 2500 });
    const dunned = await subscription(sub.id);
    expect(dunned.status).toBe('past_due');
    expect(Date.parse(dunned.nextPaymentAttemptAt)).toBeGreaterThan(clock.now().getTime() + 12 * 3600_000);
    expect((await eventsOf(inv.id)).slice(-1)).toEqual(['invoice.payment_failed']);

    // The dunning retry charges again (a new challenge, a new e-mail); completed, it pays the invoice.
    clock.set(new Date(Date.parse(dunned.nextPaymentAttemptAt) + 1000));
    await app.server.services.billing.billDue(clock.now());
    const retried = await invoice(inv.id);
    expect(retried.paymentStatus).toBe('requires_action');
    expect(retried.latestPaymentId).not.toBe(first.id);
    expect((await mailsAbout(inv.id)).length).toBe(2);
    const second = await payment(retried.latestPaymentId);
    await comeBack(await answer(second.nextAction.url, 'complete'));
    await app.request('GET', `/invoice/${inv.id}`);
    expect(await invoice(inv.id)).toMatchObject({ status: 'paid', paymentStatus: 'paid', amountPaid: 2500, amountDue: 0 });
    expect(await subscription(sub.id)).toMatchObject({ status: 'active', nextPaymentAttemptAt: null });

    // Money: each invoice of the subscription was captured exactly its amount, once.
    const invoices = (await get(`/v1/invoices?subscriptionId=${sub.id}&pageSize=100`)).body.data as Json[];
    const captured = new Map<string, number>();
    for (const p of await paymentsOf(sub.id)) captured.set(p.invoiceId, (captured.get(p.invoiceId) ?? 0) + p.amountCaptured);
    for (const i of invoices) expect([i.id, captured.get(i.id)]).toEqual([i.id, i.amountPaid]);
    expect(invoices.reduce((s, i) => s + i.amountPaid, 0)).toBe(5000);
  });

  it('should settle a failed challenge of POST /pay as a failed charge (invoice still payable) and show the failure on the hosted page', async () => {
    const c = await customerWith(ALWAYS);
    const draft = await ok(post('/v1/invoices', { customerId: c.id, currency: 'eur', lineItems: [{ description: 'Work', quantity: 1, unitAmount: 4200 }] }), 201);
    const charged = await ok(post(`/v1/invoices/${draft.id}/pay`, {}));
    expect(charged).toMatchObject({ status: 'sent', paymentStatus: 'requires_action' });
    const pay = await payment(charged.latestPaymentId);
    const back = await comeBack(await answer(pay.nextAction.url, 'fail'));
    expect(back).toBe(`${charged.hostedUrl}?payment_id=${pay.id}`);
    const page = await app.request('GET', `/invoice/${draft.id}`);
    expect(page.text).toContain('id="invoice-payment-failed"');
    expect(page.text).toContain('id="card-form"');
    expect(await invoice(draft.id)).toMatchObject({ status: 'sent', paymentStatus: 'failed', amountPaid: 0, amountDue: 4200 });
    expect(await payment(pay.id)).toMatchObject({ status: 'failed', failureCode: 'authentication_failed', amountCaptured: 0 });

    // Still payable: a card typed on the hosted page runs its own challenge and comes back to the page.
    const typed = await app.request('POST', `/v1/public/invoices/${draft.id}/pay`, { body: { card: card(TYPED) } });
    expect(typed.status).toBe(200);
    expect(typed.body.data).toMatchObject({ status: 'requires_action' });
    expect(await invoice(draft.id)).toMatchObject({ paymentStatus: 'requires_action' });
    // The customer is on the page: no e-mail for this one.
    expect((await mailsAbout(draft.id)).filter((m) => /authenticat/i.test(m.text_body))).toHaveLength(1);
    const home = await comeBack(await answer(typed.body.data.redirectUrl, 'complete'));
    expect(home).toBe(`${charged.hostedUrl}?payment_id=${typed.body.data.paymentId}`);
    expect((await app.request('GET', new URL(home).pathname)).text).toContain('This invoice is paid');
    expect(await invoice(draft.id)).toMatchObject({ status: 'paid', amountPaid: 4200, amountDue: 0, latestPaymentId: typed.body.data.paymentId });
    const payments = ((await get(`/v1/payments?customerId=${c.id}&pageSize=100`)).body.data as Json[]);
    expect(payments.reduce((s, p) => s + p.amountCaptured, 0)).toBe(4200);
  });

  it('should settle an invoice whose challenge was answered without coming back, through the reconcile job', async () => {
    const c = await customerWith(ALWAYS);
    const draft = await ok(post('/v1/invoices', { customerId: c.id, currency: 'eur', lineItems: [{ description: 'Work', quantity: 2, unitAmount: 1000 }] }), 201);
    const charged = await ok(post(`/v1/invoices/${draft.id}/pay`, {}));
    const pay = await payment(charged.latestPaymentId);
    await answer(pay.nextAction.url, 'complete');
    // The customer closed the window: the expiry job reads the answer, the reconcile job the payment.
    clock.advance(31 * 60_000);
    await app.server.services.paymentActions.expireDue(clock.now());
    expect((await payment(pay.id)).status).toBe('succeeded');
    expect((await app.server.services.invoices.reconcileCharges(clock.now())).settled).toBeGreaterThanOrEqual(1);
    const db = app.server.services.db;
    const [row] = await db.select<{ payment_status: string }>('SELECT payment_status FROM invoices WHERE id = $1', [draft.id]);
    expect(row.payment_status).toBe('paid');
    expect(await invoice(draft.id)).toMatchObject({ status: 'paid', amountPaid: 2000 });
  });
});
