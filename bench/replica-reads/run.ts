/**
 * bench/replica-reads: where list reads go under load with one read replica (issue 38).
 *
 *   npm run bench:replica-reads
 *   BENCH_SECONDS=3 BENCH_PAYMENTS=100 npm run bench:replica-reads    # smoke run
 *
 * 1. A throwaway primary cluster and a streaming standby of it, made here as the tests make them
 *    (test/helpers/pg-cluster.ts: initdb, then `pg_basebackup -R` and a second `postgres` on its
 *    own port), both with pg_stat_statements loaded (top-level statements only).
 * 2. `payorch start` on the primary with DATABASE_REPLICA_URLS naming the standby (workers off,
 *    default REPLICA_MAX_LAG_MS and REPLICA_READ_AFTER_WRITE_MS), as the other benchmarks start
 *    it; BENCH_READERS (4) reader keys and BENCH_WRITERS (2) writer keys made with its test key,
 *    and BENCH_PAYMENTS (500) payments, replayed on the standby before the load starts.
 * 3. For BENCH_SECONDS (10): each reader key runs BENCH_READER_LOOPS (4) loops of list reads
 *    (`GET /v1/payments`, pages 1 to 5 of 20, with and without `status=succeeded`), back to back;
 *    each writer key one loop of `POST /v1/payments`, back to back. /ready is polled every 500 ms
 *    for the replica's measured lag.
 * 4. Where the list reads ran, counted by each server itself: pg_stat_statements' calls of the
 *    list's statements (the page's SELECT … FROM payments … LIMIT and the kept total's read of
 *    payment_counts), on the primary and on the standby. Goal: the primary's share ≤ 10 %.
 */
import fs from 'node:fs';
import { Client } from 'pg';
import { benchTempDir } from '../lib';
import { api, loadAverage, machine, percentile, startService, stopService, type Service } from '../service';
import { startPgCluster, startPgStandby, standbyUnavailable, type PgCluster } from '../../test/helpers/pg-cluster';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const PAYMENTS = Number(process.env.BENCH_PAYMENTS ?? 500);
const READERS = Number(process.env.BENCH_READERS ?? 4);
const READER_LOOPS = Number(process.env.BENCH_READER_LOOPS ?? 4);
const WRITERS = Number(process.env.BENCH_WRITERS ?? 2);
const GOAL_PRIMARY_SHARE = 0.1;
const SETTINGS = ['shared_preload_libraries=pg_stat_statements', 'pg_stat_statements.track=top', 'max_connections=60'];

/** The list's statements (page and kept total) as pg_stat_statements normalises them, their calls summed. */
const LIST_CALLS = `SELECT COALESCE(SUM(calls), 0)::bigint AS calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
  WHERE d.datname = 'postgres' AND s.query ILIKE 'SELECT%'
    AND ((s.query LIKE '%FROM payments%' AND s.query LIKE '%LIMIT%') OR s.query LIKE '%FROM payment_counts%')`;

async function on<T = Record<string, unknown>>(cluster: PgCluster, sql: string): Promise<T[]> {
  const client = new Client({ connectionString: cluster.url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

const listCalls = async (cluster: PgCluster) => Number((await on<{ calls: string }>(cluster, LIST_CALLS))[0].calls);
const payments = async (cluster: PgCluster) => Number((await on<{ n: string }>(cluster, 'SELECT COUNT(*) AS n FROM payments'))[0].n);

async function main(): Promise<void> {
  const missing = standbyUnavailable();
  if (missing) {
    console.log(`replica-reads: a streaming standby cannot be made here (${missing}); nothing measured.`);
    return;
  }
  console.log(`replica-reads: ${machine()}, load average ${loadAverage()}, ${new Date().toISOString()}`);
  const dataDir = benchTempDir('replica-reads');
  let primary: PgCluster | undefined;
  let standby: PgCluster | undefined;
  let service: Service | undefined;
  try {
    primary = await startPgCluster({ settings: SETTINGS });
    await on(primary, 'CREATE EXTENSION pg_stat_statements');
    standby = await startPgStandby(primary, { settings: SETTINGS });
    service = await startService(primary.url, dataDir, { DATABASE_REPLICA_URLS: standby.url });
    const base = service.baseUrl;
    const auth = (key: string) => ({ authorization: `Bearer ${key}` });
    const newKey = async (name: string) => {
      const res = await api('POST', `${base}/v1/api-keys`, auth(service!.testKey), { name });
      if (res.status !== 201) throw new Error(`key not created: ${res.status} ${JSON.stringify(res.json)}`);
      return String(res.json.data!.secret);
    };
    const readers = await Promise.all(Array.from({ length: READERS }, (_, i) => newKey(`reader ${i}`)));
    const writers = await Promise.all(Array.from({ length: WRITERS }, (_, i) => newKey(`writer ${i}`)));
    const pay = (key: string) => api('POST', `${base}/v1/payments`, auth(key), { amount: 1000 + Math.floor(Math.random() * 9000), currency: 'eur', paymentMethod: 'pm_card_visa' });

    // The payments, then the standby caught up with them.
    const seedStarted = Date.now();
    for (let i = 0; i < PAYMENTS; i += 16) {
      const batch = await Promise.all(Array.from({ length: Math.min(16, PAYMENTS - i) }, () => pay(service!.testKey)));
      const failed = batch.find((r) => r.status !== 201);
      if (failed) throw new Error(`payment not created: ${failed.status} ${JSON.stringify(failed.json)}`);
    }
    const want = await payments(primary);
    for (let i = 0; (await payments(standby)) < want; i++) {
      if (i > 200) throw new Error('the standby did not replay the seeded payments within 20 s');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    console.log(`  ${PAYMENTS} payments in ${((Date.now() - seedStarted) / 1000).toFixed(1)} s, replayed on the standby`);

    // The load.
    const before = { primary: await listCalls(primary), standby: await listCalls(standby) };
    const lags: number[] = [];
    let unhealthy = 0;
    const statuses = new Map<string, number>();
    const latencies: number[] = [];
    let writes = 0;
    const until = Date.now() + SECONDS * 1000;
    const count = (what: string) => statuses.set(what, (statuses.get(what) ?? 0) + 1);
    const readLoop = async (key: string, loop: number) => {
      for (let i = loop; Date.now() < until; i++) {
        const query = `pageSize=20&page=${(i % 5) + 1}${i % 2 === 0 ? '&status=succeeded' : ''}`;
        const started = performance.now();
        const res = await api('GET', `${base}/v1/payments?${query}`, auth(key));
        latencies.push(performance.now() - started);
        count(`list ${res.status}`);
      }
    };
    const writeLoop = async (key: string) => {
      while (Date.now() < until) {
        const res = await pay(key);
        count(`write ${res.status}`);
        if (res.status === 201) writes++;
      }
    };
    const poll = setInterval(() => {
      api('GET', `${base}/ready`, {}).then((res) => {
        const replica = (res.json.data?.replicas as Array<{ healthy: boolean; lagMs: number | null }> | undefined)?.[0];
        if (!replica?.healthy) unhealthy++;
        if (replica?.lagMs != null) lags.push(replica.lagMs);
      }, () => undefined);
    }, 500);
    await Promise.all([
      ...readers.flatMap((key) => Array.from({ length: READER_LOOPS }, (_, loop) => readLoop(key, loop))),
      ...writers.map((key) => writeLoop(key)),
    ]);
    clearInterval(poll);
    const after = { primary: await listCalls(primary), standby: await listCalls(standby) };

    const onPrimary = after.primary - before.primary;
    const onStandby = after.standby - before.standby;
    const share = onPrimary / Math.max(1, onPrimary + onStandby);
    const lists = latencies.length;
    console.log(`  ${SECONDS} s: ${lists} list reads (${(lists / SECONDS).toFixed(0)}/s, p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms) from ${READERS} keys × ${READER_LOOPS} loops; ${writes} payments written meanwhile by ${WRITERS} other keys`);
    console.log(`  answers: ${[...statuses].sort().map(([k, n]) => `${k} × ${n}`).join(', ')}`);
    console.log(`  replica lag seen by /ready: max ${lags.length ? Math.max(...lags) : '-'} ms, p50 ${lags.length ? percentile(lags, 50) : '-'} ms; polls finding it skipped: ${unhealthy}`);
    console.log(`  list statements run: primary ${onPrimary}, standby ${onStandby}`);
    console.log(`  primary's share of list reads: ${(share * 100).toFixed(2)} % (goal ≤ ${GOAL_PRIMARY_SHARE * 100} %): ${share <= GOAL_PRIMARY_SHARE ? 'met' : 'NOT met'}`);
  } finally {
    if (service) await stopService(service);
    await standby?.destroy();
    await primary?.destroy();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
