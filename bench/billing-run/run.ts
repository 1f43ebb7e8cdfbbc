/**
 * bench/billing-run: one billing run (`BillingService.billDue`: each due subscription's period
 * invoice, its simulator charge, the period's advance, and their events) over BENCH_SUBSCRIPTIONS
 * (100,000) due subscriptions on PostgreSQL, against a baseline in the same run that writes the
 * same rows directly with `pg`, many subscriptions per statement; then the same run shared by two
 * instances (two processes on one database).
 *
 *   npm run bench:billing-run
 *   BENCH_SUBSCRIPTIONS=5000 npm run bench:billing-run
 *   BENCH_LIMIT=3000 npm run bench:billing-run          # 100,000 due, the service bills the first 3,000 (split among instances)
 *   BENCH_COUNT_SQL=1 BENCH_SUBSCRIPTIONS=500 npm run bench:billing-run   # statements per subscription
 */
import 'reflect-metadata';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { ROOT, SERVICE_NODE_FLAGS, benchTempDir, createDatabase, databaseName, dropDatabase, pgUrl, startProcess } from '../lib';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { createServices } from '../../src/services';
import { systemClock } from '../../src/core/clock';
import type { RequestContext } from '../../src/core/context';
import { seedDueSubscriptions, seedPlan } from './seed';
import { captureSample, runBaseline, type Sample } from './baseline';

const COUNT = Number(process.env.BENCH_SUBSCRIPTIONS ?? 100_000);
const INSTANCES = (process.env.BENCH_INSTANCES ?? '1,2').split(',').filter(Boolean).map(Number);
const LIMIT = Number(process.env.BENCH_LIMIT ?? COUNT);
const SKIP_BASELINE = process.env.BENCH_BASELINE === '0';

const loadAverage = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

/** The seeded database: migrated, one account, a daily price, customers with a card, COUNT due subscriptions. */
async function seedTemplate(name: string, dataDir: string): Promise<Sample> {
  await createDatabase(name);
  const config = loadConfig({ DATABASE_URL: pgUrl(name), DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
  const services = await createServices(config, { logger: createLogger('warn') });
  const created = await services.accounts.createAccount({ name: 'Bench billing' });
  const ctx: RequestContext = { accountId: created.accountId, mode: 'test', permissions: ['*'], requestId: 'req_bench', clock: systemClock };
  const plan = await seedPlan(services, ctx, 20);
  const now = new Date();
  // The baseline's rows: what billing one subscription writes (then removed; see baseline.ts).
  const [sampleId] = await seedDueSubscriptions(services, ctx, plan, 1, now);
  const sample = await captureSample(services.db, () => services.billing.step(sampleId, now), {
    id: sampleId, customerId: plan.customers[0].id, paymentMethodId: plan.customers[0].paymentMethodId,
  });
  await seedDueSubscriptions(services, ctx, plan, COUNT, now);
  await services.db.execute('ANALYZE');
  await services.close();
  return sample;
}

async function cloneOf(template: string): Promise<string> {
  const name = `${template}_${randomBytes(3).toString('hex')}`;
  await createDatabase(name, template);
  return name;
}

interface WorkerResult { billed: number; failed: number; ms: number; cpuMs: number; sql?: Record<string, number> }

/** `n` worker processes on one database, started together (a go file), each one billDue. */
async function runWorkers(databaseUrl: string, dataDir: string, n: number, limit: number): Promise<{ wallMs: number; results: WorkerResult[] }> {
  const go = path.join(dataDir, `go-${randomBytes(3).toString('hex')}`);
  const logs = Array.from({ length: n }, (_, i) => path.join(dataDir, `worker-${i}-${randomBytes(3).toString('hex')}.log`));
  const workers = await Promise.all(logs.map((log) => startProcess(
    [...SERVICE_NODE_FLAGS, '-r', 'ts-node/register/transpile-only', path.join(ROOT, 'bench', 'billing-run', 'worker.ts')],
    { DATABASE_URL: databaseUrl, DATA_DIR: dataDir, BENCH_GO: go, BENCH_LIMIT: String(limit), TS_NODE_PROJECT: path.join(ROOT, 'tsconfig.json') },
    /^ready$/m,
    log,
  )));
  const exits = workers.map(({ child }) => new Promise<number | null>((resolve) => child.once('exit', resolve)));
  const started = performance.now();
  fs.writeFileSync(go, '');
  const codes = await Promise.all(exits);
  const wallMs = performance.now() - started;
  const results = logs.map((log, i) => {
    const text = fs.readFileSync(log, 'utf8');
    const m = /^\{"result":(.*)\}$/m.exec(text);
    if (codes[i] !== 0 || !m) throw new Error(`worker ${i} exited ${codes[i]}:\n${text.slice(-3000)}`);
    return JSON.parse(m[1]) as WorkerResult;
  });
  return { wallMs, results };
}

/** What the run left: one paid cycle invoice per subscription, one succeeded payment each, every period moved on. */
async function check(databaseUrl: string, expected = COUNT): Promise<string> {
  const c = new Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const q = async (sql: string) => Number((await c.query(sql)).rows[0].n);
    const subs = await q('SELECT COUNT(*) AS n FROM subscriptions');
    const invoices = await q("SELECT COUNT(*) AS n FROM invoices WHERE billing_reason = 'subscription_cycle'");
    const paid = await q("SELECT COUNT(*) AS n FROM invoices WHERE billing_reason = 'subscription_cycle' AND status = 'paid'");
    const twice = await q('SELECT COUNT(*) AS n FROM (SELECT subscription_id, billing_period_start FROM invoices GROUP BY 1, 2 HAVING COUNT(*) > 1) d');
    const succeeded = await q("SELECT COUNT(*) AS n FROM payments WHERE status = 'succeeded'");
    const moved = await q('SELECT COUNT(*) AS n FROM subscriptions WHERE next_billing_at > now() AND collect_invoice_id IS NULL');
    const tables = ['invoices', 'invoice_line_items', 'payments', 'gateway_transactions', 'events', 'webhook_deliveries', 'idempotency_keys', 'invoice_number_sequences'];
    const perTable = [];
    for (const t of tables) perTable.push(`${t} ${(await q(`SELECT COUNT(*) AS n FROM ${t}`)) / subs}`);
    if (process.env.BENCH_ROWS === '1') console.log(`  rows a subscription: ${perTable.join(', ')}`);
    const ok = expected === invoices && invoices === paid && twice === 0 && succeeded === expected && moved === expected;
    return `${ok ? 'checked' : 'CHECK FAILED'}: ${fmt(invoices)} cycle invoices (${fmt(paid)} paid) for ${fmt(expected)} subscriptions billed of ${fmt(subs)}, ${twice} periods invoiced twice, ${fmt(succeeded)} succeeded payments, ${fmt(moved)} periods moved on`;
  } finally {
    await c.end();
  }
}

async function main(): Promise<void> {
  const dataDir = benchTempDir('billing-run');
  const template = databaseName('billing');
  console.log(`bench/billing-run: ${fmt(COUNT)} due subscriptions on PostgreSQL; ${os.cpus().length} CPUs; node ${process.version}; load average ${loadAverage()}`);
  const seedStart = performance.now();
  const sample = await seedTemplate(template, dataDir);
  console.log(`seeded in ${((performance.now() - seedStart) / 1000).toFixed(1)} s; load average ${loadAverage()}`);
  const rows: string[] = [];
  let baselineRate = NaN;
  try {
    if (!SKIP_BASELINE) {
      const db = await cloneOf(template);
      try {
        const before = loadAverage();
        const b = await runBaseline(pgUrl(db), sample);
        baselineRate = COUNT / (b.ms / 1000);
        console.log(`baseline (pg, ${b.batch} subscriptions a statement): ${(b.ms / 1000).toFixed(1)} s, ${fmt(baselineRate)} subscriptions/s; load average ${before} → ${loadAverage()}`);
        console.log(`  ${await check(pgUrl(db))}`);
      } finally {
        await dropDatabase(db);
      }
    }
    for (const n of INSTANCES) {
      const db = await cloneOf(template);
      try {
        const before = loadAverage();
        const { wallMs, results } = await runWorkers(pgUrl(db), dataDir, n, Math.ceil(LIMIT / n));
        const billed = results.reduce((a, r) => a + r.billed, 0);
        const rate = billed / (wallMs / 1000);
        const ratio = rate / baselineRate;
        console.log(`service, ${n} instance${n > 1 ? 's' : ''}: ${(wallMs / 1000).toFixed(1)} s, ${fmt(rate)} subscriptions/s, ${Number.isFinite(ratio) ? ratio.toFixed(2) : '-'} of the baseline; load average ${before} → ${loadAverage()}`);
        for (const [i, r] of results.entries()) {
          console.log(`  instance ${i + 1}: billed ${fmt(r.billed)}, failed ${r.failed}, ${(r.ms / 1000).toFixed(1)} s, CPU ${(r.cpuMs / 1000).toFixed(1)} s (${(r.cpuMs / Math.max(1, r.billed + r.failed)).toFixed(2)} ms a subscription)`);
          if (r.sql) {
            const per = Object.entries(r.sql).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${(v / Math.max(1, r.billed)).toFixed(2)}`);
            console.log(`    statements a subscription: ${(Object.values(r.sql).reduce((a, b) => a + b, 0) / Math.max(1, r.billed)).toFixed(1)}: ${per.join(', ')}`);
          }
        }
        console.log(`  ${await check(pgUrl(db), billed)}`);
        if (billed < COUNT) console.log(`  (BENCH_LIMIT: ${fmt(billed)} of ${fmt(COUNT)} due billed; all ${fmt(COUNT)} at this rate: ${(COUNT / rate).toFixed(0)} s)`);
        rows.push(`| ${n} | ${(wallMs / 1000).toFixed(1)} s | ${fmt(rate)} | ${Number.isFinite(ratio) ? ratio.toFixed(2) : '-'} | ${before} → ${loadAverage()} |`);
      } finally {
        await dropDatabase(db);
      }
    }
  } finally {
    await dropDatabase(template);
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  console.log(`\n| instances | run time | subscriptions/s | of baseline (${fmt(baselineRate)}/s) | load average |\n|---|---|---|---|---|\n${rows.join('\n')}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
