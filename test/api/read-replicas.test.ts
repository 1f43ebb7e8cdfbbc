import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { ConfigError, loadConfig } from '../../src/config';
import type { ReplicaSet } from '../../src/db/replicas';
import { startTestApp, type TestApp } from '../helpers/app';
import { parseExposition, seriesOf } from '../helpers/metrics';
import { DIALECT } from '../helpers/db';
import { startPgCluster, startPgStandby, standbyUnavailable, type PgCluster } from '../helpers/pg-cluster';
import WebSocket from 'ws';
import { createClient, type Client as WsClient } from 'graphql-ws';
import { run as wsRun, wsUrl } from '../helpers/graphql-ws';
import { assertStaysTrue, waitFor } from '../helpers/wait';

// Read replicas (DATABASE_REPLICA_URLS) against a real streaming standby made here: a throwaway
// primary cluster, a base backup of it taken with `pg_basebackup -R`, and a second `postgres`
// serving that copy on another port, replaying the primary's WAL. Where a read went is shown
// three ways: the standby's own statement counts (pg_stat_statements, on both servers), the
// service's reads per pool, and, with the standby's replay paused, what a read can see: a row
// the primary has and the standby has not replayed yet.

type Json = Record<string, any>;

/** Statements the standby ran for the service (its lag checks and our own look-ups left out). */
const SERVICE_CALLS = `SELECT COALESCE(SUM(s.calls), 0)::int AS calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
  WHERE d.datname = 'postgres' AND s.query NOT LIKE '%pg_stat_statements%' AND s.query NOT LIKE '%pg_is_in_recovery%' AND s.query NOT LIKE '%pg_wal_replay%'`;

async function on<T = Json>(cluster: PgCluster, sql: string, bind: unknown[] = []): Promise<T[]> {
  const client = new Client({ connectionString: cluster.url });
  await client.connect();
  try {
    return (await client.query(sql, bind)).rows as T[];
  } finally {
    await client.end();
  }
}

if (DIALECT === 'postgres' && standbyUnavailable() === null) {
  describe('read replicas on a streaming standby', () => {
    let primary: PgCluster;
    let standby: PgCluster;
    let app: TestApp;
    let keyA: string;
    let keyB: string;
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-replicas-'));
    const settings = ['shared_preload_libraries=pg_stat_statements', 'pg_stat_statements.track=all'];

    const replicas = () => app.server.services.db.replicas as ReplicaSet;
    const replicaName = () => replicas().replicas[0].name;
    const counts = () => {
      const c = replicas().readCounts();
      return { primary: c.primary, replica: c[replicaName()] };
    };
    const standbyCalls = async () => (await on<{ calls: number }>(standby, SERVICE_CALLS))[0].calls;
    const onStandby = (id: string) => on(standby, 'SELECT id FROM customers WHERE id = $1', [id]).then((rows) => rows.length === 1);
    const pauseReplay = () => on(standby, 'SELECT pg_wal_replay_pause()');
    const resumeReplay = () => on(standby, 'SELECT pg_wal_replay_resume()');
    const warnings = () => app.logs.filter((line) => line.includes('"level":"warn"') && line.includes('no read replica usable'));
    const get = (p: string, key?: string) => app.request('GET', p, { key });
    const post = (p: string, body: Json, key: string, headers?: Record<string, string>) => app.request('POST', p, { key, body, headers });
    const gql = (query: string, key: string, variables: Json = {}) => app.request('POST', '/graphql', { key, body: { query, variables } });
    const customerIds = async (key: string) => {
      const res = await get('/v1/customers?pageSize=100', key);
      expect(res.status).toBe(200);
      return (res.body.data as Json[]).map((c) => c.id as string);
    };
    const createCustomer = async (key: string, email: string) => {
      const res = await post('/v1/customers', { email }, key);
      expect(res.status).toBe(201);
      return res.body.data.id as string;
    };

    /** A key of the app's account that has written nothing yet. */
    const newKey = async () => (await app.server.services.accounts.createKeyForAccount(app.account.accountId, 'test')).secret!;

    /** A graphql-ws client that closes its socket once its operations are done (no timer left behind). */
    const wsClient = (key: string): WsClient => {
      const ca = app.server.cert;
      class TrustingWebSocket extends WebSocket {
        constructor(address: string, protocols?: string | string[]) {
          super(address, protocols, { ca, servername: 'localhost' } as WebSocket.ClientOptions);
        }
      }
      return createClient({ url: wsUrl(app), webSocketImpl: TrustingWebSocket, connectionParams: { authorization: `Bearer ${key}` }, retryAttempts: 0, lazy: true });
    };

    const METRICS_TOKEN = 'replica-metrics-token-0123456789';
    /** The app on the primary, reading from the standby, with these replica settings. */
    async function startApp(env: Record<string, string>): Promise<void> {
      app = await startTestApp({ database: { url: primary.url, dataDir, drop: async () => undefined }, env: { DATABASE_REPLICA_URLS: standby.url, ...env } });
      keyA = app.account.testKey;
      keyB = (await app.server.services.accounts.createKeyForAccount(app.account.accountId, 'test')).secret!;
      await waitFor(() => replicas().status()[0].healthy, { what: 'the standby counted healthy', timeoutMs: 20_000 });
    }

    beforeAll(async () => {
      primary = await startPgCluster({ settings });
      await on(primary, 'CREATE EXTENSION pg_stat_statements');
      standby = await startPgStandby(primary, { settings });
    }, 120_000);
    afterAll(async () => {
      await standby?.destroy();
      await primary?.destroy();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }, 60_000);

    describe('with a replica that may lag a minute', () => {
      beforeAll(() => startApp({ REPLICA_MAX_LAG_MS: '60000', REPLICA_READ_AFTER_WRITE_MS: '10000', METRICS_TOKEN: METRICS_TOKEN }), 120_000);
      afterAll(() => app?.stop(), 30_000);

      it('should answer /ready with the replica, its health and its lag', async () => {
        const ready = await get('/ready');
        expect(ready.status).toBe(200);
        expect(ready.body.data).toEqual({ status: 'ready', replicas: [{ healthy: true, lagMs: expect.any(Number) }] });
        // Nothing of where the replica is: /ready answers anyone.
        expect(JSON.stringify(ready.body)).not.toContain(String(standby.port));
        // No credentials in a replica's name.
        expect(replicas().status()[0].lagMs).toBeLessThanOrEqual(60_000);
      });

      it('should show each replica\'s lag in the metrics, named by host, port and database', async () => {
        const res = await app.request('GET', '/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
        expect(res.status).toBe(200);
        const series = seriesOf(parseExposition(res.text), 'payorch_db_replica_lag_seconds');
        expect(series.map((s) => s.labels)).toEqual([{ replica: `127.0.0.1:${standby.port}/postgres` }]);
        expect(series[0].value).toBeGreaterThanOrEqual(0);
        expect(series[0].value).toBeLessThanOrEqual(60);
      });

      it('should read GET lists and objects from the replica: another key does not see what it has not replayed, the key that wrote it does', async () => {
        const seen = await createCustomer(keyA, 'seen@example.com');
        await waitFor(() => onStandby(seen), { what: 'the customer replayed on the standby' });
        await pauseReplay();
        try {
          const notYet = await createCustomer(keyA, 'not-yet@example.com');
          expect(await onStandby(notYet)).toBe(false);

          // Key B reads from the replica: the list lacks the customer it has not replayed, and
          // that customer is not found there (a list is a bound statement, a retrieve a model finder).
          let before = counts();
          const callsBefore = await standbyCalls();
          const listedForB = await customerIds(keyB);
          expect(listedForB).toContain(seen);
          expect(listedForB).not.toContain(notYet);
          expect((await get(`/v1/customers/${notYet}`, keyB)).status).toBe(404);
          expect((await get(`/v1/customers/${seen}`, keyB)).body.data.email).toBe('seen@example.com');
          let after = counts();
          expect(after.replica).toBeGreaterThan(before.replica);
          expect(after.primary).toBe(before.primary);
          expect(await standbyCalls()).toBeGreaterThan(callsBefore);

          // Key A wrote it moments ago: it reads from the primary, and sees it.
          before = counts();
          expect(await customerIds(keyA)).toContain(notYet);
          expect((await get(`/v1/customers/${notYet}`, keyA)).status).toBe(200);
          after = counts();
          expect(after.primary).toBeGreaterThan(before.primary);
          expect(after.replica).toBe(before.replica);

          // A hosted page (no key) reads from the replica too.
          const session = (await post('/v1/checkout-sessions', { mode: 'payment', amount: 2500, currency: 'eur' }, keyA)).body.data;
          await resumeReplay();
          await waitFor(() => on(standby, 'SELECT 1 FROM checkout_sessions WHERE id = $1', [session.id]).then((r) => r.length === 1), { what: 'the session replayed' });
          before = counts();
          const page = await get(`/checkout/${session.id}`);
          expect(page.status).toBe(200);
          after = counts();
          expect(after.replica).toBeGreaterThan(before.replica);
          expect(after.primary).toBe(before.primary);
        } finally {
          await resumeReplay();
        }
        await waitFor(async () => (await customerIds(keyB)).includes((await app.server.services.db.select<{ id: string }>("SELECT id FROM customers WHERE email = 'not-yet@example.com'"))[0].id), {
          what: 'key B seeing the customer once the replica replayed it',
        });
      });

      it('should keep writes, transactions, idempotency look-ups, payments and refunds on the primary', async () => {
        const before = counts();
        const callsBefore = await standbyCalls();
        const idem = { 'Idempotency-Key': 'replica-pay-1' };
        const pay = await post('/v1/payments', { amount: 1500, currency: 'eur', paymentMethod: 'pm_card_visa' }, keyB, idem);
        expect(pay.status).toBe(201);
        const replay = await post('/v1/payments', { amount: 1500, currency: 'eur', paymentMethod: 'pm_card_visa' }, keyB, idem);
        expect(replay.status).toBe(201);
        expect(replay.headers['idempotent-replayed']).toBe('true');
        expect(replay.body.data.id).toBe(pay.body.data.id);
        const refund = await post(`/v1/payments/${pay.body.data.id}/refunds`, { amount: 400 }, keyB, { 'Idempotency-Key': 'replica-refund-1' });
        expect(refund.status).toBe(201);
        expect(refund.body.data.status).toBe('succeeded');
        const customer = await createCustomer(keyB, 'writer@example.com');
        expect((await app.request('PATCH', `/v1/customers/${customer}`, { key: keyB, body: { name: 'Writer' } })).status).toBe(200);
        const mutation = await gql('mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { id } }', keyB, { input: { email: 'gql-writer@example.com' } });
        expect(mutation.body.data.createCustomer.id).toMatch(/^cus_/);
        // Not one statement reached the standby, and no read was counted as a read-only request's.
        expect(await standbyCalls()).toBe(callsBefore);
        expect(counts()).toEqual(before);
        // The refund was decided on the primary's view: a second one for more than is left is refused.
        const over = await post(`/v1/payments/${pay.body.data.id}/refunds`, { amount: 1200 }, keyB);
        expect(over.status).toBe(422);
        expect(over.body.error.code).toBe('refund_exceeds_remaining');
      });

      it('should run GraphQL queries on the replica (over HTTP and WebSocket) and mutations on the primary', async () => {
        // Keys that have written nothing yet (key B wrote above, and reads its writes from the primary a while).
        const keyC = await newKey();
        const keyD = await newKey();
        await pauseReplay();
        const ws = wsClient(keyD);
        try {
          const notYet = await createCustomer(keyA, 'gql-not-yet@example.com');
          const query = '{ customers(pageSize: 100) { nodes { id } } }';
          const ids = (res: Json) => (res.data.customers.nodes as Json[]).map((n) => n.id);
          let before = counts();
          expect(ids((await gql(query, keyC)).body)).not.toContain(notYet);
          expect(ids(await wsRun(ws, query))).not.toContain(notYet);
          let after = counts();
          expect(after.replica).toBeGreaterThan(before.replica);
          expect(after.primary).toBe(before.primary);

          // A mutation runs on the primary (nothing reaches the standby), and its key then reads its own write there.
          const callsBefore = await standbyCalls();
          before = counts();
          const created = (await gql('mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { id } }', keyC, { input: { email: 'gql-c@example.com' } })).body;
          expect(await standbyCalls()).toBe(callsBefore);
          expect(ids((await gql(query, keyC)).body)).toEqual(expect.arrayContaining([notYet, created.data.createCustomer.id]));
          after = counts();
          expect(after.primary).toBeGreaterThan(before.primary);
          expect(after.replica).toBe(before.replica);

          // Over WebSocket too: key D's mutation, then its query, on the primary.
          const wsCreated = await wsRun(ws, 'mutation { createCustomer(input: {email: "ws-d@example.com"}) { id } }');
          expect(await standbyCalls()).toBe(callsBefore);
          expect(ids(await wsRun(ws, query))).toEqual(expect.arrayContaining([notYet, wsCreated.data!.createCustomer.id]));
        } finally {
          await ws.dispose();
          await resumeReplay();
        }
      });

      it('should read a subscriber\'s queries from a replica only once it holds the events the subscriber was sent', async () => {
        const keyE = await newKey();
        const keyF = await newKey();
        const ws = wsClient(keyE);
        const received: string[] = [];
        const stop = ws.subscribe<{ events: { id: string } }>({ query: 'subscription { events(types: ["customer.created"]) { id } }' }, {
          next: (result) => {
            if (result.data) received.push(result.data.events.id);
          },
          error: () => undefined,
          complete: () => undefined,
        });
        try {
          // The subscription is registered once an event reaches it.
          for (let i = 0; received.length === 0; i++) {
            if (i === 40) throw new Error('the subscription got no event');
            await createCustomer(keyA, `probe${i}@example.com`);
            await waitFor(() => received.length > 0, { timeoutMs: 250, what: 'a probe event' }).catch(() => undefined);
          }
          await pauseReplay();
          const seen = received.length;
          const announced = await createCustomer(keyA, 'announced@example.com');
          await waitFor(() => received.length > seen, { what: 'the event at the subscriber' });
          // The subscriber's key reads it from the primary; a key sent nothing reads the replica, which lacks it.
          expect(await customerIds(keyE)).toContain(announced);
          expect(await customerIds(keyF)).not.toContain(announced);
        } finally {
          stop();
          await ws.dispose();
          await resumeReplay();
        }
      });

      it("should write an export from the replica's view of the list", async () => {
        const exp = (await post('/v1/exports', { resource: 'customers', format: 'jsonl' }, keyA)).body.data;
        // The export reads from a replica only once it holds every commit made before the export was asked for.
        await waitFor(() => replicas().replicas[0].freshAsOf >= Date.parse(exp.createdAt), { what: 'the replica caught up past the export' });
        await pauseReplay();
        try {
          const late = await createCustomer(keyA, 'after-the-export@example.com');
          const before = counts();
          const services = app.server.services;
          await services.exports.runDue(services.clock.now());
          const after = counts();
          expect(after.replica).toBeGreaterThan(before.replica);
          expect(after.primary).toBe(before.primary);
          const file = await get(`/v1/exports/${exp.id}/file`, keyA);
          expect(file.status).toBe(200);
          const exported = file.text.trim().split('\n').map((line) => JSON.parse(line).id as string);
          // What the replica held: the customers from before, not the one the primary has since.
          expect(exported).toEqual(expect.arrayContaining([expect.stringMatching(/^cus_/)]));
          expect(exported.length).toBeGreaterThan(3);
          expect(exported).not.toContain(late);
        } finally {
          await resumeReplay();
        }
      });
    });

    describe('with a replica that may lag 1 s', () => {
      beforeAll(() => startApp({ REPLICA_MAX_LAG_MS: '1000' }), 120_000);
      afterAll(() => app?.stop(), 30_000);

      it('should skip a replica lagging more than REPLICA_MAX_LAG_MS, read from the primary, and go back once it caught up', async () => {
        const warned = warnings().length;
        await pauseReplay();
        let written: string;
        try {
          written = await createCustomer(keyA, 'lagging@example.com');
          await waitFor(() => !replicas().status()[0].healthy, { what: 'the lagging replica skipped' });
          expect(replicas().status()[0]).toMatchObject({ healthy: false, reason: expect.stringMatching(/^lag \d+ ms over REPLICA_MAX_LAG_MS \(1000 ms\)$/) });
          expect(warnings()).toHaveLength(warned + 1);
          const before = counts();
          // Key B did not write it, yet sees it: the primary answers.
          expect(await customerIds(keyB)).toContain(written);
          const after = counts();
          expect(after.primary).toBeGreaterThan(before.primary);
          expect(after.replica).toBe(before.replica);
        } finally {
          await resumeReplay();
        }
        await waitFor(() => replicas().status()[0].healthy, { what: 'the replica back once it replayed' });
        expect(app.logs.some((line) => line.includes('read replicas usable again'))).toBe(true);
        const before = counts();
        expect(await customerIds(keyB)).toContain(written!);
        expect(counts().replica).toBeGreaterThan(before.replica);
      }, 30_000);

      it('should serve every read from the primary while the replica is down, with one warning and no 5xx, and use it again once back', async () => {
        const warned = warnings().length;
        const customer = await createCustomer(keyA, 'while-down@example.com');
        await waitFor(() => onStandby(customer), { what: 'the customer replayed' });
        await waitFor(() => replicas().status()[0].healthy, { what: 'the replica healthy' });
        // Its pool holds connections the shutdown will cut.
        await customerIds(keyB);
        await standby.stop('fast');
        try {
          const before = counts();
          for (let i = 0; i < 5; i++) {
            expect(await customerIds(keyB)).toContain(customer);
            expect((await get(`/v1/customers/${customer}`, keyB)).status).toBe(200);
            expect((await gql('{ customers { total } }', keyB)).body.data.customers.total).toBeGreaterThan(0);
          }
          expect(counts().primary).toBeGreaterThan(before.primary);
          await waitFor(() => /^unreachable: /.test(replicas().status()[0].reason ?? ''), { what: 'the check finding the replica unreachable' });
          const ready = await get('/ready');
          expect(ready.status).toBe(200);
          expect(ready.body.data.replicas).toEqual([{ healthy: false, lagMs: null }]);
          // One warning for the outage, however many reads and checks meet it.
          await waitFor(() => warnings().length === warned + 1, { what: 'the warning' });
          await assertStaysTrue(async () => (await customerIds(keyB)).length > 0 && warnings().length === warned + 1, 2500, 'exactly one warning while reads go on');
        } finally {
          await standby.start();
        }
        await waitFor(() => replicas().status()[0].healthy, { what: 'the replica back', timeoutMs: 20_000 });
        const before = counts();
        expect(await customerIds(keyB)).toContain(customer);
        expect(counts().replica).toBeGreaterThan(before.replica);
      }, 60_000);
    });
  });
} else if (DIALECT === 'postgres') {
  describe('read replicas', () => {
    it.skip(`need a streaming standby, which cannot be made here: ${standbyUnavailable()}`, () => undefined);
  });
} else {
  describe('read replicas on SQLite', () => {
    it('should refuse DATABASE_REPLICA_URLS at start-up: replicas are PostgreSQL standbys', () => {
      const env = { DATABASE_URL: `sqlite:${path.join(os.tmpdir(), 'never-opened.sqlite')}`, DATABASE_REPLICA_URLS: 'postgres://postgres@127.0.0.1:5432/postgres' };
      expect(() => loadConfig(env)).toThrow(ConfigError);
      expect(() => loadConfig(env)).toThrow(/^Invalid configuration: DATABASE_REPLICA_URLS needs a PostgreSQL DATABASE_URL/);
    });
  });
}
