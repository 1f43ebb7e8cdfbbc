import { startTestApp, type TestApp } from '../helpers/app';
import { spawnInstance, type SpawnedInstance } from '../helpers/spawn';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
let app: TestApp;
let other: SpawnedInstance;
beforeAll(async () => {
  app = await startTestApp({ env: { REDIS_URL } });
  other = await spawnInstance(
    { DATABASE_URL: app.config.databaseUrl, DATA_DIR: app.config.dataDir, RUN_WORKERS: 'false', REDIS_URL, RATE_LIMIT_PER_MINUTE: '100000' },
    app.server.cert,
  );
}, 90_000);
afterAll(async () => {
  await other?.stop();
  await app?.stop();
});

describe('rate limits in Redis', () => {
  it('should share one budget between two instances and answer 429 with headers', async () => {
    const account = await app.createAccount({ rateLimitPerMinute: 4 });
    const key = account.testKey;
    const a1 = await app.request('GET', '/v1/customers', { key });
    const b1 = await other.request('GET', '/v1/customers', { key });
    const a2 = await app.request('GET', '/v1/customers', { key });
    const b2 = await other.request('GET', '/v1/customers', { key });
    expect([a1, b1, a2, b2].map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(b2.headers['ratelimit-remaining']).toBe('0');
    const limitedA = await app.request('GET', '/v1/customers', { key });
    const limitedB = await other.request('GET', '/v1/customers', { key });
    for (const r of [limitedA, limitedB]) {
      expect(r.status).toBe(429);
      expect(r.body.error.code).toBe('rate_limited');
      expect(r.headers['ratelimit-limit']).toBe('4');
      expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
    }
  });

  it('should keep the counters in Redis', async () => {
    const account = await app.createAccount({ rateLimitPerMinute: 7 });
    const res = await app.request('GET', '/v1/customers', { key: account.testKey });
    expect(res.headers['ratelimit-remaining']).toBe('6');
    // The account's test-mode counter (all its test keys share it) lives under the prefix of its limit.
    expect(await app.server.services.redis!.exists(`payorch:rl:7:account:${account.accountId}:test`)).toBe(1);
    expect(await app.server.services.redis!.exists(`payorch:rl:7:account:${account.accountId}:live`)).toBe(0);
  });

  it("should keep each mode's budget apart on every instance", async () => {
    const account = await app.createAccount({ rateLimitPerMinute: 2 });
    expect((await app.request('GET', '/v1/customers', { key: account.testKey })).status).toBe(200);
    expect((await other.request('GET', '/v1/customers', { key: account.testKey })).status).toBe(200);
    expect((await app.request('GET', '/v1/customers', { key: account.testKey })).status).toBe(429);
    for (const instance of [other, app]) {
      const live = await instance.request('GET', '/v1/customers', { key: account.liveKey });
      expect(live.status).toBe(200);
      expect(live.headers['ratelimit-limit']).toBe('2');
    }
    expect((await other.request('GET', '/v1/customers', { key: account.liveKey })).status).toBe(429);
  });
});
