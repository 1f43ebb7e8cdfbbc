import { startTestApp, type TestApp } from '../helpers/app';
import { FakeStripe } from '../connectors/fake-stripe';

/**
 * Whatever text a remote gateway answers with is stored: a decline message holding a NUL (which
 * the databases refuse) must still record the outcome, not leave a charged payment pending.
 */
let app: TestApp;
let fake: FakeStripe;
let key: string;

beforeAll(async () => {
  fake = await FakeStripe.start();
  app = await startTestApp({ env: { GATEWAY_ALLOW_PRIVATE_BASE_URL: 'true' }, serviceOptions: { gatewayCa: fake.ca } });
  key = (await app.createAccount()).testKey;
  const gw = await app.request('POST', '/v1/gateways', {
    key, body: { name: 'Stripe (fake)', type: 'stripe', credentials: { secretKey: 'sk_test_51FakeSecretKey' }, settings: { baseUrl: fake.baseUrl }, currencies: ['usd'] },
  });
  expect(gw.status).toBe(201);
  const routing = await app.request('PUT', '/v1/routing', { key, body: { rules: [], fallback: [gw.body.data.id], maxAttempts: 1 } });
  expect(routing.status).toBe(200);
});

afterAll(async () => {
  await app?.stop();
  await fake?.close();
});

it('should record a decline whose gateway text holds a NUL, with that text stored as U+FFFD', async () => {
  fake.reset(() => ({
    status: 402,
    body: { error: { type: 'card_error', code: 'card_declined', decline_code: 'generic_decline', message: 'Declined\u0000by issuer \ud800' } },
  }));
  const res = await app.request('POST', '/v1/payments', {
    key, body: { amount: 1500, currency: 'usd', paymentMethod: 'card', card: { number: '4000000000000002', expMonth: 12, expYear: 2034, cvc: '123' } },
  });
  expect(res.status).toBe(201);
  expect(res.body.data).toMatchObject({ status: 'failed', failureCode: 'card_declined' });
  const calls = await app.request('GET', `/v1/payments/${res.body.data.id}/gateway-transactions`, { key });
  expect(calls.status).toBe(200);
  expect(calls.body.data).toHaveLength(1);
  expect(calls.body.data[0].outcome).toBe('declined');
  expect(calls.body.data[0].message).toBe('Declined\uFFFDby issuer \uFFFD');
  expect(app.logs.filter((l) => /left pending for recovery/.test(l))).toEqual([]);
});

it('should record a generic message, not the body, when what answers at the base URL is not Stripe', async () => {
  // An internal service the base URL was pointed at (GATEWAY_ALLOW_PRIVATE_BASE_URL is on here).
  fake.reset(() => ({ status: 400, body: { error: { message: 'admin: deleted 42 accounts', code: 'DELETE_OK' }, detail: 'admin: deleted 42 accounts' } }));
  const res = await app.request('POST', '/v1/payments', {
    key, body: { amount: 1500, currency: 'usd', paymentMethod: 'card', card: { number: '4242424242424242', expMonth: 12, expYear: 2034, cvc: '123' } },
  });
  expect(res.status).toBe(201);
  expect(res.body.data).toMatchObject({ status: 'failed' });
  const calls = await app.request('GET', `/v1/payments/${res.body.data.id}/gateway-transactions`, { key });
  expect(calls.status).toBe(200);
  expect(calls.body.data).toHaveLength(1);
  expect(calls.body.data[0].message).toBe('Stripe answered HTTP 400.');
  expect(calls.text + res.text).not.toMatch(/deleted 42 accounts|DELETE_OK/);
});
