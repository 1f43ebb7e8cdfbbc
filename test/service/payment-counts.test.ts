import type { RequestContext } from '../../src/core/context';
import type { Database } from '../../src/db/database';
import { PaymentCountStore } from '../../src/modules/payments/payment-count.store';
import { DIALECT } from '../helpers/db';
import { startServices, type ServiceHarness } from '../helpers/services';
import { waitFor } from '../helpers/wait';

/**
 * The payments list's total is kept by the payments table's triggers (migration 0019), not
 * counted per request: exact whatever writes, folds and reads run at the same time, and read
 * without a COUNT over the account's payments unless the list has filters the counts do not keep.
 */
let h: ServiceHarness;
let ctx: RequestContext;
let other: RequestContext;
let db: Database;
beforeAll(async () => {
  h = await startServices();
  db = h.services.db;
  ({ test: ctx } = await h.account());
  ({ test: other } = await h.account());
});
afterAll(() => h?.stop());

const pay = (on: RequestContext, paymentMethod = 'pm_card_visa') =>
  h.services.payments.create(on, { amount: 1000, currency: 'usd', paymentMethod });

/** What COUNT(*) says, for the scope and each status, beside what the list answers. */
async function listedAndCounted(on: RequestContext) {
  const statuses = ['pending', 'succeeded', 'failed', 'canceled', 'requires_review'];
  const counted = async (status?: string) => Number((await db.select<{ n: number | string }>(
    `SELECT COUNT(*) AS n FROM payments WHERE account_id = $1 AND mode = $2${status ? ' AND status = $3' : ''}`,
    status ? [on.accountId, on.mode, status] : [on.accountId, on.mode]))[0].n);
  const listed = async (status?: string) => (await h.services.payments.list(on, { pageSize: 1, ...(status ? { status } : {}) })).total;
  const out: Record<string, { listed: number; counted: number }> = { all: { listed: await listed(), counted: await counted() } };
  for (const s of statuses) out[s] = { listed: await listed(s), counted: await counted(s) };
  return out;
}

const same = (figures: Record<string, { listed: number; counted: number }>) =>
  Object.fromEntries(Object.entries(figures).map(([k, v]) => [k, v.counted]));
const listed = (figures: Record<string, { listed: number; counted: number }>) =>
  Object.fromEntries(Object.entries(figures).map(([k, v]) => [k, v.listed]));

describe('the payments list total', () => {
  it('should answer the exact total per status while payments are written, refunded and folded at the same time', async () => {
    const folds: Promise<number>[] = [];
    let writing = true;
    // Folds run back to back for as long as the writes do (the job's every 2 s, squeezed).
    const folder = (async () => {
      while (writing) {
        folds.push(h.services.payments.foldCounts());
        await folds[folds.length - 1];
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 60; i++) {
      const on = i % 3 === 0 ? other : ctx;
      writes.push(pay(on, i % 4 === 0 ? 'pm_card_declined' : 'pm_card_visa').then(async (p) => {
        if (p.status === 'succeeded' && i % 5 === 0) await h.services.refunds.create(on, { paymentId: p.id, amount: 1000 });
      }));
      // Reads in between, as a dashboard's would: never an error, never a negative figure.
      if (i % 10 === 0) writes.push(h.services.payments.list(ctx, { pageSize: 5 }).then((page) => expect(page.total).toBeGreaterThanOrEqual(0)));
    }
    await Promise.all(writes);
    writing = false;
    await folder;
    for (const on of [ctx, other]) {
      const figures = await listedAndCounted(on);
      expect(listed(figures)).toEqual(same(figures));
    }
    expect(same(await listedAndCounted(ctx)).all).toBe(40);
    expect(same(await listedAndCounted(other)).all).toBe(20);
    expect(same(await listedAndCounted(ctx)).failed).toBeGreaterThan(0);
    // Folded: nothing waits (PostgreSQL; SQLite's triggers keep the counts and append nothing).
    await h.services.payments.foldCounts();
    expect(await db.select('SELECT id FROM payment_count_deltas')).toEqual([]);
    for (const on of [ctx, other]) {
      const figures = await listedAndCounted(on);
      expect(listed(figures)).toEqual(same(figures));
    }
  });

  it('should have a reader fold the deltas when many are waiting, so the total stays cheap with no job running (PostgreSQL)', async () => {
    await h.services.payments.foldCounts();
    const before = (await h.services.payments.list(ctx, { pageSize: 1 })).total;
    // 10,001 payments written at once, as an import would, then 6 one by one: 7 statements, with
    // no fold job running in this harness. A store that folds once more than 5 delta rows wait.
    const at = DIALECT === 'postgres' ? '$4::timestamptz' : '$4';
    const bulk = (prefix: string, n: number) => db.execute(
      `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < $3)
       INSERT INTO payments (id, account_id, mode, amount, currency, original_currency, payment_method, status, created_at, updated_at)
       SELECT $5 || n, $1, $2, 100, 'USD', 'USD', 'pm_card_visa', 'succeeded', ${at}, ${at} FROM g`,
      [ctx.accountId, ctx.mode, n, h.clock.now(), prefix],
    );
    await bulk('pay_bulk_', 10_001);
    for (let i = 0; i < 6; i++) await bulk(`pay_one_${i}_`, 1);
    const waiting = async () => Number((await db.select<{ n: number | string }>('SELECT COUNT(*) AS n FROM payment_count_deltas'))[0].n);
    expect(await waiting()).toBe(DIALECT === 'postgres' ? 7 : 0);
    const store = new PaymentCountStore(db, h.services.logger, { foldWhenWaiting: 5 });
    expect(await store.total(ctx)).toBe(before + 10_007);
    // The read answered at once and started a fold in the background.
    await waitFor(async () => (await waiting()) === 0, { what: 'the background fold to take the waiting deltas', intervalMs: 20 });
    expect(await waiting()).toBe(0);
    expect((await h.services.payments.list(ctx, { pageSize: 1 })).total).toBe(before + 10_007);
    expect((await h.services.payments.list(ctx, { pageSize: 1, status: 'succeeded' })).total).toBe(Number((await db.select<{ n: number | string }>(
      "SELECT COUNT(*) AS n FROM payments WHERE account_id = $1 AND mode = $2 AND status = 'succeeded'", [ctx.accountId, ctx.mode]))[0].n));
  });

  it('should keep the live mode apart from the test mode', async () => {
    const live = { ...ctx, mode: 'live' as const };
    const before = (await h.services.payments.list(live, {})).total;
    const testBefore = (await h.services.payments.list(ctx, {})).total;
    await pay(ctx);
    expect((await h.services.payments.list(live, {})).total).toBe(before);
    expect((await h.services.payments.list(ctx, {})).total).toBe(testBefore + 1);
  });

  it('should read the total of a list filtered by status at most without counting payments, and count for the other filters', async () => {
    const customer = await h.services.customers.create(ctx, { email: 'counted@example.com' });
    await h.services.payments.create(ctx, { amount: 700, currency: 'usd', paymentMethod: 'pm_card_visa', customerId: customer.id, description: 'needle' });
    const statements: string[] = [];
    const select = db.select.bind(db);
    const spy = jest.spyOn(db, 'select').mockImplementation((sql, ...rest) => {
      statements.push(sql);
      return select(sql, ...rest);
    });
    const countsPayments = () => statements.some((s) => /COUNT\(\*\)[\s\S]*FROM payments\b/.test(s));
    try {
      for (const query of [{}, { status: 'succeeded' }, { status: 'failed', sortField: 'amount', sortDirection: 'asc' }, { search: '' }]) {
        statements.length = 0;
        const page = await h.services.payments.list(ctx, query);
        expect({ query, counted: countsPayments(), total: page.total }).toEqual({ query, counted: false, total: expect.any(Number) });
      }
      for (const query of [{ customerId: customer.id }, { search: 'needle' }, { currency: 'USD', amountGte: '700', amountLte: '700' }]) {
        statements.length = 0;
        const page = await h.services.payments.list(ctx, query);
        expect({ query, counted: countsPayments(), total: page.total }).toEqual({ query, counted: true, total: 1 });
      }
      // Several statuses: the kept counts of each, summed in one statement, as a count of the rows says.
      await h.services.payments.create(ctx, { amount: 800, currency: 'usd', paymentMethod: 'pm_card_declined' });
      statements.length = 0;
      const kept = await h.services.payments.list(ctx, { status: 'succeeded,failed' });
      expect(countsPayments()).toBe(false);
      const counted = await h.services.payments.list(ctx, { status: 'succeeded,failed', amountGte: '0' });
      expect(countsPayments()).toBe(true);
      const each = await Promise.all(['succeeded', 'failed'].map(async (status) => (await h.services.payments.list(ctx, { status })).total));
      expect(kept.total).toBe(counted.total);
      expect(kept.total).toBe(each[0] + each[1]);
      expect(each[1]).toBeGreaterThan(0);
    } finally {
      spy.mockRestore();
    }
  });
});
