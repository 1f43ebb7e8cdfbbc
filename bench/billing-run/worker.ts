/**
 * One billing worker of bench/billing-run: the services on DATABASE_URL (no HTTP, no scheduled
 * jobs), waiting for the file BENCH_GO to appear, then one `BillingService.billDue` at the wall
 * clock's now. Prints `ready`, then one JSON line with what it billed, its time and its CPU.
 * BENCH_LIMIT bills at most that many (a measured part of a run too long to sit out). BENCH_COUNT_SQL=1 also counts its statements by kind (a probe: it costs a little).
 */
import 'reflect-metadata';
import fs from 'node:fs';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { createServices } from '../../src/services';

async function main(): Promise<void> {
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn', RUN_WORKERS: 'false' } as Record<string, string>);
  const kinds = new Map<string, number>();
  const countSql = process.env.BENCH_COUNT_SQL === '1';
  const services = await createServices(config, {
    logger: createLogger('warn'),
    migrate: false,
    onSql: countSql
      ? (sql) => {
        const text = sql.replace(/^Executing \([^)]*\): /, '').trim();
        const m = /^(INSERT INTO|UPDATE|DELETE FROM|SELECT .*? FROM|WITH|START TRANSACTION|BEGIN|COMMIT|ROLLBACK)\s*("?\w+"?)?/is.exec(text);
        const kind = m ? `${m[1].split(' ')[0].toUpperCase()} ${(m[2] ?? '').replace(/"/g, '')}`.trim() : text.slice(0, 40);
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      }
      : undefined,
  });
  process.stdout.write('ready\n');
  const go = process.env.BENCH_GO as string;
  while (!fs.existsSync(go)) await new Promise((r) => setTimeout(r, 5));
  const cpu = process.cpuUsage();
  const started = performance.now();
  const result = await services.billing.billDue(new Date(), Number(process.env.BENCH_LIMIT ?? 1_000_000));
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  process.stdout.write(`${JSON.stringify({ result: { ...result, ms, cpuMs: (used.user + used.system) / 1000, sql: countSql ? Object.fromEntries(kinds) : undefined } })}\n`);
  await services.close();
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
