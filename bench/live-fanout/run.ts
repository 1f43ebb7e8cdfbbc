/**
 * bench/live-fanout: live GraphQL subscribers under a stream of writes (issue 37, point 8).
 *
 * Two instances on one PostgreSQL: B takes the writes (PATCH /v1/payments/{id}, each one a
 * `payment.updated` event), A holds `BENCH_SUBSCRIBERS` (200) graphql-ws subscribers of
 * `paymentUpdated { id description customer { id } refunds { id } }` on the same account, so every
 * event crosses instances (NOTIFY, or Redis with BENCH_REDIS_URL) and is then resolved and sent to
 * every subscriber. The writes go at `BENCH_RATE` (500) a second for `BENCH_SECONDS` (10), each
 * naming its sequence number in the description; the subscribers run in `BENCH_SUB_THREADS` (2)
 * worker threads and note when each payload arrives. Reported: event-to-receipt (from the write's
 * answer, i.e. after its commit, to each subscriber's receipt), p50/p99/max, and whether every
 * subscriber got every event exactly once.
 *
 * Baseline (same run): the same payloads through the plainest path that does the same work: the
 * writer's transaction (UPDATE + INSERT of the event + NOTIFY) sent straight with `pg`, a bare
 * `ws` server over TLS that LISTENs and sends each notified payload, the same JSON size as the
 * service's, to the same number of sockets in the same threads.
 */
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { Client as PgClient } from 'pg';
import WebSocket, { WebSocketServer } from 'ws';
import { benchTempDir, databaseName, createDatabase, dropDatabase, pgUrl, servicePorts, startProcess, ROOT, SERVICE_NODE_FLAGS, rssMb } from '../lib';
import { api, loadAverage, machine, mb, percentile, startService, stopService, type Service } from '../service';

const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 200);
const RATE = Number(process.env.BENCH_RATE ?? 500);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const THREADS = Number(process.env.BENCH_SUB_THREADS ?? 2);
const PAYMENTS = 50;
const GOAL_P99_MS = 250;
// BENCH_ORDERED=1: the events subscription instead, whose live events an instance reads in write
// order from the database (EventTail) rather than straight from the fan-out.
const ORDERED = process.env.BENCH_ORDERED === '1';
const QUERY = ORDERED
  ? 'subscription { events(types: ["payment.updated"]) { id type data } }'
  : 'subscription { paymentUpdated { id description customer { id } refunds { id } } }';

interface SubscriberJob { url: string; key: string | null; count: number; bare: boolean; ca?: string }

// ---- subscriber threads: open `count` sockets, note every payload's sequence number and arrival.
if (!isMainThread) {
  const job = workerData as SubscriberJob;
  const received: Array<[number, number, number]> = []; // [subscriber, seq, at]
  let ready = 0;
  const sockets: WebSocket[] = [];
  for (let i = 0; i < job.count; i++) {
    const socket = new WebSocket(job.url, job.bare ? undefined : 'graphql-transport-ws', { rejectUnauthorized: false });
    sockets.push(socket);
    socket.on('open', () => {
      if (job.bare) {
        ready++;
        if (ready === job.count) parentPort!.postMessage({ ready: true });
        return;
      }
      socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${job.key}` } }));
    });
    socket.on('message', (raw) => {
      const at = performance.timeOrigin + performance.now();
      const text = String(raw);
      if (job.bare) {
        const m = /seq-(\d+)/.exec(text);
        if (m) received.push([i, Number(m[1]), at]);
        return;
      }
      const msg = JSON.parse(text) as { type: string; payload?: { data?: { paymentUpdated?: { description?: string } } } };
      if (msg.type === 'connection_ack') {
        socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: QUERY } }));
        // No acknowledgement of a subscribe in graphql-ws: counted ready once sent, and the writes start after a pause.
        ready++;
        if (ready === job.count) parentPort!.postMessage({ ready: true });
      } else if (msg.type === 'next') {
        const m = /seq-(\d+)/.exec(msg.payload?.data?.paymentUpdated?.description ?? (ORDERED ? text : ''));
        if (m) received.push([i, Number(m[1]), at]);
      } else if (msg.type === 'error') {
        parentPort!.postMessage({ error: JSON.stringify(msg.payload) });
      }
    });
    socket.on('error', (err) => parentPort!.postMessage({ error: String(err) }));
    socket.on('close', (code, reason) => {
      if (code !== 1005 && code !== 1006) parentPort!.postMessage({ error: `socket ${i} closed: ${code} ${String(reason)}` });
    });
  }
  parentPort!.on('message', (m: { done?: boolean }) => {
    if (!m.done) return;
    for (const s of sockets) s.terminate();
    parentPort!.postMessage({ received });
  });
}

function startSubscribers(job: Omit<SubscriberJob, 'count'>, total: number): Promise<{ workers: Worker[]; collect(): Promise<Array<[number, number, number]>> }> {
  const workers: Worker[] = [];
  const readies: Promise<void>[] = [];
  for (let t = 0; t < THREADS; t++) {
    const count = Math.floor(total / THREADS) + (t < total % THREADS ? 1 : 0);
    const worker = new Worker(__filename, { workerData: { ...job, count }, execArgv: ['-r', 'ts-node/register/transpile-only'] });
    workers.push(worker);
    readies.push(new Promise((resolve, reject) => {
      worker.on('message', (m: { ready?: boolean; error?: string }) => {
        if (m.ready) resolve();
        if (m.error) console.error(`  subscriber thread ${t}: ${m.error}`);
      });
      worker.once('error', reject);
    }));
  }
  return Promise.all(readies).then(() => ({
    workers,
    async collect() {
      const parts = await Promise.all(workers.map((w, t) => new Promise<Array<[number, number, number]>>((resolve) => {
        w.on('message', (m: { received?: Array<[number, number, number]> }) => {
          if (m.received) resolve(m.received.map(([i, seq, at]) => [t * 100000 + i, seq, at]));
        });
        w.postMessage({ done: true });
      })));
      await Promise.all(workers.map((w) => w.terminate()));
      return parts.flat();
    },
  }));
}

/** Calls `write(seq)` RATE times a second for SECONDS; returns when each write was answered (its commit seen). */
async function writeAtRate(write: (seq: number) => Promise<void>): Promise<Map<number, number>> {
  const answered = new Map<number, number>();
  const total = RATE * SECONDS;
  const start = performance.now();
  const inFlight: Promise<void>[] = [];
  for (let seq = 0; seq < total; seq++) {
    const due = start + (seq * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const p = write(seq).then(() => {
      answered.set(seq, performance.timeOrigin + performance.now());
    });
    inFlight.push(p);
    if (inFlight.length > 256) await inFlight.shift();
  }
  await Promise.all(inFlight);
  const took = (performance.now() - start) / 1000;
  console.log(`  ${total} writes in ${took.toFixed(1)} s (${(total / took).toFixed(0)}/s asked ${RATE}/s)`);
  return answered;
}

function report(name: string, answered: Map<number, number>, received: Array<[number, number, number]>, subscribers: number): { p99: number } {
  const perPair = new Map<string, number>();
  const latencies: number[] = [];
  for (const [sub, seq, at] of received) {
    const k = `${sub}:${seq}`;
    perPair.set(k, (perPair.get(k) ?? 0) + 1);
    const written = answered.get(seq);
    if (written !== undefined) latencies.push(at - written);
  }
  const expected = answered.size * subscribers;
  const duplicates = [...perPair.values()].filter((n) => n > 1).length;
  const missing = expected - perPair.size;
  const p50 = percentile(latencies, 50);
  const p99 = percentile(latencies, 99);
  console.log(`  ${name}: ${received.length} payloads for ${expected} expected (${missing} not received by 3 s after the last write, ${duplicates} duplicated); event-to-receipt p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${latencies.reduce((m, x) => Math.max(m, x), -Infinity).toFixed(1)} ms`);
  return { p99 };
}

async function serviceRun(dataDir: string): Promise<{ p99: number; rss: number | null }> {
  const name = databaseName('fanout');
  await createDatabase(name);
  let a: Service | undefined;
  let b: { child: import('node:child_process').ChildProcess } | undefined;
  try {
    // Out of the way: the per-address, per-key and per-account socket and subscription caps.
    const env = {
      MAX_CONNECTIONS_PER_IP: '100000', MAX_CONNECTIONS: '100000', GRAPHQL_WS_MAX_SOCKETS_PER_KEY: '100000', GRAPHQL_WS_MAX_SUBSCRIPTIONS_PER_ACCOUNT: '100000',
    };
    a = await startService(pgUrl(name), path.join(dataDir, 'a'), env);
    const started = await startProcess(
      [...SERVICE_NODE_FLAGS, path.join(ROOT, 'bin', 'payorch.js'), 'start'],
      { DATABASE_URL: pgUrl(name), DATA_DIR: path.join(dataDir, 'b'), ...servicePorts(), HOST: '127.0.0.1', RUN_WORKERS: 'false', LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '100000000', ...env },
      /listening on https:\/\/[^:]+:(\d+)/,
    );
    b = started;
    const writer = `https://127.0.0.1:${started.match[1]}`;
    const headers = { authorization: `Bearer ${a.testKey}` };
    const customer = await api('POST', `${writer}/v1/customers`, headers, { email: 'fanout@example.com' });
    const ids: string[] = [];
    for (let i = 0; i < PAYMENTS; i++) {
      const res = await api('POST', `${writer}/v1/payments`, headers, { amount: 1000 + i, currency: 'usd', paymentMethod: 'pm_card_visa', customerId: customer.json.data!.id });
      ids.push(res.json.data!.id as string);
    }
    // BENCH_SAME_INSTANCE=1: the subscribers on the writing instance (no crossing between instances).
    const subscribeTo = process.env.BENCH_SAME_INSTANCE === '1' ? writer : a.baseUrl;
    const subs = await startSubscribers({ url: `${subscribeTo.replace('https:', 'wss:')}/graphql`, key: a.testKey, bare: false }, SUBSCRIBERS);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    let peak = 0;
    const rssTimer = setInterval(() => { peak = Math.max(peak, rssMb(a!.pid) ?? 0); }, 200);
    const answered = await writeAtRate(async (seq) => {
      const res = await api('PATCH', `${writer}/v1/payments/${ids[seq % ids.length]}`, headers, { description: `seq-${seq}` });
      if (res.status !== 200) throw new Error(`PATCH answered ${res.status}: ${JSON.stringify(res.json.error)}`);
    });
    await new Promise((resolve) => setTimeout(resolve, 3000));
    clearInterval(rssTimer);
    const received = await subs.collect();
    const r = report('service (A subscribers, B writes)', answered, received, SUBSCRIBERS);
    return { p99: r.p99, rss: peak };
  } finally {
    b?.child.kill('SIGTERM');
    if (a) await stopService(a);
    await dropDatabase(name);
  }
}

/** The plainest path: pg UPDATE + INSERT + NOTIFY per write, a TLS `ws` server that LISTENs and sends each payload to every socket. */
async function baselineRun(dataDir: string, payloadBytes: number): Promise<{ p99: number }> {
  const name = databaseName('fanout_base');
  await createDatabase(name);
  const cert = path.join(dataDir, 'a', 'tls', 'cert.pem');
  const key = path.join(dataDir, 'a', 'tls', 'key.pem');
  const server = https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) });
  const wss = new WebSocketServer({ server });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const listener = new PgClient({ connectionString: pgUrl(name) });
  const writer = new PgClient({ connectionString: pgUrl(name) });
  try {
    await listener.connect();
    await writer.connect();
    await writer.query('CREATE TABLE items (id text PRIMARY KEY, description text, updated_at timestamptz); CREATE TABLE events (id bigserial PRIMARY KEY, data jsonb, created_at timestamptz)');
    for (let i = 0; i < PAYMENTS; i++) await writer.query('INSERT INTO items VALUES ($1, $2, now())', [`pay_${i}`, '']);
    const pad = 'x'.repeat(Math.max(0, payloadBytes - 120));
    await listener.query('LISTEN bench_events');
    listener.on('notification', (n) => {
      const text = JSON.stringify({ id: '1', type: 'next', payload: { data: { paymentUpdated: { description: n.payload, pad } } } });
      for (const client of wss.clients) client.send(text);
    });
    const subs = await startSubscribers({ url: `wss://127.0.0.1:${port}/`, key: null, bare: true }, SUBSCRIBERS);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const answered = await writeAtRate(async (seq) => {
      await writer.query(`WITH u AS (UPDATE items SET description = $1, updated_at = now() WHERE id = $2 RETURNING id),
        e AS (INSERT INTO events (data, created_at) SELECT json_build_object('id', id, 'description', $1::text), now() FROM u RETURNING id)
        SELECT pg_notify('bench_events', $1) FROM e`, [`seq-${seq}`, `pay_${seq % PAYMENTS}`]);
    });
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const received = await subs.collect();
    return report('baseline (pg NOTIFY → bare ws over TLS)', answered, received, SUBSCRIBERS);
  } finally {
    await listener.end().catch(() => undefined);
    await writer.end().catch(() => undefined);
    wss.close();
    server.close();
    await dropDatabase(name);
  }
}

async function main(): Promise<void> {
  const dataDir = benchTempDir('fanout');
  console.log(`bench/live-fanout: ${SUBSCRIBERS} subscribers, ${RATE} events/s for ${SECONDS} s, PostgreSQL, ${ORDERED ? 'events(types:) (ordered)' : 'paymentUpdated'}; ${machine()}; ${new Date().toISOString()}; load average ${loadAverage()}`);
  try {
    const service = await serviceRun(dataDir);
    // The service's payload for this document, about: {"id":"1","type":"next","payload":{"data":{"paymentUpdated":{…}}}}
    const baseline = await baselineRun(dataDir, 230);
    console.log(`\n| subscribers × events/s | service p99 | baseline p99 | ratio | goal p99 ≤ ${GOAL_P99_MS} ms | service RSS peak |\n|---|---|---|---|---|---|\n| ${SUBSCRIBERS} × ${RATE} | ${service.p99.toFixed(1)} ms | ${baseline.p99.toFixed(1)} ms | ${(service.p99 / baseline.p99).toFixed(2)} | ${service.p99 <= GOAL_P99_MS ? 'met' : 'MISSED'} | ${mb(service.rss)} |`);
    console.log(`load average after: ${loadAverage()}`);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

if (isMainThread) {
  main().catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
}
