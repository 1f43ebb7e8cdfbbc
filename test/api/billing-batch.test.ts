import { spawn } from 'node:child_process';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { FixedClock, systemClock } from '../../src/core/clock';
import type { RequestContext } from '../../src/core/context';
import { newId } from '../../src/core/ids';
import { readTime } from '../../src/db/database';
import type { Services } from '../../src/services';
import { SubscriptionPendingLineModel } from '../../src/modules/subscriptions/subscription.model';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { waitFor } from '../helpers/wait';
import { DAY_MS, seedDueSubscriptions, seedPlan } from '../../bench/billing-run/seed';

/**
 * The billing run's batch (BillingService.billBatch): the common renewals of a claimed batch are
 * billed set-based, everything else by the single path (`step`), and the end state is the one the
 * single path alone would reach: the same subscriptions, invoices and events, invoice numbers
 * gapless and in claim order, a webhook delivery for every event; a run killed between the
 * batch's renew and its settle is finished by the next one without billing or charging twice.
 */
const HOUR = 3_600_000;
const stillClock = new FixedClock(new Date());

function contextOf(accountId: string): RequestContext {
  return { accountId, mode: 'test', permissions: ['*'], requestId: `req_${randomBytes(6).toString('hex')}`, clock: systemClock };
}

const KINDS = ['plain', 'plain', 'quantity', 'pending', 'zero', 'declined', 'no_card', 'paused', 'past_due', 'cancel_at_end', 'send_invoice'] as const;

/**
 * One account's subscriptions, one of each kind, due at `now` in KINDS order (the claim's order),
 * with a webhook endpoint taking every event.
 */
async function seedMix(services: Services, ctx: RequestContext, now: Date): Promise<string[]> {
  const db = services.db;
  await services.webhooks.endpoints.create(ctx, { url: 'https://127.0.0.1:9/hooks', events: ['*'] });
  const plan = await seedPlan(services, ctx, 2);
  const declining = await services.customers.create(ctx, { email: `declines-${randomBytes(4).toString('hex')}@example.com` });
  const declinedCard = await services.paymentMethods.save(ctx, declining.id, { card: { number: '4000000000000341', expMonth: 12, expYear: 2040, cvc: '123' } });
  const bare = await services.customers.create(ctx, { email: `bare-${randomBytes(4).toString('hex')}@example.com` });
  const ids = await seedDueSubscriptions(services, ctx, plan, KINDS.length, now);
  const end = new Date(now.getTime() - HOUR);
  const set = (id: string, sql: string, bind: unknown[] = []) => db.execute(`UPDATE subscriptions SET ${sql} WHERE id = $1`, [id, ...bind]);
  const pendingLine = (id: string, amount: number) => SubscriptionPendingLineModel.create({
    id: newId('spl'), accountId: ctx.accountId, mode: 'test', subscriptionId: id, description: `Proration ${amount}`, quantity: 1, unitAmount: amount,
    amount, periodStart: new Date(end.getTime() - HOUR), periodEnd: end, proration: true, invoiceId: null, createdAt: new Date(end.getTime() - HOUR),
  });
  for (const [i, kind] of KINDS.entries()) {
    const id = ids[i];
    // The claim takes them in this order.
    await set(id, 'next_billing_at = $2', [new Date(end.getTime() + i * 1000)]);
    if (kind === 'quantity') await set(id, 'quantity = 3');
    if (kind === 'pending') await pendingLine(id, 250);
    if (kind === 'zero') await pendingLine(id, -1500); // the period's charge, credited whole: nothing to pay
    if (kind === 'declined' || kind === 'past_due') await set(id, 'customer_id = $2, default_payment_method_id = $3', [declining.id, declinedCard.id]);
    if (kind === 'no_card') await set(id, 'customer_id = $2, default_payment_method_id = NULL', [bare.id]);
    if (kind === 'paused') await set(id, "status = 'paused', paused_at = $2", [end]);
    if (kind === 'cancel_at_end') await set(id, `cancel_at_period_end = ${db.dialect === 'postgres' ? 'true' : '1'}`);
    if (kind === 'send_invoice') await set(id, "collection_method = 'send_invoice'");
    if (kind === 'past_due') {
      // Its period billed half an hour ago and declined: past due, its invoice retried now.
      await services.billing.step(id, new Date(now.getTime() - HOUR / 2));
      await set(id, 'next_billing_at = $2', [new Date(end.getTime() + i * 1000)]);
    }
  }
  return ids;
}

const ID = /\b(acct|sub|in|cus|pay|pm|price|prod|il|evt|spl|gtx|whd)_[A-Za-z0-9]+/g;
/**
 * Ids replaced by their kind, so two accounts' objects compare; `updatedAt` left out (the models'
 * writes stamp it with the time of the write, not the run's).
 */
function normal(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value).replace(ID, '$1_*'), (key, v) => (key === 'updatedAt' ? undefined : v));
}

/** What a subscription ended as: its row, its invoices (with lines), its events (sorted), all ids normalised. */
async function outcome(services: Services, accountId: string, ids: readonly string[]) {
  const db = services.db;
  const subs = await services.billing.store.findManyIn(ids);
  const invoices = await db.select<Record<string, unknown>>(
    `SELECT id, subscription_id, number, number_seq, status, payment_status, payment_attempts, subtotal, total, amount_due, amount_paid,
            billing_reason, billing_period_start, email_status, sent_at, paid_at
       FROM invoices WHERE account_id = $1 ORDER BY number_seq`,
    [accountId],
  );
  const lines = await db.select<Record<string, unknown>>(
    `SELECT l.invoice_id, l.position, l.description, l.quantity, l.unit_amount, l.amount, l.period_start, l.period_end, l.proration
       FROM invoice_line_items l JOIN invoices i ON i.id = l.invoice_id WHERE i.account_id = $1 ORDER BY l.invoice_id, l.position`,
    [accountId],
  );
  const events = await db.select<{ id: string; type: string; data: string }>('SELECT id, type, data FROM events WHERE account_id = $1', [accountId]);
  const ownerOf = (object: Record<string, unknown>) => (object.object === 'subscription' ? object.id : object.subscriptionId) as string | undefined;
  return ids.map((id) => {
    const own = invoices.filter((inv) => inv.subscription_id === id);
    return normal({
      subscription: subs.get(id),
      invoices: own.map((inv) => ({
        ...inv,
        number_seq: Number(inv.number_seq), payment_attempts: Number(inv.payment_attempts), amount_due: Number(inv.amount_due), amount_paid: Number(inv.amount_paid),
        subtotal: Number(inv.subtotal), total: Number(inv.total), billing_period_start: readTime(inv.billing_period_start), sent_at: readTime(inv.sent_at), paid_at: readTime(inv.paid_at),
        lines: lines.filter((l) => l.invoice_id === inv.id).map((l) => ({
          ...l, quantity: Number(l.quantity), unit_amount: Number(l.unit_amount), amount: Number(l.amount),
          period_start: readTime(l.period_start), period_end: readTime(l.period_end), proration: l.proration === true || Number(l.proration) === 1,
        })),
      })),
      events: events
        .map((e) => ({ type: e.type, object: (JSON.parse(e.data) as { object: Record<string, unknown> }).object }))
        .filter((e) => ownerOf(e.object) === id)
        // A payment's object carries its gateway's answer (timings, references): its type and outcome compare.
        .map((e) => (e.type.startsWith('payment.') ? { type: e.type, status: e.object.status, amount: e.object.amount } : e))
        .map((e) => JSON.stringify(normal(e)))
        .sort(),
    });
  });
}

describe(`the billing run's batch (${DIALECT})`, () => {
  let app: TestApp;
  beforeAll(async () => {
    // A statement waiting over a second for SQLite's lock is a stall, not contention: steps run in
    // parallel on SQLite once waited out the whole busy timeout (15 s) on each other's reads.
    // The service's clock held still: a run on real time stamps what each step writes with the
    // service's clock, and both paths must stamp the same instants to compare.
    app = await startTestApp({ clock: stillClock, serviceOptions: { sqliteBusyTimeoutMs: 1000 } });
  });
  afterAll(() => app.stop());

  it('should leave a batch mixing common and unusual subscriptions exactly as the single path leaves them', async () => {
    const services = app.server.services;
    stillClock.set(new Date());
    const now = stillClock.now();
    // The single path alone, in claim order, on one account.
    const single = (await services.accounts.createAccount({ name: 'Single path' })).accountId;
    const singleIds = await seedMix(services, contextOf(single), now);
    for (const id of singleIds) await services.billing.step(id, now);
    // The run on another, the same subscriptions: its batch takes the common ones.
    const batched = app.account.accountId;
    const ids = await seedMix(services, contextOf(batched), now);
    const create = jest.spyOn(services.invoices, 'createForSubscriptions');
    const charge = jest.spyOn(services.invoices, 'chargeManyForSubscriptions');
    const settle = jest.spyOn(services.invoices, 'settleMany');
    const result = await services.billing.billDue(now);
    const calls = { create: [...create.mock.calls], charge: [...charge.mock.calls], settle: [...settle.mock.calls] };
    create.mockRestore();
    charge.mockRestore();
    settle.mockRestore();
    expect(result).toEqual({ billed: KINDS.length, failed: 0 });
    // The batch renewed the common ones (not paused, past due, ending, or sent by e-mail), charged
    // those with something to pay and a card, and settled the succeeded charges.
    const common = ['plain', 'plain', 'quantity', 'pending', 'zero', 'declined', 'no_card'];
    // One renewal for a batch and for one: the batch's call is the one with several (the single steps after it renew one each).
    const batches = calls.create.filter((c) => c[1].length > 1);
    expect(batches).toHaveLength(1);
    expect(batches[0][1].map((item) => item.spec.subscriptionId)).toEqual(ids.slice(0, common.length));
    expect(calls.charge[0][0].map((item) => item.invoice.subscriptionId)).toEqual([ids[0], ids[1], ids[2], ids[3], ids[5]]);
    // The one collection settles every charge's outcome in one call, the declined one's too (4 paid + 1 declined).
    expect(calls.settle.filter((c) => c[1].length > 1).map((c) => c[1].map((item) => item.payment.status).sort())).toEqual([['failed', 'succeeded', 'succeeded', 'succeeded', 'succeeded']]);

    const mine = await outcome(services, batched, ids);
    const theirs = await outcome(services, single, singleIds);
    for (const [i, kind] of KINDS.entries()) expect({ kind, ...(mine[i] as object) }).toEqual({ kind, ...(theirs[i] as object) });

    // The end states themselves (so the comparison is not between two equal mistakes).
    const subs = await services.billing.store.findManyIn(ids);
    const end = new Date(now.getTime() - HOUR);
    const status = KINDS.map((kind, i) => [kind, subs.get(ids[i])!.status, subs.get(ids[i])!.currentPeriodStart.getTime() === end.getTime()]);
    expect(status).toEqual([
      ['plain', 'active', true], ['plain', 'active', true], ['quantity', 'active', true], ['pending', 'active', true], ['zero', 'active', true],
      ['declined', 'past_due', true], ['no_card', 'past_due', true], ['paused', 'paused', false], ['past_due', 'past_due', true],
      ['cancel_at_end', 'canceled', false], ['send_invoice', 'active', true],
    ]);

    // Invoice numbers: gapless, unique, and the batch's in claim order.
    const numbers = await services.db.select<{ subscription_id: string; number_seq: number | string; number: string }>(
      'SELECT subscription_id, number_seq, number FROM invoices WHERE account_id = $1 ORDER BY number_seq', [batched],
    );
    expect(numbers.map((n) => Number(n.number_seq))).toEqual(numbers.map((_, i) => i + 1));
    expect(new Set(numbers.map((n) => n.number)).size).toBe(numbers.length);
    const order = numbers.map((n) => ids.indexOf(n.subscription_id)).filter((i) => i < common.length && i !== KINDS.indexOf('past_due'));
    expect(order).toEqual([...order].sort((a, b) => a - b));

    // Every event of the run has its webhook delivery, carrying the event as the API shows it.
    const deliveries = await services.db.select<{ id: string; type: string; data: string; created_at: unknown; n: number | string; payload: string | null }>(
      `SELECT e.id, e.type, e.data, e.created_at, COUNT(d.id) AS n, MIN(d.payload) AS payload
         FROM events e LEFT JOIN webhook_deliveries d ON d.event_id = e.id WHERE e.account_id = $1 GROUP BY e.id, e.type, e.data, e.created_at`,
      [batched],
    );
    expect(deliveries.length).toBeGreaterThan(20);
    for (const e of deliveries) {
      expect({ id: e.id, n: Number(e.n) }).toEqual({ id: e.id, n: 1 });
      expect(JSON.parse(e.payload as string)).toEqual({
        id: e.id, object: 'event', type: e.type, createdAt: readTime(e.created_at)!.toISOString(), livemode: false, data: JSON.parse(e.data),
      });
    }
  }, 120_000);

  it('should bill a batch in statements shared by its subscriptions, not a round of statements each', async () => {
    const services = app.server.services;
    const accountId = (await services.accounts.createAccount({ name: 'Shared statements' })).accountId;
    const ctx = contextOf(accountId);
    const plan = await seedPlan(services, ctx, 3);
    const now = new Date();
    const count = 60;
    const ids = await seedDueSubscriptions(services, ctx, plan, count, now);
    app.sql.length = 0;
    expect(await services.billing.billDue(now)).toEqual({ billed: count, failed: 0 });
    const sql = [...app.sql];
    const subs = await services.billing.store.findManyIn(ids);
    expect([...subs.values()].filter((s) => s.status !== 'active' || s.collectInvoiceId !== null || s.currentPeriodStart.getTime() !== now.getTime() - HOUR)).toEqual([]);
    const matching = (re: RegExp) => sql.filter((s) => re.test(s)).length;
    // One insert of the batch's invoices and one of their lines; the payments' reads of their
    // card and customer shared by all of them (on both databases).
    expect(matching(/INSERT INTO [`"]?invoices[`"]? /)).toBe(1);
    expect(matching(/INSERT INTO [`"]?invoice_line_items[`"]? /)).toBe(1);
    expect(matching(/FROM [`"]?payment_methods\b/)).toBeLessThanOrEqual(2);
    expect(matching(/FROM [`"]?customers\b/)).toBeLessThanOrEqual(2);
    // Each invoice keeps the parties it was issued to (written by the insert and the settle's statements, none more).
    const parties = await services.db.select<{ parties: string | null }>('SELECT parties FROM invoices WHERE account_id = $1', [accountId]);
    expect(parties).toHaveLength(count);
    expect(parties.filter((r) => JSON.parse(r.parties ?? 'null')?.merchant?.name !== 'Shared statements')).toEqual([]);
    // On PostgreSQL everything is shared: fewer statements than subscriptions in all (the single path: about 56 each).
    if (DIALECT === 'postgres') expect(sql.length).toBeLessThan(count);
  }, 120_000);

  it.each(['charge', 'settle'])('should finish a run killed (SIGKILL) in its batch at the %s without billing or charging twice', async (at) => {
    const services = app.server.services;
    const db = services.db;
    const accountId = (await services.accounts.createAccount({ name: `Killed at ${at}` })).accountId;
    const ctx = contextOf(accountId);
    const plan = await seedPlan(services, ctx, 2);
    const now = new Date();
    const ids = await seedDueSubscriptions(services, ctx, plan, 12, now);
    const child = spawn(process.execPath, [path.join(__dirname, '..', 'helpers', 'billing-batch-child.js')], {
      cwd: path.join(__dirname, '..', '..'),
      env: {
        ...process.env, DATABASE_URL: services.config.databaseUrl, DATA_DIR: services.config.dataDir, BILLING_LEASE_MS: '1000',
        BILLING_KILL_AT: at, BILLING_NOW: now.toISOString(),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output: string[] = [];
    child.stdout.on('data', (c) => output.push(String(c)));
    child.stderr.on('data', (c) => output.push(String(c)));
    const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, sig) => resolve(sig)));
    expect({ signal, output: output.join('') }).toEqual({ signal: 'SIGKILL', output: '' });

    // Killed between the renew and the settle: every period invoiced once, each invoice claimed for its charge, none paid.
    const invoices = () => db.select<{ id: string; subscription_id: string; status: string; payment_status: string; payment_attempts: number | string }>(
      'SELECT id, subscription_id, status, payment_status, payment_attempts FROM invoices WHERE account_id = $1', [accountId],
    );
    const left = await invoices();
    expect(left).toHaveLength(ids.length);
    expect(new Set(left.map((i) => `${i.status}/${i.payment_status}/${i.payment_attempts}`))).toEqual(new Set(['draft/processing/1']));
    const payments = () => db.select<{ invoice_id: string; status: string }>('SELECT invoice_id, status FROM payments WHERE customer_id IN (SELECT id FROM customers WHERE account_id = $1)', [accountId]);
    expect((await payments()).map((p) => p.status)).toEqual(at === 'charge' ? [] : ids.map(() => 'succeeded'));

    // The next run, once the dead run's claims (BILLING_LEASE_MS, on the database's clock) and
    // (for a charge never made) its invoices' grace ran out.
    await waitFor(async () => {
      const [{ n }] = await db.select<{ n: number | string }>(
        `SELECT COUNT(*) AS n FROM subscriptions WHERE id IN (${db.jsonTextList('$1')}) AND billing_locked_until >= ${db.nowSql}`, [JSON.stringify(ids)],
      );
      return Number(n) === 0;
    }, { timeoutMs: 10_000, intervalMs: 50, what: "the dead run's claims to run out" });
    if (at === 'charge') await db.execute("UPDATE invoices SET updated_at = $1 WHERE account_id = $2 AND payment_status = 'processing'", [new Date(Date.now() - 10 * 60_000), accountId]);
    const later = new Date(Date.now());
    expect(await services.billing.billDue(later)).toEqual({ billed: ids.length, failed: 0 });

    const end = new Date(now.getTime() - HOUR);
    const done = await invoices();
    expect(done).toHaveLength(ids.length);
    expect(new Set(done.map((i) => i.subscription_id))).toEqual(new Set(ids));
    // A charge never made is made under the next attempt's key; one made is taken as it was.
    expect(new Set(done.map((i) => `${i.status}/${i.payment_status}/${i.payment_attempts}`))).toEqual(new Set([`paid/paid/${at === 'charge' ? 2 : 1}`]));
    const paid = await payments();
    expect(paid.map((p) => p.status)).toEqual(ids.map(() => 'succeeded'));
    expect(new Set(paid.map((p) => p.invoice_id))).toEqual(new Set(done.map((i) => i.id)));
    const subs = await services.billing.store.findManyIn(ids);
    for (const id of ids) {
      const s = subs.get(id)!;
      expect({ id, status: s.status, start: s.currentPeriodStart.toISOString(), next: s.nextBillingAt?.toISOString(), collect: s.collectInvoiceId })
        .toEqual({ id, status: 'active', start: end.toISOString(), next: new Date(end.getTime() + DAY_MS).toISOString(), collect: null });
    }
    const [{ n }] = await db.select<{ n: number | string }>("SELECT COUNT(*) AS n FROM events WHERE account_id = $1 AND type = 'invoice.paid'", [accountId]);
    expect(Number(n)).toBe(ids.length);
  }, 120_000);
});
