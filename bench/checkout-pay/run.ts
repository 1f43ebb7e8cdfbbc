/**
 * bench/checkout-pay: the public pay route of fresh `payment`-mode checkout sessions
 * (`POST /v1/public/checkout-sessions/{id}/pay`, a card, no key) against `POST /v1/payments` with
 * the same card, both on the same service in the same run at 32 connections. Prints req/s, p50
 * and p99 of each, the ratio pay/create-payment (goal: at least 0.7), the service's RSS (idle,
 * and peak and end under each load), the CPU time per request of the service and (PostgreSQL) of
 * the backends serving it, and the load average. Every response is checked: a 2xx whose
 * payment did not succeed, any other status and any socket error are counted and shown.
 *
 *   npm run bench:checkout-pay                      # PostgreSQL
 *   BENCH_DB=postgres,sqlite BENCH_SECONDS=15 npm run bench:checkout-pay
 */
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import { Client } from 'pg';
import { benchTempDir, freshDatabase, rssMb, sampleRss, type RssSamples } from '../lib';
import { api, cpuSeconds, inParallel, loadAverage, machine, mb, startService, stopService, type Service } from '../service';

// The bench client talks to local self-signed listeners only.
process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';

const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
/** Sessions prepared per pay expected (from the rates measured so far): the rest is margin. */
const SESSION_MARGIN = 1.3;
const GOAL = 0.7;

const AMOUNT = 1999;
const CURRENCY = 'usd';
const CARD = { number: '4242424242424242', expMonth: 12, expYear: 2034, cvc: '123' };
const PAY_BODY = JSON.stringify({ card: CARD });
const PAYMENT_BODY = JSON.stringify({ amount: AMOUNT, currency: CURRENCY, paymentMethod: 'card', card: CARD });

/** What the responses of one autocannon run were: succeeded payments, and everything else. */
interface Tally {
  succeeded: number;
  /** 2xx whose payment did not succeed. */
  failed: number;
  /** Status → count, for every status other than 200/201. */
  other: Map<number, number>;
  /** A few bodies of what was not a success, to print. */
  samples: string[];
}

interface Figures {
  rps: number; p50: number; p99: number; requests: number; errors: number; timeouts: number; tally: Tally; rss?: RssSamples;
  /** The service's CPU time (all its threads) per request of the measured run, ms. */
  cpuMs?: number;
  /** PostgreSQL's: the CPU time of the backends serving the bench's database per request, ms. */
  dbCpuMs?: number;
}

const newTally = (): Tally => ({ succeeded: 0, failed: 0, other: new Map(), samples: [] });

/** Counts one response: a success is a 200/201 whose `data.status` is `succeeded` (a payment or a pay result). */
function check(tally: Tally, status: number, body: string): void {
  if (status === 200 || status === 201) {
    let outcome: unknown;
    try {
      outcome = (JSON.parse(body) as { data?: { status?: unknown } }).data?.status;
    } catch {
      outcome = 'unparsable';
    }
    if (outcome === 'succeeded') {
      tally.succeeded++;
      return;
    }
    tally.failed++;
  } else {
    tally.other.set(status, (tally.other.get(status) ?? 0) + 1);
  }
  if (tally.samples.length < 3) tally.samples.push(`${status} ${body.slice(0, 300)}`);
}

/** The next request of a run: its path, body and headers (a fresh Idempotency-Key each, as the hosted page and create-payment send). */
type NextRequest = () => { path: string; body: string; headers: Record<string, string> };

async function drive(service: Service, next: NextRequest, seconds: number): Promise<Figures> {
  const tally = newTally();
  const result = await autocannon({
    url: service.baseUrl,
    method: 'POST',
    connections: CONNECTIONS,
    duration: seconds,
    requests: [{
      setupRequest: (req: Record<string, unknown>) => {
        const r = next();
        return { ...req, method: 'POST', path: r.path, body: r.body, headers: { ...(req.headers as object), 'content-type': 'application/json', 'idempotency-key': randomUUID(), ...r.headers } };
      },
      onResponse: (status: number, body: string) => check(tally, status, body),
    }],
  } as never);
  const r = result as unknown as { requests: { average: number; total: number }; latency: { p50: number; p99: number }; errors: number; timeouts: number };
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, requests: r.requests.total, errors: r.errors, timeouts: r.timeouts, tally };
}

/**
 * The CPU time so far of the PostgreSQL backends serving the bench's database (the service's
 * pool; the probe's own backend left out), seconds, by pid; null on SQLite or without procfs.
 * Background processes (WAL writer, checkpointer) are not counted.
 */
async function databaseCpu(probe: Client | null): Promise<Map<number, number> | null> {
  if (!probe) return null;
  const { rows } = await probe.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()');
  const byPid = new Map<number, number>();
  for (const { pid } of rows) {
    const cpu = cpuSeconds(pid);
    if (cpu !== null) byPid.set(pid, cpu);
  }
  return byPid;
}

/** CPU used between two readings of databaseCpu: a backend started meanwhile counts from zero; one gone meanwhile is lost. */
function databaseCpuUsed(before: Map<number, number> | null, after: Map<number, number> | null): number | null {
  if (!before || !after) return null;
  let used = 0;
  for (const [pid, cpu] of after) used += cpu - (before.get(pid) ?? 0);
  return used;
}

/** A warm-up at the same concurrency, unmeasured, then the measured run, sampling the service's RSS throughout. */
async function load(service: Service, next: NextRequest, probe: Client | null, between?: (warmup: Figures) => Promise<void>): Promise<{ warmup: Figures; run: Figures }> {
  const rss = sampleRss(service.pid);
  const warmup = await drive(service, next, WARMUP);
  if (between) await between(warmup);
  // Statistics as autovacuum keeps them in steady operation: the tables were filled seconds ago
  // (sessions made in a burst, the warm-up's payments), faster than its next visit (a minute).
  // Until then the planner took every session for one and scanned them all (bench/README.md).
  await probe?.query('ANALYZE');
  const dbBefore = await databaseCpu(probe);
  const cpuBefore = cpuSeconds(service.pid);
  const run = await drive(service, next, DURATION);
  const cpuAfter = cpuSeconds(service.pid);
  const dbUsed = databaseCpuUsed(dbBefore, await databaseCpu(probe));
  const cpuMs = cpuBefore === null || cpuAfter === null || run.requests === 0 ? undefined : ((cpuAfter - cpuBefore) * 1000) / run.requests;
  const dbCpuMs = dbUsed === null || run.requests === 0 ? undefined : (dbUsed * 1000) / run.requests;
  return { warmup, run: { ...run, rss: rss.stop(), cpuMs, dbCpuMs } };
}

/** Fresh `payment`-mode sessions, 16 created at a time: their ids, in order. */
async function createSessions(service: Service, count: number): Promise<string[]> {
  const auth = { authorization: `Bearer ${service.testKey}` };
  return inParallel(Array.from({ length: count }, (_, i) => i), 16, async () => {
    const res = await api('POST', `${service.baseUrl}/v1/checkout-sessions`, auth, { mode: 'payment', amount: AMOUNT, currency: CURRENCY });
    if (res.status !== 201 || typeof res.json.data?.id !== 'string') throw new Error(`creating a checkout session answered ${res.status}: ${JSON.stringify(res.json)}`);
    return res.json.data.id;
  });
}

interface DialectResult {
  create: Figures;
  pay: Figures;
  idleRss: number | null;
  sessions: { created: number; used: number; exhausted: number; seconds: number };
  warmupChecks: Tally[];
}

async function benchDialect(dialect: string): Promise<DialectResult> {
  const dir = benchTempDir('checkout-pay');
  const db = await freshDatabase(dialect, dir);
  const service = await startService(db.url, dir);
  const probe = dialect === 'postgres' ? new Client({ connectionString: db.url }) : null;
  try {
    await probe?.connect();
    // An experiment's schema change, run once the service has migrated (e.g. an index dropped).
    if (probe && process.env.BENCH_SETUP_SQL) await probe.query(process.env.BENCH_SETUP_SQL);
    const idleRss = rssMb(service.pid);
    const auth = { authorization: `Bearer ${service.testKey}` };

    // POST /v1/payments with the card, as the pay route charges it.
    const create = await load(service, () => ({ path: '/v1/payments', body: PAYMENT_BODY, headers: auth }), probe);

    // Every pay takes the next unused session. Enough are made before each measured phase for
    // the rate measured so far, with a margin; a run that still runs out sends the rest to a
    // session that does not exist (404, counted) and says so.
    const sessions: string[] = [];
    let nextSession = 0;
    let exhausted = 0;
    let preparing = 0;
    const prepare = async (count: number) => {
      const t0 = Date.now();
      sessions.push(...(await createSessions(service, count)));
      preparing += (Date.now() - t0) / 1000;
    };
    const ensure = async (rps: number, seconds: number) => {
      const needed = Math.ceil(rps * seconds * SESSION_MARGIN) + 2 * CONNECTIONS;
      const left = sessions.length - nextSession;
      if (needed > left) await prepare(needed - left);
    };
    await ensure(create.run.rps, WARMUP + DURATION);
    const pay = await load(
      service,
      () => {
        let id = sessions[nextSession++];
        if (id === undefined) {
          exhausted++;
          id = 'cs_exhausted';
        }
        return { path: `/v1/public/checkout-sessions/${id}/pay`, body: PAY_BODY, headers: {} };
      },
      probe,
      // The pay's own warm-up rate decides whether the measured run has enough sessions.
      async (warmup) => ensure(warmup.rps, DURATION),
    );
    // How many of the sessions' row updates were HOT (no index touched): the claim's can be.
    const hot = probe ? (await probe.query("SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relname = 'checkout_sessions'")).rows[0] : undefined;
    if (hot) process.stdout.write(`  checkout_sessions row updates: ${hot.upd}, HOT ${hot.hot}\n`);
    return {
      create: create.run,
      pay: pay.run,
      idleRss,
      sessions: { created: sessions.length, used: Math.min(nextSession, sessions.length), exhausted, seconds: preparing },
      warmupChecks: [create.warmup.tally, pay.warmup.tally],
    };
  } finally {
    await probe?.end().catch(() => undefined);
    await stopService(service);
    await db.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function checked(name: string, f: Figures): string {
  const t = f.tally;
  const other = [...t.other].map(([status, n]) => `${n} × ${status}`).join(', ');
  const clean = t.failed === 0 && t.other.size === 0 && f.errors === 0 && f.timeouts === 0;
  let line = `  ${name}: ${t.succeeded} succeeded`;
  line += clean ? ', nothing else' : `; NOT SUCCEEDED: ${t.failed} 2xx not succeeded, ${other || 'no other status'}, ${f.errors} socket errors, ${f.timeouts} timeouts`;
  for (const s of t.samples) line += `\n      e.g. ${s}`;
  return `${line}\n`;
}

async function main(): Promise<void> {
  const dialects = (process.env.BENCH_DB ?? 'postgres').split(',');
  process.stdout.write(`checkout-pay benchmark on ${machine()}, ${DURATION}s per run after a ${WARMUP}s warm-up, ${CONNECTIONS} connections\n`);
  process.stdout.write(`load average at start: ${loadAverage()}\n`);
  for (const dialect of dialects) {
    const r = await benchDialect(dialect);
    process.stdout.write(`\n${dialect}\n`);
    for (const [name, f] of [['create-payment', r.create], ['checkout pay', r.pay]] as const) {
      process.stdout.write(
        `  ${name.padEnd(15)} ${f.rps.toFixed(0).padStart(6)} req/s   p50 ${String(f.p50).padStart(4)} ms   p99 ${String(f.p99).padStart(4)} ms   ` +
          `RSS peak ${mb(f.rss?.peak).padStart(6)}, end ${mb(f.rss?.end).padStart(6)}   service CPU ${f.cpuMs?.toFixed(2) ?? '?'} ms/request` +
          `${f.dbCpuMs === undefined ? '' : `, PostgreSQL backends ${f.dbCpuMs.toFixed(2)} ms/request`}\n`,
      );
    }
    const ratio = r.pay.rps / r.create.rps;
    process.stdout.write(`  ratio (pay/create-payment): ${ratio.toFixed(2)} of req/s (goal ≥ ${GOAL}: ${ratio >= GOAL ? 'met' : 'NOT met'}); p99 ${r.pay.p99} ms against ${r.create.p99} ms\n`);
    process.stdout.write(
      `  service RSS: idle ${mb(r.idleRss)}; every 5 s from the warm-up on, create-payment ${r.create.rss?.trace.map((n) => n.toFixed(0)).join(' ') ?? '?'} MB, ` +
        `pay ${r.pay.rss?.trace.map((n) => n.toFixed(0)).join(' ') ?? '?'} MB\n`,
    );
    process.stdout.write('  responses of the measured runs:\n');
    process.stdout.write(checked('create-payment', r.create));
    process.stdout.write(checked('checkout pay  ', r.pay));
    const warmupProblems = r.warmupChecks.reduce((n, t) => n + t.failed + [...t.other.values()].reduce((a, b) => a + b, 0), 0);
    if (warmupProblems) process.stdout.write(`  (warning: ${warmupProblems} responses of the warm-ups did not succeed: ${r.warmupChecks.flatMap((t) => t.samples).join(' | ')})\n`);
    process.stdout.write(
      `  sessions: ${r.sessions.created} prepared (${r.sessions.seconds.toFixed(1)} s, before the measured runs), ${r.sessions.used} paid or tried` +
        `${r.sessions.exhausted ? `; RAN OUT: ${r.sessions.exhausted} requests had no session left (figures invalid)` : ''}\n`,
    );
    process.stdout.write(`  load average after ${dialect}: ${loadAverage()}\n`);
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
