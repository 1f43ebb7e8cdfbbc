import { randomBytes } from 'node:crypto';
import { FixedClock } from '../../src/core/clock';
import { simulatorChargesAt } from '../../src/connectors/simulator/simulator.state';
import type { DeliveryLoop } from '../../src/modules/webhooks';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import type { HttpResponse } from '../helpers/http';
import { ReceiverHarness, makeCertificate, waitFor } from '../unit/webhooks/receiver-harness';

/**
 * `POST /v1/payments` with an Idempotency-Key, as a client sees it: what is answered, replayed or
 * refused, how many payments and gateway charges a key leads to, and which events and webhooks
 * follow. Nothing here reads how the key is stored or which statements write it, so the
 * idempotency protocol can be rebuilt underneath; the cost of the keyed path is measured by
 * bench/create-payment, which sends a fresh key with every request.
 */

const clock = new FixedClock(new Date('2026-11-01T10:00:00.000Z'));
let app: TestApp;
let rx: ReceiverHarness;
let deliveries: DeliveryLoop;

beforeAll(async () => {
  const tls = await makeCertificate();
  rx = new ReceiverHarness(tls);
  await rx.start();
  app = await startTestApp({
    clock,
    env: { WEBHOOK_CA_FILE: tls.caFile },
    serviceOptions: { webhooks: { pollMs: 50, timeoutMs: 2000 } },
  });
  // Only the delivery loop: no cron job (recovery, purges) acts behind the tests' backs.
  deliveries = app.server.services.webhooks.startDeliveryLoop();
});
afterAll(async () => {
  await deliveries?.stop();
  await app?.stop();
  await rx?.stop();
});

const BODY = { amount: 1999, currency: 'usd', paymentMethod: 'pm_card_visa' };
const DECLINED = { amount: 1999, currency: 'usd', paymentMethod: 'pm_card_declined' };
const BUILTIN = 'gw_builtin_simulator';

/** A key no other test (or earlier run) uses. */
const newKey = (label: string) => `pi-${label}-${randomBytes(6).toString('hex')}`;

/** Each test pays from its own account, so counts through the API start from zero. */
const freshKey = async () => (await app.createAccount()).testKey;

const pay = (key: string, idem: string | undefined, body: unknown = BODY): Promise<HttpResponse> =>
  app.request('POST', '/v1/payments', { key, body, headers: idem === undefined ? {} : { 'Idempotency-Key': idem } });

/** The account's payments, as `GET /v1/payments` lists them. */
async function paymentsOf(key: string): Promise<Array<{ id: string; status: string }>> {
  const res = await app.request('GET', '/v1/payments?pageSize=100', { key });
  expect(res.status).toBe(200);
  return res.body.data;
}

/** Charges the simulator gateway actually ran (its own count; idempotent repeats excluded). */
function chargesAt(gatewayId: string): number {
  return simulatorChargesAt(gatewayId);
}

/** A GraphQL answer's text with its `extensions.cost.remaining` left out: the budget left is each request's own, a replay's too. */
const withoutBudget = (text: string) => text.replace(/("cost":\{"requested":\d+,"actual":\d+),"remaining":\d+\}/, '$1}');

function expectReplayOf(res: HttpResponse, first: HttpResponse): void {
  expect(res.status).toBe(first.status);
  expect(res.headers['idempotent-replayed']).toBe('true');
  expect(withoutBudget(res.text)).toBe(withoutBudget(first.text));
}

function expectRefused(res: HttpResponse, code: 'idempotency_key_reused' | 'idempotency_key_in_use'): void {
  expect(res.status).toBe(409);
  expect(res.headers['idempotent-replayed']).toBeUndefined();
  expect(res.body.data).toBeNull();
  expect(res.body.error).toMatchObject({ code, param: 'Idempotency-Key' });
}

/** An account whose payments go through a simulator answering after `latencyMs`. */
async function slowAccount(latencyMs: number): Promise<{ key: string; gatewayId: string }> {
  const key = await freshKey();
  const gw = await app.request('POST', '/v1/gateways', { key, body: { name: 'Slow', type: 'simulator', settings: { latencyMs } } });
  expect(gw.status).toBe(201);
  const routing = await app.request('PUT', '/v1/routing', { key, body: { rules: [], fallback: [gw.body.data.id], maxAttempts: 1 } });
  expect(routing.status).toBe(200);
  return { key, gatewayId: gw.body.data.id };
}

/** Waits until the account has a payment pending at its gateway (its request holds the key by then). */
async function pendingPayment(key: string): Promise<{ id: string }> {
  return waitFor(async () => (await app.request('GET', '/v1/payments?status=pending', { key })).body.data[0], 10_000, 'a pending payment');
}

describe('POST /v1/payments with an Idempotency-Key: replay', () => {
  it('should replay a succeeded payment byte for byte with Idempotent-Replayed, charging once', async () => {
    const key = await freshKey();
    const idem = newKey('replay');
    const charges = chargesAt(BUILTIN);
    const first = await pay(key, idem);
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(first.body.data.status).toBe('succeeded');
    expect(first.body.data.id).toMatch(/^pay_/);

    // The same JSON with its keys in another order is the same request.
    const again = await pay(key, idem, { paymentMethod: 'pm_card_visa', currency: 'usd', amount: 1999 });
    expectReplayOf(again, first);
    expect(await paymentsOf(key)).toEqual([expect.objectContaining({ id: first.body.data.id })]);
    expect(chargesAt(BUILTIN)).toBe(charges + 1);
  });

  it('should answer the first request with the same payment the API then returns, in the REST envelope', async () => {
    const key = await freshKey();
    const first = await pay(key, newKey('faithful'));
    expect(first.status).toBe(201);
    const read = await app.request('GET', `/v1/payments/${first.body.data.id}`, { key });
    expect(read.status).toBe(200);
    expect(first.body.data).toEqual(read.body.data);
    // The envelope a route sends for { data, error: null }: those two keys, in that order.
    expect(first.text).toBe(JSON.stringify({ data: first.body.data, error: null }));
  });

  it('should replay a declined payment (201 failed) byte for byte, charging once', async () => {
    const key = await freshKey();
    const idem = newKey('declined');
    const charges = chargesAt(BUILTIN);
    const first = await pay(key, idem, DECLINED);
    expect(first.status).toBe(201);
    expect(first.body.data).toMatchObject({ status: 'failed', failureCode: 'card_declined' });
    const again = await pay(key, idem, DECLINED);
    expectReplayOf(again, first);
    expect(await paymentsOf(key)).toHaveLength(1);
    expect(chargesAt(BUILTIN)).toBe(charges + 1);
  });

  it('should replay the answer as first sent, not the payment as it is now', async () => {
    const key = await freshKey();
    const idem = newKey('as-sent');
    const first = await pay(key, idem, { ...BODY, description: 'first' });
    expect(first.status).toBe(201);
    const patched = await app.request('PATCH', `/v1/payments/${first.body.data.id}`, { key, body: { description: 'changed since' } });
    expect(patched.status).toBe(200);
    expect(patched.body.data.description).toBe('changed since');
    const again = await pay(key, idem, { ...BODY, description: 'first' });
    expectReplayOf(again, first);
  });
});

describe('POST /v1/payments with an Idempotency-Key: conflicts', () => {
  it('should create exactly one payment and one gateway charge from 10 concurrent first uses of a key', async () => {
    const key = await freshKey();
    const idem = newKey('concurrent');
    const charges = chargesAt(BUILTIN);
    const results = await Promise.all(Array.from({ length: 10 }, () => pay(key, idem)));
    const created = results.filter((r) => r.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    for (const r of results) {
      if (r.status === 201) expect(r.text).toBe(created[0].text);
      else expectRefused(r, 'idempotency_key_in_use');
    }
    // One request made the payment; any other 201 is its replay.
    expect(created.filter((r) => r.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
    expect(await paymentsOf(key)).toEqual([expect.objectContaining({ id: created[0].body.data.id })]);
    expect(chargesAt(BUILTIN)).toBe(charges + 1);
    // Once the first has finished, every retry is a replay.
    expectReplayOf(await pay(key, idem), created[0]);
  });

  it('should refuse the key with 409 idempotency_key_in_use while its first request runs, then replay it', async () => {
    const { key, gatewayId } = await slowAccount(800);
    const idem = newKey('in-use');
    const running = pay(key, idem);
    await pendingPayment(key);
    expectRefused(await pay(key, idem), 'idempotency_key_in_use');
    // Another request under that key is refused as a reuse, running or not.
    expectRefused(await pay(key, idem, { ...BODY, amount: 2999 }), 'idempotency_key_reused');
    const first = await running;
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(first.body.data.status).toBe('succeeded');
    expectReplayOf(await pay(key, idem), first);
    expect(await paymentsOf(key)).toHaveLength(1);
    expect(chargesAt(gatewayId)).toBe(1);
  });

  it('should refuse the same key with a different body with 409 idempotency_key_reused and change nothing', async () => {
    const key = await freshKey();
    const idem = newKey('reused');
    const first = await pay(key, idem);
    expect(first.status).toBe(201);
    const charges = chargesAt(BUILTIN);
    expectRefused(await pay(key, idem, { ...BODY, amount: 2999 }), 'idempotency_key_reused');
    expectRefused(await pay(key, idem, DECLINED), 'idempotency_key_reused');
    expect(await paymentsOf(key)).toHaveLength(1);
    expect(chargesAt(BUILTIN)).toBe(charges);
    // The first answer still stands.
    expectReplayOf(await pay(key, idem), first);
  });

  it('should not share keys between accounts or modes', async () => {
    const a = await app.createAccount();
    const b = await freshKey();
    const idem = newKey('scoped');
    const first = await pay(a.testKey, idem);
    expect(first.status).toBe(201);
    const other = await pay(b, idem);
    expect(other.status).toBe(201);
    expect(other.headers['idempotent-replayed']).toBeUndefined();
    expect(other.body.data.id).not.toBe(first.body.data.id);
    // Live mode has no gateway here: its own answer, not the test-mode payment.
    const live = await pay(a.liveKey, idem, { ...BODY, paymentMethod: 'card', card: { number: '4242424242424242', expMonth: 12, expYear: 2034, cvc: '123' } });
    expect(live.status).toBe(422);
    expect(live.headers['idempotent-replayed']).toBeUndefined();
  });

  it('should not use up a key on a body refused by validation: the corrected retry charges once', async () => {
    const key = await freshKey();
    const idem = newKey('invalid');
    const invalid = { ...BODY, amount: -5 };
    const first = await pay(key, idem, invalid);
    expect(first.status).toBe(400);
    expect(first.body.error).toMatchObject({ code: 'invalid_parameter', param: 'amount' });
    expect(await paymentsOf(key)).toHaveLength(0);
    const fixed = await pay(key, idem, BODY);
    expect(fixed.status).toBe(201);
    expect(fixed.headers['idempotent-replayed']).toBeUndefined();
    expectReplayOf(await pay(key, idem, BODY), fixed);
    expect(await paymentsOf(key)).toHaveLength(1);
  });

  it('should not use up a key on a 422 no_gateway_available, which wrote nothing', async () => {
    const account = await app.createAccount();
    const idem = newKey('no-gateway');
    const live = { amount: 300, currency: 'usd', paymentMethod: 'card', card: { number: '4242424242424242', expMonth: 12, expYear: 2034, cvc: '123' } };
    const first = await pay(account.liveKey, idem, live);
    expect(first.status).toBe(422);
    expect(first.body.error.code).toBe('no_gateway_available');
    const again = await pay(account.liveKey, idem, live);
    expect(again.status).toBe(422);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
  });

  it('should leave the key free when the payment could not be written, so a retry creates it', async () => {
    const key = await freshKey();
    const idem = newKey('write-failed');
    const body = { ...BODY, amount: 4107 };
    const charges = chargesAt(BUILTIN);
    await refusePaymentsOf(4107);
    let failed: HttpResponse;
    try {
      failed = await pay(key, idem, body);
    } finally {
      await allowPaymentsAgain();
    }
    expect(failed.status).toBe(500);
    expect(failed.body.error.code).toBe('internal_error');
    expect(await paymentsOf(key)).toHaveLength(0);
    expect(chargesAt(BUILTIN)).toBe(charges);

    const retried = await pay(key, idem, body);
    expect(retried.status).toBe(201);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    expect(retried.body.data.status).toBe('succeeded');
    expect(await paymentsOf(key)).toHaveLength(1);
    expect(chargesAt(BUILTIN)).toBe(charges + 1);
    expectReplayOf(await pay(key, idem, body), retried);
  });
});

describe('GraphQL createPayment with an Idempotency-Key', () => {
  const mutation = 'mutation($input: CreatePaymentInput!) { createPayment(input: $input) { id status amount } }';
  const gql = (key: string, idem: string) =>
    app.request('POST', '/graphql', { key, body: { query: mutation, variables: { input: BODY } }, headers: { 'Idempotency-Key': idem } });

  it('should replay the same payment for the same key, charging once', async () => {
    const key = await freshKey();
    const idem = newKey('graphql');
    const charges = chargesAt(BUILTIN);
    const first = await gql(key, idem);
    expect(first.status).toBe(200);
    expect(first.body.errors).toBeUndefined();
    expect(first.body.data.createPayment).toMatchObject({ status: 'succeeded', amount: 1999 });
    expectReplayOf(await gql(key, idem), first);
    expect(await paymentsOf(key)).toEqual([expect.objectContaining({ id: first.body.data.createPayment.id })]);
    expect(chargesAt(BUILTIN)).toBe(charges + 1);
  });
});

describe('events and webhooks of a keyed payment', () => {
  it('should record one event and send one webhook per settled payment, none for its replays', async () => {
    const key = await freshKey();
    const route = rx.route(`keyed-${randomBytes(4).toString('hex')}`);
    const endpoint = await app.request('POST', '/v1/webhook-endpoints', {
      key,
      body: { url: route.url, events: ['payment.succeeded', 'payment.failed'] },
    });
    expect(endpoint.status).toBe(201);
    route.setSecret(endpoint.body.data.secret);

    const answers: Record<string, HttpResponse> = {};
    for (const [body, type, status] of [[BODY, 'payment.succeeded', 'succeeded'], [DECLINED, 'payment.failed', 'failed']] as const) {
      const idem = newKey('events');
      const res = await pay(key, idem, body);
      expect(res.status).toBe(201);
      expect(res.body.data.status).toBe(status);
      answers[type] = res;
      expectReplayOf(await pay(key, idem, body), res);
      expectReplayOf(await pay(key, idem, body), res);
    }

    const events = await app.request('GET', '/v1/events?pageSize=100', { key });
    const paymentEvents = (events.body.data as Array<{ id: string; type: string; data: { object: unknown } }>).filter((e) => e.type.startsWith('payment.'));
    expect(paymentEvents.map((e) => e.type).sort()).toEqual(['payment.failed', 'payment.succeeded']);
    for (const e of paymentEvents) expect(e.data.object).toEqual(answers[e.type].body.data);

    await waitFor(() => route.verified.length >= 2, 10_000, 'two webhook deliveries');
    // One delivery queued per event (queued with it, in its transaction), and none still due or
    // in flight: a wrongly queued second one would be here, and would have arrived.
    const db = app.server.services.db;
    await waitFor(async () => {
      const [{ n }] = await db.select<{ n: number | string }>(
        "SELECT COUNT(*) AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND (status = 'pending' OR lock_token IS NOT NULL)", [endpoint.body.data.id],
      );
      return Number(n) === 0;
    }, 10_000, 'every delivery to settle');
    const queued = await db.select<{ event_id: string }>('SELECT event_id FROM webhook_deliveries WHERE endpoint_id = $1', [endpoint.body.data.id]);
    expect(queued.map((d) => d.event_id).sort()).toEqual(paymentEvents.map((e) => e.id).sort());
    expect(route.verified.map((v) => v.eventId).sort()).toEqual(paymentEvents.map((e) => e.id).sort());
    for (const v of route.verified) {
      expect(v.duplicate).toBe(false);
      expect(v.event.data.object).toEqual(answers[v.event.type].body.data);
    }
  });
});

describe('an expired Idempotency-Key', () => {
  // Last in the file: it moves the shared clock past the retention window.
  it('should take a new payment under an expired key, and replay that one from then on', async () => {
    const key = await freshKey();
    const idem = newKey('expired');
    const first = await pay(key, idem);
    expect(first.status).toBe(201);
    clock.advance(app.config.idempotencyTtlHours * 3_600_000 - 60_000);
    expectReplayOf(await pay(key, idem), first);

    clock.advance(2 * 60_000);
    const second = await pay(key, idem);
    expect(second.status).toBe(201);
    expect(second.headers['idempotent-replayed']).toBeUndefined();
    expect(second.body.data.id).not.toBe(first.body.data.id);
    expect((await paymentsOf(key)).map((p) => p.id).sort()).toEqual([first.body.data.id, second.body.data.id].sort());
    // The earlier payment is untouched.
    expect((await app.request('GET', `/v1/payments/${first.body.data.id}`, { key })).body.data).toEqual(first.body.data);
    expectReplayOf(await pay(key, idem), second);
  });
});

/** A database-level refusal of one amount's payment row, whatever statement writes it. */
async function refusePaymentsOf(amount: number): Promise<void> {
  const db = app.server.services.db;
  if (DIALECT === 'postgres') {
    await db.execute(`CREATE OR REPLACE FUNCTION test_refuse_payment() RETURNS trigger AS $$
      BEGIN RAISE EXCEPTION 'payment refused by the test'; END $$ LANGUAGE plpgsql`);
    await db.execute(`CREATE TRIGGER test_refuse_payment BEFORE INSERT ON payments FOR EACH ROW
      WHEN (NEW.amount = ${amount}) EXECUTE FUNCTION test_refuse_payment()`);
  } else {
    await db.execute(`CREATE TRIGGER test_refuse_payment BEFORE INSERT ON payments WHEN NEW.amount = ${amount}
      BEGIN SELECT RAISE(ABORT, 'payment refused by the test'); END`);
  }
}

async function allowPaymentsAgain(): Promise<void> {
  await app.server.services.db.execute(DIALECT === 'postgres' ? 'DROP TRIGGER test_refuse_payment ON payments' : 'DROP TRIGGER test_refuse_payment');
}
