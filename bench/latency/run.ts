/**
 * bench/latency: what one request alone costs. `POST /v1/payments` on the service and the same
 * payment on bench/create-payment's bare route, one request at a time over one keep-alive HTTPS
 * connection each, timed with the monotonic clock to the microsecond (autocannon counts whole
 * milliseconds, too coarse for a request of 1 to 3 ms). The two alternate in blocks of
 * `BENCH_BLOCK` requests, so a change of the machine's speed during the run moves both alike.
 *
 *   npm run bench:latency                                  # PostgreSQL and SQLite
 *   BENCH_DB=postgres BENCH_REQUESTS=5000 npm run bench:latency
 *   BENCH_REQUESTS=200 BENCH_WARMUP_REQUESTS=50 npm run bench:latency   # smoke run
 *   BENCH_TRACE=1 npm run bench:latency                    # also where each request's time goes
 *
 * With BENCH_TRACE=1 both processes run with trace-preload.js, which times each request inside
 * the process and its waits for the database, and the run prints, per request: the time inside
 * the process, the time waiting for the database, the rest (the process's own work: parsing,
 * validation, routing, JSON, logging) and the database calls by kind. The tracing costs a few
 * microseconds a request; the latency figures of a traced run are a little higher.
 */
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { benchPort, benchTempDir, freshDatabase, startProcess } from '../lib';
import { startService, stopService } from '../service';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 3000);
const WARMUP = Number(process.env.BENCH_WARMUP_REQUESTS ?? 500);
const BLOCK = Number(process.env.BENCH_BLOCK ?? 100);
const TRACE = process.env.BENCH_TRACE === '1';
const BODY = JSON.stringify({ amount: 1999, currency: 'usd', paymentMethod: 'pm_card_visa', description: 'bench' });

/** One client per target: one socket, kept alive, so each request is one HTTPS round trip and no handshake. */
function client(url: string, headers: Record<string, string>): () => Promise<number> {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1, rejectUnauthorized: false });
  const target = new URL(url);
  return () => new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = https.request({
      host: target.hostname, port: target.port, path: target.pathname, method: 'POST', agent,
      headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(BODY)), 'idempotency-key': randomUUID(), ...headers },
    }, (res) => {
      res.on('data', () => undefined);
      res.on('end', () => {
        if (res.statusCode !== 201) reject(new Error(`answered ${res.statusCode}`));
        else resolve(Number(process.hrtime.bigint() - started) / 1e6);
      });
    });
    req.on('error', reject);
    req.end(BODY);
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function measure(targets: Record<string, () => Promise<number>>, afterWarmup?: () => Promise<void>): Promise<Record<string, number[]>> {
  const names = Object.keys(targets);
  for (const name of names) for (let i = 0; i < WARMUP; i++) await targets[name]();
  await afterWarmup?.();
  const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let done = 0; done < REQUESTS; done += BLOCK) {
    for (const name of names) for (let i = 0; i < Math.min(BLOCK, REQUESTS - done); i++) times[name].push(await targets[name]());
  }
  return times;
}

interface Trace { requests: number; inProcessMs: number; dbWaitMs: number; dbCalls: number; calls: Record<string, number> }

/** Asks a traced process for its totals since it was last asked (trace-preload.js). */
async function readTrace(pid: number, file: string): Promise<Trace> {
  fs.rmSync(file, { force: true });
  process.kill(pid, 'SIGUSR1');
  for (let i = 0; i < 100 && !fs.existsSync(file); i++) await new Promise((r) => setTimeout(r, 20));
  return JSON.parse(fs.readFileSync(file, 'utf8')) as Trace;
}

function traceText(name: string, t: Trace): string {
  const per = (v: number) => (v / t.requests).toFixed(3);
  const calls = Object.entries(t.calls).sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${(n / t.requests).toFixed(2)}`).join(', ');
  return `  ${name.padEnd(9)} inside the process ${per(t.inProcessMs)} ms = waiting for the database ${per(t.dbWaitMs)} ms + its own work ${per(t.inProcessMs - t.dbWaitMs)} ms; ` +
    `database calls ${per(t.dbCalls)} (${calls})\n`;
}

async function benchDialect(dialect: string): Promise<void> {
  const dir = benchTempDir('latency');
  const serviceDb = await freshDatabase(dialect, dir);
  const baselineDb = await freshDatabase(dialect, dir);
  const preload = path.join(__dirname, 'trace-preload.js');
  const traceFiles = {
    service: path.join(dir, 'service-trace.json'), baseline: path.join(dir, 'baseline-trace.json'), twoCommits: path.join(dir, 'two-commits-trace.json'),
  };
  const service = await startService(serviceDb.url, dir, TRACE ? { BENCH_TRACE_FILE: traceFiles.service } : {}, TRACE ? ['-r', preload] : []);
  const startBaseline = (env: Record<string, string>, traceFile: string) => startProcess(
    [...(TRACE ? ['-r', preload] : []), '-r', 'ts-node/register/transpile-only', path.join(__dirname, '..', 'create-payment', 'baseline.ts')],
    { DATABASE_URL: baselineDb.url, PORT: String(benchPort()), ...(TRACE ? { BENCH_TRACE_FILE: traceFile } : {}), ...env },
    /baseline listening (\d+)/,
  );
  const baseline = await startBaseline({}, traceFiles.baseline);
  // PostgreSQL: also the bare route writing the payment in the service's two transactions.
  const twoCommits = dialect === 'postgres' ? await startBaseline({ BASELINE_COMMITS: '2' }, traceFiles.twoCommits) : undefined;
  try {
    const times = await measure({
      baseline: client(`https://127.0.0.1:${baseline.match[1]}/`, {}),
      ...(twoCommits ? { '2 commits': client(`https://127.0.0.1:${twoCommits.match[1]}/`, {}) } : {}),
      service: client(`${service.baseUrl}/v1/payments`, { authorization: `Bearer ${service.testKey}` }),
    }, TRACE ? async () => {
      await readTrace(service.pid, traceFiles.service);
      await readTrace(baseline.child.pid as number, traceFiles.baseline);
      if (twoCommits) await readTrace(twoCommits.child.pid as number, traceFiles.twoCommits);
    } : undefined);
    process.stdout.write(`\n${dialect}: ${REQUESTS} requests each, alternating in blocks of ${BLOCK}, after ${WARMUP} unmeasured\n`);
    const p50: Record<string, number> = {};
    for (const [name, list] of Object.entries(times)) {
      const sorted = [...list].sort((a, b) => a - b);
      p50[name] = percentile(sorted, 50);
      const mean = list.reduce((a, b) => a + b, 0) / list.length;
      process.stdout.write(
        `  ${name.padEnd(9)} p50 ${p50[name].toFixed(2)} ms   p90 ${percentile(sorted, 90).toFixed(2)} ms   p99 ${percentile(sorted, 99).toFixed(2)} ms   mean ${mean.toFixed(2)} ms\n`,
      );
    }
    process.stdout.write(`  p50 service / baseline: ${(p50.service / p50.baseline).toFixed(2)}× (goal ≤ 1.3×)\n`);
    if (twoCommits) process.stdout.write(`  p50 service / the bare route in two transactions: ${(p50.service / p50['2 commits']).toFixed(2)}×\n`);
    if (TRACE) {
      process.stdout.write(traceText('baseline', await readTrace(baseline.child.pid as number, traceFiles.baseline)));
      if (twoCommits) process.stdout.write(traceText('2 commits', await readTrace(twoCommits.child.pid as number, traceFiles.twoCommits)));
      process.stdout.write(traceText('service', await readTrace(service.pid, traceFiles.service)));
    }
    process.stdout.write(`  load average: ${os.loadavg().map((n) => n.toFixed(2)).join(' ')}\n`);
  } finally {
    await stopService(service);
    baseline.child.kill('SIGTERM');
    twoCommits?.child.kill('SIGTERM');
    await serviceDb.drop();
    await baselineDb.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  process.stdout.write(`latency benchmark on ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, node ${process.version}\n`);
  process.stdout.write(`load average at start: ${os.loadavg().map((n) => n.toFixed(2)).join(' ')}\n`);
  for (const dialect of (process.env.BENCH_DB ?? 'postgres,sqlite').split(',')) await benchDialect(dialect);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
