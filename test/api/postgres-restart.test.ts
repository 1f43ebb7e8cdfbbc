import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { createClient, type Client } from 'graphql-ws';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT, freshDatabase, type TestDatabase } from '../helpers/db';
import type { HttpResponse } from '../helpers/http';
import { startPgCluster, type PgCluster } from '../helpers/pg-cluster';
import { spawnInstance, type SpawnedInstance } from '../helpers/spawn';
import { waitFor } from '../helpers/wait';

// The service as it runs for real (its own process, workers on) while its PostgreSQL server
// crashes and comes back, under load: four client loops against it, a second instance writing,
// and a GraphQL subscription open across the outage.

/** How long the PostgreSQL server stays down: the outage the service is put through. */
const OUTAGE_MS = 5_000;
const MAX_REQUEST_MS = 10_000;
const RECOVERY_MS = 5_000;
/** The loops whose every answer is checked (the other instance's writes only feed the subscriber). */
const LOOPS = ['customers:read', 'customers:write', 'payments:read', 'payments:write'];
/** Answers per loop, from requests started once the recovery time is over, that show it recovered. */
const SAMPLES_AFTER_RECOVERY = 5;

let app: TestApp;

/** One request of a client loop: what it asked, when, and what came back. */
interface Sample {
  loop: string;
  started: number;
  ended: number;
  status: number;
  transport: 'rest' | 'graphql';
  /** The error code over REST or GraphQL; '' on success. */
  code: string;
}

function errorCode(res: HttpResponse, graphql: boolean): string {
  if (graphql) return res.status === 200 && !res.body?.errors ? '' : String(res.body?.errors?.[0]?.extensions?.code ?? `http_${res.status}`);
  return res.status < 300 ? '' : String(res.body?.error?.code ?? `http_${res.status}`);
}

/** Runs `request` back to back until stopped; a transport failure (no answer) is a sample too. */
function clientLoop(loop: string, request: (i: number) => Promise<{ res: HttpResponse; graphql: boolean }>, samples: Sample[]) {
  let running = true;
  const done = (async () => {
    for (let i = 0; running; i++) {
      const started = Date.now();
      try {
        const { res, graphql } = await request(i);
        samples.push({ loop, started, ended: Date.now(), status: res.status, transport: graphql ? 'graphql' : 'rest', code: errorCode(res, graphql) });
      } catch (err) {
        samples.push({ loop, started, ended: Date.now(), status: 0, transport: 'rest', code: `no answer: ${(err as Error).message}` });
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  })();
  return async () => {
    running = false;
    await done;
  };
}

function wsClient(baseUrl: string, ca: string, key: string): Client {
  class TrustingWebSocket extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, { ca, servername: 'localhost' } as WebSocket.ClientOptions);
    }
  }
  return createClient({
    url: `${baseUrl.replace('https:', 'wss:')}/graphql`,
    webSocketImpl: TrustingWebSocket,
    connectionParams: { authorization: `Bearer ${key}` },
    retryAttempts: 0,
    lazy: true,
  });
}

if (DIALECT === 'postgres') {
  describe('a PostgreSQL restart under load', () => {
    let cluster: PgCluster;
    let instance: SpawnedInstance | undefined;
    let dataDir: string | undefined;

    beforeAll(async () => {
      cluster = await startPgCluster();
      // This process migrates and holds the account; it is also the second instance.
      // Its own data directory (TLS certificate, encryption key), removed afterwards.
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-pg-restart-'));
      app = await startTestApp({ database: { url: cluster.url, dataDir, drop: async () => undefined } });
      instance = await spawnInstance({ DATABASE_URL: cluster.url, DATA_DIR: app.config.dataDir, RUN_WORKERS: 'true', RATE_LIMIT_PER_MINUTE: '1000000' }, app.server.cert);
    }, 120_000);
    afterAll(async () => {
      await instance?.stop('SIGKILL');
      await app?.stop();
      await cluster?.destroy();
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    }, 60_000);

    it('should keep running, answer 503 quickly during the outage, recover within 5 s and deliver every event to a subscriber', async () => {
      const spawned = instance!;
      const key = app.account.testKey;
      const gql = (query: string, variables: Record<string, unknown> = {}) =>
        spawned.request('POST', '/graphql', { key, body: { query, variables } }).then((res) => ({ res, graphql: true }));
      const rest = (method: string, p: string, body?: unknown) => spawned.request(method, p, { key, body }).then((res) => ({ res, graphql: false }));

      // A subscriber on the spawned instance; customers are created through both instances.
      const subscriber = wsClient(spawned.baseUrl, app.server.cert, key);
      let subscriptionEnded = '';
      subscriber.on('closed', (event) => {
        subscriptionEnded ||= `socket closed ${(event as { code: number }).code}`;
      });
      const received = new Set<string>();
      await new Promise<void>((resolve, reject) => {
        subscriber.on('connected', () => resolve());
        subscriber.subscribe<{ events: { id: string } }>(
          { query: 'subscription { events(types: ["customer.created"]) { id } }' },
          {
            next: (result) => {
              if (result.data) received.add(result.data.events.id);
              else subscriptionEnded ||= JSON.stringify(result.errors);
            },
            error: (err) => {
              subscriptionEnded ||= `error ${JSON.stringify(err)}`;
              reject(err);
            },
            complete: () => {
              subscriptionEnded ||= 'complete';
            },
          },
        );
      });
      // The subscription registers after connecting: it is there once an event reaches it.
      // Probe customers until one does; one created before it registered never does, and is
      // left out of the events counted at the end.
      for (let i = 0; received.size === 0; i++) {
        if (i === 40) throw new Error(`the subscription got no event: ${subscriptionEnded}`);
        expect((await rest('POST', '/v1/customers', { email: `probe${i}@example.com` })).res.status).toBe(201);
        await waitFor(() => received.size > 0, { timeoutMs: 250, what: 'a probe event at the subscriber' }).catch(() => undefined);
      }

      const samples: Sample[] = [];
      const written: Sample[] = [];
      const stops = [
        clientLoop('customers:read', (i) => (i % 2 ? gql('{ customers { total } }') : rest('GET', '/v1/customers?pageSize=5')), samples),
        clientLoop('customers:write', (i) =>
          i % 2
            ? gql('mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { id } }', { input: { email: `gql${i}@example.com` } })
            : rest('POST', '/v1/customers', { email: `rest${i}@example.com` }), samples),
        clientLoop('payments:read', (i) => (i % 2 ? gql('{ payments { total } }') : rest('GET', '/v1/payments?pageSize=5')), samples),
        clientLoop('payments:write', () => rest('POST', '/v1/payments', { amount: 1250, currency: 'usd', paymentMethod: 'pm_card_visa' }), samples),
        // The other instance writes too: its events reach the subscriber only through the fan-out.
        clientLoop('other-instance', (i) =>
          app.request('POST', '/v1/customers', { key, body: { email: `other${i}@example.com` } }).then((res) => ({ res, graphql: false })), written),
      ];
      const exited = () => new Error(`the service exited with ${spawned.child.exitCode}:\n${spawned.output.slice(-20).join('')}`);
      const probeReady = async () => {
        if (spawned.child.exitCode !== null) throw exited();
        return spawned.request('GET', '/ready').catch((err: Error) => ({ status: 0, body: { error: { code: err.message } } }) as HttpResponse);
      };

      // Under load: every loop answered before the server goes down.
      await waitFor(() => [...LOOPS.map((loop) => samples.some((s) => s.loop === loop && s.code === '')), written.some((s) => s.code === '')].every(Boolean), {
        timeoutMs: 30_000, intervalMs: 50, what: 'an answer to every client loop',
      });
      expect((await probeReady()).status).toBe(200);

      await cluster.stop('immediate');
      const down = Date.now();
      // Not ready within half a second of the server going down.
      const readyDuringOutage = await waitFor(async () => {
        const res = await probeReady();
        return res.status === 200 ? null : res;
      }, { timeoutMs: 500, intervalMs: 50, what: '/ready to say the database is gone' });
      // The rest of the outage: its length is the scenario, not a wait for something.
      await new Promise((r) => setTimeout(r, OUTAGE_MS - (Date.now() - down)));
      const starting = Date.now();
      await cluster.start();
      const up = Date.now();
      await waitFor(async () => (await probeReady()).status === 200, { timeoutMs: RECOVERY_MS, intervalMs: 100, what: '/ready after the restart' });
      // Requests started once the recovery time is over, answered: a few from every loop, and a
      // write through the other instance since the restart.
      await waitFor(() => [
        ...LOOPS.map((loop) => samples.filter((s) => s.loop === loop && s.started >= up + RECOVERY_MS).length >= SAMPLES_AFTER_RECOVERY),
        written.some((s) => s.code === '' && s.started >= up),
      ].every(Boolean), { timeoutMs: RECOVERY_MS + 30_000, intervalMs: 50, what: 'answers to requests started after the recovery time' });
      for (const stop of stops) await stop();

      // The process never exited.
      if (spawned.child.exitCode !== null) throw exited();
      expect(spawned.child.exitCode).toBeNull();
      expect(spawned.child.signalCode).toBeNull();

      // No request was held long, and no request got anything but success or service_unavailable.
      const all = [...samples, ...written];
      const slowest = Math.max(...all.map((s) => s.ended - s.started));
      expect(slowest).toBeLessThan(MAX_REQUEST_MS);
      expect(samples.filter((s) => s.code !== '' && s.code !== 'service_unavailable').slice(0, 5)).toEqual([]);
      expect(samples.filter((s) => s.transport === 'rest' && s.code === 'service_unavailable' && s.status !== 503).slice(0, 5)).toEqual([]);

      // Every loop was answered service_unavailable while the server was down …
      const duringOutage = samples.filter((s) => s.started >= down && s.ended <= starting);
      for (const loop of LOOPS) {
        const ofLoop = duringOutage.filter((s) => s.loop === loop);
        expect(ofLoop.length).toBeGreaterThan(0);
        expect(ofLoop.filter((s) => s.code !== 'service_unavailable')).toEqual([]);
      }
      // … both transports included …
      expect(duringOutage.some((s) => s.transport === 'graphql')).toBe(true);
      expect(duringOutage.some((s) => s.transport === 'rest')).toBe(true);
      expect(readyDuringOutage.status).toBe(503);
      expect(readyDuringOutage.body.error.code).toBe('service_unavailable');
      // … and everything works again within 5 s of the server being back.
      const afterRecovery = samples.filter((s) => s.started >= up + RECOVERY_MS);
      for (const loop of LOOPS) {
        const ofLoop = afterRecovery.filter((s) => s.loop === loop);
        expect(ofLoop.length).toBeGreaterThan(0);
        expect(ofLoop.filter((s) => s.code !== '')).toEqual([]);
      }
      expect((await probeReady()).status).toBe(200);

      // Every customer.created event committed (through either instance, before, during or after
      // the outage, whether or not its request got an answer) reached the subscriber.
      const rows = await app.server.services.db.select<{ id: string; data: string }>(
        "SELECT id, data FROM events WHERE account_id = $1 AND mode = 'test' AND type = 'customer.created'",
        [app.account.accountId],
      );
      const missedProbe = (e: { id: string; data: string }) => /"email":"probe\d+@example\.com"/.test(String(e.data)) && !received.has(e.id);
      const committed = rows.filter((e) => !missedProbe(e));
      expect(written.filter((s) => s.code === '' && s.started >= up).length).toBeGreaterThan(0);
      await waitFor(() => committed.every((e) => received.has(e.id)), { timeoutMs: 10_000, intervalMs: 100, what: 'every event at the subscriber' }).catch(() => undefined);
      expect(committed.filter((e) => !received.has(e.id))).toEqual([]);
      expect(received.size).toBe(committed.length);
      expect(subscriptionEnded).toBe('');
      await subscriber.dispose();
    }, 120_000);
  });
} else {
  describe('readiness of a SQLite database', () => {
    let database: TestDatabase;

    beforeAll(async () => {
      database = await freshDatabase();
      app = await startTestApp({ database });
    }, 60_000);
    afterAll(async () => {
      await app?.stop();
      await database?.drop();
    }, 60_000);

    it('should answer /ready with 503 while the database file is missing, and 200 once it is back', async () => {
      const file = database.url.slice('sqlite:'.length);
      expect((await app.request('GET', '/ready')).status).toBe(200);
      // The open handle still reads an unlinked file: what is written now would be lost on restart.
      fs.renameSync(file, `${file}.moved`);
      const missing = await app.request('GET', '/ready');
      expect(missing.status).toBe(503);
      expect(missing.body.error.code).toBe('service_unavailable');
      fs.renameSync(`${file}.moved`, file);
      expect((await app.request('GET', '/ready')).status).toBe(200);
    });
  });
}
