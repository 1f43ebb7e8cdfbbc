import { randomBytes } from 'node:crypto';
import { systemClock } from '../../src/core/clock';
import type { RequestContext } from '../../src/core/context';
import { readTime } from '../../src/db/database';
import { BillingService } from '../../src/modules/subscriptions/billing.service';
import type { Services } from '../../src/services';
import { JOBS, runJob } from '../../workers/jobs';
import { waitFor } from '../helpers/wait';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { DAY_MS, seedDueSubscriptions, seedPlan, type SeededPlan } from '../../bench/billing-run/seed';

/**
 * The billing run on real time (subscriptions on no test clock): the node-cron job
 * `bill-subscriptions` on BILLING_CRON, two runs sharing one database, and the unique key that
 * keeps a period from being invoiced twice. Subscriptions are made due by inserting them with a
 * daily period that ended an hour ago (bench/billing-run/seed.ts).
 */
const HOUR = 3_600_000;

function contextOf(app: TestApp): RequestContext {
  return { accountId: app.account.accountId, mode: 'test', permissions: ['*'], requestId: `req_${randomBytes(6).toString('hex')}`, clock: systemClock };
}

interface InvoiceRow { id: string; subscription_id: string; billing_period_start: unknown; billing_reason: string; status: string; amount_due: number | string }

async function cycleInvoices(services: Services, ids: readonly string[]): Promise<Map<string, InvoiceRow[]>> {
  const rows = await services.db.select<InvoiceRow>(
    `SELECT id, subscription_id, billing_period_start, billing_reason, status, amount_due FROM invoices WHERE subscription_id IN (${services.db.jsonTextList('$1')})`,
    [JSON.stringify(ids)],
  );
  const by = new Map<string, InvoiceRow[]>(ids.map((id) => [id, []]));
  for (const r of rows) by.get(r.subscription_id)!.push(r);
  return by;
}

async function succeededPaymentsPerInvoice(services: Services, invoiceIds: readonly string[]): Promise<Map<string, number>> {
  const rows = await services.db.select<{ invoice_id: string; n: number | string }>(
    `SELECT invoice_id, COUNT(*) AS n FROM payments WHERE status = 'succeeded' AND invoice_id IN (${services.db.jsonTextList('$1')}) GROUP BY invoice_id`,
    [JSON.stringify(invoiceIds)],
  );
  return new Map(rows.map((r) => [r.invoice_id, Number(r.n)]));
}

async function subscriptionRows(services: Services, ids: readonly string[]) {
  return services.db.select<{ id: string; status: string; current_period_start: unknown; current_period_end: unknown; next_billing_at: unknown; collect_invoice_id: string | null; latest_invoice_id: string | null; billing_lock_token: string | null }>(
    `SELECT id, status, current_period_start, current_period_end, next_billing_at, collect_invoice_id, latest_invoice_id, billing_lock_token
       FROM subscriptions WHERE id IN (${services.db.jsonTextList('$1')})`,
    [JSON.stringify(ids)],
  );
}

/** Every subscription billed exactly once for the period after `seededEnd`, paid, and moved on a day. */
async function expectBilledOnce(services: Services, ids: readonly string[], seededEnd: Date): Promise<void> {
  const invoices = await cycleInvoices(services, ids);
  const all: InvoiceRow[] = [];
  for (const id of ids) {
    const list = invoices.get(id)!;
    expect({ id, periods: list.map((i) => readTime(i.billing_period_start)?.toISOString()) }).toEqual({ id, periods: [seededEnd.toISOString()] });
    expect(list[0]).toMatchObject({ billing_reason: 'subscription_cycle', status: 'paid' });
    all.push(list[0]);
  }
  const succeeded = await succeededPaymentsPerInvoice(services, all.map((i) => i.id));
  expect(all.filter((i) => succeeded.get(i.id) !== 1).map((i) => [i.id, succeeded.get(i.id)])).toEqual([]);
  const nextEnd = new Date(seededEnd.getTime() + DAY_MS);
  for (const s of await subscriptionRows(services, ids)) {
    expect({
      id: s.id, status: s.status, start: readTime(s.current_period_start)?.toISOString(), end: readTime(s.current_period_end)?.toISOString(),
      next: readTime(s.next_billing_at)?.toISOString(), collect: s.collect_invoice_id, lock: s.billing_lock_token,
      latest: s.latest_invoice_id === invoices.get(s.id)![0].id,
    }).toEqual({ id: s.id, status: 'active', start: seededEnd.toISOString(), end: nextEnd.toISOString(), next: nextEnd.toISOString(), collect: null, lock: null, latest: true });
  }
}

describe(`the bill-subscriptions job on BILLING_CRON (${DIALECT})`, () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ runWorkers: true, env: { BILLING_CRON: '* * * * * *' } });
  });
  afterAll(() => app.stop());

  it('should bill every due subscription on real time once per period on its own, and leave test-clock ones to their clock', async () => {
    const services = app.server.services;
    const ctx = contextOf(app);
    const plan = await seedPlan(services, ctx, 2);
    const now = new Date();
    const ids = await seedDueSubscriptions(services, ctx, plan, 25, now);
    // One due subscription on a test clock: the run on real time never takes it.
    const clock = await services.testClocks.create(ctx, { frozenTime: new Date(now.getTime() - 2 * DAY_MS).toISOString() });
    const [onClock] = await seedDueSubscriptions(services, ctx, plan, 1, now);
    await services.db.execute('UPDATE subscriptions SET test_clock_id = $1 WHERE id = $2', [clock.id, onClock]);
    const seededEnd = new Date(now.getTime() - HOUR);
    // Each run of the job as its ticks start it: what it found to do.
    const runs: Array<Promise<{ billed: number; failed: number }>> = [];
    const billDue = services.billing.billDue.bind(services.billing);
    const spy = jest.spyOn(services.billing, 'billDue').mockImplementation((...args) => {
      const run = billDue(...args);
      runs.push(run);
      return run;
    });

    try {
      await waitFor(async () => {
        const rows = await subscriptionRows(services, ids);
        return rows.every((r) => readTime(r.current_period_start)!.getTime() === seededEnd.getTime() && r.collect_invoice_id === null && r.billing_lock_token === null);
      }, { what: 'every subscription to be billed', timeoutMs: 90_000, intervalMs: 100 });
      // A few more ticks find nothing more to do: the next runs started from now bill nothing.
      const before = runs.length;
      await waitFor(() => runs.length >= before + 2, { what: 'two more runs of the job', intervalMs: 100 });
      expect(await Promise.all(runs.slice(before, before + 2))).toEqual([{ billed: 0, failed: 0 }, { billed: 0, failed: 0 }]);
    } finally {
      spy.mockRestore();
    }
    await expectBilledOnce(services, ids, seededEnd);
    expect((await cycleInvoices(services, [onClock])).get(onClock)).toEqual([]);
    expect(app.logs.some((l) => l.includes('"job":"bill-subscriptions"') && /"billed":\d+/.test(l))).toBe(true);
    // Each period advance is told as an event, once.
    const [{ n }] = await services.db.select<{ n: number | string }>(
      "SELECT COUNT(*) AS n FROM events WHERE type = 'subscription.updated' AND account_id = $1", [ctx.accountId],
    );
    expect(Number(n)).toBeGreaterThanOrEqual(ids.length);
  }, 120_000);
});

describe(`billing the same period twice (${DIALECT})`, () => {
  let app: TestApp;
  let plan: SeededPlan;
  beforeAll(async () => {
    app = await startTestApp();
    plan = await seedPlan(app.server.services, contextOf(app), 2);
  });
  afterAll(() => app.stop());

  it('should invoice a period once when two steps of one subscription run at the same time, and a later step bills nothing more', async () => {
    const services = app.server.services;
    const now = new Date();
    const [id] = await seedDueSubscriptions(services, contextOf(app), plan, 1, now);
    const outcomes = await Promise.allSettled([services.billing.step(id, now), services.billing.step(id, now), services.billing.step(id, now)]);
    // A step that finds the other's charge under way is told so (the run would look again later).
    for (const o of outcomes) if (o.status === 'rejected') expect((o.reason as { code?: string }).code).toBe('invoice_payment_in_progress');
    await services.billing.step(id, now);
    await services.billing.step(id, new Date(now.getTime() + 60_000));
    await expectBilledOnce(services, [id], new Date(now.getTime() - HOUR));
  });

  it('should charge an invoice whose earlier attempt was released unmade (a charging request that died before its payment)', async () => {
    const services = app.server.services;
    const now = new Date();
    const [id] = await seedDueSubscriptions(services, contextOf(app), plan, 1, now);
    // The gateway is away for the first try: the period is invoiced, its charge not made.
    const charge = jest.spyOn(services.invoices, 'chargeManyForSubscriptions').mockRejectedValueOnce(new Error('gateway away'));
    await expect(services.billing.step(id, now)).rejects.toThrow('gateway away');
    charge.mockRestore();
    const [sub] = await subscriptionRows(services, [id]);
    expect(sub.collect_invoice_id).not.toBeNull();
    // As the invoice is left when a charge's request died before its payment was written and the
    // grace ran out: the attempt counted, nothing processing, nothing to take the outcome of.
    await services.db.execute("UPDATE invoices SET payment_attempts = 1, payment_status = 'unpaid' WHERE id = $1", [sub.collect_invoice_id]);
    await services.billing.step(id, now);
    await expectBilledOnce(services, [id], new Date(now.getTime() - HOUR));
  });

  it('should take an invoice paid by someone else between its read and its charge as paid, not as a failed attempt', async () => {
    const services = app.server.services;
    const now = new Date();
    const ctx = contextOf(app);
    const [id] = await seedDueSubscriptions(services, ctx, plan, 1, now);
    // Renewed, its charge not made (the gateway away): the invoice waits for its charge.
    const charge = jest.spyOn(services.invoices, 'chargeManyForSubscriptions').mockRejectedValueOnce(new Error('gateway away'));
    await expect(services.billing.step(id, now)).rejects.toThrow('gateway away');
    charge.mockRestore();
    const sub = (await services.billing.store.find(id))!;
    const stale = await services.invoices.record(ctx, sub.collectInvoiceId!);
    // The merchant marks it paid after the collection read it: the charge's claim takes nothing.
    await services.invoices.markPaid(ctx, stale.id);
    const result = await services.billing.chargeAndTake([{ ctx, sub, invoice: stale }], services.billing.newRun(), 'dunning');
    expect(result.get(id)).toBe('taken');
    const after = (await services.billing.store.find(id))!;
    expect({ status: after.status, collect: after.collectInvoiceId, failures: after.dunningFailures }).toEqual({ status: 'active', collect: null, failures: 0 });
    expect((await succeededPaymentsPerInvoice(services, [stale.id])).get(stale.id)).toBeUndefined();
  });

  it('should refuse a second invoice for a period by the unique key even when the period advance was undone', async () => {
    const services = app.server.services;
    const now = new Date();
    const [id] = await seedDueSubscriptions(services, contextOf(app), plan, 1, now);
    await services.billing.step(id, now);
    const [before] = await subscriptionRows(services, [id]);
    // As if the period advance had been lost: the row says the billed period is still to come.
    const end = new Date(now.getTime() - HOUR);
    await services.db.execute('UPDATE subscriptions SET current_period_start = $1, current_period_end = $2, next_billing_at = $2 WHERE id = $3', [new Date(end.getTime() - DAY_MS), end, id]);
    await expect(services.billing.step(id, now)).rejects.toThrow();
    const invoices = (await cycleInvoices(services, [id])).get(id)!;
    expect(invoices.map((i) => [i.id, readTime(i.billing_period_start)?.toISOString()])).toEqual([[before.latest_invoice_id, end.toISOString()]]);
    // The run takes such a failure as a step to try again later, not a crash of the run.
    const run = await services.billing.billDue(now);
    expect(run).toEqual({ billed: 0, failed: 1 });
    expect((await cycleInvoices(services, [id])).get(id)).toHaveLength(1);
  });
});

// PostgreSQL only: SQLite has one writer and no SKIP LOCKED (one instance per database file).
if (DIALECT === 'postgres') {
  describe('two billing workers on one PostgreSQL database', () => {
    let app: TestApp;
    beforeAll(async () => {
      app = await startTestApp();
    });
    afterAll(() => app.stop());

    it('should bill each of 200 due subscriptions once, the work shared by both', async () => {
      const s = app.server.services;
      const ctx = contextOf(app);
      const plan = await seedPlan(s, ctx, 4);
      const now = new Date();
      const ids = await seedDueSubscriptions(s, ctx, plan, 200, now);
      // The other instance's run: its own BillingService (own claim token) on the same database.
      const other = new BillingService(s.db, s.events, s.invoices, s.customers, s.accounts, s.logger, { leaseMs: 60_000 });
      const [a, b] = await Promise.all([s.billing.billDue(now), other.billDue(now)]);
      expect(a.failed + b.failed).toBe(0);
      expect(a.billed + b.billed).toBe(200);
      expect(a.billed).toBeGreaterThan(0);
      expect(b.billed).toBeGreaterThan(0);
      await expectBilledOnce(s, ids, new Date(now.getTime() - HOUR));
      // Nothing is left due.
      expect(await Promise.all([s.billing.billDue(now), other.billDue(now)])).toEqual([{ billed: 0, failed: 0 }, { billed: 0, failed: 0 }]);
    }, 240_000);
  });
}

describe(`the bill-subscriptions job's runs (${DIALECT})`, () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.stop());

  it('should not start a run while the last one still goes (the run at start and the ticks never overlap)', async () => {
    const services = app.server.services;
    const job = JOBS.find((j) => j.name === 'bill-subscriptions')!;
    let finish!: () => void;
    const bill = jest.spyOn(services.billing, 'billDue').mockImplementation(() => new Promise((resolve) => {
      finish = () => resolve({ billed: 0, failed: 0 });
    }));
    const first = runJob(services, job);
    await runJob(services, job); // a tick while the first run goes: skipped
    expect(bill).toHaveBeenCalledTimes(1);
    finish();
    await first;
    const second = runJob(services, job);
    finish();
    await second;
    expect(bill).toHaveBeenCalledTimes(2);
    bill.mockRestore();
  });
});
