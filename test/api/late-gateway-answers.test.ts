import { FixedClock } from '../../src/core/clock';
import { readTime } from '../../src/db/database';
import type { LeaseKeeper } from '../../src/modules/payments/lease-keeper';
import { NOT_FOUND_FINAL_AFTER_MS } from '../../src/modules/payments/payment.service';
import { startTestApp, type TestApp } from '../helpers/app';
import { elapseDatabaseTime } from '../helpers/database-time';
import { otherInstance } from '../helpers/other-instance';
import { waitFor } from '../helpers/wait';
import { FakeStripe, StripeLikeBackend, type RecordedRequest } from '../connectors/fake-stripe';

/**
 * A gateway that answers late, after it has made the charge or the refund, while its search
 * does not show it yet (Stripe's index trails writes). Recovery must neither take the operation
 * from the request still waiting for that answer because this instance's clock (or the
 * database's) jumped, nor drop the answer when another instance settled the operation meanwhile,
 * nor leave the operation's Idempotency-Key replaying the `failed` it gave then.
 */

const SECRET = 'sk_test_51FakeSecretKey';
/** Short leases, renewed four times each: the late answers below outlast several. */
const LEASE_MS = 1_000;
/** The service's clock, which the tests jump forward. */
const clock = new FixedClock(new Date());
let app: TestApp;
let fake: FakeStripe;
let backend: StripeLikeBackend;
let key: string;
let stripeId: string;
/** Recovery on another instance of the same database (this process's own never takes a row its requests hold). */
let other: ReturnType<typeof otherInstance>;

beforeAll(async () => {
  fake = await FakeStripe.start();
  app = await startTestApp({ clock, env: { GATEWAY_ALLOW_PRIVATE_BASE_URL: 'true' }, serviceOptions: { gatewayCa: fake.ca, gatewayTimeoutMs: 20_000, leaseMs: LEASE_MS } });
  key = app.account.testKey;
  stripeId = (await app.request('POST', '/v1/gateways', {
    key, body: { name: 'Stripe (fake)', type: 'stripe', credentials: { secretKey: SECRET }, settings: { baseUrl: fake.baseUrl } },
  })).body.data.id;
  expect((await app.request('PUT', '/v1/routing', { key, body: { rules: [], fallback: [stripeId], maxAttempts: 1 } })).status).toBe(200);
  other = otherInstance(app.server.services);
});
afterAll(async () => {
  other?.stop();
  await app?.stop();
  await fake?.close();
});

beforeEach(() => {
  backend = new StripeLikeBackend(SECRET);
  fake.reset(backend.handle);
});

/** The row's lease end and the database's now, both read on the database's clock. */
async function leaseOf(table: 'payments' | 'refunds', id: string): Promise<{ until: number; now: number }> {
  const db = app.server.services.db;
  const [row] = await db.select<{ until: unknown; now: unknown }>(`SELECT lease_until AS until, ${db.nowSql} AS now FROM ${table} WHERE id = $1`, [id]);
  return { until: readTime(row.until)!.getTime(), now: readTime(row.now)!.getTime() };
}

/**
 * Returns once the database's clock is past the end of the row's lease as it stands now (so past
 * the lease as first written): from then on, only heartbeats have kept the row leased.
 */
async function outliveLease(table: 'payments' | 'refunds', id: string): Promise<void> {
  const { until } = await leaseOf(table, id);
  await waitFor(async () => (await leaseOf(table, id)).now > until, { timeoutMs: 10 * LEASE_MS, intervalMs: 50, what: `the database's clock past the lease of ${id}` });
}

/**
 * One heartbeat of this process's leases, run to its end after the caller's change: one already
 * under way (perhaps started before it) is waited for, then a whole one runs. The same beat its
 * timer runs every LEASE_MS / 4.
 */
async function heartbeat(): Promise<void> {
  const leases = (app.server.services.payments as unknown as { leases: LeaseKeeper }).leases;
  await leases.beat();
  await leases.beat();
}

/**
 * The next POST to `pathname` is made at once (the backend records it) and answered only when
 * `answer()` is called; until then Stripe's search and refund list do not show it.
 */
function answeringLate(pathname: string) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let seen: RecordedRequest | undefined;
  let sawIt!: (req: RecordedRequest) => void;
  const arrived = new Promise<RecordedRequest>((resolve) => (sawIt = resolve));
  let answered = false;
  let lookups = 0;
  fake.reset(async (req) => {
    if (req.method === 'POST' && req.pathname === pathname && !seen) {
      seen = req;
      sawIt(req);
      const answer = backend.handle(req);
      await released;
      return answer;
    }
    if (req.method === 'GET' && !answered) {
      lookups++;
      return { status: 200, body: { object: req.pathname.endsWith('/search') ? 'search_result' : 'list', data: [], has_more: false } };
    }
    return backend.handle(req);
  });
  return {
    /** The POST as the gateway got it (rejects after 5 s without it). */
    async received(): Promise<RecordedRequest> {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no POST ${pathname} reached the gateway within 5 s`)), 5_000);
      });
      try {
        return await Promise.race([arrived, timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    answer(): void {
      answered = true;
      release();
    },
    /** The look-ups (search, refund list) made before the answer: recovery's questions. */
    lookups: () => lookups,
  };
}

const events = async (type: string, id: string) =>
  ((await app.request('GET', `/v1/events?type=${type}&pageSize=100`, { key })).body.data as Array<{ data: { object: { id: string; status: string; amountRefunded?: number } } }>)
    .filter((e) => e.data.object.id === id).map((e) => e.data.object);
const warnings = (from: number) => app.logs.slice(from).map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.level === 'warn');

async function succeededPayment(amount: number): Promise<{ id: string }> {
  const pay = (await app.request('POST', '/v1/payments', { key, body: { amount, currency: 'usd', paymentMethod: 'pm_card_visa' } })).body.data;
  expect(pay).toMatchObject({ status: 'succeeded', gatewayId: stripeId });
  return pay;
}

describe('a late gateway answer while the service clock jumps forward', () => {
  it('should settle the payment as the gateway answers: recovery does not take it over on a jumped clock', async () => {
    const late = answeringLate('/v1/payment_intents');
    const pending = app.request('POST', '/v1/payments', { key, body: { amount: 3100, currency: 'usd', paymentMethod: 'pm_card_visa' } });
    const paymentId = (await late.received()).form['metadata[payorch_payment_id]'];
    clock.advance(16 * 60_000);
    // Now, and after the lease as first written would have run out: heartbeats keep it, on the
    // database's clock, and the payment has been pending for a few seconds there, not 16 minutes.
    await app.server.services.payments.recoverPending(clock.now());
    await outliveLease('payments', paymentId);
    await app.server.services.payments.recoverPending(clock.now());
    expect((await app.request('GET', `/v1/payments/${paymentId}`, { key })).body.data.status).toBe('pending');
    late.answer();
    const res = await pending;
    expect(res.body.data).toMatchObject({ id: paymentId, status: 'succeeded', gatewayId: stripeId, failureCode: null });
    expect((await app.request('GET', `/v1/payments/${paymentId}`, { key })).body.data.status).toBe('succeeded');
    expect(await events('payment.failed', paymentId)).toEqual([]);
    expect(backend.chargeCounts.get(`${paymentId}_a1`)).toBe(1);
  });

  it('should settle a full refund as the gateway answers, its amount kept: recovery does not fail it on a jumped clock', async () => {
    const pay = await succeededPayment(3200);
    const late = answeringLate('/v1/refunds');
    const pending = app.request('POST', '/v1/refunds', { key, body: { paymentId: pay.id } });
    const refundId = String((await late.received()).headers['idempotency-key']);
    clock.advance(16 * 60_000);
    await app.server.services.refunds.recoverPending(clock.now());
    await outliveLease('refunds', refundId);
    await app.server.services.refunds.recoverPending(clock.now());
    expect((await app.request('GET', `/v1/refunds/${refundId}`, { key })).body.data.status).toBe('pending');
    late.answer();
    const res = await pending;
    expect(res.body.data).toMatchObject({ id: refundId, status: 'succeeded', amount: 3200 });
    expect(await events('refund.failed', refundId)).toEqual([]);
    expect((await app.request('GET', `/v1/payments/${pay.id}`, { key })).body.data).toMatchObject({ amountRefunded: 3200, refunded: true });
  });
});

describe('a late gateway success for an operation recovery already settled otherwise', () => {
  it('should move the payment from failed to requires_review, with its event and a warning, never dropping the charge', async () => {
    const late = answeringLate('/v1/payment_intents');
    const pending = app.request('POST', '/v1/payments', { key, body: { amount: 3300, currency: 'usd', paymentMethod: 'pm_card_visa' } });
    const paymentId = (await late.received()).form['metadata[payorch_payment_id]'];
    // The request's heartbeats stop getting through for longer than "not found" takes to be
    // final: another instance's recovery takes over, finds nothing at the gateway yet and fails
    // the payment.
    await elapseDatabaseTime(app.server.services.db, NOT_FOUND_FINAL_AFTER_MS + 60_000, [paymentId]);
    expect(await other.payments.recoverPending(clock.now())).toBe(1);
    expect((await app.request('GET', `/v1/payments/${paymentId}`, { key })).body.data).toMatchObject({ status: 'failed', failureCode: 'processing_error' });
    const logsBefore = app.logs.length;
    clock.advance(1_000);
    late.answer();
    const res = await pending;
    const review = { id: paymentId, status: 'requires_review', gatewayId: stripeId, failureCode: null, failureMessage: null };
    expect(res.body.data).toMatchObject(review);
    const after = (await app.request('GET', `/v1/payments/${paymentId}`, { key })).body.data;
    expect(after).toMatchObject(review);
    expect(after.attempts.map((a: { outcome: string }) => a.outcome)).toEqual(['succeeded']);
    expect(await events('payment.requires_review', paymentId)).toEqual([expect.objectContaining(review)]);
    expect(warnings(logsBefore)).toEqual([expect.objectContaining({ paymentId, gatewayId: stripeId, recordedAs: 'failed', reference: expect.stringMatching(/^pi_/) })]);
    // Listed with the others that need a look; not refundable until someone has.
    const listed = (await app.request('GET', '/v1/payments?status=requires_review&pageSize=100', { key })).body.data as Array<{ id: string }>;
    expect(listed.map((p) => p.id)).toContain(paymentId);
    expect((await app.request('POST', '/v1/refunds', { key, body: { paymentId } })).body.error.code).toBe('payment_not_refundable');
  });

  it('should move a full refund from failed to requires_review and count its amount again, so it cannot be refunded twice', async () => {
    const pay = await succeededPayment(3400);
    const late = answeringLate('/v1/refunds');
    const pending = app.request('POST', '/v1/refunds', { key, body: { paymentId: pay.id } });
    const refundId = String((await late.received()).headers['idempotency-key']);
    await elapseDatabaseTime(app.server.services.db, NOT_FOUND_FINAL_AFTER_MS + 60_000, [refundId]);
    clock.advance(1_000); // events list newest first
    expect(await other.refunds.recoverPending(clock.now())).toBe(1);
    expect((await app.request('GET', `/v1/refunds/${refundId}`, { key })).body.data).toMatchObject({ status: 'failed', failureCode: 'refund_failed' });
    expect((await app.request('GET', `/v1/payments/${pay.id}`, { key })).body.data.amountRefunded).toBe(0);
    const logsBefore = app.logs.length;
    clock.advance(1_000);
    late.answer();
    const res = await pending;
    const review = { id: refundId, status: 'requires_review', amount: 3400, failureCode: null, failureMessage: null };
    expect(res.body.data).toMatchObject(review);
    expect((await app.request('GET', `/v1/refunds/${refundId}`, { key })).body.data).toMatchObject(review);
    expect(await events('refund.requires_review', refundId)).toEqual([expect.objectContaining(review)]);
    // The payment said so: the amount back, then taken again.
    expect((await events('payment.updated', pay.id)).map((p) => p.amountRefunded)).toEqual([3400, 0, 3400]);
    expect((await app.request('GET', `/v1/payments/${pay.id}`, { key })).body.data).toMatchObject({ amountRefunded: 3400, refunded: true });
    expect(warnings(logsBefore)).toEqual([expect.objectContaining({ refundId, paymentId: pay.id, amount: 3400, recordedAs: 'failed' })]);
    const again = await app.request('POST', '/v1/refunds', { key, body: { paymentId: pay.id } });
    expect(again.status).toBe(422);
    expect(again.body.error.code).toBe('payment_not_refundable');
    expect([...backend.refunds.values()].map((r) => r.amount)).toEqual([3400]);
    const listed = (await app.request('GET', '/v1/refunds?status=requires_review', { key })).body.data as Array<{ id: string }>;
    expect(listed.map((r) => r.id)).toEqual([refundId]);
  });
});

describe('a retry with the Idempotency-Key after a late gateway success', () => {
  it('should replay the payment as requires_review once the late success is in, never the failed answer recovery gave', async () => {
    const body = { amount: 3500, currency: 'usd', paymentMethod: 'pm_card_visa' };
    const headers = { 'idempotency-key': 'late-success-payment' };
    const late = answeringLate('/v1/payment_intents');
    const pending = app.request('POST', '/v1/payments', { key, body, headers });
    const paymentId = (await late.received()).form['metadata[payorch_payment_id]'];
    await elapseDatabaseTime(app.server.services.db, NOT_FOUND_FINAL_AFTER_MS + 60_000, [paymentId]);
    expect(await other.payments.recoverPending(clock.now())).toBe(1);
    // Recovery answered the key with the payment it failed.
    const told = await app.request('POST', '/v1/payments', { key, body, headers });
    expect(told.headers['idempotent-replayed']).toBe('true');
    expect(told.body.data).toMatchObject({ id: paymentId, status: 'failed' });
    clock.advance(1_000);
    late.answer();
    const res = await pending;
    expect(res.body.data).toMatchObject({ id: paymentId, status: 'requires_review', gatewayId: stripeId });
    // The card was charged: a retry told `failed` could lead its client to charge it again.
    const retry = await app.request('POST', '/v1/payments', { key, body, headers });
    expect(retry.status).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.text).toBe(res.text);
    expect(backend.chargeCounts.get(`${paymentId}_a1`)).toBe(1);
  });

  it('should replay the refund as requires_review once the late success is in, never the failed answer recovery gave', async () => {
    const pay = await succeededPayment(3600);
    const body = { paymentId: pay.id };
    const headers = { 'idempotency-key': 'late-success-refund' };
    const late = answeringLate('/v1/refunds');
    const pending = app.request('POST', '/v1/refunds', { key, body, headers });
    const refundId = String((await late.received()).headers['idempotency-key']);
    await elapseDatabaseTime(app.server.services.db, NOT_FOUND_FINAL_AFTER_MS + 60_000, [refundId]);
    expect(await other.refunds.recoverPending(clock.now())).toBe(1);
    const told = await app.request('POST', '/v1/refunds', { key, body, headers });
    expect(told.headers['idempotent-replayed']).toBe('true');
    expect(told.body.data).toMatchObject({ id: refundId, status: 'failed' });
    clock.advance(1_000);
    late.answer();
    const res = await pending;
    expect(res.body.data).toMatchObject({ id: refundId, status: 'requires_review', amount: 3600 });
    const retry = await app.request('POST', '/v1/refunds', { key, body, headers });
    expect(retry.status).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.text).toBe(res.text);
    expect([...backend.refunds.values()].filter((r) => r.amount === 3600)).toHaveLength(1);
  });
});

describe('recovery on the instance whose own request is still waiting for the gateway', () => {
  // The database's clock is the host's on SQLite: a jump of it (an NTP step, a VM resumed) runs
  // every lease out at once, and makes every pending row look old enough for "not found" to be
  // final. Moving the row's database times back stands for that jump.
  const jump = (id: string) => elapseDatabaseTime(app.server.services.db, NOT_FOUND_FINAL_AFTER_MS + 60_000, [id]);

  it('should leave a payment its request holds to that request, however run out its lease looks', async () => {
    const late = answeringLate('/v1/payment_intents');
    const pending = app.request('POST', '/v1/payments', { key, body: { amount: 3700, currency: 'usd', paymentMethod: 'pm_card_visa' } });
    const paymentId = (await late.received()).form['metadata[payorch_payment_id]'];
    await jump(paymentId);
    // A heartbeat comes and goes (it renews no lease that ran out) before recovery runs.
    await heartbeat();
    expect(await app.server.services.payments.recoverPending(clock.now())).toBe(0);
    expect((await app.request('GET', `/v1/payments/${paymentId}`, { key })).body.data.status).toBe('pending');
    expect(late.lookups()).toBe(0);
    late.answer();
    const res = await pending;
    expect(res.body.data).toMatchObject({ id: paymentId, status: 'succeeded', gatewayId: stripeId });
    expect((await app.request('GET', `/v1/payments/${paymentId}`, { key })).body.data.status).toBe('succeeded');
    expect(await events('payment.failed', paymentId)).toEqual([]);
    expect(backend.chargeCounts.get(`${paymentId}_a1`)).toBe(1);
  });

  it('should leave a refund its request holds to that request, its amount never given back', async () => {
    const pay = await succeededPayment(3800);
    const late = answeringLate('/v1/refunds');
    const pending = app.request('POST', '/v1/refunds', { key, body: { paymentId: pay.id } });
    const refundId = String((await late.received()).headers['idempotency-key']);
    await jump(refundId);
    await heartbeat();
    expect(await app.server.services.refunds.recoverPending(clock.now())).toBe(0);
    expect((await app.request('GET', `/v1/refunds/${refundId}`, { key })).body.data.status).toBe('pending');
    expect(late.lookups()).toBe(0);
    late.answer();
    const res = await pending;
    expect(res.body.data).toMatchObject({ id: refundId, status: 'succeeded', amount: 3800 });
    expect(await events('refund.failed', refundId)).toEqual([]);
    expect((await events('payment.updated', pay.id)).map((p) => p.amountRefunded)).toEqual([3800]);
    expect((await app.request('GET', `/v1/payments/${pay.id}`, { key })).body.data).toMatchObject({ amountRefunded: 3800, refunded: true });
  });
});

describe('a pending row an earlier version wrote without pending_since', () => {
  /** As an instance from before migration 0011 leaves it: no `pending_since`, and a `created_at` on its own (business) clock, years back. */
  const writtenByAnEarlierVersion = async (table: 'payments' | 'refunds', id: string) => {
    await elapseDatabaseTime(app.server.services.db, 60_000, [id]); // its lease ran out (its heartbeats stopped)
    await app.server.services.db.execute(`UPDATE ${table} SET pending_since = NULL, created_at = $1 WHERE id = $2`, [new Date('2019-03-04T05:06:07.000Z'), id]);
  };
  const pendingSince = async (table: string, id: string) =>
    (await app.server.services.db.select<{ s: unknown }>(`SELECT pending_since AS s FROM ${table} WHERE id = $1`, [id]))[0].s;

  it('should count a payment as pending since recovery first saw it, never from its created_at: "not found" is not final at once', async () => {
    const late = answeringLate('/v1/payment_intents');
    const pending = app.request('POST', '/v1/payments', { key, body: { amount: 3900, currency: 'usd', paymentMethod: 'pm_card_visa' } });
    const paymentId = (await late.received()).form['metadata[payorch_payment_id]'];
    await writtenByAnEarlierVersion('payments', paymentId);
    expect(await other.payments.recoverPending(clock.now())).toBe(0);
    expect(late.lookups()).toBeGreaterThan(0); // asked, and the gateway's search did not show it yet
    expect((await app.request('GET', `/v1/payments/${paymentId}`, { key })).body.data.status).toBe('pending');
    expect(await pendingSince('payments', paymentId)).not.toBeNull(); // dated as first seen
    late.answer();
    expect((await pending).body.data).toMatchObject({ id: paymentId, status: 'succeeded' });
    expect(await events('payment.failed', paymentId)).toEqual([]);
  });

  it('should count a refund as pending since recovery first saw it, never from its created_at: its amount is not given back at once', async () => {
    const pay = await succeededPayment(4000);
    const late = answeringLate('/v1/refunds');
    const pending = app.request('POST', '/v1/refunds', { key, body: { paymentId: pay.id } });
    const refundId = String((await late.received()).headers['idempotency-key']);
    await writtenByAnEarlierVersion('refunds', refundId);
    expect(await other.refunds.recoverPending(clock.now())).toBe(0);
    expect(late.lookups()).toBeGreaterThan(0);
    expect((await app.request('GET', `/v1/refunds/${refundId}`, { key })).body.data.status).toBe('pending');
    expect(await pendingSince('refunds', refundId)).not.toBeNull();
    late.answer();
    expect((await pending).body.data).toMatchObject({ id: refundId, status: 'succeeded' });
    expect(await events('refund.failed', refundId)).toEqual([]);
    expect((await app.request('GET', `/v1/payments/${pay.id}`, { key })).body.data.amountRefunded).toBe(4000);
  });
});
