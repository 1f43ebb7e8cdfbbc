import { Client as PgClient } from 'pg';
import { startTestApp, type TestApp, type TestAccount } from '../helpers/app';
import { LISTENER_NAME } from '../../src/core/event-fanout';
import { spawnBeside, type SpawnedInstance } from '../helpers/spawn';
import { DIALECT } from '../helpers/db';
import { collect, duplicates, eventIds, wsClientAt } from '../helpers/live-events';
import { assertStaysTrue, waitFor, watchStreams } from '../helpers/wait';

/**
 * events(after:) where the events are written by another instance (they reach the subscriber's
 * instance through the fan-out: PostgreSQL NOTIFY, or Redis on SQLite) and across a restart of
 * the instance a client was subscribed to: it resumes with the last event it received, and gets
 * every event since, once, in order, then the live ones.
 */

// PostgreSQL instances fan out through LISTEN/NOTIFY; on SQLite the cross-process path is Redis.
const REDIS_ENV: Record<string, string> = DIALECT === 'sqlite' ? { REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' } : {};
const INSTANCE_ENV = { ...REDIS_ENV, GRAPHQL_WS_FAILED_CONNECTS_PER_MINUTE: '100000' };

let app: TestApp;
let other: SpawnedInstance | undefined;
beforeAll(async () => {
  app = await startTestApp({ env: REDIS_ENV });
  other = await spawnBeside(app, INSTANCE_ENV);
}, 120_000);
afterAll(async () => {
  await other?.stop('SIGKILL');
  await app?.stop();
});

const LIVE = 'subscription($after: ID) { events(after: $after) { id type } }';
const pick = (data: Record<string, any>) => data.events as { id: string; type: string };

let emails = 0;
async function writeCustomer(account: TestAccount): Promise<void> {
  const res = await app.request('POST', '/v1/customers', { key: account.testKey, body: { email: `instances-${++emails}@example.com` } });
  expect(res.status).toBe(201);
}

describe('events(after:) across instances', () => {
  it('should replay on instance B the events instance A wrote, then stream A\'s new ones from B, each once, in order, while A writes throughout', async () => {
    const account = await app.createAccount();
    for (let i = 0; i < 10; i++) await writeCustomer(account);
    const cursor = (await eventIds(app, account))[2];
    const client = wsClientAt(other!.baseUrl, app.server.cert, account.testKey);
    let resumed: ReturnType<typeof collect<{ id: string; type: string }>> | undefined;
    try {
      for (let i = 0; i < 40; i++) {
        await writeCustomer(account);
        if (i === 2) resumed = collect(client, LIVE, { after: cursor }, pick);
      }
      const all = await eventIds(app, account);
      const expected = all.slice(all.indexOf(cursor) + 1);
      expect(expected).toHaveLength(7 + 40);
      await waitFor(() => resumed!.items.length >= expected.length, { what: `${expected.length} events on instance B`, timeoutMs: 20_000 });
      await assertStaysTrue(() => resumed!.items.length === expected.length, 300, 'no event delivered twice');
      expect(duplicates(resumed!.items.map((e) => e.id))).toEqual([]);
      expect(resumed!.items.map((e) => e.id)).toEqual(expected);
      expect(resumed!.errors).toEqual([]);
    } finally {
      await client.dispose();
    }
  }, 60_000);

  it('should resume after a restart of the instance it streamed from, with the events written while it was down', async () => {
    const account = await app.createAccount();
    await writeCustomer(account);
    const start = (await eventIds(app, account))[0];
    const before = wsClientAt(other!.baseUrl, app.server.cert, account.testKey);
    const seen = collect(before, LIVE, { after: start }, pick);
    for (let i = 0; i < 3; i++) await writeCustomer(account);
    await waitFor(() => seen.items.length === 3, { what: 'three events on instance B' });
    await other!.stop('SIGKILL');
    other = undefined;
    await before.dispose();

    // Written while instance B is down.
    for (let i = 0; i < 5; i++) await writeCustomer(account);
    other = await spawnBeside(app, INSTANCE_ENV);
    const after = wsClientAt(other.baseUrl, app.server.cert, account.testKey);
    try {
      const resumed = collect(after, LIVE, { after: seen.items[2].id }, pick);
      await waitFor(() => resumed.items.length === 5, { what: 'the five events written while B was down' });
      for (let i = 0; i < 2; i++) await writeCustomer(account);
      await waitFor(() => resumed.items.length >= 7, { what: 'two live events' });
      await assertStaysTrue(() => resumed.items.length === 7, 300, 'no event delivered twice');
      const all = await eventIds(app, account);
      expect([...seen.items, ...resumed.items].map((e) => e.id)).toEqual(all.slice(1));
      expect(resumed.errors).toEqual([]);
    } finally {
      await after.dispose();
    }
  }, 120_000);
});

if (DIALECT === 'postgres') {
  describe('a typed subscription across a gap in LISTEN (PostgreSQL)', () => {
    it('should read back, once the instance listens again, an event stamped at a test clock\'s time long past that another instance wrote meanwhile', async () => {
      const account = await app.createAccount();
      const clock = await other!.request('POST', '/v1/test-clocks', { key: account.testKey, body: { frozenTime: '2025-01-01T00:00:00Z' } });
      expect(clock.status).toBe(201);
      const admin = new PgClient({ connectionString: app.config.databaseUrl });
      await admin.connect();
      const client = wsClientAt(app.baseUrl, app.server.cert, account.testKey);
      let cutting = true;
      let cuts = 0;
      // Every LISTEN session of the database is ended as soon as it shows: the instances' fan-outs
      // reconnect with a growing backoff, and the NOTIFY of the write below reaches none of them.
      // (By name: a LISTEN session's last statement is its check, `SELECT 1`, after 10 s.)
      const cutter = (async () => {
        while (cutting) {
          const ended = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1', [LISTENER_NAME]);
          cuts += ended.rowCount ?? 0;
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      })();
      try {
        const streams = watchStreams(app.server.services.bus);
        const live = collect(client, 'subscription { customerUpdated { email createdAt } }', {}, (data) => data.customerUpdated as { email: string; createdAt: string });
        await waitFor(() => streams.opened() === 1, { what: 'the subscription to start' });
        streams.stop();
        await waitFor(() => cuts >= 4, { what: 'the LISTEN sessions ended a few times' });
        const created = await other!.request('POST', '/v1/customers', { key: account.testKey, body: { email: 'clocked@example.com', testClockId: clock.body.data.id } });
        expect(created.status).toBe(201);
        await new Promise((resolve) => setTimeout(resolve, 200));
        cutting = false;
        await cutter;
        // A read-back by created_at from the gap's start (less 30 s) does not find it; one by the order written does.
        await waitFor(() => live.items.some((c) => c.email === 'clocked@example.com'), { what: 'the event written during the gap', timeoutMs: 20_000 });
        // On a loaded machine the read-back can end after the event was delivered (by it, or by a
        // NOTIFY that reached a LISTEN session before it was ended); either way once.
        await waitFor(() => app.logs.some((line) => line.includes('event fan-out caught up after a gap')), { what: 'the read-back after the gap', timeoutMs: 10_000 });
        await assertStaysTrue(() => live.items.length === 1, 300, 'delivered once');
        expect(live.items[0].createdAt).toBe('2025-01-01T00:00:00.000Z');
      } finally {
        cutting = false;
        await cutter;
        await client.dispose();
        await admin.end();
      }
    }, 60_000);
  });
}
