/**
 * bench/create-payment: POST /v1/payments through the real service next to a baseline measured
 * in the same run (bench/create-payment/baseline.ts). Prints req/s, p50 and p99 at 32
 * connections and p50 at 1 connection, with the service/baseline ratios, and first what HTTPS
 * alone reaches at 32 connections on this machine (the same route writing nothing). Beside each
 * figure, the RSS of the process under load (peak over warm-up and run, and at the end; the
 * service's also idle, before its first request), and the load average of the machine.
 *
 *   npm run bench:create-payment            # PostgreSQL and SQLite
 *   BENCH_DB=postgres npm run bench:create-payment
 *   BENCH_TRACING=compare npm run bench:create-payment   # the service traced against untraced (compareTracing)
 *
 * BENCH_METRICS=compare measures something else instead (issue 38): the same route on two
 * services side by side, one with metrics on (METRICS_TOKEN, scraped every BENCH_SCRAPE_MS) and
 * one with them off, in alternating rounds at 32 connections, and prints on/off.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import { benchPort, benchTempDir, freshDatabase, rssMb, sampleRss, startProcess, type RssSamples } from '../lib';
import https from 'node:https';
import { cpuSeconds, startService, stopService } from '../service';

// The bench client talks to local self-signed listeners only.
process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';

const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
/** BENCH_WORKERS=1: the service runs its workers too (webhook delivery, billing, recovery, count folds), as `payorch start` does by default. */
const WORKERS = process.env.BENCH_WORKERS === '1';
/** BENCH_METRICS=compare: metrics on against off, in alternating rounds (BENCH_ROUNDS, 3), scraped every BENCH_SCRAPE_MS (5000). */
const METRICS_COMPARE = process.env.BENCH_METRICS === 'compare';
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SCRAPE_MS = Number(process.env.BENCH_SCRAPE_MS ?? 5000);
const METRICS_TOKEN = 'bench-metrics-token-0123456789';

interface Figures { rps: number; p50: number; p99: number; rss?: RssSamples; cpuMsPerRequest?: number }

const BODY = JSON.stringify({ amount: 1999, currency: 'usd', paymentMethod: 'pm_card_visa', description: 'bench' });

/**
 * Drives `url` at `connections` for `warmup` seconds unmeasured, then for `seconds` measured,
 * sampling the RSS of process `pid` (the one serving `url`) throughout.
 */
async function load(url: string, headers: Record<string, string>, body: string, connections: number, seconds: number, warmup: number, pid: number): Promise<Figures> {
  const rss = sampleRss(pid);
  if (warmup > 0) await drive(url, headers, body, connections, warmup);
  const cpuBefore = cpuSeconds(pid);
  const figures = await drive(url, headers, body, connections, seconds);
  const cpuAfter = cpuSeconds(pid);
  const cpuMsPerRequest = cpuBefore === null || cpuAfter === null ? undefined : ((cpuAfter - cpuBefore) * 1000) / (figures.rps * seconds);
  return { ...figures, rss: rss.stop(), cpuMsPerRequest };
}

async function drive(url: string, headers: Record<string, string>, body: string, connections: number, seconds: number): Promise<Figures> {
  const result = await autocannon({
    url,
    method: 'POST',
    connections,
    duration: seconds,
    headers: { 'content-type': 'application/json', ...headers },
    requests: [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, body, headers: { ...(req.headers as object), 'idempotency-key': randomUUID() } }) }],
  } as never);
  const r = result as unknown as { requests: { average: number }; latency: { p50: number; p99: number }; non2xx: number; errors: number };
  if (r.non2xx || r.errors) process.stdout.write(`  (warning: ${r.non2xx} non-2xx, ${r.errors} errors)\n`);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 };
}

/**
 * The SQLite durability settings the service logged at start ('sqlite durability': journal mode,
 * `synchronous` of its default connection and of the one its transactions write on).
 */
function sqliteDurability(startupOutput: string): string {
  for (const line of startupOutput.split('\n')) {
    if (!line.includes('"sqlite durability"')) continue;
    const d = JSON.parse(line) as { journalMode: string; synchronous: string; transactionsSynchronous: string };
    return `journal_mode=${d.journalMode} synchronous=${d.transactionsSynchronous} (default connection ${d.synchronous})`;
  }
  return '';
}

async function benchDialect(dialect: string): Promise<{ figures: Record<string, Figures>; idleRss: number | null; settings: { service: string; baseline: string } }> {
  const dir = benchTempDir('create-payment');
  const serviceDb = await freshDatabase(dialect, dir);
  const baselineDb = await freshDatabase(dialect, dir);
  const body = BODY;
  const service = await startService(serviceDb.url, dir, WORKERS ? { RUN_WORKERS: 'true' } : {});
  const baseline = await startProcess(
    ['-r', 'ts-node/register/transpile-only', path.join(__dirname, 'baseline.ts')],
    { DATABASE_URL: baselineDb.url, PORT: String(benchPort()) },
    /baseline listening (\d+)(.*)\n/,
  );
  const settings = { service: sqliteDurability(service.startupOutput), baseline: baseline.match[2].trim() };
  const serviceUrl = `${service.baseUrl}/v1/payments`;
  const baselineUrl = `https://127.0.0.1:${baseline.match[1]}/`;
  const auth = { authorization: `Bearer ${service.testKey}` };
  try {
    // Each measured run follows a warm-up at its own concurrency: the first second after going
    // from 1 or 8 connections to 32 opens TLS sessions and database connections, prepares
    // statements on them and re-optimises code, and alone held about 1% of the requests, enough
    // to set p99. The baseline and the service are warmed the same way.
    const servicePid = service.child.pid as number;
    const baselinePid = baseline.child.pid as number;
    const out: Record<string, Figures> = {};
    out['baseline c=32'] = await load(baselineUrl, {}, body, 32, DURATION, WARMUP, baselinePid);
    // The service has served nothing yet (it started before the baseline's run): its idle RSS.
    const idleRss = rssMb(servicePid);
    out['service  c=32'] = await load(serviceUrl, auth, body, 32, DURATION, WARMUP, servicePid);
    out['baseline c=1'] = await load(baselineUrl, {}, body, 1, Math.max(3, DURATION / 2), WARMUP, baselinePid);
    out['service  c=1'] = await load(serviceUrl, auth, body, 1, Math.max(3, DURATION / 2), WARMUP, servicePid);
    return { figures: out, idleRss, settings };
  } finally {
    service.child.kill('SIGTERM');
    baseline.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1000));
    await serviceDb.drop();
    await baselineDb.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The same route writing nothing: what HTTPS and the load generator alone reach on this machine. */
async function benchHttpsAlone(body: string): Promise<Figures> {
  const server = await startProcess(['-r', 'ts-node/register/transpile-only', path.join(__dirname, 'baseline.ts')], { DATABASE_URL: '', PORT: String(benchPort()) }, /baseline listening (\d+)/);
  try {
    const url = `https://127.0.0.1:${server.match[1]}/`;
    return await load(url, {}, body, 32, DURATION, WARMUP, server.child.pid as number);
  } finally {
    server.child.kill('SIGTERM');
  }
}

/** One scrape of GET /metrics, as Prometheus makes it: the whole exposition read. */
function scrape(baseUrl: string): Promise<string> {
  return new Promise((resolve, reject) => {
    https.get(`${baseUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` }, rejectUnauthorized: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(new Error(`GET /metrics answered ${res.statusCode}`))));
    }).on('error', reject);
  });
}

/**
 * Issue 38's figure: create-payment with metrics on against off. Two services on fresh databases
 * of the dialect, started together and loaded in turn (the other one idle), ROUNDS rounds of
 * one run each, the order swapped every round so that drift on the machine falls on both. The
 * service with metrics on is scraped every SCRAPE_MS while it is loaded.
 */
async function compareMetrics(dialect: string): Promise<void> {
  const dirs = { off: benchTempDir('metrics-off'), on: benchTempDir('metrics-on') };
  const dbs = { off: await freshDatabase(dialect, dirs.off), on: await freshDatabase(dialect, dirs.on) };
  const services = {
    off: await startService(dbs.off.url, dirs.off),
    on: await startService(dbs.on.url, dirs.on, { METRICS_TOKEN }),
  };
  const body = BODY;
  const totals = { off: [] as Figures[], on: [] as Figures[] };
  let scrapes = 0;
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const order: Array<'off' | 'on'> = round % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
      const line: string[] = [];
      for (const side of order) {
        const service = services[side];
        const scraping = side === 'on' ? setInterval(() => void scrape(service.baseUrl).then(() => scrapes++, () => undefined), SCRAPE_MS) : undefined;
        try {
          const figures = await load(`${service.baseUrl}/v1/payments`, { authorization: `Bearer ${service.testKey}` }, body, 32, DURATION, WARMUP, service.pid);
          totals[side].push(figures);
          line.push(`${side} ${figures.rps.toFixed(0)} req/s p99 ${figures.p99} ms CPU ${figures.cpuMsPerRequest?.toFixed(2)} ms/req`);
        } finally {
          clearInterval(scraping);
        }
      }
      process.stdout.write(`  round ${round + 1}: ${line.join(';  ')}\n`);
    }
    const sum = (xs: Figures[]) => xs.reduce((a, f) => a + f.rps, 0);
    const cpu = (xs: Figures[]) => xs.reduce((a, f) => a + (f.cpuMsPerRequest ?? 0), 0) / xs.length;
    const exposition = await scrape(services.on.baseUrl);
    const counted = [...exposition.matchAll(/^payorch_payments_total\{status="succeeded"[^}]*\} (\d+)/gm)].reduce((a, m) => a + Number(m[1]), 0);
    process.stdout.write(
      `  metrics on/off at c=32: ${(sum(totals.on) / sum(totals.off)).toFixed(3)} of req/s over ${ROUNDS} rounds ` +
        `(each round's: ${totals.on.map((f, i) => (f.rps / totals.off[i].rps).toFixed(3)).join(' ')}); ` +
        `${scrapes} scrapes while loaded; the service with metrics counted ${counted} succeeded payments; ` +
        `service CPU a request, mean of the rounds: off ${cpu(totals.off).toFixed(2)} ms, on ${cpu(totals.on).toFixed(2)} ms (${(cpu(totals.off) / cpu(totals.on)).toFixed(3)})\n`,
    );
  } finally {
    await Promise.all([stopService(services.off), stopService(services.on)]);
    await dbs.off.drop();
    await dbs.on.drop();
    for (const dir of Object.values(dirs)) fs.rmSync(dir, { recursive: true, force: true });
  }
}

const mb = (n: number | null | undefined): string => (n == null ? '?' : `${n.toFixed(0)} MB`);
const loadAverage = (): string => os.loadavg().map((n) => n.toFixed(2)).join(' ');

function rssText(rss: RssSamples | undefined): string {
  if (!rss) return '';
  return `   RSS peak ${mb(rss.peak).padStart(6)}, end ${mb(rss.end).padStart(6)}`;
}

/** An OTLP/HTTP collector that takes every export and keeps nothing but a count. */
async function otlpSink(): Promise<{ url: string; exports: () => number; megabytes: () => number; close(): void }> {
  let exports = 0;
  let bytes = 0;
  const server = http.createServer((req, res) => {
    req.on('data', (c: Buffer) => {
      bytes += c.length;
    });
    req.on('end', () => {
      exports += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(benchPort(), '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, exports: () => exports, megabytes: () => bytes / 1e6, close: () => server.close() };
}

/**
 * BENCH_TRACING=compare (issue 38): the same POST /v1/payments on two instances started alike on
 * fresh databases, one exporting traces (OTEL_EXPORTER_OTLP_ENDPOINT to a sink in this process,
 * the SDK's defaults otherwise: every request sampled, batches of 512), one without, in rounds at
 * 32 connections that alternate which goes first (BENCH_TRACING_ROUNDS pairs, 3 unless given).
 * Prints each round and traced req/s over untraced req/s summed over the rounds. Goal: ≥ 0.9.
 */
async function compareTracing(dialect: string): Promise<void> {
  const rounds = Number(process.env.BENCH_TRACING_ROUNDS ?? 3);
  const dir = benchTempDir('create-payment-tracing');
  const sink = await otlpSink();
  const dbs = [await freshDatabase(dialect, dir), await freshDatabase(dialect, dir)];
  const dataDir = (name: string) => {
    const own = path.join(dir, name);
    fs.mkdirSync(own);
    return own;
  };
  const workers: Record<string, string> = WORKERS ? { RUN_WORKERS: 'true' } : {};
  const untraced = await startService(dbs[0].url, dataDir('untraced'), workers);
  const traced = await startService(dbs[1].url, dataDir('traced'), { ...workers, OTEL_EXPORTER_OTLP_ENDPOINT: sink.url });
  const sides = { untraced, traced };
  const totals = { untraced: 0, traced: 0 };
  const cpu = { untraced: 0, traced: 0 };
  process.stdout.write(`\n${dialect}: tracing on against off, c=32, ${rounds} rounds of ${DURATION}s each side\n`);
  try {
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? (['untraced', 'traced'] as const) : (['traced', 'untraced'] as const);
      for (const side of order) {
        const service = sides[side];
        const f = await load(`${service.baseUrl}/v1/payments`, { authorization: `Bearer ${service.testKey}` }, BODY, 32, DURATION, WARMUP, service.pid);
        totals[side] += f.rps;
        cpu[side] += (f.cpuMsPerRequest ?? 0) / rounds;
        process.stdout.write(
          `  round ${round + 1} ${side.padEnd(8)} ${f.rps.toFixed(0).padStart(6)} req/s   p50 ${String(f.p50).padStart(4)} ms   p99 ${String(f.p99).padStart(4)} ms` +
            `   service CPU ${f.cpuMsPerRequest?.toFixed(2)} ms/req${rssText(f.rss)}\n`,
        );
      }
    }
    process.stdout.write(
      `  ratio (traced/untraced req/s, over ${rounds} rounds): ${(totals.traced / totals.untraced).toFixed(2)}; ` +
        `the sink took ${sink.exports()} exports, ${sink.megabytes().toFixed(1)} MB; ` +
        `service CPU a request, mean of the rounds: untraced ${cpu.untraced.toFixed(2)} ms, traced ${cpu.traced.toFixed(2)} ms (${(cpu.untraced / cpu.traced).toFixed(2)})\n`,
    );
  } finally {
    await Promise.all([stopService(untraced), stopService(traced)]);
    sink.close();
    for (const db of dbs) await db.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const dialects = (process.env.BENCH_DB ?? 'postgres,sqlite').split(',');
  if (process.env.BENCH_TRACING === 'compare') {
    process.stdout.write(`create-payment, tracing on against off, on ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, node ${process.version}; load average ${loadAverage()}\n`);
    for (const dialect of dialects) await compareTracing(dialect);
    process.stdout.write(`load average at the end: ${loadAverage()}\n`);
    return;
  }
  process.stdout.write(`create-payment benchmark on ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, node ${process.version}, ${DURATION}s per run, service workers ${WORKERS ? 'on' : 'off'}\n`);
  process.stdout.write(`load average at start: ${loadAverage()}\n`);
  if (METRICS_COMPARE) {
    for (const dialect of dialects) {
      process.stdout.write(`\n${dialect}: metrics on (METRICS_TOKEN, scraped every ${SCRAPE_MS} ms) against off, ${ROUNDS} alternating rounds\n`);
      await compareMetrics(dialect);
      process.stdout.write(`  load average after ${dialect}: ${loadAverage()}\n`);
    }
    return;
  }
  const alone = await benchHttpsAlone(BODY);
  process.stdout.write(
    `\nHTTPS alone (the baseline's route writing nothing), c=32: ${alone.rps.toFixed(0)} req/s   p50 ${alone.p50} ms   p99 ${alone.p99} ms\n`,
  );
  for (const dialect of dialects) {
    const { figures: f, idleRss, settings } = await benchDialect(dialect);
    process.stdout.write(`\n${dialect}\n`);
    if (dialect === 'sqlite') {
      // The ratio compares like with like only if both commit with the same durability.
      process.stdout.write(`  durability: service ${settings.service || '(not logged)'}; baseline ${settings.baseline}\n`);
    }
    for (const [name, v] of Object.entries(f)) {
      process.stdout.write(`  ${name.padEnd(14)} ${v.rps.toFixed(0).padStart(6)} req/s   p50 ${String(v.p50).padStart(4)} ms   p99 ${String(v.p99).padStart(4)} ms${rssText(v.rss)}\n`);
    }
    const s32 = f['service  c=32'];
    const b32 = f['baseline c=32'];
    process.stdout.write(
      `  ratio (service/baseline) at c=32: ${(s32.rps / b32.rps).toFixed(2)} of req/s; p99 ${s32.p99} ms; ` +
        `at c=1: ${(f['service  c=1'].rps / f['baseline c=1'].rps).toFixed(2)} of req/s, p50 ${f['service  c=1'].p50} ms\n`,
    );
    process.stdout.write(
      `  service RSS: idle ${mb(idleRss)}; under load at c=32 peak ${mb(s32.rss?.peak)}, end ${mb(s32.rss?.end)}; ` +
        `every 5 s from the warm-up on: ${s32.rss?.trace.map((n) => n.toFixed(0)).join(' ') ?? '?'} MB\n`,
    );
    process.stdout.write(`  load average after ${dialect}: ${loadAverage()}\n`);
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
