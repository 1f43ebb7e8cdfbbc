/**
 * bench/webhook-delivery: signed deliveries per second from the service's delivery worker to a
 * local HTTPS receiver, and event-to-delivery latency, next to a baseline measured in the same
 * run: the same signed bodies POSTed to the same receiver by a plain Node client.
 *
 *   npm run bench:webhook-delivery                 # PostgreSQL
 *   BENCH_DB=sqlite BENCH_EVENTS=2000 npm run bench:webhook-delivery
 */
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { SERVICE_NODE_FLAGS, benchPort, benchTempDir, freshDatabase, servicePorts, startProcess } from '../lib';
import { generateSelfSigned } from '../../src/tls';
import { signPayload } from '../../src/modules/webhooks/signature';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 3000);
const LIVE_EVENTS = Number(process.env.BENCH_LIVE_EVENTS ?? 400);
const DIALECT = process.env.BENCH_DB ?? 'postgres';

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};

/** The receiver: answers 200 at once and notes when each event first arrived. */
async function startReceiver(cert: string, key: string) {
  const arrivals = new Map<string, { at: number; createdAt: number }>();
  const server = https.createServer({ cert, key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const id = String(req.headers['x-service-event-id'] ?? '');
      if (!arrivals.has(id)) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { createdAt?: string };
        arrivals.set(id, { at: Date.now(), createdAt: body.createdAt ? Date.parse(body.createdAt) : NaN });
      }
      res.writeHead(200).end('ok');
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((r) => server.listen(benchPort(), '127.0.0.1', () => r()));
  return { port: (server.address() as { port: number }).port, arrivals, close: () => new Promise((r) => server.close(r)) };
}

const agent = new https.Agent({ keepAlive: true, maxSockets: 32, rejectUnauthorized: false });

function post(url: string, body: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

async function waitFor(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

/** The service with the first-start test key (printed on an empty database) and its base URL. */
async function startService(env: Record<string, string>): Promise<{ child: import('node:child_process').ChildProcess; baseUrl: string; testKey?: string }> {
  const { child, match } = await startProcess(
    [...SERVICE_NODE_FLAGS, '-r', path.join(__dirname, 'count-sql.js'), path.join(__dirname, '..', '..', 'bin', 'payorch.js'), 'start'],
    { HOST: '127.0.0.1', ...servicePorts(), LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '100000000', ...env },
    /(?:test key: (sk_test_\S+)[\s\S]*)?listening on (https:\/\/\S+)/,
  );
  return { child, baseUrl: match[2].replace('localhost', '127.0.0.1'), testKey: match[1] };
}

async function main(): Promise<void> {
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0'; // the bench's own API client only
  const dir = benchTempDir('webhook-delivery');
  const tls = await generateSelfSigned();
  const caFile = path.join(dir, 'receiver-ca.pem');
  fs.writeFileSync(caFile, tls.cert);
  const receiver = await startReceiver(tls.cert, tls.key);
  const hookUrl = `https://127.0.0.1:${receiver.port}/hook`;
  const db = await freshDatabase(DIALECT, dir);
  const common = { DATABASE_URL: db.url, DATA_DIR: dir, WEBHOOK_CA_FILE: caFile, WEBHOOK_ALLOW_PRIVATE: 'true' };
  process.stdout.write(`webhook-delivery benchmark on ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, node ${process.version}, ${DIALECT}\n`);

  // Phase 1: a backlog of events written with the worker off.
  const writer = await startService({ ...common, RUN_WORKERS: 'false' });
  const key = writer.testKey as string;
  const auth = { authorization: `Bearer ${key}` };
  const endpoint = await new Promise<{ secret: string }>((resolve, reject) => {
    const body = JSON.stringify({ url: hookUrl, events: ['*'] });
    const req = https.request(`${writer.baseUrl}/v1/webhook-endpoints`, { method: 'POST', agent, headers: { 'content-type': 'application/json', ...auth } }, (res) => {
      let t = '';
      res.on('data', (c) => (t += c));
      res.on('end', () => resolve(JSON.parse(t).data));
    });
    req.on('error', reject);
    req.end(body);
  });
  const customers = Array.from({ length: EVENTS }, (_, i) => JSON.stringify({ email: `backlog${i}@example.com` }));
  await pool(customers, 16, (body) => post(`${writer.baseUrl}/v1/customers`, body, auth));
  writer.child.kill('SIGTERM');
  await new Promise((r) => writer.child.on('exit', r));

  // Phase 2: a worker drains the backlog.
  const t0 = Date.now();
  const countFile = path.join(dir, 'statements.json');
  const worker = await startService({ ...common, RUN_WORKERS: 'true', BENCH_COUNT_SQL: DIALECT === 'postgres' ? countFile : '' });
  const drained = await waitFor(() => receiver.arrivals.size >= EVENTS, 120_000);
  const drainSeconds = (Date.now() - t0) / 1000;
  // The worker's statements and CPU time from its first claim to here (PostgreSQL only).
  let drainCost: { counts: Record<string, number>; ms: Record<string, number>; cpuMs: number } | undefined;
  if (DIALECT === 'postgres') {
    worker.child.kill('SIGUSR2');
    if (await waitFor(() => fs.existsSync(countFile), 5_000)) drainCost = JSON.parse(fs.readFileSync(countFile, 'utf8'));
  }
  const times = [...receiver.arrivals.values()].map((a) => a.at);
  // Steady-state rate: first to last arrival, so the worker's start-up is not counted.
  const drainRate = receiver.arrivals.size / Math.max(0.001, (Math.max(...times) - Math.min(...times)) / 1000);

  // Phase 3: live events at a steady pace; event-to-delivery latency.
  const before = new Set(receiver.arrivals.keys());
  const live = Array.from({ length: LIVE_EVENTS }, (_, i) => JSON.stringify({ email: `live${i}@example.com` }));
  await pool(live, 4, (body) => post(`${worker.baseUrl}/v1/customers`, body, auth));
  await waitFor(() => receiver.arrivals.size >= EVENTS + LIVE_EVENTS, 60_000);
  const latencies = [...receiver.arrivals].filter(([id]) => !before.has(id)).map(([, a]) => a.at - a.createdAt);
  worker.child.kill('SIGTERM');
  await new Promise((r) => worker.child.on('exit', r));

  // Baseline: the same signed bodies straight from a plain client.
  const bodies = Array.from({ length: EVENTS }, (_, i) =>
    JSON.stringify({ id: `evt_base${i}`, object: 'event', type: 'customer.created', createdAt: new Date().toISOString(), livemode: false, data: { object: { email: `b${i}@example.com` } } }),
  );
  const baseline = async (inFlight: number) => {
    const latencies: number[] = [];
    const b0 = Date.now();
    await pool(bodies, inFlight, async (body) => {
      const s = Date.now();
      await post(hookUrl, body, { 'x-service-signature': signPayload(endpoint.secret, body), 'x-service-event-id': `base-${s}-${Math.random()}`, 'x-service-delivery-attempt': '1' });
      latencies.push(Date.now() - s);
    });
    return { rate: EVENTS / ((Date.now() - b0) / 1000), latencies };
  };
  // At the worker's own limit for one endpoint (WEBHOOK_ENDPOINT_CONCURRENCY, 16) as well: shown, not compared.
  const atEndpointLimit = await baseline(16);
  const { rate: baselineRate, latencies: baselineLatencies } = await baseline(32);

  process.stdout.write(`\n  backlog of ${EVENTS} events drained${drained ? '' : ' (INCOMPLETE)'}: ${drainRate.toFixed(0)} deliveries/s (${drainSeconds.toFixed(1)} s including the worker's start-up)\n`);
  process.stdout.write(`  baseline (plain client, 32 in flight): ${baselineRate.toFixed(0)} deliveries/s, request p50 ${pct(baselineLatencies, 50)} ms, p99 ${pct(baselineLatencies, 99)} ms\n`);
  process.stdout.write(`  the same client with 16 in flight (the worker's limit per endpoint): ${atEndpointLimit.rate.toFixed(0)} deliveries/s, request p50 ${pct(atEndpointLimit.latencies, 50)} ms\n`);
  process.stdout.write(`  ratio service/baseline: ${(drainRate / baselineRate).toFixed(2)}\n`);
  if (drainCost) {
    const total = Object.values(drainCost.counts).reduce((a, b) => a + b, 0);
    process.stdout.write(`  worker during the drain: ${(total / EVENTS).toFixed(2)} statements and ${(drainCost.cpuMs / EVENTS).toFixed(3)} ms of CPU per delivery\n`);
    for (const [kind, n] of Object.entries(drainCost.counts).sort((a, b) => b[1] - a[1])) {
      process.stdout.write(`    ${String(n).padStart(6)}  ${(n / EVENTS).toFixed(2)}/delivery  ${((drainCost.ms[kind] ?? 0) / n).toFixed(2)} ms each  ${kind}\n`);
    }
  }
  process.stdout.write(`  live event-to-delivery latency over ${latencies.length} events: p50 ${pct(latencies, 50)} ms, p99 ${pct(latencies, 99)} ms\n`);
  await receiver.close();
  agent.destroy();
  await db.drop();
  fs.rmSync(dir, { recursive: true, force: true });
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
