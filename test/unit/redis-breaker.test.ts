import { Writable } from 'node:stream';
import type { Redis } from 'ioredis';
import { createLogger } from '../../src/logger';
import { RateLimiter } from '../../src/core/rate-limit';
import { RedisBreaker, connectRedis } from '../../src/core/redis-breaker';
import { startRedisServer, type RedisServer } from '../helpers/redis-server';
import { waitFor } from '../helpers/wait';

/**
 * The Redis breaker on a redis-server of the test's own, killed, frozen and started again: calls
 * time out within REDIS_TIMEOUT_MS, the rate limiter counts in memory while Redis is away (one
 * warning), and goes back to Redis once it answers (one info line).
 */

const TIMEOUT_MS = 50;
let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.destroy();
});

interface Harness {
  redis: Redis;
  breaker: RedisBreaker;
  limiter: RateLimiter;
  logs: Array<{ level: string; msg: string; unavailableMs?: number }>;
  close(): Promise<void>;
}

const open: Harness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

async function harness(start = true): Promise<Harness> {
  const logs: Harness['logs'] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(JSON.parse(String(chunk)));
      cb();
    },
  });
  const redis = connectRedis(server.url, TIMEOUT_MS);
  const breaker = new RedisBreaker(redis, createLogger('info', sink), { probeIntervalMs: 50, fallback: 'per-instance counters' });
  const h: Harness = {
    redis, breaker, logs, limiter: new RateLimiter({ client: redis, breaker }),
    async close() {
      breaker.stop();
      redis.disconnect();
      // Until its socket has closed, ioredis keeps a timer that would outlive the test.
      await waitFor(() => redis.status === 'end', { what: 'the Redis connection to end' });
    },
  };
  open.push(h);
  if (start) {
    // Connected first: the breaker gives a first connection a second before it starts without
    // Redis, which a loaded machine (the whole suite beside it) once took longer than.
    await waitFor(() => redis.status === 'ready', { what: 'the first connection to Redis', timeoutMs: 10_000 });
    await breaker.start();
  }
  return h;
}

const warnings = (h: Harness) => h.logs.filter((l) => l.level === 'warn');
const recoveries = (h: Harness) => h.logs.filter((l) => l.level === 'info' && l.msg === 'Redis answers again: using it again');

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = performance.now();
  const value = await work();
  return { value, ms: performance.now() - t0 };
}

describe('Redis breaker', () => {
  it('should count in this process while Redis is killed, with one warning, and in Redis again once it is back, with one info line', async () => {
    const h = await harness();
    expect(h.breaker.available).toBe(true);
    expect((await h.limiter.consume('before', 3)).remaining).toBe(2);
    expect(await h.redis.exists('payorch:rl:3:before')).toBe(1);

    await server.kill();
    // Many requests at once, none waits on the dead server, none fails.
    const during = await Promise.all(Array.from({ length: 20 }, () => timed(() => h.limiter.consume('during', 100))));
    for (const { value, ms } of during) {
      expect(value.allowed).toBe(true);
      expect(ms).toBeLessThan(1_000);
    }
    expect(h.breaker.available).toBe(false);
    // The memory counters are real counters: a budget of 2 refuses the third.
    expect((await Promise.all([1, 2, 3].map(() => h.limiter.consume('small', 2)))).map((d) => d.allowed)).toEqual([true, true, false]);
    expect(warnings(h)).toEqual([expect.objectContaining({ msg: 'Redis unavailable: working without it until it answers again', fallback: 'per-instance counters' })]);
    expect(recoveries(h)).toEqual([]);

    await server.start();
    await waitFor(() => h.breaker.available, { what: 'the breaker to close once Redis answers', timeoutMs: 5_000 });
    expect(recoveries(h)).toEqual([expect.objectContaining({ unavailableMs: expect.any(Number) })]);
    expect((await h.limiter.consume('after', 3)).remaining).toBe(2);
    expect(await h.redis.exists('payorch:rl:3:after')).toBe(1);
    expect(warnings(h)).toHaveLength(1);
  }, 30_000);

  it('should time calls out on a Redis that does not answer, within the timeout, with one warning for all of them', async () => {
    const h = await harness();
    await h.limiter.consume('warm', 5);
    server.freeze();
    try {
      const frozen = await Promise.all(Array.from({ length: 10 }, () => timed(() => h.limiter.consume('frozen', 100))));
      for (const { value, ms } of frozen) {
        expect(value.allowed).toBe(true);
        // 50 ms and what a busy machine adds to a timer, far from the seconds a reconnection takes.
        expect(ms).toBeLessThan(TIMEOUT_MS + 450);
      }
      expect(h.breaker.available).toBe(false);
      const next = await timed(() => h.limiter.consume('frozen', 100));
      expect(next.value.remaining).toBe(100 - 11);
      expect(warnings(h)).toEqual([expect.objectContaining({ err: expect.objectContaining({ message: 'Command timed out' }) })]);
    } finally {
      server.thaw();
    }
    await waitFor(() => h.breaker.available, { what: 'the breaker to close once Redis answers again', timeoutMs: 5_000 });
    expect(recoveries(h)).toHaveLength(1);
    expect(warnings(h)).toHaveLength(1);
  }, 30_000);

  it('should start without Redis when it is not there, and go to it once it answers', async () => {
    await server.kill();
    const h = await harness(false);
    const { ms } = await timed(() => h.breaker.start());
    expect(ms).toBeLessThan(3_000);
    expect(h.breaker.available).toBe(false);
    expect((await h.limiter.consume('cold', 4)).remaining).toBe(3);
    expect(warnings(h)).toHaveLength(1);
    await server.start();
    await waitFor(() => h.breaker.available, { what: 'the breaker to close once Redis is up', timeoutMs: 5_000 });
    expect((await h.limiter.consume('cold', 4)).remaining).toBe(3);
    expect(await h.redis.exists('payorch:rl:4:cold')).toBe(1);
  }, 30_000);

  it('should log nothing when the service closes its own connection', async () => {
    const h = await harness();
    await h.close();
    expect(warnings(h)).toEqual([]);
  });
});
