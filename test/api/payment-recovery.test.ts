import { startTestApp, type TestApp } from '../helpers/app';
import { freshDatabase, type TestDatabase } from '../helpers/db';
import { FixedClock, ManualStopwatch } from '../../src/core/clock';
import { operationKey, simulatorChargeCount, simulatorState } from '../../src/connectors/simulator/simulator.state';
import { BUILTIN_SIMULATOR_ID } from '../../src/modules/gateways/gateway-config.service';
import { NOT_FOUND_FINAL_AFTER_MS } from '../../src/modules/payments/payment.service';
import { LEASE_MS } from '../../src/modules/payments/lease-keeper';
import { elapseDatabaseTime } from '../helpers/database-time';
import { otherInstance } from '../helpers/other-instance';
import { waitFor } from '../helpers/wait';

/** A GraphQL answer's text with its `extensions.cost.remaining` left out: the budget left is each request's own, a replay's too. */
const withoutBudget = (text: string) => text.replace(/("cost":\{"requested":\d+,"actual":\d+),"remaining":\d+\}/, '$1}');

let database: TestDatabase;
const clock = new FixedClock(new Date('2026-11-20T12:00:00.000Z'));
/** Leases and the ages recovery goes by are on the database's clock (LeaseStore): tests move it with this. */
const elapse = (app: TestApp, ms: number, ids?: string[]) => elapseDatabaseTime(app.server.services.db, ms, ids);

beforeAll(async () => {
  database = await freshDatabase();
});
afterAll(() => database.drop());

/**
 * The state a process leaves when it dies after the gateway answered, before the settling write
 * (`payments.finish` or `refunds.settle`): the object pending and its Idempotency-Key claimed but
 * unanswered. (The request here still gets its pending answer; what matters is that nothing was
 * stored for the key.)
 */
function dieBeforeSettling(app: TestApp, settling: 'payments' | 'refunds' = 'payments'): void {
  const services = app.server.services as unknown as Record<string, Record<string, unknown>>;
  services[settling][settling === 'payments' ? 'finish' : 'settle'] = async () => {
    throw new Error('process died after the gateway answered');
  };
  const keys = app.server.services.idempotency as unknown as { complete: (...a: unknown[]) => Promise<void>; answerIfRunning: (...a: unknown[]) => Promise<void> };
  keys.complete = async () => {
    throw new Error('process died before storing the response');
  };
  // A process that dies stores no answer, not even the pending one.
  keys.answerIfRunning = async () => undefined;
}

/** An Idempotency-Key's row, as recovery and retries leave it. */
const keyState = async (app: TestApp, idemKey: string) =>
  (await app.server.services.db.select<{ state: string; response_body: string | null; object_id: string | null }>(
    'SELECT state, response_body, object_id FROM idempotency_keys WHERE idempotency_key = $1', [idemKey],
  ))[0];

describe('crash safety of a charge', () => {
  it('should resolve a payment left pending after the charge by asking the gateway, without charging again', async () => {
    let app: TestApp = await startTestApp({ database, clock });
    const key = app.account.testKey;
    const service = app.server.services.payments as unknown as { finish: (...a: unknown[]) => Promise<unknown> };
    service.finish = async () => {
      throw new Error('process died after the gateway answered');
    };
    const crashed = await app.request('POST', '/v1/payments', { key, body: { amount: 2500, currency: 'usd', paymentMethod: 'pm_card_visa' } });
    // Never a 5xx once a gateway may have charged: a client retry would charge again.
    expect(crashed.status).toBe(201);
    expect(crashed.body.data.status).toBe('pending');
    const [row] = await app.server.services.db.select<{ id: string; status: string }>('SELECT id, status FROM payments WHERE amount = 2500');
    expect(row.status).toBe('pending');
    expect(simulatorChargeCount(BUILTIN_SIMULATOR_ID, `${row.id}_a1`)).toBe(1);
    await app.stop();

    // A new process on the same database: the recovery job finds the pending payment.
    app = await startTestApp({ database, clock });
    // Still inside the lease the creating request last wrote (moments ago on the database's
    // clock): recovery must not touch it yet, however far this instance's clock jumps.
    clock.advance(20 * 60_000);
    expect(await app.server.services.payments.recoverPending(clock.now())).toBe(0);
    await elapse(app, LEASE_MS);
    expect(await app.server.services.payments.recoverPending(clock.now())).toBe(1);
    const after = await app.server.services.db.select<{ status: string; gateway_id: string }>('SELECT status, gateway_id FROM payments WHERE id = $1', [row.id]);
    expect(after[0]).toMatchObject({ status: 'succeeded', gateway_id: BUILTIN_SIMULATOR_ID });
    expect(simulatorChargeCount(BUILTIN_SIMULATOR_ID, `${row.id}_a1`)).toBe(1);
    const events = await app.server.services.db.select<{ type: string }>("SELECT type FROM events WHERE type = 'payment.succeeded' AND data LIKE $1", [`%${row.id}%`]);
    expect(events).toHaveLength(1);
    await app.stop();
  });

  it('should fail a payment left pending before any charge reached the simulator as soon as its lease runs out', async () => {
    const app = await startTestApp({ database, clock });
    const service = app.server.services.payments as unknown as { chargeAlongPlan: (...a: unknown[]) => Promise<unknown> };
    service.chargeAlongPlan = async () => {
      throw new Error('process died before the gateway call');
    };
    const crashed = await app.request('POST', '/v1/payments', { key: app.account.testKey, body: { amount: 2600, currency: 'usd', paymentMethod: 'pm_card_visa' } });
    expect(crashed.status).toBe(201);
    expect(crashed.body.data.status).toBe('pending');
    const [row] = await app.server.services.db.select<{ id: string }>('SELECT id FROM payments WHERE amount = 2600');
    // The simulator records a charge before answering it, so its "not found" is final at once
    // (a gateway whose search lags, like Stripe's, is believed only for old payments).
    expect(await app.server.services.payments.recoverPending(clock.now())).toBe(0);
    expect((await app.server.services.db.select<{ status: string }>('SELECT status FROM payments WHERE id = $1', [row.id]))[0].status).toBe('pending');
    await elapse(app, LEASE_MS);
    expect(await app.server.services.payments.recoverPending(clock.now())).toBe(1);
    const [after] = await app.server.services.db.select<{ status: string; failure_code: string }>('SELECT status, failure_code FROM payments WHERE id = $1', [row.id]);
    expect(after.status).toBe('failed');
    expect(simulatorChargeCount(BUILTIN_SIMULATOR_ID, `${row.id}_a1`)).toBe(0);
    await app.stop();
  });

  it('should answer a retry of a request that died before settling with the payment recovery settled', async () => {
    let app = await startTestApp({ database, clock });
    const key = app.account.testKey;
    const body = { amount: 2910, currency: 'usd', paymentMethod: 'pm_card_visa' };
    const headers = { 'idempotency-key': 'died-before-settling' };
    dieBeforeSettling(app);
    const first = await app.request('POST', '/v1/payments', { key, body, headers });
    const id = first.body.data.id as string;
    expect((await keyState(app, 'died-before-settling')).state).toBe('running');
    await app.stop();

    app = await startTestApp({ database, clock });
    try {
      // Not settled yet: the key is still in use.
      const early = await app.request('POST', '/v1/payments', { key, body, headers });
      expect(early.status).toBe(409);
      expect(early.body.error.code).toBe('idempotency_key_in_use');
      await elapse(app, 6 * 60_000);
      expect(await app.server.services.payments.recoverPending(clock.now())).toBe(1);
      const retry = await app.request('POST', '/v1/payments', { key, body, headers });
      expect(retry.status).toBe(201);
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(retry.body.data).toMatchObject({ id, status: 'succeeded', amount: 2910 });
      // The stored answer is what the request itself would have sent: the payment as settled.
      expect(retry.body.data).toEqual((await app.request('GET', `/v1/payments/${id}`, { key })).body.data);
      expect(simulatorChargeCount(BUILTIN_SIMULATOR_ID, `${id}_a1`)).toBe(1);
      expect(await app.server.services.db.select('SELECT id FROM payments WHERE amount = 2910')).toHaveLength(1);
    } finally {
      await app.stop();
    }
  });

  it('should leave a key that was answered before recovery settled its payment as answered', async () => {
    const app = await startTestApp({ database, clock });
    try {
      const key = app.account.testKey;
      const body = { amount: 2920, currency: 'usd', paymentMethod: 'pm_card_visa' };
      const headers = { 'idempotency-key': 'answered-pending' };
      const payments = app.server.services.payments as unknown as { finish: (...a: unknown[]) => Promise<unknown> };
      const finish = payments.finish;
      payments.finish = async () => {
        throw new Error('settling write failed');
      };
      const first = await app.request('POST', '/v1/payments', { key, body, headers });
      expect(first.body.data.status).toBe('pending');
      payments.finish = finish;
      await elapse(app, 6 * 60_000);
      expect(await app.server.services.payments.recoverPending(clock.now())).toBe(1);
      // A replay is the first answer, byte for byte, as for any other key.
      const retry = await app.request('POST', '/v1/payments', { key, body, headers });
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(retry.text).toBe(first.text);
    } finally {
      await app.stop();
    }
  });

  it('should keep the answer recovery stored when the request it took over from finishes late', async () => {
    const app = await startTestApp({ database, clock });
    const other = otherInstance(app.server.services);
    let release: () => void = () => undefined;
    try {
      const key = app.account.testKey;
      const body = { amount: 2940, currency: 'usd', paymentMethod: 'pm_card_visa' };
      const headers = { 'idempotency-key': 'outlived-its-lease' };
      const payments = app.server.services.payments as unknown as { chargeAlongPlan: (...a: unknown[]) => Promise<unknown> };
      const chargeAlongPlan = payments.chargeAlongPlan;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      payments.chargeAlongPlan = async () => {
        await held; // stalled before any gateway call, far past its lease
        throw new Error('settling failed');
      };
      const live = app.request('POST', '/v1/payments', { key, body, headers });
      const row = await waitFor(async () => (await app.server.services.db.select<{ id: string }>('SELECT id FROM payments WHERE amount = 2940'))[0], {
        timeoutMs: 5_000, intervalMs: 10, what: 'the pending payment row',
      });
      // Its heartbeats stop getting through, long enough for another instance's recovery to take
      // over (this one's leaves its own requests' rows alone): the gateway never saw the charge,
      // so the payment failed.
      await elapse(app, NOT_FOUND_FINAL_AFTER_MS + 60_000, [row.id]);
      expect(await other.payments.recoverPending(clock.now())).toBe(1);
      const replayed = await app.request('POST', '/v1/payments', { key, body, headers });
      expect(replayed.body.data).toMatchObject({ id: row.id, status: 'failed' });
      release();
      const late = await live;
      expect(late.body.data.status).toBe('pending'); // what the stalled request knew
      // The key keeps the answer already given: a retry sees the same failed payment.
      const again = await app.request('POST', '/v1/payments', { key, body, headers });
      expect(again.text).toBe(replayed.text);
      payments.chargeAlongPlan = chargeAlongPlan;
    } finally {
      release();
      other.stop();
      await app.stop();
    }
  });

  it('should never store a settled payment as the answer of a later request that claimed the expired key', async () => {
    let app = await startTestApp({ database, clock });
    const key = app.account.testKey;
    const headers = { 'idempotency-key': 'expired-and-reclaimed' };
    dieBeforeSettling(app);
    // Nothing settles it for longer than the key lasts (24 hours): say the gateway could not tell.
    const old = await app.request('POST', '/v1/payments', { key, body: { amount: 2930, currency: 'usd', paymentMethod: 'pm_card_visa' }, headers });
    await app.stop();
    clock.advance(25 * 3_600_000);

    app = await startTestApp({ database, clock });
    dieBeforeSettling(app);
    const later = await app.request('POST', '/v1/payments', { key, body: { amount: 2931, currency: 'usd', paymentMethod: 'pm_card_visa' }, headers });
    expect(later.body.data.id).not.toBe(old.body.data.id);
    await app.stop();

    app = await startTestApp({ database, clock });
    try {
      // The old payment's lease ran out long ago; the later one's has not.
      await elapse(app, 25 * 3_600_000, [old.body.data.id]);
      expect(await app.server.services.payments.recoverPending(clock.now())).toBe(1);
      expect((await app.request('GET', `/v1/payments/${old.body.data.id}`, { key })).body.data.status).toBe('succeeded');
      expect((await keyState(app, 'expired-and-reclaimed')).state).toBe('running');
      await elapse(app, 6 * 60_000);
      expect(await app.server.services.payments.recoverPending(clock.now())).toBe(1);
      const retry = await app.request('POST', '/v1/payments', { key, body: { amount: 2931, currency: 'usd', paymentMethod: 'pm_card_visa' }, headers });
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(retry.body.data).toMatchObject({ id: later.body.data.id, status: 'succeeded', amount: 2931 });
    } finally {
      await app.stop();
    }
  });

  it('should call no gateway once the pending write has used up the lease, leaving the payment to recovery', async () => {
    const stopwatch = new ManualStopwatch();
    const app = await startTestApp({ database, clock, serviceOptions: { stopwatch } });
    const service = app.server.services.payments as unknown as { insertPending: (...a: unknown[]) => Promise<void> };
    const insertPending = service.insertPending.bind(service);
    service.insertPending = async (...args: unknown[]) => {
      await insertPending(...args);
      stopwatch.advance(2 * 60_000); // a stalled database or process: recovery could already own the row
    };
    try {
      const res = await app.request('POST', '/v1/payments', { key: app.account.testKey, body: { amount: 2700, currency: 'usd', paymentMethod: 'pm_card_visa' } });
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({ status: 'pending', attempts: [] });
      expect(simulatorChargeCount(BUILTIN_SIMULATOR_ID, `${res.body.data.id}_a1`)).toBe(0);
    } finally {
      await app.stop();
    }
  });

  it('should call no gateway for a refund once its pending write has used up the lease, leaving it to recovery', async () => {
    const stopwatch = new ManualStopwatch();
    const app = await startTestApp({ database, clock, serviceOptions: { stopwatch } });
    try {
      const key = app.account.testKey;
      const pay = await app.request('POST', '/v1/payments', { key, body: { amount: 2800, currency: 'usd', paymentMethod: 'pm_card_visa' } });
      expect(pay.body.data.status).toBe('succeeded');
      const gateways = app.server.services.gateways as unknown as { connector: (...a: unknown[]) => Promise<unknown> };
      const connector = gateways.connector.bind(gateways);
      gateways.connector = async (...args: unknown[]) => {
        stopwatch.advance(2 * 60_000); // stalled after the refund's pending write
        return connector(...args);
      };
      const refund = await app.request('POST', '/v1/refunds', { key, body: { paymentId: pay.body.data.id, amount: 800 } });
      expect(refund.status).toBe(201);
      expect(refund.body.data.status).toBe('pending');
      expect(simulatorState().operations.has(operationKey(BUILTIN_SIMULATOR_ID, refund.body.data.id))).toBe(false);
      // The amount stays reserved until recovery learns the refund was never made.
      expect((await app.request('GET', `/v1/payments/${pay.body.data.id}`, { key })).body.data.amountRefunded).toBe(800);
    } finally {
      await app.stop();
    }
  });
});

describe("crash safety of a refund's Idempotency-Key", () => {
  it('should answer a retry of a refund whose request died with the refund recovery settled, never refunding twice', async () => {
    let app = await startTestApp({ database, clock });
    const key = app.account.testKey;
    const pay = await app.request('POST', '/v1/payments', { key, body: { amount: 3100, currency: 'usd', paymentMethod: 'pm_card_visa' } });
    const paymentId = pay.body.data.id as string;
    const body = { paymentId, amount: 1000 };
    const headers = { 'idempotency-key': 'refund-died-before-settling' };
    dieBeforeSettling(app, 'refunds');
    const first = await app.request('POST', '/v1/refunds', { key, body, headers });
    const refundId = first.body.data.id as string;
    expect(await keyState(app, 'refund-died-before-settling')).toMatchObject({ state: 'running', object_id: refundId });
    await app.stop();

    app = await startTestApp({ database, clock });
    try {
      const early = await app.request('POST', '/v1/refunds', { key, body, headers });
      expect(early.status).toBe(409);
      expect(early.body.error.code).toBe('idempotency_key_in_use');
      await elapse(app, 6 * 60_000);
      // (An earlier test's refund may be settled in the same pass.)
      expect(await app.server.services.refunds.recoverPending(clock.now())).toBeGreaterThanOrEqual(1);
      const retry = await app.request('POST', '/v1/refunds', { key, body, headers });
      expect(retry.status).toBe(201);
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(retry.body.data).toMatchObject({ id: refundId, status: 'succeeded', amount: 1000 });
      expect(retry.body.data).toEqual((await app.request('GET', `/v1/refunds/${refundId}`, { key })).body.data);
      const payment = (await app.request('GET', `/v1/payments/${paymentId}`, { key })).body.data;
      expect(payment.amountRefunded).toBe(1000);
      expect(await app.server.services.db.select('SELECT id FROM refunds WHERE payment_id = $1', [paymentId])).toHaveLength(1);
    } finally {
      await app.stop();
    }
  });

  it('should answer the per-payment refund route from the key claimed with the reservation, byte for byte', async () => {
    const app = await startTestApp({ database, clock });
    try {
      const key = app.account.testKey;
      const pay = await app.request('POST', '/v1/payments', { key, body: { amount: 3200, currency: 'usd', paymentMethod: 'pm_card_visa' } });
      const paymentId = pay.body.data.id as string;
      const headers = { 'idempotency-key': 'per-payment-refund' };
      const first = await app.request('POST', `/v1/payments/${paymentId}/refunds`, { key, body: { amount: 700 }, headers });
      expect(first.status).toBe(201);
      expect(await keyState(app, 'per-payment-refund')).toMatchObject({ state: 'completed', object_id: first.body.data.id });
      const again = await app.request('POST', `/v1/payments/${paymentId}/refunds`, { key, body: { amount: 700 }, headers });
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.text).toBe(first.text);
      const reused = await app.request('POST', `/v1/payments/${paymentId}/refunds`, { key, body: { amount: 701 }, headers });
      expect(reused.status).toBe(409);
      expect(reused.body.error).toMatchObject({ code: 'idempotency_key_reused', param: 'Idempotency-Key' });
      // A refusal before anything was written leaves the key unused: the corrected retry runs.
      const refusedHeaders = { 'idempotency-key': 'refund-refused' };
      const refused = await app.request('POST', `/v1/payments/${paymentId}/refunds`, { key, body: { amount: 5000 }, headers: refusedHeaders });
      expect(refused.status).toBe(422);
      expect(refused.body.error.code).toBe('refund_exceeds_remaining');
      expect(await keyState(app, 'refund-refused')).toBeUndefined();
      const corrected = await app.request('POST', `/v1/payments/${paymentId}/refunds`, { key, body: { amount: 500 }, headers: refusedHeaders });
      expect(corrected.status).toBe(201);
      expect(corrected.headers['idempotent-replayed']).toBeUndefined();
      expect((await app.request('GET', `/v1/payments/${paymentId}`, { key })).body.data.amountRefunded).toBe(1200);
    } finally {
      await app.stop();
    }
  });

  // Every spelling the router sends to the refund handlers (it ignores case and a trailing slash).
  it.each([
    ['/v1/refunds', false], ['/v1/refunds/', false], ['/v1/Refunds', false],
    ['/v1/payments/{id}/refunds', true], ['/api/v1/payments/{id}/refunds/', true],
  ])('should keep the key of a refund that got a 5xx after its reservation at %s, so a retry cannot refund again', async (path, perPayment) => {
    const app = await startTestApp({ database, clock });
    try {
      const key = app.account.testKey;
      const pay = await app.request('POST', '/v1/payments', { key, body: { amount: 3300, currency: 'usd', paymentMethod: 'pm_card_visa' } });
      const paymentId = pay.body.data.id as string;
      const url = path.replace('{id}', paymentId);
      const body = perPayment ? { amount: 900 } : { paymentId, amount: 900 };
      const refunds = app.server.services.refunds as unknown as { execute: (...a: unknown[]) => Promise<unknown> };
      const execute = refunds.execute;
      refunds.execute = async () => {
        throw new Error('lost after the reservation');
      };
      const headers = { 'idempotency-key': `refund-5xx-${path}` };
      const failed = await app.request('POST', url, { key, body, headers });
      expect(failed.status).toBe(500);
      refunds.execute = execute;
      const retry = await app.request('POST', url, { key, body, headers });
      expect(retry.status).toBe(409);
      expect((await app.request('GET', `/v1/payments/${paymentId}`, { key })).body.data.amountRefunded).toBe(900);
      expect(await app.server.services.db.select('SELECT id FROM refunds WHERE payment_id = $1', [paymentId])).toHaveLength(1);
    } finally {
      await app.stop();
    }
  });
});

describe("crash safety of a GraphQL mutation's Idempotency-Key", () => {
  const createPayment = 'mutation Pay($input: CreatePaymentInput!) { createPayment(input: $input) { id status amount attempts { gateway outcome } } }';
  const refundPayment = 'mutation Refund($paymentId: ID!, $amount: SafeInt) { refundPayment(paymentId: $paymentId, amount: $amount) { id status amount paymentId } }';

  it('should answer a retry of a createPayment whose request died with the payment once settled, never charging twice', async () => {
    let app = await startTestApp({ database, clock });
    const key = app.account.testKey;
    const body = { query: createPayment, variables: { input: { amount: 2950, currency: 'usd', paymentMethod: 'pm_card_visa' } } };
    const headers = { 'idempotency-key': 'gql-died-before-settling' };
    dieBeforeSettling(app);
    const first = await app.request('POST', '/graphql', { key, body, headers });
    const id = first.body.data.createPayment.id as string;
    // The key names the payment it made, from the payment's own first write.
    expect(await keyState(app, 'gql-died-before-settling')).toMatchObject({ state: 'running', object_id: id });
    await app.stop();

    app = await startTestApp({ database, clock });
    try {
      // Still pending: its request may yet answer, so the key is in use.
      const early = await app.request('POST', '/graphql', { key, body, headers });
      expect(early.body.errors[0].extensions.code).toBe('idempotency_key_in_use');
      await elapse(app, 6 * 60_000);
      expect(await app.server.services.payments.recoverPending(clock.now())).toBeGreaterThanOrEqual(1);
      const retry = await app.request('POST', '/graphql', { key, body, headers });
      expect(retry.status).toBe(200);
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(retry.body.errors).toBeUndefined();
      expect(retry.body.data.createPayment).toEqual({ id, status: 'succeeded', amount: 2950, attempts: [{ gateway: BUILTIN_SIMULATOR_ID, outcome: 'succeeded' }] });
      expect(simulatorChargeCount(BUILTIN_SIMULATOR_ID, `${id}_a1`)).toBe(1);
      expect(await app.server.services.db.select('SELECT id FROM payments WHERE amount = 2950')).toHaveLength(1);
      // That answer is now the key's: later retries replay it byte for byte.
      expect(await keyState(app, 'gql-died-before-settling')).toMatchObject({ state: 'completed', object_id: id });
      const again = await app.request('POST', '/graphql', { key, body, headers });
      // The same answer; only the budget left (extensions.cost.remaining) is the replay's own.
      expect(withoutBudget(again.text)).toBe(withoutBudget(retry.text));
      // Another document under the key is still refused.
      const other = await app.request('POST', '/graphql', { key, body: { ...body, variables: { input: { ...body.variables.input, amount: 2951 } } }, headers });
      expect(other.body.errors[0].extensions.code).toBe('idempotency_key_reused');
    } finally {
      await app.stop();
    }
  });

  it('should answer a retry of a refundPayment whose request died with the refund once settled, never refunding twice', async () => {
    let app = await startTestApp({ database, clock });
    const key = app.account.testKey;
    const pay = await app.request('POST', '/v1/payments', { key, body: { amount: 3150, currency: 'usd', paymentMethod: 'pm_card_visa' } });
    const paymentId = pay.body.data.id as string;
    const body = { query: refundPayment, variables: { paymentId, amount: 1100 } };
    const headers = { 'idempotency-key': 'gql-refund-died' };
    dieBeforeSettling(app, 'refunds');
    const first = await app.request('POST', '/graphql', { key, body, headers });
    const refundId = first.body.data.refundPayment.id as string;
    expect(await keyState(app, 'gql-refund-died')).toMatchObject({ state: 'running', object_id: refundId });
    await app.stop();

    app = await startTestApp({ database, clock });
    try {
      expect((await app.request('POST', '/graphql', { key, body, headers })).body.errors[0].extensions.code).toBe('idempotency_key_in_use');
      await elapse(app, 6 * 60_000);
      expect(await app.server.services.refunds.recoverPending(clock.now())).toBeGreaterThanOrEqual(1);
      const retry = await app.request('POST', '/graphql', { key, body, headers });
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(retry.body.data.refundPayment).toEqual({ id: refundId, status: 'succeeded', amount: 1100, paymentId });
      expect((await app.request('GET', `/v1/payments/${paymentId}`, { key })).body.data.amountRefunded).toBe(1100);
      expect(await app.server.services.db.select('SELECT id FROM refunds WHERE payment_id = $1', [paymentId])).toHaveLength(1);
    } finally {
      await app.stop();
    }
  });

  it('should keep the key of a refundPayment that failed after its reservation, so a retry cannot refund again', async () => {
    const app = await startTestApp({ database, clock });
    try {
      const key = app.account.testKey;
      const pay = await app.request('POST', '/v1/payments', { key, body: { amount: 3350, currency: 'usd', paymentMethod: 'pm_card_visa' } });
      const paymentId = pay.body.data.id as string;
      const refunds = app.server.services.refunds as unknown as { execute: (...a: unknown[]) => Promise<unknown> };
      const execute = refunds.execute;
      refunds.execute = async () => {
        throw new Error('lost after the reservation');
      };
      const body = { query: refundPayment, variables: { paymentId, amount: 950 } };
      const headers = { 'idempotency-key': 'gql-refund-internal-error' };
      const failed = await app.request('POST', '/graphql', { key, body, headers });
      expect(failed.body.errors[0].extensions.code).toBe('internal_error');
      refunds.execute = execute;
      // The key was claimed with the reservation: the refund exists, so the key stays in use.
      const retry = await app.request('POST', '/graphql', { key, body, headers });
      expect(retry.body.errors[0].extensions.code).toBe('idempotency_key_in_use');
      expect((await app.request('GET', `/v1/payments/${paymentId}`, { key })).body.data.amountRefunded).toBe(950);
      expect(await app.server.services.db.select('SELECT id FROM refunds WHERE payment_id = $1', [paymentId])).toHaveLength(1);
    } finally {
      await app.stop();
    }
  });

  it('should never free a key that names an object, even when the request did not learn it was recorded', async () => {
    const app = await startTestApp({ database, clock });
    try {
      const key = app.account.testKey;
      const pay = await app.request('POST', '/v1/payments', { key, body: { amount: 3360, currency: 'usd', paymentMethod: 'pm_card_visa' } });
      const paymentId = pay.body.data.id as string;
      // The reservation committed but its reply was lost: the key names the refund, the request thinks not.
      const refunds = app.server.services.refunds as unknown as { reserve: (...a: unknown[]) => Promise<unknown> };
      const reserve = refunds.reserve;
      refunds.reserve = async function (this: unknown, ...a: unknown[]) {
        await reserve.apply(this, a);
        throw new Error('connection lost after COMMIT');
      };
      const body = { query: refundPayment, variables: { paymentId, amount: 960 } };
      const headers = { 'idempotency-key': 'gql-refund-record-reply-lost' };
      expect((await app.request('POST', '/graphql', { key, body, headers })).body.errors[0].extensions.code).toBe('internal_error');
      refunds.reserve = reserve;
      const retry = await app.request('POST', '/graphql', { key, body, headers });
      expect(retry.body.errors[0].extensions.code).toBe('idempotency_key_in_use');
      expect(await app.server.services.db.select('SELECT id FROM refunds WHERE payment_id = $1', [paymentId])).toHaveLength(1);
    } finally {
      await app.stop();
    }
  });

  it('should leave no key behind when a createPayment dies before its first write, so the retry simply runs', async () => {
    let app = await startTestApp({ database, clock });
    const key = app.account.testKey;
    const body = { query: createPayment, variables: { input: { amount: 2970, currency: 'usd', paymentMethod: 'pm_card_visa' } } };
    const headers = { 'idempotency-key': 'gql-died-before-writing' };
    // The process dies before the payment's first write, which is also the key's claim.
    const services = app.server.services as unknown as Record<string, Record<string, unknown>>;
    services.payments.insertPending = async () => {
      throw new Error('process died before the pending write');
    };
    await app.request('POST', '/graphql', { key, body, headers });
    expect(await keyState(app, 'gql-died-before-writing')).toBeUndefined();
    await app.stop();

    app = await startTestApp({ database, clock });
    try {
      const retry = await app.request('POST', '/graphql', { key, body, headers });
      expect(retry.body.errors).toBeUndefined();
      expect(retry.body.data.createPayment).toMatchObject({ status: 'succeeded', amount: 2970 });
      expect(retry.headers['idempotent-replayed']).toBeUndefined();
      expect(await keyState(app, 'gql-died-before-writing')).toMatchObject({ state: 'completed', object_id: retry.body.data.createPayment.id });
      const again = await app.request('POST', '/graphql', { key, body, headers });
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.data).toEqual(retry.body.data);
      expect(await app.server.services.db.select('SELECT id FROM payments WHERE amount = 2970')).toHaveLength(1);
    } finally {
      await app.stop();
    }
  });

  it('should leave a key that an earlier version left running without an object in use until it expires', async () => {
    const app = await startTestApp({ database, clock });
    try {
      const key = app.account.testKey;
      const body = { query: createPayment, variables: { input: { amount: 2980, currency: 'usd', paymentMethod: 'pm_card_visa' } } };
      const headers = { 'idempotency-key': 'gql-legacy-running' };
      // What the document-level claim of earlier versions left when its request died: it may
      // have made a payment it never recorded, so it is never taken over.
      const fingerprint = app.server.services.idempotency.fingerprint('POST', '/graphql createPayment', undefined, {});
      await app.server.services.db.execute(
        `INSERT INTO idempotency_keys (scope, idempotency_key, request_hash, object_id, state, created_at, expires_at) VALUES ($1, $2, 'legacy', NULL, 'running', $3, $4)`,
        [`${app.account.accountId}:test`, 'gql-legacy-running', clock.now(), new Date(clock.now().getTime() + 3_600_000)],
      );
      expect(fingerprint).not.toBe('legacy');
      const refused = await app.request('POST', '/graphql', { key, body, headers });
      expect(refused.body.errors[0].extensions.code).toBe('idempotency_key_in_use');
      expect(await app.server.services.db.select('SELECT id FROM payments WHERE amount = 2980')).toHaveLength(0);
      clock.advance(3_600_000);
      const later = await app.request('POST', '/graphql', { key, body, headers });
      expect(later.body.data.createPayment).toMatchObject({ status: 'succeeded', amount: 2980 });
    } finally {
      await app.stop();
    }
  });

  it('should give each mutation of a document its own key, so a retried document replays each and runs nothing twice', async () => {
    const app = await startTestApp({ database, clock });
    try {
      const key = app.account.testKey;
      const query = `mutation Both($input: CreatePaymentInput!) {
        pay: createPayment(input: $input) { id status amount }
        buyer: createCustomer(input: { email: "both-mutations@example.com" }) { id email }
      }`;
      const body = { query, variables: { input: { amount: 2990, currency: 'usd', paymentMethod: 'pm_card_visa' } } };
      const headers = { 'idempotency-key': 'gql-two-mutations' };
      const first = await app.request('POST', '/graphql', { key, body, headers });
      expect(first.body.errors).toBeUndefined();
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      const again = await app.request('POST', '/graphql', { key, body, headers });
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.data).toEqual(first.body.data);
      expect(await app.server.services.db.select('SELECT id FROM payments WHERE amount = 2990')).toHaveLength(1);
      expect((await app.request('GET', '/v1/customers?search=both-mutations', { key })).body.meta.total).toBe(1);
      expect(simulatorChargeCount(BUILTIN_SIMULATOR_ID, `${first.body.data.pay.id}_a1`)).toBe(1);
      // Other arguments under the same key are another request.
      const other = await app.request('POST', '/graphql', { key, body: { ...body, variables: { input: { ...body.variables.input, amount: 2991 } } }, headers });
      expect(other.body.errors.map((e: { extensions: { code: string } }) => e.extensions.code)).toContain('idempotency_key_reused');
    } finally {
      await app.stop();
    }
  });

  it('should not use up the key of a mutation refused by validation: the corrected mutation runs under it', async () => {
    const app = await startTestApp({ database, clock });
    try {
      const key = app.account.testKey;
      const create = (email: string) => app.request('POST', '/graphql', {
        key, headers: { 'idempotency-key': 'gql-validation' },
        body: { query: 'mutation($email: String!) { createCustomer(input: { email: $email }) { id email } }', variables: { email } },
      });
      const refused = await create('not-an-email');
      expect(refused.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'email' });
      expect(await keyState(app, 'gql-validation')).toBeUndefined();
      const created = await create('gql-validation@example.com');
      expect(created.body.data.createCustomer.email).toBe('gql-validation@example.com');
    } finally {
      await app.stop();
    }
  });
});
