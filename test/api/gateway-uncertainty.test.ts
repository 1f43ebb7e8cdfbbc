import { startTestApp, type TestApp } from '../helpers/app';
import { FakeStripe, StripeLikeBackend, type FakeHandler, type RecordedRequest } from '../connectors/fake-stripe';
import { STRIPE_CHARGE_REPLAY_WINDOW_MS } from '../../src/connectors/stripe/stripe.gateway';
import { simulatorChargeCount } from '../../src/connectors/simulator/simulator.state';
import { NOT_FOUND_FINAL_AFTER_MS, UNKNOWN_OUTCOME_REVIEW_AFTER_MS } from '../../src/modules/payments/payment.service';
import { elapseDatabaseTime } from '../helpers/database-time';

/**
 * When a gateway's answer is lost, the operation may have happened there. Nothing may then be
 * tried elsewhere (a second charge) or given back (a refund recorded failed) until the gateway
 * has said what happened. Stripe is the local fake; the simulator is the second gateway.
 */

const SECRET = 'sk_test_51FakeSecretKey';
let app: TestApp;
let fake: FakeStripe;
let backend: StripeLikeBackend;
let key: string;
let stripeId: string;
let simId: string;

const card = { number: '4242424242424242', expMonth: 12, expYear: 2034, cvc: '123' };
const rateLimited = { status: 429, body: { error: { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests' } } };

beforeAll(async () => {
  fake = await FakeStripe.start();
  app = await startTestApp({ env: { GATEWAY_ALLOW_PRIVATE_BASE_URL: 'true' }, serviceOptions: { gatewayCa: fake.ca, gatewayTimeoutMs: 300 } });
  key = (await app.createAccount()).testKey;
  stripeId = (await app.request('POST', '/v1/gateways', {
    key, body: { name: 'Stripe (fake)', type: 'stripe', credentials: { secretKey: SECRET }, settings: { baseUrl: fake.baseUrl } },
  })).body.data.id;
  simId = (await app.request('POST', '/v1/gateways', { key, body: { name: 'Simulator', type: 'simulator' } })).body.data.id;
});
afterAll(async () => {
  await app?.stop();
  await fake?.close();
});

beforeEach(() => {
  backend = new StripeLikeBackend(SECRET);
  fake.reset(backend.handle);
});

/**
 * As if `ms` passed on the database's clock for the payment or refund `id`, which recovery
 * measures leases and ages on; other tests' pending rows keep their age.
 */
const elapse = (ms: number, id: string) => elapseDatabaseTime(app.server.services.db, ms, [id]);
const recoverPayments = () => app.server.services.payments.recoverPending(new Date());
const recoverRefunds = () => app.server.services.refunds.recoverPending(new Date());

/** Stripe first, then the simulator, two attempts. */
async function routeStripeThenSimulator(): Promise<void> {
  const res = await app.request('PUT', '/v1/routing', {
    key, body: { rules: [{ name: 'stripe-first', strategy: 'priority', gateways: [{ gatewayId: stripeId }, { gatewayId: simId }] }], fallback: [], maxAttempts: 2 },
  });
  expect(res.status).toBe(200);
}

/** The n-th POST to `pathname` gets `answers[n]` (after Stripe processed it, unless said otherwise). */
function onPosts(pathname: string, answers: Array<(req: RecordedRequest) => ReturnType<FakeHandler>>): void {
  let n = 0;
  fake.reset((req) => {
    if (req.method === 'POST' && req.pathname === pathname && n < answers.length) return answers[n++](req);
    return backend.handle(req);
  });
}
const processedThen = (answer: ReturnType<FakeHandler>) => (req: RecordedRequest) => {
  backend.handle(req);
  return answer;
};

const intentsOf = (paymentId: string) =>
  [...backend.intents.values()].filter((i) => (i.metadata as Record<string, string>).payorch_payment_id === paymentId);

describe('a charge whose answer was lost', () => {
  it('should learn the outcome from the gateway, not fail over, when the repeat is rate limited', async () => {
    await routeStripeThenSimulator();
    onPosts('/v1/payment_intents', [processedThen('hang'), () => rateLimited]);
    const res = await app.request('POST', '/v1/payments', { key, body: { amount: 1500, currency: 'usd', paymentMethod: 'card', card } });
    expect(res.status).toBe(201);
    const p = res.body.data;
    expect(p).toMatchObject({ status: 'succeeded', gatewayId: stripeId });
    expect(p.attempts).toHaveLength(1);
    expect(intentsOf(p.id).map((i) => i.status)).toEqual(['succeeded']);
    expect(simulatorChargeCount(simId, `${p.id}_a2`)).toBe(0);
    const calls = (await app.request('GET', `/v1/payments/${p.id}/gateway-transactions`, { key })).body.data as Array<{ kind: string; outcome: string }>;
    // Newest first, ties (one operation's calls share a time) in reverse order of the calls.
    expect(calls.map((c) => `${c.kind}:${c.outcome}`)).toEqual(['status:succeeded', 'charge:retryable_error', 'charge:timeout']);
    const oldestFirst = (await app.request('GET', `/v1/payments/${p.id}/gateway-transactions?sortDirection=asc`, { key })).body.data as Array<{ kind: string; outcome: string; createdAt: string; updatedAt: string }>;
    expect(oldestFirst.map((c) => `${c.kind}:${c.outcome}`)).toEqual(['charge:timeout', 'charge:retryable_error', 'status:succeeded']);
    expect(oldestFirst[0].updatedAt).toBe(oldestFirst[0].createdAt);
  });

  it('should not fail over when the connection drops after Stripe had the request', async () => {
    await routeStripeThenSimulator();
    onPosts('/v1/payment_intents', [processedThen('reset')]);
    const res = await app.request('POST', '/v1/payments', { key, body: { amount: 1600, currency: 'usd', paymentMethod: 'card', card } });
    const p = res.body.data;
    // The repeat with the same key got Stripe's stored answer.
    expect(p).toMatchObject({ status: 'succeeded', gatewayId: stripeId });
    expect(intentsOf(p.id)).toHaveLength(1);
    expect(simulatorChargeCount(simId, `${p.id}_a2`)).toBe(0);
  });

  it('should stay pending, charging nowhere else, while the gateway cannot say', async () => {
    await routeStripeThenSimulator();
    onPosts('/v1/payment_intents', [processedThen('hang'), () => rateLimited]);
    fake.handler = ((inner) => (req: RecordedRequest) => (req.method === 'GET' ? rateLimited : inner(req)))(fake.handler);
    const res = await app.request('POST', '/v1/payments', { key, body: { amount: 1700, currency: 'usd', paymentMethod: 'card', card } });
    const p = res.body.data;
    expect(p.status).toBe('pending');
    expect(simulatorChargeCount(simId, `${p.id}_a2`)).toBe(0);
  });

  it('should move on to the next gateway when Stripe shows the charge failed without effect', async () => {
    await routeStripeThenSimulator();
    const failedIntent = (req: RecordedRequest) => {
      const k = String(req.headers['idempotency-key']);
      backend.intents.set(`pi_${k}`, {
        id: `pi_${k}`, object: 'payment_intent', amount: Number(req.form.amount), currency: req.form.currency, created: 1,
        metadata: { payorch_idempotency_key: k, payorch_payment_id: req.form['metadata[payorch_payment_id]'] }, status: 'requires_payment_method',
        last_payment_error: { type: 'card_error', code: 'processing_error', message: 'An error occurred while processing your card.' },
      });
      return 'hang' as const;
    };
    onPosts('/v1/payment_intents', [failedIntent, () => 'hang']);
    const res = await app.request('POST', '/v1/payments', { key, body: { amount: 1800, currency: 'usd', paymentMethod: 'card', card } });
    const p = res.body.data;
    expect(p).toMatchObject({ status: 'succeeded', gatewayId: simId });
    expect(p.attempts.map((a: { gateway: string; outcome: string }) => [a.gateway, a.outcome])).toEqual([[stripeId, 'retryable_error'], [simId, 'succeeded']]);
  });
});

describe('recovery of a charge', () => {
  it('should fail a payment whose Stripe charge failed without effect, instead of asking for ever', async () => {
    await app.request('PUT', '/v1/routing', { key, body: { rules: [], fallback: [stripeId], maxAttempts: 1 } });
    onPosts('/v1/payment_intents', [() => 'hang', () => 'hang']);
    const res = await app.request('POST', '/v1/payments', { key, body: { amount: 1900, currency: 'usd', paymentMethod: 'card', card } });
    const p = res.body.data;
    expect(p.status).toBe('pending'); // nothing found at Stripe yet
    const k = `${p.id}_a1`;
    backend.intents.set(`pi_${k}`, {
      id: `pi_${k}`, object: 'payment_intent', amount: 1900, currency: 'usd', created: 1,
      metadata: { payorch_idempotency_key: k, payorch_payment_id: p.id }, status: 'requires_payment_method',
      last_payment_error: { type: 'card_error', code: 'processing_error', message: 'An error occurred while processing your card.' },
    });
    fake.reset(backend.handle);
    // Soon after its lease, long before "not found" could be final: the gateway's answer is final.
    await elapse(5 * 60_000, p.id);
    expect(5 * 60_000).toBeLessThan(NOT_FOUND_FINAL_AFTER_MS);
    expect(await recoverPayments()).toBe(1);
    const after = (await app.request('GET', `/v1/payments/${p.id}`, { key })).body.data;
    expect(after).toMatchObject({ status: 'failed', failureCode: 'processing_error' });
  });
});

describe('a refund whose answer was lost', () => {
  it('should learn from Stripe that the refund was made, not record it failed, when the repeat is rate limited', async () => {
    await app.request('PUT', '/v1/routing', { key, body: { rules: [], fallback: [stripeId], maxAttempts: 1 } });
    const pay = (await app.request('POST', '/v1/payments', { key, body: { amount: 1000, currency: 'usd', paymentMethod: 'card', card } })).body.data;
    expect(pay.status).toBe('succeeded');
    onPosts('/v1/refunds', [processedThen('hang'), () => rateLimited]);
    const refund = await app.request('POST', '/v1/refunds', { key, body: { paymentId: pay.id, amount: 600 } });
    expect(refund.status).toBe(201);
    expect(refund.body.data.status).toBe('succeeded');
    const after = (await app.request('GET', `/v1/payments/${pay.id}`, { key })).body.data;
    expect(after.amountRefunded).toBe(600);
    expect([...backend.refunds.values()].map((r) => r.amount)).toEqual([600]);
  });

  it('should keep the refund pending, its amount reserved, while Stripe cannot say', async () => {
    await app.request('PUT', '/v1/routing', { key, body: { rules: [], fallback: [stripeId], maxAttempts: 1 } });
    const pay = (await app.request('POST', '/v1/payments', { key, body: { amount: 1000, currency: 'usd', paymentMethod: 'card', card } })).body.data;
    onPosts('/v1/refunds', [processedThen('hang'), () => rateLimited]);
    fake.handler = ((inner) => (req: RecordedRequest) => (req.method === 'GET' ? rateLimited : inner(req)))(fake.handler);
    const refund = await app.request('POST', '/v1/refunds', { key, body: { paymentId: pay.id, amount: 700 } });
    expect(refund.body.data.status).toBe('pending');
    expect((await app.request('GET', `/v1/payments/${pay.id}`, { key })).body.data.amountRefunded).toBe(700);
    // The rest is all that can still be refunded.
    const second = await app.request('POST', '/v1/refunds', { key, body: { paymentId: pay.id, amount: 400 } });
    expect(second.status).toBe(422);
    expect(second.body.error.code).toBe('refund_exceeds_remaining');
  });
});

describe('a refund Stripe accepted but has not settled', () => {
  async function pendingRefund(amount: number): Promise<{ pay: { id: string }; refund: { id: string; status: string } }> {
    await app.request('PUT', '/v1/routing', { key, body: { rules: [], fallback: [stripeId], maxAttempts: 1 } });
    const pay = (await app.request('POST', '/v1/payments', { key, body: { amount: 1000, currency: 'usd', paymentMethod: 'card', card } })).body.data;
    backend.refundStatus = 'pending';
    const res = await app.request('POST', '/v1/refunds', { key, body: { paymentId: pay.id, amount } });
    expect(res.status).toBe(201);
    return { pay, refund: res.body.data };
  }

  it('should stay pending with its amount reserved, then fail and give the amount back when Stripe fails it', async () => {
    const { pay, refund } = await pendingRefund(600);
    expect(refund.status).toBe('pending');
    expect((await app.request('GET', `/v1/payments/${pay.id}`, { key })).body.data.amountRefunded).toBe(600);
    // The reservation changed the payment, and said so, though the refund has not settled.
    const updates = () => app.request('GET', '/v1/events?type=payment.updated&pageSize=100', { key }).then((r) =>
      (r.body.data as Array<{ data: { object: { id: string; amountRefunded: number } } }>).filter((e) => e.data.object.id === pay.id).map((e) => e.data.object.amountRefunded));
    expect(await updates()).toEqual([600]);
    // Still pending at Stripe: recovery asks and leaves it. (Counts would include refunds other
    // tests left pending, so each refund is checked by its own status.)
    const refundLookups = () => fake.requests.filter((r) => r.method === 'GET' && r.pathname === '/v1/refunds').length;
    const lookupsBefore = refundLookups();
    await elapse(5 * 60_000, refund.id);
    await recoverRefunds();
    expect((await app.request('GET', `/v1/refunds/${refund.id}`, { key })).body.data.status).toBe('pending');
    // That look-up settled nothing, yet it is among the payment's gateway calls.
    expect(refundLookups()).toBeGreaterThan(lookupsBefore);
    const calls = (await app.request('GET', `/v1/payments/${pay.id}/gateway-transactions?pageSize=100&sortDirection=asc`, { key })).body.data as Array<{ kind: string; refundId: string | null; outcome: string }>;
    expect(calls.filter((c) => c.refundId === refund.id).map((c) => `${c.kind}:${c.outcome}`)).toEqual([
      'refund:timeout', 'refund:timeout', 'status:timeout', // the request: refund, its repeat, a look-up
      'status:timeout', // recovery's look-up
    ]);
    for (const r of backend.refunds.values()) r.status = 'failed';
    // Asked again once the two-minute pause after the last look has passed.
    await elapse(5 * 60_000, refund.id);
    await recoverRefunds();
    expect((await app.request('GET', `/v1/refunds/${refund.id}`, { key })).body.data).toMatchObject({ status: 'failed', failureCode: 'refund_failed' });
    expect((await app.request('GET', `/v1/payments/${pay.id}`, { key })).body.data.amountRefunded).toBe(0);
    expect(await updates()).toEqual([0, 600]); // newest first
  });

  it('should not fail a refund Stripe does not know of until it is old enough: its request may still be on its way', async () => {
    const { pay, refund } = await pendingRefund(300);
    // As if the refund request had not reached Stripe yet (its instance stalled past its lease).
    for (const [id, r] of backend.refunds) if (r.status === 'pending') backend.refunds.delete(id);
    await elapse(5 * 60_000, refund.id);
    await recoverRefunds();
    expect((await app.request('GET', `/v1/refunds/${refund.id}`, { key })).body.data.status).toBe('pending');
    expect((await app.request('GET', `/v1/payments/${pay.id}`, { key })).body.data.amountRefunded).toBe(300);
    await elapse(NOT_FOUND_FINAL_AFTER_MS - 4 * 60_000, refund.id); // pending for NOT_FOUND_FINAL_AFTER_MS and a minute
    await recoverRefunds();
    expect((await app.request('GET', `/v1/refunds/${refund.id}`, { key })).body.data).toMatchObject({ status: 'failed', failureCode: 'refund_failed' });
    expect((await app.request('GET', `/v1/payments/${pay.id}`, { key })).body.data.amountRefunded).toBe(0);
  });

  it('should succeed once Stripe settles it', async () => {
    const { pay, refund } = await pendingRefund(400);
    for (const r of backend.refunds.values()) r.status = 'succeeded';
    await elapse(5 * 60_000, refund.id);
    await recoverRefunds();
    expect((await app.request('GET', `/v1/refunds/${refund.id}`, { key })).body.data.status).toBe('succeeded');
    expect((await app.request('GET', `/v1/payments/${pay.id}`, { key })).body.data.amountRefunded).toBe(400);
  });
});

describe('a Stripe key that no longer works', () => {
  it('should move on to the next gateway: Stripe refused the key and did nothing', async () => {
    await routeStripeThenSimulator();
    fake.reset(new StripeLikeBackend('sk_test_rotated').handle);
    const res = await app.request('POST', '/v1/payments', { key, body: { amount: 1200, currency: 'usd', paymentMethod: 'card', card } });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ status: 'succeeded', gatewayId: simId });
    expect(res.body.data.attempts.map((a: { gateway: string; code: string | null }) => [a.gateway, a.code])).toEqual([[stripeId, 'gateway_unavailable'], [simId, null]]);
  });
});

describe('a charge Stripe refuses without creating anything', () => {
  it.each([
    ['an amount below its minimum', 'usd', 20],
    ['a KWD amount it cannot represent (not sent at all)', 'kwd', 1005],
  ])('should move on to the next gateway for %s', async (_what, currency, amount) => {
    await routeStripeThenSimulator();
    fake.reset((req) => (req.method === 'POST' && Number(req.form.amount) < 50
      ? { status: 400, body: { error: { type: 'invalid_request_error', code: 'amount_too_small', param: 'amount', message: 'Amount must be at least $0.50 usd' } } }
      : backend.handle(req)));
    const res = await app.request('POST', '/v1/payments', { key, body: { amount, currency, paymentMethod: 'card', card } });
    expect(res.body.data).toMatchObject({ status: 'succeeded', gatewayId: simId });
    expect(res.body.data.attempts.map((a: { gateway: string; outcome: string }) => [a.gateway, a.outcome])).toEqual([[stripeId, 'retryable_error'], [simId, 'succeeded']]);
    expect(backend.intents.size).toBe(0);
  });
});

describe('a Stripe decline, whatever its error body says', () => {
  it.each([
    ['no type', { status: 402, body: { error: { code: 'card_declined', message: 'Your card was declined.' } } }],
    ['a wrong type', { status: 402, body: { error: { type: 'invalid_request_error', code: 'card_declined', message: 'Your card was declined.' } } }],
    ['no body', { status: 402, rawBody: '' }],
  ])('should fail the payment on a 402 with %s and never try the next gateway', async (_what, answer) => {
    await routeStripeThenSimulator();
    fake.reset((req) => (req.method === 'POST' ? answer : backend.handle(req)));
    const res = await app.request('POST', '/v1/payments', { key, body: { amount: 1300, currency: 'usd', paymentMethod: 'card', card } });
    expect(res.body.data).toMatchObject({ status: 'failed', failureCode: 'card_declined' });
    expect(res.body.data.attempts.map((a: { gateway: string; outcome: string }) => [a.gateway, a.outcome])).toEqual([[stripeId, 'declined']]);
    expect(simulatorChargeCount(simId, `${res.body.data.id}_a2`)).toBe(0);
  });
});

describe('test tokens through Stripe', () => {
  it.each([
    ['pm_card_visa', 'succeeded', null],
    ['pm_card_declined', 'failed', 'card_declined'],
    ['pm_card_insufficient_funds', 'failed', 'insufficient_funds'],
  ])('should charge %s as Stripe test mode knows it', async (paymentMethod, status, failureCode) => {
    await routeStripeThenSimulator();
    const res = await app.request('POST', '/v1/payments', { key, body: { amount: 1400, currency: 'usd', paymentMethod } });
    expect(res.body.data).toMatchObject({ status, failureCode, gatewayId: stripeId });
    expect(res.body.data.attempts).toHaveLength(1);
  });
});

describe('the latency of an attempt', () => {
  it('should be the wall time of the attempt: a charge that timed out and its repeat', async () => {
    await routeStripeThenSimulator();
    onPosts('/v1/payment_intents', [processedThen('hang')]);
    const started = Date.now();
    const res = await app.request('POST', '/v1/payments', { key, body: { amount: 1500, currency: 'usd', paymentMethod: 'card', card } });
    const wallMs = Date.now() - started;
    expect(res.body.data).toMatchObject({ status: 'succeeded', gatewayId: stripeId });
    const [attempt] = res.body.data.attempts;
    // The gateway timeout is 300 ms; the repeat's replayed answer alone takes a few.
    expect(attempt.latency).toBeGreaterThanOrEqual(300);
    expect(attempt.latency).toBeLessThanOrEqual(wallMs);
  });
});

describe('recovery of a charge whose outcome stays unknown (search unavailable)', () => {
  const searchUnavailable = (inner: FakeHandler): FakeHandler => (req) =>
    (req.method === 'GET' ? { status: 503, body: { error: { type: 'api_error', message: 'Search is temporarily unavailable.' } } } : inner(req));
  const stripeOnly = () => app.request('PUT', '/v1/routing', { key, body: { rules: [], fallback: [stripeId], maxAttempts: 1 } });

  it('should learn the outcome by repeating the charge under its Idempotency-Key, charging once', async () => {
    await stripeOnly();
    onPosts('/v1/payment_intents', [processedThen('hang'), () => 'hang']);
    fake.handler = searchUnavailable(fake.handler);
    const res = await app.request('POST', '/v1/payments', { key, body: { amount: 2100, currency: 'usd', paymentMethod: 'pm_card_visa' } });
    const p = res.body.data;
    expect(p.status).toBe('pending');
    // Stripe now answers again, except its search.
    fake.reset(searchUnavailable(backend.handle));
    await elapse(5 * 60_000, p.id);
    await recoverPayments();
    const after = (await app.request('GET', `/v1/payments/${p.id}`, { key })).body.data;
    expect(after).toMatchObject({ status: 'succeeded', gatewayId: stripeId });
    // The repeat got the stored answer: one PaymentIntent made, under the attempt's key.
    expect(backend.chargeCounts.get(`${p.id}_a1`)).toBe(1);
    expect(intentsOf(p.id)).toHaveLength(1);
    const repeats = fake.requests.filter((r) => r.method === 'POST' && r.headers['idempotency-key'] === `${p.id}_a1`);
    expect(repeats).toHaveLength(1);
  });

  it('should not repeat the charge past the replay window, where Stripe would run it anew', async () => {
    await stripeOnly();
    // Neither call reached Stripe's processing: a repeat now would make the charge.
    onPosts('/v1/payment_intents', [() => 'hang', () => 'hang']);
    fake.handler = searchUnavailable(fake.handler);
    const p = (await app.request('POST', '/v1/payments', { key, body: { amount: 2300, currency: 'usd', paymentMethod: 'pm_card_visa' } })).body.data;
    expect(p.status).toBe('pending');
    fake.reset(searchUnavailable(backend.handle));
    await elapse(STRIPE_CHARGE_REPLAY_WINDOW_MS + 60_000, p.id);
    await recoverPayments();
    expect(fake.requests.filter((r) => r.method === 'POST')).toHaveLength(0);
    expect(backend.chargeCounts.get(`${p.id}_a1`)).toBeUndefined();
    expect((await app.request('GET', `/v1/payments/${p.id}`, { key })).body.data.status).toBe('pending');
  });

  it('should log each failed look with the payment id, then mark a raw-card payment requires_review after the bound and stop asking', async () => {
    await stripeOnly();
    onPosts('/v1/payment_intents', [processedThen('hang'), () => 'hang']);
    fake.handler = searchUnavailable(fake.handler);
    // The request dies before it stores any answer for its key: recovery's answer is the key's.
    const services = app.server.services as unknown as { payments: { finish: unknown }; idempotency: { answerIfRunning: unknown } };
    const { finish } = services.payments;
    const { answerIfRunning } = services.idempotency;
    services.payments.finish = async () => {
      throw new Error('process died after the gateway timed out');
    };
    services.idempotency.answerIfRunning = async () => undefined;
    const idemKey = `review-${Date.now()}`;
    let p: { id: string; createdAt: string; status: string };
    try {
      const res = await app.request('POST', '/v1/payments', { key, headers: { 'Idempotency-Key': idemKey }, body: { amount: 2200, currency: 'usd', paymentMethod: 'card', card } });
      p = res.body.data;
    } finally {
      services.payments.finish = finish;
      services.idempotency.answerIfRunning = answerIfRunning;
    }
    expect(p.status).toBe('pending');
    fake.reset(searchUnavailable(backend.handle));

    const logsBefore = app.logs.length;
    await elapse(5 * 60_000, p.id);
    await recoverPayments();
    expect((await app.request('GET', `/v1/payments/${p.id}`, { key })).body.data.status).toBe('pending');
    const warned = app.logs.slice(logsBefore).map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.paymentId === p.id);
    expect(warned).toEqual([expect.objectContaining({ level: 'warn', gatewayId: stripeId, via: 'status', reason: 'unavailable' })]);
    // A raw card cannot be charged again (its number was never stored): no repeat was sent.
    expect(fake.requests.filter((r) => r.method === 'POST')).toHaveLength(0);

    // Just inside the bound it is still asked about and left pending.
    await elapse(UNKNOWN_OUTCOME_REVIEW_AFTER_MS - 6 * 60_000, p.id); // pending for the bound less a minute
    await recoverPayments();
    expect((await app.request('GET', `/v1/payments/${p.id}`, { key })).body.data.status).toBe('pending');
    await elapse(6 * 60_000, p.id);
    await recoverPayments();
    const after = (await app.request('GET', `/v1/payments/${p.id}`, { key })).body.data;
    expect(after).toMatchObject({ status: 'requires_review', failureCode: null });
    const events = (await app.request('GET', '/v1/events?type=payment.requires_review&pageSize=100', { key })).body.data as Array<{ data: { object: { id: string; status: string } } }>;
    expect(events.filter((e) => e.data.object.id === p.id).map((e) => e.data.object.status)).toEqual(['requires_review']);
    const retry = await app.request('POST', '/v1/payments', { key, headers: { 'Idempotency-Key': idemKey }, body: { amount: 2200, currency: 'usd', paymentMethod: 'card', card } });
    expect(retry.status).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.body.data).toMatchObject({ id: p.id, status: 'requires_review' });
    const listed = (await app.request('GET', '/v1/payments?status=requires_review&pageSize=100', { key })).body.data as Array<{ id: string }>;
    expect(listed.map((x) => x.id)).toContain(p.id);

    // No longer asked about.
    fake.reset(searchUnavailable(backend.handle));
    await elapse(60 * 60_000, p.id);
    await recoverPayments();
    expect(fake.requests.filter((r) => (r.query.get('query') ?? '').includes(p.id))).toHaveLength(0);

    // Not refundable; its description and metadata can still be updated.
    const refund = await app.request('POST', '/v1/refunds', { key, body: { paymentId: p.id } });
    expect(refund.status).toBe(422);
    expect(refund.body.error.code).toBe('payment_not_refundable');
    const patched = await app.request('PATCH', `/v1/payments/${p.id}`, { key, body: { metadata: { checked: 'no' } } });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ status: 'requires_review', metadata: { checked: 'no' } });
  });
});

describe('the gateway transactions of a payment recovery could not settle', () => {
  it('should list every call the gateway saw, the inconclusive ones of recovery included', async () => {
    await app.request('PUT', '/v1/routing', { key, body: { rules: [], fallback: [stripeId], maxAttempts: 1 } });
    // Nothing reaches Stripe's processing: every charge times out, every search is answered 404.
    const notFound = { status: 404, body: { error: { type: 'invalid_request_error', message: 'Unrecognized request URL' } } };
    fake.reset((req) => (req.method === 'GET' ? notFound : 'hang'));
    const p = (await app.request('POST', '/v1/payments', { key, body: { amount: 2400, currency: 'usd', paymentMethod: 'pm_card_visa' } })).body.data;
    expect(p.status).toBe('pending');
    const chargeKey = `${p.id}_a1`;
    const seenByGateway = () => fake.requests.filter((r) => r.headers['idempotency-key'] === chargeKey || (r.query.get('query') ?? '').includes(chargeKey));
    const listed = async () => (await app.request('GET', `/v1/payments/${p.id}/gateway-transactions?pageSize=100&sortDirection=asc`, { key })).body.data as Array<{ kind: string; outcome: string }>;
    expect(seenByGateway()).toHaveLength(3); // the charge, its repeat, the look-up
    expect(await listed()).toHaveLength(3);

    // Two recovery rounds: each repeats the charge (a test token is rebuilt exactly) and looks it
    // up; none can tell, so the payment stays pending.
    await elapse(5 * 60_000, p.id);
    await recoverPayments();
    await elapse(3 * 60_000, p.id); // past recovery's two-minute claim
    await recoverPayments();
    expect((await app.request('GET', `/v1/payments/${p.id}`, { key })).body.data.status).toBe('pending');
    const calls = seenByGateway().map((r) => (r.method === 'POST' ? 'charge' : 'status'));
    expect(calls).toEqual(['charge', 'charge', 'status', 'charge', 'status', 'charge', 'status']);
    expect((await listed()).map((c) => c.kind)).toEqual(calls);
    expect((await listed()).slice(3).map((c) => c.outcome)).toEqual(['timeout', 'retryable_error', 'timeout', 'retryable_error']);
  });
});
