import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

export const DIALECT: 'sqlite' | 'postgres' = process.env.DB_DIALECT === 'postgres' ? 'postgres' : 'sqlite';
const PG_ADMIN_URL = process.env.PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  url: string;
  dataDir: string;
  drop(): Promise<void>;
}

/** A brand-new empty database (a temp SQLite file, or a fresh PostgreSQL database). */
export async function freshDatabase(): Promise<TestDatabase> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-test-'));
  if (DIALECT === 'sqlite') {
    return {
      url: `sqlite:${path.join(dataDir, 'test.sqlite')}`,
      dataDir,
      async drop() {
        fs.rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  const pg = await freshPostgresDatabase();
  return {
    url: pg.url,
    dataDir,
    async drop() {
      fs.rmSync(dataDir, { recursive: true, force: true });
      await pg.drop();
    },
  };
}

/** A brand-new PostgreSQL database whatever DB_DIALECT says (for what only PostgreSQL has, like NOTIFY). */
export async function freshPostgresDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `payorch_t_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new Client({ connectionString: PG_ADMIN_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
