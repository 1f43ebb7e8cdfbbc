import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { collect, duplicates, wsClientAt } from '../helpers/live-events';
import { startRedisServer, type RedisServer } from '../helpers/redis-server';
import { spawnBeside, type SpawnedInstance } from '../helpers/spawn';
import { assertStaysTrue, waitFor, watchStreams } from '../helpers/wait';

/**
 * Live events across instances while their Redis (a redis-server of the test's own) is killed and
 * started again. On PostgreSQL they go through LISTEN/NOTIFY while Redis is down, so a subscriber
 * on one instance gets what another writes at once; on SQLite there is no NOTIFY, and they reach
 * it once Redis is back (read back from the database). Either way, each once.
 */

let redis: RedisServer;
let app: TestApp;
let other: SpawnedInstance;
beforeAll(async () => {
  redis = await startRedisServer();
  app = await startTestApp({ env: { REDIS_URL: redis.url } });
  other = await spawnBeside(app, { REDIS_URL: redis.url, GRAPHQL_WS_FAILED_CONNECTS_PER_MINUTE: '100000' });
}, 90_000);
afterAll(async () => {
  await other?.stop();
  await app?.stop();
  await redis?.destroy();
});

const LIVE = 'subscription { events(types: ["customer.created"]) { id data } }';
const pick = (data: Record<string, any>) => ({ id: data.events.id as string, email: data.events.data.object.email as string });

const redisState = async (instance: { request: TestApp['request'] }) => (await instance.request('GET', '/ready')).body?.data?.redis;

async function outage(): Promise<void> {
  await redis.kill();
  await waitFor(() => !app.server.services.redisBreaker!.available, { what: 'the app to see Redis gone' });
  await waitFor(async () => (await redisState(other)) === 'degraded', { what: 'the other instance to see Redis gone' });
}

async function recovery(): Promise<void> {
  await redis.start();
  for (const instance of [app, other]) await waitFor(async () => (await redisState(instance)) === 'ok', { what: 'both instances back on Redis', timeoutMs: 10_000 });
}

describe('live events while Redis is down', () => {
  it(`should deliver an event written on another instance while Redis is down ${DIALECT === 'postgres' ? 'at once (NOTIFY)' : 'once Redis is back (SQLite: no NOTIFY)'}, and the others through Redis, each once`, async () => {
    const account = await app.createAccount();
    const write = async (email: string) => {
      expect((await other.request('POST', '/v1/customers', { key: account.testKey, body: { email } })).status).toBe(201);
    };
    const streams = watchStreams(app.server.services.bus);
    const client = wsClientAt(app.baseUrl, app.server.cert, account.testKey);
    try {
      const live = collect(client, LIVE, {}, pick);
      await waitFor(() => streams.opened() === 1, { what: 'the subscription to start' });
      const received = (email: string) => live.items.some((e) => e.email === email);

      await write('before@example.com');
      await waitFor(() => received('before@example.com'), { what: 'the event written before the outage' });

      await outage();
      await write('during@example.com');
      if (DIALECT === 'postgres') {
        await waitFor(() => received('during@example.com'), { what: 'the event written during the outage, through NOTIFY' });
      } else {
        await assertStaysTrue(() => !received('during@example.com'), 500, 'no live event from another SQLite instance while Redis is down');
      }

      await recovery();
      await waitFor(() => received('during@example.com'), { what: 'the event written during the outage' });
      await write('after@example.com');
      await waitFor(() => received('after@example.com'), { what: 'the event written after the outage' });
      await assertStaysTrue(() => live.items.length === 3, 500, 'each event delivered once');
      expect(live.items.map((e) => e.email)).toEqual(['before@example.com', 'during@example.com', 'after@example.com']);
      expect(live.errors).toEqual([]);
    } finally {
      streams.stop();
      await client.dispose();
    }
  }, 60_000);

  it('should deliver every event written on another instance throughout a kill and a restart of Redis, each once', async () => {
    const account = await app.createAccount();
    const streams = watchStreams(app.server.services.bus);
    const client = wsClientAt(app.baseUrl, app.server.cert, account.testKey);
    let writing = true;
    let written = 0;
    const failures: number[] = [];
    let atKill = -1;
    let atRestart = -1;
    const write = async () => {
      for (let i = 0; writing; i++) {
        const res = await other.request('POST', '/v1/customers', { key: account.testKey, body: { email: `throughout-${i}@example.com` } });
        if (res.status === 201) written += 1;
        else failures.push(res.status);
      }
    };
    let writer: Promise<void> | undefined;
    try {
      const live = collect(client, LIVE, {}, pick);
      await waitFor(() => streams.opened() === 1, { what: 'the subscription to start' });
      // Writing starts only once the subscription listens: a subscription without `after` gets
      // the events committed from then on, so one written while it was still being set up (the
      // WebSocket's TLS handshake and connection_init can take longer than a POST on a busy
      // machine) is rightly not delivered, and waiting for it would time out.
      writer = write();
      await waitFor(() => written >= 10, { what: 'writes before the outage' });
      await outage();
      atKill = written;
      await waitFor(() => written >= atKill + 10, { what: 'writes during the outage' });
      await recovery();
      atRestart = written;
      await waitFor(() => written >= atRestart + 10, { what: 'writes after the outage' });
      writing = false;
      await writer;
      expect(failures).toEqual([]);

      const ids: string[] = [];
      for (let page = 1; ; page++) {
        const res = await app.request('GET', `/v1/events?type=customer.created&pageSize=100&page=${page}`, { key: account.testKey });
        ids.push(...res.body.data.map((e: { id: string }) => e.id));
        if (res.body.data.length < 100) break;
      }
      expect(ids).toHaveLength(written);
      // Under a loaded machine the events kept or read back after the restart can take seconds
      // more; the message says how many came, so a loss is told apart from lateness.
      await waitFor(() => live.items.length >= written, { what: `all ${written} events on the subscriber`, timeoutMs: 30_000 }).catch((err: Error) => {
        const came = new Set(live.items.map((e) => e.email));
        const missing = Array.from({ length: written }, (_, i) => i).filter((i) => !came.has(`throughout-${i}@example.com`));
        throw new Error(`${err.message}: ${live.items.length} came; missing the writes numbered ${missing.join(', ')} (the outage: ${atKill} to ${atRestart})`);
      });
      await assertStaysTrue(() => live.items.length === written, 500, 'no event delivered twice');
      expect(duplicates(live.items.map((e) => e.id))).toEqual([]);
      expect(live.items.map((e) => e.id).sort()).toEqual([...ids].sort());
    } finally {
      writing = false;
      await writer;
      streams.stop();
      await client.dispose();
    }
  }, 90_000);

  it(`should deliver to a typed subscription made while Redis is down an event stamped at a test clock's time long past, written meanwhile by an instance that then died ${DIALECT === 'postgres' ? '(NOTIFY)' : '(read back once Redis is back)'}`, async () => {
    const account = await app.createAccount();
    // Its own writer: it dies in this test, before it could send what it kept while Redis was down.
    const writer = await spawnBeside(app, { REDIS_URL: redis.url });
    const streams = watchStreams(app.server.services.bus);
    const client = wsClientAt(app.baseUrl, app.server.cert, account.testKey);
    try {
      const clock = await writer.request('POST', '/v1/test-clocks', { key: account.testKey, body: { frozenTime: '2025-01-01T00:00:00Z' } });
      expect(clock.status).toBe(201);
      await outage();
      await waitFor(async () => (await redisState(writer)) === 'degraded', { what: 'the writer to see Redis gone' });
      // Subscribed during the outage: the mark of how far events had been written, fixed as the
      // outage began, does not know this account; the one taken as its stream opened does.
      const live = collect(client, 'subscription { customerUpdated { email createdAt } }', {}, (data) => data.customerUpdated as { email: string; createdAt: string });
      await waitFor(() => streams.opened() === 1, { what: 'the subscription to start' });
      const received = (email: string) => live.items.some((c) => c.email === email);
      // customer.created, stamped at the clock's frozen time: a read-back by created_at from the
      // outage's start (less its margin) does not find it; one by the order events were written does.
      const created = await writer.request('POST', '/v1/customers', { key: account.testKey, body: { email: 'clocked@example.com', testClockId: clock.body.data.id } });
      expect(created.status).toBe(201);
      if (DIALECT === 'sqlite') await assertStaysTrue(() => !received('clocked@example.com'), 500, 'no live event from another SQLite instance while Redis is down');
      await writer.stop('SIGKILL');
      await recovery();
      await waitFor(() => received('clocked@example.com'), { what: 'the event stamped at the test clock\'s time' });
      await assertStaysTrue(() => live.items.length === 1, 500, 'delivered once');
      expect(live.items[0].createdAt).toBe('2025-01-01T00:00:00.000Z');
      expect(live.errors).toEqual([]);
    } finally {
      streams.stop();
      await client.dispose();
      await writer.stop('SIGKILL');
    }
  }, 90_000);
});
