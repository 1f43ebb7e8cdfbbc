import type { RequestContext } from '../../../src/core/context';
import { readTime, type Database } from '../../../src/db/database';
import { newId } from '../../../src/core/ids';
import { LeaseStore } from '../../../src/modules/payments/lease.store';
import { PaymentMethodStore } from '../../../src/modules/payments/payment-method.store';
import { RefundStore } from '../../../src/modules/payments/refund.store';
import type { Refund } from '../../../src/modules/payments/refund.types';
import { DIALECT } from '../../helpers/db';
import { startServices, type ServiceHarness, type TestAccountContexts } from '../../helpers/services';
import { assertStaysTrue, someoneWaitsOnLock, waitFor } from '../../helpers/wait';

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

/** The database's now: leases are on its clock (LeaseStore). */
async function dbNow(): Promise<number> {
  const [row] = await db.select<{ now: unknown }>(`SELECT ${db.nowSql} AS now`);
  return (readTime(row.now) as Date).getTime();
}

/** Sets a row's lease to `ms` from the database's now (negative: ran out that long ago). */
async function setLease(table: 'payments' | 'refunds', id: string, ms: number, status?: 'pending'): Promise<Date> {
  await db.execute(`UPDATE ${table} SET lease_until = ${db.nowPlusSql('$1')}${status ? `, status = '${status}'` : ''} WHERE id = $2`, [ms, id]);
  return (await leaseOf(table, id)) as Date;
}

/** A lease `ms` from the database's now, give or take the time the test took since. */
async function expectLeaseFromNow(table: 'payments' | 'refunds', id: string, ms: number): Promise<void> {
  const lease = ((await leaseOf(table, id)) as Date).getTime();
  const now = await dbNow();
  expect(lease).toBeLessThanOrEqual(now + ms);
  expect(lease).toBeGreaterThan(now + ms - 5_000);
}

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

/** A pending refund leased for `leaseMs` from the database's now (negative: ran out that long ago). */
async function insertRefund(ctx: RequestContext, paymentId: string, leaseMs: number, idempotencyKey: string | null = null): Promise<Refund> {
  const refund = pendingRefund(paymentId, ctx);
  await db.transaction((t) => refunds.insertPending(t, ctx, refund, leaseMs, idempotencyKey));
  return refund;
}

async function leaseOf(table: 'payments' | 'refunds', id: string): Promise<Date | null> {
  const [row] = await db.select<{ lease_until: unknown }>(`SELECT lease_until FROM ${table} WHERE id = $1`, [id]);
  return readTime(row.lease_until);
}

describe(`RefundStore on ${DIALECT}`, () => {
  it('should read back a pending refund only for its own account and mode', async () => {
    const payment = await paid();
    const refund = await insertRefund(a.test, payment.id, 10_000);
    expect(await refunds.find(a.test, refund.id)).toEqual(refund);
    await expectLeaseFromNow('refunds', refund.id, 10_000);
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
    if (DIALECT === 'postgres') {
      // Until the second locker is seen blocked on the row lock (or, wrongly, has read past it).
      await waitFor(async () => order.length > 0 || (await someoneWaitsOnLock(db)), { what: 'the second locker to wait on the payment row' });
    } else {
      // SQLite's writers queue in-process, where nothing shows a transaction waiting: the second
      // must simply not get to read while the first holds the database.
      await assertStaysTrue(() => order.length === 0, 300, 'the second locker waits while the first holds the payment');
    }
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
    const refund = await insertRefund(a.test, payment.id, 10_000);
    const updatedAt = at(1_000).toISOString();
    const failed: Refund = { ...refund, status: 'failed', failureCode: 'refund_failed', failureMessage: 'refused', updatedAt };
    expect(await db.transaction((t) => refunds.move(t, 'fail', failed, null))).toBe(true);
    expect(await db.transaction((t) => refunds.move(t, 'succeed', { ...refund, status: 'succeeded', updatedAt: at(2_000).toISOString() }, 'ref_late'))).toBe(false);
    expect(await refunds.find(a.test, refund.id)).toEqual(failed);
    const [row] = await db.select<{ gateway_reference: string | null }>('SELECT gateway_reference FROM refunds WHERE id = $1', [refund.id]);
    expect(row.gateway_reference).toBeNull();
  });

  it('should list pending refunds past their lease on the database\'s clock, oldest lease first, with what recovery needs, and no others', async () => {
    const payment = await paid(b.test);
    const [charge] = await db.select<{ gateway_reference: string }>('SELECT gateway_reference FROM payments WHERE id = $1', [payment.id]);
    // Earlier than every lease other tests leave behind, so these come first.
    const later = await insertRefund(b.test, payment.id, -3_000_000, 'key-later');
    const earlier = await insertRefund(b.test, payment.id, -4_000_000);
    const fresh = await insertRefund(b.test, payment.id, 60_000);
    const settled = await insertRefund(b.test, payment.id, -5_000_000);
    await db.transaction((t) => refunds.move(t, 'succeed', { ...settled, status: 'succeeded' }, 'ref_done'));
    // Business time has nothing to do with it.
    h.clock.advance(24 * 3_600_000);
    const due = await refunds.pendingPastLease(50);
    const ours = due.filter((r) => r.refund.paymentId === payment.id);
    expect(ours).toEqual([
      { id: earlier.id, refund: earlier, accountId: b.accountId, idempotencyKey: null, chargeReference: charge.gateway_reference, pendingMs: expect.any(Number) },
      { id: later.id, refund: later, accountId: b.accountId, idempotencyKey: 'key-later', chargeReference: charge.gateway_reference, pendingMs: expect.any(Number) },
    ]);
    // Pending since its insert, on the database's clock.
    for (const r of ours) expect(r.pendingMs).toBeLessThan(10_000);
    expect(ours.map((r) => r.id)).not.toContain(fresh.id);
    expect(await refunds.pendingPastLease(1)).toHaveLength(1);
  });

  it('should mark a failed refund for review only while it is failed, keeping its reference, and count its amount again whatever is left', async () => {
    const payment = await paid();
    const refund = pendingRefund(payment.id, a.test, 1000); // a full refund
    await db.transaction(async (t) => {
      await refunds.insertPending(t, a.test, refund, 10_000, null);
      expect(await refunds.reserve(t, payment.id, 1000, h.clock.now())).toBe(true);
      expect(await refunds.move(t, 'fail', { ...refund, status: 'failed', failureCode: 'refund_failed', failureMessage: 'not found', updatedAt: at(1_000).toISOString() }, null)).toBe(true);
      await refunds.release(t, { paymentId: payment.id, amount: 1000 }, h.clock.now());
      // Another refund takes the amount given back meanwhile.
      expect(await refunds.reserve(t, payment.id, 600, h.clock.now())).toBe(true);
    });
    const review: Refund = { ...refund, status: 'requires_review', updatedAt: at(2_000).toISOString() };
    expect(await db.transaction((t) => refunds.move(t, 'review_late_success', review, 'ref_made'))).toBe(true);
    expect(await db.transaction((t) => refunds.move(t, 'review_late_success', review, 'ref_again'))).toBe(false);
    expect(await refunds.find(a.test, refund.id)).toEqual(review);
    const [row] = await db.select<{ gateway_reference: string | null }>('SELECT gateway_reference FROM refunds WHERE id = $1', [refund.id]);
    expect(row.gateway_reference).toBe('ref_made');
    // The gateway made it: its amount counts, though the other refund (which the gateway will refuse) holds 600.
    const counted = await db.transaction(async (t) => {
      await refunds.reserveAgain(t, review, h.clock.now());
      return refunds.paymentAsWritten(t, payment.id);
    });
    expect(counted).toMatchObject({ amountRefunded: 1600, refunded: true });
  });
});

describe(`LeaseStore on ${DIALECT}`, () => {
  it.each(['payments', 'refunds'] as const)('should renew the leases of pending %s only', async (table) => {
    const pending: string[] = [];
    let settled: string;
    if (table === 'refunds') {
      const payment = await paid();
      pending.push((await insertRefund(a.test, payment.id, 1_000)).id, (await insertRefund(a.test, payment.id, 1_000)).id);
      const done = await insertRefund(a.test, payment.id, 1_000);
      await db.transaction((t) => refunds.move(t, 'succeed', { ...done, status: 'succeeded' }, null));
      settled = done.id;
    } else {
      // Payments the simulator settled at once, two of them put back to pending as a charging request leaves them.
      const rows = [await paid(), await paid(), await paid()];
      for (const p of rows.slice(0, 2)) await setLease('payments', p.id, 1_000, 'pending');
      await setLease('payments', rows[2].id, 1_000);
      pending.push(rows[0].id, rows[1].id);
      settled = rows[2].id;
    }
    const settledLease = await leaseOf(table, settled);
    // Business time has nothing to do with it.
    h.clock.advance(3_600_000);
    expect(await leases.renew(table, [...pending, settled], 20_000)).toEqual(new Set(pending));
    for (const id of pending) await expectLeaseFromNow(table, id, 20_000);
    expect(await leaseOf(table, settled)).toEqual(settledLease);
  });

  it('should not renew a lease that ran out or that recovery took: that row is no longer the process\'s', async () => {
    const payment = await paid();
    const held = await insertRefund(a.test, payment.id, 1_000);
    const lapsed = await insertRefund(a.test, payment.id, -1);
    const taken = await insertRefund(a.test, payment.id, 120_000); // recovery's claim (recoverRows)
    const before = [await leaseOf('refunds', lapsed.id), await leaseOf('refunds', taken.id)];
    const renewed = await leases.renew('refunds', [held.id, lapsed.id, taken.id], 10_000);
    expect(renewed).toEqual(new Set([held.id]));
    await expectLeaseFromNow('refunds', held.id, 10_000);
    expect([await leaseOf('refunds', lapsed.id), await leaseOf('refunds', taken.id)]).toEqual(before);
  });

  it('should give a pending row past its lease to exactly one of two concurrent claimers, and a fresh or settled row to none', async () => {
    const payment = await paid();
    const expired = await insertRefund(a.test, payment.id, -1_000);
    const fresh = await insertRefund(a.test, payment.id, 5_000);
    const settledRow = await insertRefund(a.test, payment.id, -1_000);
    await db.transaction((t) => refunds.move(t, 'succeed', { ...settledRow, status: 'succeeded' }, null));
    const freshLease = await leaseOf('refunds', fresh.id);
    // However far business time has moved, a lease not run out on the database's clock is not taken.
    h.clock.advance(3_600_000);
    const claims = await Promise.all([leases.claimPastLease('refunds', expired.id, 120_000), leases.claimPastLease('refunds', expired.id, 120_000)]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    await expectLeaseFromNow('refunds', expired.id, 120_000);
    expect(await leases.claimPastLease('refunds', fresh.id, 120_000)).toBe(false);
    expect(await leases.claimPastLease('refunds', settledRow.id, 120_000)).toBe(false);
    expect(await leaseOf('refunds', fresh.id)).toEqual(freshLease);
  });

  it('should claim past-lease payments in the payments table, not refunds with the same condition', async () => {
    const payment = await paid();
    await setLease('payments', payment.id, -1_000, 'pending');
    expect(await leases.claimPastLease('refunds', payment.id, 60_000)).toBe(false);
    const claims = await Promise.all([leases.claimPastLease('payments', payment.id, 60_000), leases.claimPastLease('payments', payment.id, 60_000)]);
    expect(claims.filter(Boolean)).toHaveLength(1);
    await expectLeaseFromNow('payments', payment.id, 60_000);
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
