import { startTestApp, type TestApp } from '../helpers/app';
import { FakeStripe, StripeLikeBackend, type FakeHandler, type RecordedRequest } from '../gateways/fake-stripe';
import { simulatorChargeCount } from '../../src/gateways/simulator/simulator.state';
import { NOT_FOUND_FINAL_AFTER_MS } from '../../src/modules/payments/payment.service';

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
  app = await startTestApp({ serviceOptions: { gatewayCa: fake.ca, gatewayTimeoutMs: 300 } });
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
    expect(p.attempts.map((a: { gatewayId: string; outcome: string }) => [a.gatewayId, a.outcome])).toEqual([[stripeId, 'retryable_error'], [simId, 'succeeded']]);
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
    // Soon after its lease: the gateway's answer is final, whatever the payment's age.
    const soon = new Date(Date.now() + 5 * 60_000);
    expect(soon.getTime() - Date.parse(p.createdAt)).toBeLessThan(NOT_FOUND_FINAL_AFTER_MS);
    expect(await app.server.services.payments.recoverPending(soon)).toBe(1);
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
  const afterLease = () => new Date(Date.now() + 5 * 60_000);

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
    await app.server.services.refunds.recoverPending(afterLease());
    expect((await app.request('GET', `/v1/refunds/${refund.id}`, { key })).body.data.status).toBe('pending');
    for (const r of backend.refunds.values()) r.status = 'failed';
    // Asked again once the two-minute pause after the last look has passed.
    await app.server.services.refunds.recoverPending(new Date(Date.now() + 10 * 60_000));
    expect((await app.request('GET', `/v1/refunds/${refund.id}`, { key })).body.data).toMatchObject({ status: 'failed', failureCode: 'refund_failed' });
    expect((await app.request('GET', `/v1/payments/${pay.id}`, { key })).body.data.amountRefunded).toBe(0);
    expect(await updates()).toEqual([0, 600]); // newest first
  });

  it('should succeed once Stripe settles it', async () => {
    const { pay, refund } = await pendingRefund(400);
    for (const r of backend.refunds.values()) r.status = 'succeeded';
    await app.server.services.refunds.recoverPending(afterLease());
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
    expect(res.body.data.attempts.map((a: { gatewayId: string; code: string | null }) => [a.gatewayId, a.code])).toEqual([[stripeId, 'gateway_unavailable'], [simId, null]]);
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
    expect(res.body.data.attempts.map((a: { gatewayId: string; outcome: string }) => [a.gatewayId, a.outcome])).toEqual([[stripeId, 'retryable_error'], [simId, 'succeeded']]);
    expect(backend.intents.size).toBe(0);
  });
});
