import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

export const DIALECT: 'sqlite' | 'postgres' = process.env.DB_DIALECT === 'postgres' ? 'postgres' : 'sqlite';
const PG_ADMIN_URL = process.env.PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** The start of every test database's name (PostgreSQL), so runs beside other work do not collide. */
const DB_PREFIX = process.env.PAYORCH_TEST_DB_PREFIX || 'payorch_t';
/** The run's migrated template (test/setup/global-setup.js): a SQLite file or a PostgreSQL database. */
const TEMPLATE = process.env.PAYORCH_TEST_TEMPLATE;

export interface TestDatabase {
  url: string;
  dataDir: string;
  drop(): Promise<void>;
}

/** A brand-new empty database (a temp SQLite file, or a fresh PostgreSQL database). */
export async function freshDatabase(): Promise<TestDatabase> {
  return newDatabase();
}

/**
 * A new database with every migration already applied: a copy of the run's migrated template
 * (the SQLite file copied; on PostgreSQL `CREATE DATABASE … TEMPLATE`), which costs a fraction of
 * migrating. Without a template (jest run without its global set-up) it is an empty database the
 * service migrates as it starts.
 */
export async function migratedDatabaseCopy(): Promise<TestDatabase> {
  return newDatabase(TEMPLATE);
}

async function newDatabase(template?: string): Promise<TestDatabase> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-test-'));
  if (DIALECT === 'sqlite') {
    if (template) fs.copyFileSync(template, path.join(dataDir, 'test.sqlite'));
    return {
      url: `sqlite:${path.join(dataDir, 'test.sqlite')}`,
      dataDir,
      async drop() {
        fs.rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  const pg = await freshPostgresDatabase(template);
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
export async function freshPostgresDatabase(template?: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${DB_PREFIX}_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
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
