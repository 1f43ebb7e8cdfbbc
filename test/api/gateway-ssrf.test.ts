import net from 'node:net';
import { startTestApp, type TestApp } from '../helpers/app';
import { FakeStripe } from '../connectors/fake-stripe';

/**
 * A gateways:write key must not turn the Stripe connector into a way into the internal network:
 * without GATEWAY_ALLOW_PRIVATE_BASE_URL (off here, as by default) a base URL is held to the
 * webhook address policy when it is saved and again whenever the connector connects.
 */
let app: TestApp;
let internal: FakeStripe;
let key: string;
/** What `rebind.example` resolves to when the connector connects (registration sees a public address). */
let rebindTo = '127.0.0.1';

beforeAll(async () => {
  // Stands in for an internal admin service on loopback.
  internal = await FakeStripe.start();
  internal.reset(() => ({ status: 500, body: { error: { message: 'deleted everything' } } }));
  const lookup: net.LookupFunction = (_host, options, callback) => {
    const family = net.isIPv6(rebindTo) ? 6 : 4;
    if (options?.all) (callback as (err: null, addresses: Array<{ address: string; family: number }>) => void)(null, [{ address: rebindTo, family }]);
    else (callback as (err: null, address: string, family: number) => void)(null, rebindTo, family);
  };
  app = await startTestApp({
    serviceOptions: { gatewayCa: internal.ca, gatewayTimeoutMs: 2000, gatewayDns: { resolveHost: async () => ['93.184.216.34'], lookup } },
  });
  key = (await app.createAccount()).testKey;
});

afterAll(async () => {
  await app?.stop();
  await internal?.close();
});

const stripeGateway = (baseUrl: string) => ({ name: 'Stripe', type: 'stripe', credentials: { secretKey: 'sk_test_51FakeSecretKey' }, settings: { baseUrl } });

describe('a Stripe base URL without GATEWAY_ALLOW_PRIVATE_BASE_URL', () => {
  it('should refuse loopback, link-local and private addresses at registration, saying how an operator allows them', async () => {
    expect(app.config.gatewayAllowPrivateBaseUrl).toBe(false);
    const port = new URL(internal.baseUrl).port;
    for (const baseUrl of [`http://127.0.0.1:${port}/admin/delete-everything`, `https://127.0.0.1:${port}/`, 'https://169.254.169.254/latest/meta-data', 'https://10.0.0.5:6443/', 'https://[::1]/']) {
      const res = await app.request('POST', '/v1/gateways', { key, body: stripeGateway(baseUrl) });
      expect([baseUrl, res.status]).toEqual([baseUrl, 400]);
      expect(res.body.error).toMatchObject({ code: 'invalid_parameter', param: 'settings.baseUrl', message: expect.stringContaining('GATEWAY_ALLOW_PRIVATE_BASE_URL=true') });
    }
    expect((await app.request('GET', '/v1/gateways', { key })).body.meta.total).toBe(0);
    expect(internal.requests).toHaveLength(0);
  });

  it('should refuse at connect time a host name that resolves to a private address, sending the internal service nothing', async () => {
    const port = new URL(internal.baseUrl).port;
    const gw = await app.request('POST', '/v1/gateways', { key, body: { ...stripeGateway(`https://rebind.example:${port}/`), currencies: ['usd'] } });
    expect(gw.status).toBe(201); // public when it was saved
    expect((await app.request('PUT', '/v1/routing', { key, body: { rules: [], fallback: [gw.body.data.id], maxAttempts: 1 } })).status).toBe(200);

    for (const address of ['127.0.0.1', '10.0.0.5']) {
      rebindTo = address;
      const res = await app.request('POST', '/v1/payments', { key, body: { amount: 1200, currency: 'usd', paymentMethod: 'pm_card_visa' } });
      expect(res.status).toBe(201);
      expect(res.body.data.status).toBe('failed');
      const calls = await app.request('GET', `/v1/payments/${res.body.data.id}/gateway-transactions`, { key });
      expect(calls.body.data[0]).toMatchObject({ outcome: 'retryable_error', message: expect.stringMatching(/resolves to a (loopback|private) address/) });
      expect(calls.text).not.toContain('deleted everything');
    }
    expect(internal.requests).toHaveLength(0);
  });
});
