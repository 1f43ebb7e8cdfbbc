import type { Database } from '../../src/db/database';
import { loadTls } from '../../src/tls';
import type { ServiceHarness } from './services';
import { spawnInstance, type SpawnedInstance } from './spawn';

/**
 * The real service (`payorch start`, its own process) on a service harness's database and data
 * dir, trusting the certificate every start of it finds there (made on the first call): what the
 * crash tests kill and start again. `env` adds to DATABASE_URL and DATA_DIR.
 */
export async function spawnOnHarness(h: ServiceHarness, env: Record<string, string>): Promise<SpawnedInstance> {
  const { databaseUrl, dataDir } = h.services.config;
  const ca = (await loadTls({ dataDir })).cert;
  return spawnInstance({ DATABASE_URL: databaseUrl, DATA_DIR: dataDir, ...env }, ca);
}

/** The number a `SELECT COUNT(…) AS n …` statement answers. */
export async function countRows(db: Database, sql: string, bind: unknown[] = []): Promise<number> {
  const [row] = await db.select<{ n: number | string }>(sql, bind);
  return Number(row.n);
}
