import { startTestApp, type TestApp, type TestAccount } from '../helpers/app';
import { spawnBeside, type SpawnedInstance } from '../helpers/spawn';
import { DIALECT } from '../helpers/db';
import { collect, duplicates, eventIds, wsClientAt } from '../helpers/live-events';
import { assertStaysTrue, waitFor } from '../helpers/wait';

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
