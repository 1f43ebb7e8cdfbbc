/**
 * bench/create-payment, the service's share alone: `PaymentService.create` called in-process on a
 * fresh SQLite database (no HTTP, no load generator), one at a time and 32 at a time. Prints what
 * the machine's load moves least: CPU time per payment (process.cpuUsage), driver calls per
 * payment (every statement the database layer runs, BEGIN and COMMIT included) and transactions
 * per payment (below 2 when concurrent payments share a COMMIT). Payments/s is printed too, and
 * moves with the load like every other figure here.
 *
 *   node -r ts-node/register/transpile-only bench/create-payment/in-process.ts
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../../src/config';
import { createServices } from '../../src/services';
import { ensureDefaultAccount } from '../../src/bootstrap';
import type { RequestContext } from '../../src/core/context';

const PAYMENTS = Number(process.env.BENCH_PAYMENTS ?? 3000);

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-bench-in-process-'));
  try {
    const config = loadConfig({ ...process.env, DATABASE_URL: `sqlite:${path.join(dir, 'bench.sqlite')}`, DATA_DIR: dir, LOG_LEVEL: 'warn' });
    let calls = 0;
    const s = await createServices(config, { onSql: () => void calls++ });
    const account = await ensureDefaultAccount(s);
    if (!account) throw new Error('expected a fresh database');
    const ctx = (): RequestContext => ({ accountId: account.accountId, mode: 'test', permissions: ['*'], requestId: 'req_bench', clock: s.clock }) as RequestContext;
    const body = { amount: 1999, currency: 'usd', paymentMethod: 'pm_card_visa', description: 'bench' };
    const one = () => s.payments.create(ctx(), body, { scope: `${account.accountId}:test`, key: randomUUID(), fingerprint: 'bench' });
    for (let i = 0; i < 300; i++) await one(); // warm-up: caches, prepared statements, JIT
    process.stdout.write(`create-payment in-process on SQLite, ${PAYMENTS} payments per run; load average ${os.loadavg().map((n) => n.toFixed(2)).join(' ')}\n`);
    for (const concurrency of [1, 32]) {
      calls = 0;
      const transactions = s.db.sqliteTransactions;
      const cpu = process.cpuUsage();
      const start = process.hrtime.bigint();
      let next = 0;
      await Promise.all(Array.from({ length: concurrency }, async () => {
        while (next++ < PAYMENTS) await one();
      }));
      const wallUs = Number(process.hrtime.bigint() - start) / 1000;
      const used = process.cpuUsage(cpu);
      process.stdout.write(
        `  ${String(concurrency).padStart(2)} at a time: ${((PAYMENTS / wallUs) * 1e6).toFixed(0)} payments/s, CPU ${((used.user + used.system) / PAYMENTS).toFixed(0)} µs a payment, ` +
          `${(calls / PAYMENTS).toFixed(2)} driver calls and ${((s.db.sqliteTransactions - transactions) / PAYMENTS).toFixed(2)} transactions a payment\n`,
      );
    }
    await s.db.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
