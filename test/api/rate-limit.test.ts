import { startTestApp, type TestApp } from '../helpers/app';

let app: TestApp;
beforeAll(async () => {
  // The documented default: 100 requests per minute per account and mode.
  app = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '100' } });
});
afterAll(() => app.stop());

describe('rate limits in memory', () => {
  it('should allow 100 requests a minute per account and mode, then answer 429 with Retry-After', async () => {
    const key = app.account.testKey;
    const first = await app.request('GET', '/v1/customers', { key });
    expect(first.headers['ratelimit-limit']).toBe('100');
    expect(first.headers['ratelimit-remaining']).toBe('99');
    expect(Number(first.headers['ratelimit-reset'])).toBeGreaterThan(0);
    expect(Number(first.headers['ratelimit-reset'])).toBeLessThanOrEqual(60);
    for (let i = 0; i < 99; i++) expect((await app.request('GET', '/v1/customers', { key })).status).toBe(200);
    const limited = await app.request('GET', '/v1/customers', { key });
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('rate_limited');
    expect(limited.headers['ratelimit-remaining']).toBe('0');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // Live mode has its own budget.
    expect((await app.request('GET', '/v1/customers', { key: app.account.liveKey })).status).toBe(200);
    // Another account has its own.
    const other = await app.createAccount();
    expect((await app.request('GET', '/v1/customers', { key: other.testKey })).status).toBe(200);
  });

  it("should share a mode's budget among all its keys: a new key brings no more requests", async () => {
    const account = await app.createAccount({ rateLimitPerMinute: 3 });
    const minted = await app.request('POST', '/v1/api-keys', { key: account.testKey, body: {} });
    expect(minted.status).toBe(201);
    expect(minted.headers['ratelimit-remaining']).toBe('2');
    expect((await app.request('GET', '/v1/customers', { key: minted.body.data.secret })).headers['ratelimit-remaining']).toBe('1');
    expect((await app.request('GET', '/v1/customers', { key: account.testKey })).headers['ratelimit-remaining']).toBe('0');
    for (const key of [minted.body.data.secret, account.testKey]) {
      const refused = await app.request('GET', '/v1/customers', { key });
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('rate_limited');
    }
  });

  it("should keep live traffic's budget apart from test mode's: a restricted test key cannot use it up", async () => {
    const account = await app.createAccount({ rateLimitPerMinute: 4 });
    const created = await app.request('POST', '/v1/api-keys', { key: account.testKey, body: { permissions: ['customers:read'] } });
    expect(created.status).toBe(201);
    const restricted = created.body.data.secret as string;
    // The key's creation was one of the test budget's four; the restricted key spends the rest.
    for (let i = 0; i < 3; i++) expect((await app.request('GET', '/v1/customers', { key: restricted })).status).toBe(200);
    expect((await app.request('GET', '/v1/customers', { key: restricted })).status).toBe(429);
    // Live mode's budget is whole (the override applies to it too): a gateway, then a payment.
    const gateway = await app.request('POST', '/v1/gateways', { key: account.liveKey, body: { name: 'Sim live', type: 'simulator' } });
    expect(gateway.status).toBe(201);
    expect(gateway.headers['ratelimit-remaining']).toBe('3');
    const card = { number: '4242424242424242', expMonth: 12, expYear: 2034, cvc: '123' };
    const paid = await app.request('POST', '/v1/payments', { key: account.liveKey, body: { amount: 1200, currency: 'usd', paymentMethod: 'card', card } });
    expect(paid.status).toBe(201);
    expect(paid.body.data.livemode).toBe(true);
    expect(paid.headers['ratelimit-limit']).toBe('4');
    expect(paid.headers['ratelimit-remaining']).toBe('2');
    // The test mode's other key shares the spent budget.
    const refused = await app.request('GET', '/v1/customers', { key: account.testKey });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    expect(refused.headers['ratelimit-limit']).toBe('4');
  });

  it('should apply a per-account override', async () => {
    const account = await app.createAccount({ rateLimitPerMinute: 3 });
    for (let i = 0; i < 3; i++) {
      const ok = await app.request('GET', '/v1/customers', { key: account.testKey });
      expect(ok.status).toBe(200);
      expect(ok.headers['ratelimit-limit']).toBe('3');
    }
    const limited = await app.request('GET', '/v1/customers', { key: account.testKey });
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
  });

  it('should count requests without a valid key per client IP', async () => {
    let last;
    for (let i = 0; i < 101; i++) last = await app.request('GET', '/v1/customers', { key: 'sk_test_' + 'x'.repeat(43) });
    expect(last!.status).toBe(429);
    expect(last!.body.error.code).toBe('rate_limited');
  });
});
