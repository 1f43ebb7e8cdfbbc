import { randomBytes } from 'node:crypto';
import { newId } from '../../../src/core/ids';
import type { RequestContext } from '../../../src/core/context';
import type { ObjectClaim } from '../../../src/core/idempotency';
import { IdempotencyStore } from '../../../src/modules/idempotency/idempotency.store';
import { GatewayTransactionStore, type PendingTransaction } from '../../../src/modules/payments/gateway-transaction.store';
import { PaymentStore } from '../../../src/modules/payments/payment.store';
import type { Payment } from '../../../src/modules/payments/payment.types';
import { START, startServices, type ServiceHarness } from '../../helpers/services';
import { elapseDatabaseTime } from '../../helpers/database-time';

/**
 * PaymentStore's contract on both dialects (`npm test` runs this file on SQLite and on
 * PostgreSQL, where the writes go through the group-commit statement): the pending row claims
 * its key in the same write, settling happens once, with its event, gateway calls and the key's
 * answer.
 */
let h: ServiceHarness;
let store: PaymentStore;
let keys: IdempotencyStore;
let ctx: RequestContext;
beforeAll(async () => {
  h = await startServices();
  const s = h.services;
  keys = new IdempotencyStore(s.db, s.clock, 24);
  store = new PaymentStore(s.db, s.events, new GatewayTransactionStore(s.db), keys, s.logger);
  ctx = (await h.account()).test;
});
afterAll(() => h?.stop());

const payment = (over: Partial<Payment> = {}): Payment => ({
  id: newId('pay'), object: 'payment', livemode: false, customerId: null, amount: 500, currency: 'usd', originalCurrency: 'usd',
  originalAmount: null, exchangeRate: null, paymentMethod: 'pm_card_visa',
  paymentMethodDetails: { type: 'card', brand: 'visa', last4: '4242', expMonth: null, expYear: null, fingerprint: null },
  description: null, receiptEmail: null, metadata: {}, status: 'pending', failureCode: null, failureMessage: null, amountRefunded: 0, refunded: false,
  captureMethod: 'automatic', amountCapturable: 0, amountCaptured: 0, nextAction: null,
  gatewayId: null, attempts: [], invoiceId: null, subscriptionId: null, checkoutSessionId: null, paymentLinkId: null,
  createdAt: START.toISOString(), updatedAt: START.toISOString(), ...over,
});
const claim = (key: string, p: Payment): ObjectClaim => ({ scope: `${ctx.accountId}:${ctx.mode}`, key, fingerprint: 'f', status: 201, objectId: p.id });
const newKey = () => `k-${randomBytes(6).toString('hex')}`;
/** Business time, `seconds` after START. */
const at = (seconds: number) => new Date(START.getTime() + seconds * 1000);
/** A lease, from the database's now (negative: one that ran out that long ago). */
const LEASE = 60_000;
const call = (p: Payment, attempt: number): PendingTransaction => ({
  kind: 'charge', gatewayId: 'gw_test', gatewayType: 'simulator', attempt, idempotencyKey: `${p.id}_a${attempt}`,
  result: { outcome: 'succeeded', reference: `ref_${attempt}`, declineCode: null, message: null, latencyMs: 3, request: {}, response: {} },
});
const eventsFor = async (id: string) => (await h.services.events.list(ctx, { pageSize: 100 })).data.filter((e) => e.data.object.id === id);

describe('PaymentStore', () => {
  it('should insert a pending payment readable only in its account and mode', async () => {
    const p = payment({ description: 'Order 7' });
    expect(await store.insertPending(ctx, p, '["gw_test"]', LEASE, undefined)).toBe(true);
    expect(await store.find(ctx, p.id)).toEqual(p);
    expect(await store.find({ accountId: ctx.accountId, mode: 'live' }, p.id)).toBeNull();
    expect(await store.find({ accountId: 'acct_other', mode: 'test' }, p.id)).toBeNull();
  });

  it('should claim the key with the pending row: of two payments racing for one key, one is written', async () => {
    const key = newKey();
    const [a, b] = [payment(), payment()];
    const results = await Promise.all([a, b].map((p) => store.insertPending(ctx, p, '[]', LEASE, claim(key, p))));
    expect([...results].sort()).toEqual([false, true]);
    const winner = results[0] ? a : b;
    const loser = results[0] ? b : a;
    expect(await store.find(ctx, winner.id)).not.toBeNull();
    expect(await store.find(ctx, loser.id)).toBeNull();
    expect(await keys.read(claim(key, a).scope, key)).toMatchObject({ state: 'running' });
  });

  it('should settle once: the event, the key\'s answer and the outcome are the first settler\'s; every gateway call is kept', async () => {
    const key = newKey();
    const p = payment();
    await store.insertPending(ctx, p, '[]', LEASE, claim(key, p));
    const succeeded: Payment = { ...p, status: 'succeeded', gatewayId: 'gw_test', updatedAt: at(1).toISOString() };
    const failed: Payment = { ...p, status: 'failed', failureCode: 'card_declined', failureMessage: 'declined', updatedAt: at(2).toISOString() };
    expect(await store.settle(ctx, 'succeed', succeeded, [call(p, 1)], 'ref_1', claim(key, p))).toEqual(succeeded);
    // A late settler (recovery racing the request) gets the stored outcome and changes nothing.
    expect(await store.settle(ctx, 'fail', failed, [call(p, 2)], null, claim(key, p))).toEqual(succeeded);
    expect(await store.find(ctx, p.id)).toEqual(succeeded);
    expect((await eventsFor(p.id)).map((e) => [e.type, e.data.object.status])).toEqual([['payment.succeeded', 'succeeded']]);
    const stored = await keys.read(claim(key, p).scope, key);
    expect(stored).toMatchObject({ state: 'completed', responseStatus: 201 });
    expect(JSON.parse(stored!.responseBody!)).toEqual(succeeded);
    const calls = await new GatewayTransactionStore(h.services.db).list(ctx, { paymentId: p.id }, {});
    expect(calls.data.map((c) => c.attempt).sort()).toEqual([1, 2]);
  });

  it('should record no event for a payment settled as still pending', async () => {
    const p = payment();
    await store.insertPending(ctx, p, '[]', LEASE, undefined);
    await store.settle(ctx, 'leave_pending', { ...p, updatedAt: at(1).toISOString() }, [], null, undefined);
    expect(await eventsFor(p.id)).toEqual([]);
  });

  it('should hand recovery the pending payments whose lease ran out on the database\'s clock, oldest lease first, with how long they have been pending there', async () => {
    const expiredLater = payment();
    const expiredFirst = payment();
    const leased = payment();
    const settled = payment();
    await store.insertPending(ctx, expiredLater, '["gw_a","gw_b"]', -10_000, undefined);
    await store.insertPending(ctx, expiredFirst, '["gw_a"]', -20_000, undefined);
    await store.insertPending(ctx, leased, '[]', 600_000, undefined);
    await store.insertPending(ctx, settled, '[]', -30_000, undefined);
    await store.settle(ctx, 'fail', { ...settled, status: 'failed' }, [], null, undefined);
    const due = async () => (await store.pendingPastLease(100)).filter((r) => [expiredLater, expiredFirst, leased, settled].some((p) => p.id === r.id));
    expect((await due()).map((r) => r.id)).toEqual([expiredFirst.id, expiredLater.id]);
    expect((await due())[1]).toMatchObject({ accountId: ctx.accountId, plan: ['gw_a', 'gw_b'], idempotencyKey: null, payment: expiredLater });
    // Just written, on the database's clock, whatever the payments' createdAt (business time) says.
    expect((await due())[1].pendingMs).toBeLessThan(10_000);
    await elapseDatabaseTime(h.services.db, 16 * 60_000, [expiredLater.id]);
    const aged = (await due()).find((r) => r.id === expiredLater.id)!;
    expect(aged.pendingMs).toBeGreaterThanOrEqual(16 * 60_000);
    expect(aged.pendingMs).toBeLessThan(16 * 60_000 + 10_000);
  });

  it('should never drop a charge reported succeeded for a payment settled as failed: requires_review, its event, a warning', async () => {
    const key = newKey();
    const p = payment();
    await store.insertPending(ctx, p, '["gw_test"]', LEASE, claim(key, p));
    const failed: Payment = { ...p, status: 'failed', failureCode: 'processing_error', failureMessage: 'The payment was not completed.', updatedAt: at(1).toISOString() };
    expect(await store.settle(ctx, 'fail', failed, [], null, claim(key, p))).toEqual(failed);
    const attempt = { gateway: 'gw_test', outcome: 'succeeded', code: null, latency: 8000 };
    const succeeded: Payment = { ...p, status: 'succeeded', gatewayId: 'gw_test', attempts: [attempt], updatedAt: at(2).toISOString() };
    const review: Payment = { ...p, status: 'requires_review', gatewayId: 'gw_test', attempts: [attempt], updatedAt: at(2).toISOString() };
    h.clock.advance(1_000); // events list newest first
    const warned = jest.spyOn(h.services.logger, 'warn');
    try {
      expect(await store.settle(ctx, 'succeed', succeeded, [call(p, 1)], 'ref_1', claim(key, p))).toEqual(review);
      expect(warned).toHaveBeenCalledWith(expect.objectContaining({ paymentId: p.id, gatewayId: 'gw_test', reference: 'ref_1', recordedAs: 'failed' }), expect.stringMatching(/requires_review/));
    } finally {
      warned.mockRestore();
    }
    expect(await store.find(ctx, p.id)).toEqual(review);
    const [row] = await h.services.db.select<{ gateway_reference: string | null }>('SELECT gateway_reference FROM payments WHERE id = $1', [p.id]);
    expect(row.gateway_reference).toBe('ref_1');
    expect((await eventsFor(p.id)).map((e) => [e.type, e.data.object.status])).toEqual([['payment.requires_review', 'requires_review'], ['payment.failed', 'failed']]);
    // The key recovery answered with the failed payment answers with what it now is: a retry
    // told `failed` could charge the card again.
    expect(JSON.parse((await keys.read(claim(key, p).scope, key))!.responseBody!)).toEqual(review);
    // Reported again: nothing more changes.
    expect(await store.settle(ctx, 'succeed', { ...succeeded, updatedAt: at(3).toISOString() }, [], 'ref_1', claim(key, p))).toEqual(review);
    expect(await eventsFor(p.id)).toHaveLength(2);
  });

  it('should list a scope\'s payments by status and by search text', async () => {
    const scope = (await h.account()).test;
    const [a, b] = [payment({ description: 'Blue widget' }), payment({ description: 'Red widget' })];
    for (const p of [a, b]) await store.insertPending(scope, p, '[]', LEASE, undefined);
    await store.settle(scope, 'succeed', { ...b, status: 'succeeded' }, [], null, undefined);
    const base = { page: 1, pageSize: 10, sortField: 'createdAt' as const, sortDirection: 'desc' as const };
    expect((await store.list(scope, { ...base, status: ['succeeded'] })).data.map((p) => p.id)).toEqual([b.id]);
    expect((await store.list(scope, { ...base, search: 'BLUE' })).data.map((p) => p.id)).toEqual([a.id]);
    expect((await store.list(scope, base)).total).toBe(2);
  });
});
