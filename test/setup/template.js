'use strict';
// The migrated template a run's test databases are copied from (test/helpers/db.ts
// `migratedDatabaseCopy`). It is migrated with the compiled migrations in dist/ (built first by
// the global set-up), the same sources the tests run.
const fs = require('node:fs');
const path = require('node:path');

const PG_ADMIN_URL = process.env.PG_ADMIN_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

async function migrate(root, url) {
  require('reflect-metadata');
  const { Database } = require(path.join(root, 'dist', 'src', 'db', 'database'));
  const { MODELS } = require(path.join(root, 'dist', 'src', 'db', 'models'));
  const { migrateUp } = require(path.join(root, 'dist', 'src', 'db', 'migrator'));
  const db = new Database({ url, models: MODELS });
  try {
    await db.init();
    await migrateUp(db);
  } finally {
    await db.close();
  }
}

/**
 * Migrates a new template: a SQLite file in `dir`, or a PostgreSQL database named `name`.
 * Returns what the workers are told (`name`: the file's path or the database's name) and how to
 * remove it.
 */
async function migratedTemplate(dialect, root, name, dir) {
  if (dialect === 'sqlite') {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = path.join(dir, 'template.sqlite');
    await migrate(root, `sqlite:${file}`);
    return { name: file, drop: async () => fs.rmSync(dir, { recursive: true, force: true }) };
  }
  const { Client } = require('pg');
  const admin = async (sql) => {
    const c = new Client({ connectionString: PG_ADMIN_URL });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  await migrate(root, url.toString());
  return { name, drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

module.exports = { migratedTemplate };
