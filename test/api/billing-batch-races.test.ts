import { randomBytes } from 'node:crypto';
import { systemClock } from '../../src/core/clock';
import type { RequestContext } from '../../src/core/context';
import type { InvoiceStore } from '../../src/modules/invoices/invoice.store';
import type { SubscriptionInvoiceSpec } from '../../src/modules/invoices/invoice.service';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { waitFor } from '../helpers/wait';
import { seedDueSubscriptions, seedPlan } from '../../bench/billing-run/seed';

/**
 * The billing run's batch against what runs beside it: another batch holding subscriptions of the
 * same accounts (two lanes, two instances), and a merchant changing an invoice the batch created
 * before the batch charges it.
 */
function contextOf(accountId: string): RequestContext {
  return { accountId, mode: 'test', permissions: ['*'], requestId: `req_${randomBytes(6).toString('hex')}`, clock: systemClock };
}

describe(`the billing run's batch beside other work (${DIALECT})`, () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.stop());

  it('should number two concurrent batches holding the same two accounts in opposite claim order without a deadlock', async () => {
    const services = app.server.services;
    const accounts = [
      (await services.accounts.createAccount({ name: 'Batch A' })).accountId,
      (await services.accounts.createAccount({ name: 'Batch B' })).accountId,
    ];
    const now = new Date();
    const subs = new Map<string, { ctx: RequestContext; spec: SubscriptionInvoiceSpec }[]>();
    for (const accountId of accounts) {
      const ctx = contextOf(accountId);
      const plan = await seedPlan(services, ctx, 1);
      const ids = await seedDueSubscriptions(services, ctx, plan, 2, now);
      subs.set(accountId, ids.map((id) => ({
        ctx,
        spec: {
          customerId: plan.customers[0].id, subscriptionId: id, currency: 'usd', billingPeriodStart: now, billingReason: 'subscription_cycle', send: false,
          lines: [{ description: 'Plan', quantity: 1, unitAmount: 1500, amount: 1500, periodStart: null, periodEnd: null, proration: false }],
          account: { invoicePrefix: 'INV', name: 'Merchant' },
        },
      })));
    }
    const [a, b] = accounts.map((id) => subs.get(id)!);
    // Each batch holds its first account's number sequence until the other holds its own, or
    // until the other can go no further while this one is open: the order the locks are taken in.
    const store = (services.invoices as unknown as { store: InvoiceStore }).store;
    // PostgreSQL: a statement of this database waits for a lock. SQLite: always, as the other
    // batch's transaction starts only once this one has ended (one writer at a time).
    const otherWaits = async () => DIALECT === 'sqlite' || (await services.db.select(
      'SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE NOT l.granted AND a.datname = current_database()',
    )).length > 0;
    const nextNumbers = store.nextNumbers.bind(store);
    let taken = 0;
    const spy = jest.spyOn(store, 'nextNumbers').mockImplementation(async (...args) => {
      const first = await nextNumbers(...args);
      taken += 1;
      await waitFor(async () => taken >= 2 || (await otherWaits()), { timeoutMs: 10_000, intervalMs: 20, what: 'the other batch to take its lock or wait for this one' });
      return first;
    });
    try {
      const results = await Promise.allSettled([
        services.db.transaction((t) => services.invoices.createForSubscriptions(t, [a[0], b[0]])),
        services.db.transaction((t) => services.invoices.createForSubscriptions(t, [b[1], a[1]])),
      ]);
      expect(results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'created'))).toEqual(['created', 'created']);
    } finally {
      spy.mockRestore();
    }
    for (const accountId of accounts) {
      const rows = await services.db.select<{ number_seq: number | string }>('SELECT number_seq FROM invoices WHERE account_id = $1 ORDER BY number_seq', [accountId]);
      expect(rows.map((r) => Number(r.number_seq))).toEqual([1, 2]);
      // Not billed by the next test's run.
      await services.db.execute('UPDATE subscriptions SET next_billing_at = NULL WHERE account_id = $1', [accountId]);
    }
  }, 60_000);

  it('should charge what the invoice is due when the batch charges it, not what it was due when created', async () => {
    const services = app.server.services;
    const accountId = (await services.accounts.createAccount({ name: 'Changed draft' })).accountId;
    const ctx = contextOf(accountId);
    const plan = await seedPlan(services, ctx, 1, 1500);
    const now = new Date();
    const [id] = await seedDueSubscriptions(services, ctx, plan, 1, now);
    // The merchant changes the draft the renew created (its invoice.created webhook came) before the batch charges it.
    const charge = services.invoices.chargeManyForSubscriptions.bind(services.invoices);
    const spy = jest.spyOn(services.invoices, 'chargeManyForSubscriptions').mockImplementation(async (items, width) => {
      for (const item of items) {
        if (item.invoice.subscriptionId === id) await services.invoices.update(ctx, item.invoice.id, { lineItems: [{ description: 'Plan, discounted', quantity: 1, unitAmount: 900 }] });
      }
      return charge(items, width);
    });
    try {
      expect((await services.billing.billDue(now)).failed).toBe(0);
      expect(spy).toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
    const [invoice] = (await services.invoices.list(ctx, { subscriptionId: id })).data;
    const payments = await services.db.select<{ amount: number | string; status: string }>('SELECT amount, status FROM payments WHERE invoice_id = $1', [invoice.id]);
    expect({ status: invoice.status, total: invoice.total, amountPaid: invoice.amountPaid, amountDue: invoice.amountDue })
      .toEqual({ status: 'paid', total: 900, amountPaid: 900, amountDue: 0 });
    expect(payments.map((p) => ({ amount: Number(p.amount), status: p.status }))).toEqual([{ amount: 900, status: 'succeeded' }]);
  }, 60_000);
});
