import { startTestApp, type TestApp } from '../helpers/app';

let app: TestApp;
beforeAll(async () => {
  // The documented default: 100 requests per minute per key.
  app = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '100' } });
});
afterAll(() => app.stop());

describe('rate limits in memory', () => {
  it('should allow 100 requests a minute per key, then answer 429 with Retry-After', async () => {
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
    // Another key of the same account has its own budget.
    expect((await app.request('GET', '/v1/customers', { key: app.account.liveKey })).status).toBe(200);
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
