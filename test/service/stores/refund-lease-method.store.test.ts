import type { RequestContext } from '../../../src/core/context';
import { readTime, type Database } from '../../../src/db/database';
import { newId } from '../../../src/core/ids';
import { LeaseStore } from '../../../src/modules/payments/lease.store';
import { PaymentMethodStore } from '../../../src/modules/payments/payment-method.store';
import { RefundStore, type Refund } from '../../../src/modules/payments/refund.store';
import { DIALECT } from '../../helpers/db';
import { startServices, type ServiceHarness, type TestAccountContexts } from '../../helpers/services';

let h: ServiceHarness;
let db: Database;
let refunds: RefundStore;
let leases: LeaseStore;
let methods: PaymentMethodStore;
let a: TestAccountContexts;
let b: TestAccountContexts;

beforeAll(async () => {
  h = await startServices();
  db = h.services.db;
  refunds = new RefundStore(db);
  leases = new LeaseStore(db);
  methods = new PaymentMethodStore(db);
  a = await h.account();
  b = await h.account();
});
afterAll(() => h?.stop());

const at = (ms: number) => new Date(h.clock.now().getTime() + ms);

/** A succeeded payment of 1000 (the built-in simulator charges pm_card_visa). */
async function paid(ctx: RequestContext = a.test) {
  const payment = await h.services.payments.create(ctx, { amount: 1000, currency: 'usd', paymentMethod: 'pm_card_visa' });
  expect(payment.status).toBe('succeeded');
  return payment;
}

function pendingRefund(paymentId: string, ctx: RequestContext, amount = 100): Refund {
  const now = h.clock.now().toISOString();
  return {
    id: newId('re'), object: 'refund', livemode: ctx.mode === 'live', paymentId, amount, currency: 'USD', reason: null, status: 'pending',
    gatewayId: 'gw_builtin_simulator', failureCode: null, failureMessage: null, createdAt: now, updatedAt: now,
  };
}

async function insertRefund(ctx: RequestContext, paymentId: string, leaseUntil: Date, idempotencyKey: string | null = null): Promise<Refund> {
  const refund = pendingRefund(paymentId, ctx);
  await db.transaction((t) => refunds.insertPending(t, ctx, refund, leaseUntil, idempotencyKey));
  return refund;
}

async function leaseOf(table: 'payments' | 'refunds', id: string): Promise<Date | null> {
  const [row] = await db.select<{ lease_until: unknown }>(`SELECT lease_until FROM ${table} WHERE id = $1`, [id]);
  return readTime(row.lease_until);
}

describe(`RefundStore on ${DIALECT}`, () => {
  it('should read back a pending refund only for its own account and mode', async () => {
    const payment = await paid();
    const refund = await insertRefund(a.test, payment.id, at(10_000));
    expect(await refunds.find(a.test, refund.id)).toEqual(refund);
    expect(await refunds.find(b.test, refund.id)).toBeNull();
    expect(await refunds.find(a.live, refund.id)).toBeNull();
    const page = await refunds.list(a.test, { page: 1, pageSize: 100, sortField: 'createdAt', sortDirection: 'desc', paymentId: payment.id });
    expect(page).toMatchObject({ data: [refund], total: 1 });
    expect((await refunds.list(b.test, { page: 1, pageSize: 100, sortField: 'createdAt', sortDirection: 'desc', paymentId: payment.id })).total).toBe(0);
    expect((await refunds.forPayments(a.test, [payment.id])).get(payment.id)).toEqual([refund]);
    expect((await refunds.forPayments(b.test, [payment.id])).size).toBe(0);
  });

  it('should find and lock a payment only for its own account and mode, with its charge reference', async () => {
    const payment = await paid();
    await db.transaction(async (t) => {
      const locked = await refunds.paymentForUpdate(a.test, payment.id, t);
      expect(locked?.payment).toEqual(payment);
      expect(locked?.chargeReference).toEqual(expect.any(String));
      expect(await refunds.paymentForUpdate(b.test, payment.id, t)).toBeNull();
      expect(await refunds.paymentForUpdate(a.live, payment.id, t)).toBeNull();
    });
    expect(await refunds.paymentExists(a.test, payment.id)).toBe(true);
    expect(await refunds.paymentExists(b.test, payment.id)).toBe(false);
    expect(await refunds.paymentExists(a.live, payment.id)).toBe(false);
  });

  it('should hold a second locker of the payment until the first commits, then show it the first one\'s reservation', async () => {
    const payment = await paid();
    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let lockedFirst!: () => void;
    const firstLocked = new Promise<void>((resolve) => (lockedFirst = resolve));
    const first = db.transaction(async (t) => {
      await refunds.paymentForUpdate(a.test, payment.id, t);
      lockedFirst();
      await held;
      expect(await refunds.reserve(t, payment.id, 300, h.clock.now())).toBe(true);
      order.push('first commits');
    });
    await firstLocked;
    const second = db.transaction(async (t) => {
      const locked = await refunds.paymentForUpdate(a.test, payment.id, t);
      order.push(`second reads ${locked?.payment.amountRefunded}`);
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    order.push('released');
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(['released', 'first commits', 'second reads 300']);
  });

  it('should reserve only within the payment amount and give a reservation back', async () => {
    const payment = await paid();
    const reserve = (amount: number) => db.transaction((t) => refunds.reserve(t, payment.id, amount, h.clock.now()));
    expect(await reserve(999)).toBe(true);
    expect(await reserve(2)).toBe(false);
    expect(await reserve(1)).toBe(true);
    expect(await reserve(1)).toBe(false);
    await db.transaction(async (t) => {
      await refunds.release(t, { paymentId: payment.id, amount: 400 }, h.clock.now());
      expect(await refunds.paymentAsWritten(t, payment.id)).toMatchObject({ id: payment.id, amountRefunded: 600, refunded: false });
    });
    expect(await reserve(401)).toBe(false);
    expect(await reserve(400)).toBe(true);
    expect(await db.transaction((t) => refunds.paymentAsWritten(t, payment.id))).toMatchObject({ amountRefunded: 1000, refunded: true });
  });

  it('should settle a refund only while it is pending: a second settlement changes nothing', async () => {
    const payment = await paid();
    const refund = await insertRefund(a.test, payment.id, at(10_000));
    const updatedAt = at(1_000).toISOString();
    const failed: Refund = { ...refund, status: 'failed', failureCode: 'refund_failed', failureMessage: 'refused', updatedAt };
    expect(await db.transaction((t) => refunds.settle(t, failed, null))).toBe(true);
    expect(await db.transaction((t) => refunds.settle(t, { ...refund, status: 'succeeded', updatedAt: at(2_000).toISOString() }, 'ref_late'))).toBe(false);
    expect(await refunds.find(a.test, refund.id)).toEqual(failed);
    const [row] = await db.select<{ gateway_reference: string | null }>('SELECT gateway_reference FROM refunds WHERE id = $1', [refund.id]);
    expect(row.gateway_reference).toBeNull();
  });

  it('should list pending refunds past their lease, oldest lease first, with what recovery needs, and no others', async () => {
    const payment = await paid(b.test);
    const [charge] = await db.select<{ gateway_reference: string }>('SELECT gateway_reference FROM payments WHERE id = $1', [payment.id]);
    // Later than every lease other tests leave behind, so only these rows are past it.
    const now = at(3_600_000);
    const later = await insertRefund(b.test, payment.id, at(3_000_000), 'key-later');
    const earlier = await insertRefund(b.test, payment.id, at(2_000_000));
    const fresh = await insertRefund(b.test, payment.id, at(4_000_000));
    const settled = await insertRefund(b.test, payment.id, at(1_000_000));
    await db.transaction((t) => refunds.settle(t, { ...settled, status: 'succeeded' }, 'ref_done'));
    const due = await refunds.pendingPastLease(now, 50);
    const ours = due.filter((r) => r.refund.paymentId === payment.id);
    expect(ours).toEqual([
      { id: earlier.id, refund: earlier, accountId: b.accountId, idempotencyKey: null, chargeReference: charge.gateway_reference },
      { id: later.id, refund: later, accountId: b.accountId, idempotencyKey: 'key-later', chargeReference: charge.gateway_reference },
    ]);
    expect(ours.map((r) => r.id)).not.toContain(fresh.id);
    expect(await refunds.pendingPastLease(now, 1)).toHaveLength(1);
  });
});

describe(`LeaseStore on ${DIALECT}`, () => {
  it.each(['payments', 'refunds'] as const)('should renew the leases of pending %s only', async (table) => {
    const pending: string[] = [];
    let settled: string;
    if (table === 'refunds') {
      const payment = await paid();
      pending.push((await insertRefund(a.test, payment.id, at(1_000))).id, (await insertRefund(a.test, payment.id, at(1_000))).id);
      const done = await insertRefund(a.test, payment.id, at(1_000));
      await db.transaction((t) => refunds.settle(t, { ...done, status: 'succeeded' }, null));
      settled = done.id;
    } else {
      // Payments the simulator settled at once, two of them put back to pending as a charging request leaves them.
      const rows = [await paid(), await paid(), await paid()];
      for (const p of rows.slice(0, 2)) await db.execute("UPDATE payments SET status = 'pending', lease_until = $1 WHERE id = $2", [at(1_000), p.id]);
      await db.execute('UPDATE payments SET lease_until = $1 WHERE id = $2', [at(1_000), rows[2].id]);
      pending.push(rows[0].id, rows[1].id);
      settled = rows[2].id;
    }
    const until = at(20_000);
    expect(await leases.renew(table, [...pending, settled], h.clock.now(), 20_000)).toEqual(new Set(pending));
    for (const id of pending) expect(await leaseOf(table, id)).toEqual(until);
    expect(await leaseOf(table, settled)).toEqual(at(1_000));
  });

  it('should not renew a lease that ran out or that recovery took: that row is no longer the process\'s', async () => {
    const payment = await paid();
    const held = await insertRefund(a.test, payment.id, at(1_000));
    const lapsed = await insertRefund(a.test, payment.id, at(-1));
    const taken = await insertRefund(a.test, payment.id, at(120_000)); // recovery's claim (recoverRows)
    const renewed = await leases.renew('refunds', [held.id, lapsed.id, taken.id], h.clock.now(), 10_000);
    expect(renewed).toEqual(new Set([held.id]));
    expect([await leaseOf('refunds', held.id), await leaseOf('refunds', lapsed.id), await leaseOf('refunds', taken.id)]).toEqual([at(10_000), at(-1), at(120_000)]);
  });

  it('should give a pending row past its lease to exactly one of two concurrent claimers, and a fresh or settled row to none', async () => {
    const payment = await paid();
    const expired = await insertRefund(a.test, payment.id, at(-1_000));
    const fresh = await insertRefund(a.test, payment.id, at(5_000));
    const settledRow = await insertRefund(a.test, payment.id, at(-1_000));
    await db.transaction((t) => refunds.settle(t, { ...settledRow, status: 'succeeded' }, null));
    const now = h.clock.now();
    const until = at(120_000);
    const claims = await Promise.all([leases.claimPastLease('refunds', expired.id, now, until), leases.claimPastLease('refunds', expired.id, now, until)]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await leaseOf('refunds', expired.id)).toEqual(until);
    expect(await leases.claimPastLease('refunds', fresh.id, now, until)).toBe(false);
    expect(await leases.claimPastLease('refunds', settledRow.id, now, until)).toBe(false);
    expect(await leaseOf('refunds', fresh.id)).toEqual(at(5_000));
  });

  it('should claim past-lease payments in the payments table, not refunds with the same condition', async () => {
    const payment = await paid();
    await db.execute("UPDATE payments SET status = 'pending', lease_until = $1 WHERE id = $2", [at(-1_000), payment.id]);
    const now = h.clock.now();
    expect(await leases.claimPastLease('refunds', payment.id, now, at(60_000))).toBe(false);
    const claims = await Promise.all([leases.claimPastLease('payments', payment.id, now, at(60_000)), leases.claimPastLease('payments', payment.id, now, at(60_000))]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    expect(await leaseOf('payments', payment.id)).toEqual(at(60_000));
  });
});

describe(`PaymentMethodStore on ${DIALECT}`, () => {
  const card = { number: '4242424242424242', expMonth: 12, expYear: 2040, cvc: '123' };

  it('should find a saved method and a customer\'s default only for its own account and mode', async () => {
    const customer = await h.services.customers.create(a.test, { email: `${newId('cus')}@example.com` });
    expect(await methods.defaultIdFor(a.test, customer.id)).toBeNull();
    const saved = await h.services.paymentMethods.save(a.test, customer.id, { card });
    const row = await methods.find(a.test, saved.id);
    expect(row).toMatchObject({
      id: saved.id, mode: 'test', customer_id: customer.id, gateway_id: saved.gatewayId, brand: 'visa', last4: '4242', fingerprint: saved.card.fingerprint,
    });
    expect(row?.gateway_token).toEqual(expect.any(String));
    expect(Number(row?.exp_year)).toBe(2040);
    expect(await methods.find(b.test, saved.id)).toBeNull();
    expect(await methods.find(a.live, saved.id)).toBeNull();
    expect(await methods.defaultIdFor(a.test, customer.id)).toBe(saved.id);
    expect(await methods.defaultIdFor(b.test, customer.id)).toBeNull();
    expect(await methods.defaultIdFor(a.live, customer.id)).toBeNull();
  });

  it('should page a customer\'s methods and read the newest per customer with its default, within the account and mode', async () => {
    const customer = await h.services.customers.create(a.test, { email: `${newId('cus')}@example.com` });
    const first = await h.services.paymentMethods.save(a.test, customer.id, { card });
    h.clock.advance(1_000);
    const second = await h.services.paymentMethods.save(a.test, customer.id, { card });
    const input = { page: 1, pageSize: 10, sortField: 'createdAt' as const, sortDirection: 'desc' as const };
    const page = await methods.list(a.test, customer.id, input, (r) => r.id);
    expect(page).toMatchObject({ data: [second.id, first.id], total: 2 });
    expect((await methods.list(b.test, customer.id, input, (r) => r.id)).total).toBe(0);
    const newest = await methods.forCustomers(a.test, [customer.id], 1);
    expect(newest.map((r) => [r.id, r.default_payment_method_id])).toEqual([[second.id, first.id]]);
    expect(await methods.forCustomers(b.test, [customer.id], 10)).toEqual([]);
    expect(await methods.forCustomers(a.live, [customer.id], 10)).toEqual([]);
  });
});
