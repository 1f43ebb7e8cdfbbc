import { FakeStripe, StripeLikeBackend } from '../connectors/fake-stripe';
import { startTestApp, type TestApp } from '../helpers/app';
import { spawnBeside, type SpawnedInstance } from '../helpers/spawn';

/**
 * Issue 36: a capture and a cancel of one authorisation sent at once to two instances (this
 * process and a spawned one) end one way, and the gateway agrees. The gateway is a Stripe-like
 * fake both processes reach (the built-in simulator's memory is its own process's).
 */
const SECRET = 'sk_test_two_instances';
let fake: FakeStripe;
let backend: StripeLikeBackend;
let app: TestApp;
let other: SpawnedInstance;
let key: string;

beforeAll(async () => {
  fake = await FakeStripe.start({ http: true });
  backend = new StripeLikeBackend(SECRET);
  fake.reset(backend.handle);
  app = await startTestApp({ env: { GATEWAY_ALLOW_PRIVATE_BASE_URL: 'true' } });
  other = await spawnBeside(app, { GATEWAY_ALLOW_PRIVATE_BASE_URL: 'true' });
  key = (await app.createAccount()).testKey;
  const gateway = (await app.request('POST', '/v1/gateways', {
    key, body: { name: 'Stripe (fake)', type: 'stripe', currencies: ['EUR'], credentials: { secretKey: SECRET }, settings: { baseUrl: fake.baseUrl } },
  })).body.data;
  expect((await app.request('PUT', '/v1/routing', { key, body: { rules: [], fallback: [gateway.id], maxAttempts: 1 } })).status).toBe(200);
}, 90_000);
afterAll(async () => {
  await other?.stop();
  await app?.stop();
  await fake?.close();
});

describe('capture and cancel on two instances', () => {
  it('should let exactly one of a capture and a cancel sent to different instances take effect, as the gateway did', async () => {
    for (let round = 0; round < 6; round++) {
      const created = await app.request('POST', '/v1/payments', { key, body: { amount: 2000, currency: 'eur', paymentMethod: 'pm_card_visa', captureMethod: 'manual' } });
      const p = created.body.data;
      expect(p).toMatchObject({ status: 'requires_capture', amountCapturable: 2000 });
      const [capturer, canceler] = round % 2 ? [other, app] : [app, other];
      const [capture, cancel] = await Promise.all([
        capturer.request('POST', `/v1/payments/${p.id}/capture`, { key, body: { amount: 1500 } }),
        canceler.request('POST', `/v1/payments/${p.id}/cancel`, { key }),
      ]);
      expect([capture.status, cancel.status].filter((s) => s === 200)).toHaveLength(1);
      for (const r of [capture, cancel].filter((x) => x.status !== 200)) expect(['payment_in_progress', 'invalid_state', 'capture_failed']).toContain(r.body.error.code);
      const final = (await other.request('GET', `/v1/payments/${p.id}`, { key })).body.data;
      const intents = [...backend.intents.values()].filter((i) => (i.metadata as Record<string, string>).payorch_payment_id === p.id);
      expect(intents).toHaveLength(1);
      const [intent] = intents;
      if (capture.status === 200) {
        expect(final).toMatchObject({ status: 'succeeded', amountCaptured: 1500, amountCapturable: 0 });
        expect([intent.status, intent.amount_received]).toEqual(['succeeded', 1500]);
      } else {
        expect(final).toMatchObject({ status: 'canceled', amountCaptured: 0, amountCapturable: 0 });
        expect(intent.status).toBe('canceled');
      }
    }
  }, 60_000);
});
