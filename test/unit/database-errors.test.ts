import 'reflect-metadata';
import net from 'node:net';
import pg from 'pg';
import { Sequelize } from 'sequelize-typescript';
import { isDomainError } from '../../src/core/errors';
import { Database, isStatementRefused } from '../../src/db/database';
import { MODELS } from '../../src/db/models';
import { freshDatabase } from '../helpers/db';
import { isDatabaseUnavailable, translateDatabaseError } from '../../src/db/database-errors';
import { isUniqueViolation } from '../../src/db/list';

// Real driver errors (the shared PostgreSQL server, a closed port), whatever DB_DIALECT says:
// the translation must recognise what pg and Sequelize actually throw.
const URL = process.env.PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

describe('translateDatabaseError', () => {
  it('should make a refused connection service_unavailable, from pg and from Sequelize, keeping the driver error as cause', async () => {
    const port = await closedPort();
    const client = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres` });
    const raw = await client.connect().catch((e: unknown) => e);
    const sequelize = new Sequelize(`postgres://postgres@127.0.0.1:${port}/postgres`, { dialect: 'postgres', logging: false, pool: { acquire: 2000 } });
    const viaSequelize = await sequelize.query('SELECT 1').catch((e: unknown) => e);
    await sequelize.close();
    for (const err of [raw, viaSequelize]) {
      const translated = translateDatabaseError(err);
      expect(isDomainError(translated) && translated.code).toBe('service_unavailable');
      expect((translated as Error).cause).toBe(err);
      expect(isStatementRefused(translated)).toBe(false);
    }
  });

  it('should make text the database cannot store invalid_parameter, still a refusal; other refusals stay as the driver gave them', async () => {
    const client = new pg.Client({ connectionString: URL });
    await client.connect();
    try {
      const badText = await client.query("SELECT convert_from('\\x00'::bytea, 'UTF8')").catch((e: unknown) => e);
      const translated = translateDatabaseError(badText);
      expect(isDomainError(translated) && translated.code).toBe('invalid_parameter');
      expect(isStatementRefused(translated)).toBe(true); // the batcher still splits such a batch
      await client.query('CREATE TEMP TABLE dup (id int PRIMARY KEY)');
      await client.query('INSERT INTO dup VALUES (1)');
      const duplicate = await client.query('INSERT INTO dup VALUES (1)').catch((e: unknown) => e);
      expect(translateDatabaseError(duplicate)).toBe(duplicate);
      expect(isUniqueViolation(duplicate)).toBe(true);
      expect(isDatabaseUnavailable(duplicate)).toBe(false);
    } finally {
      await client.end();
    }
  });

  it('should recognise a dropped connection, a server shutdown and a busy SQLite file, and leave an unrelated error alone', () => {
    expect(isDatabaseUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }))).toBe(true);
    expect(isDatabaseUnavailable({ name: 'SequelizeTimeoutError', parent: Object.assign(new Error('SQLITE_BUSY: database is locked'), { code: 'SQLITE_BUSY' }) })).toBe(true);
    const bug = new TypeError('x is not a function');
    expect(translateDatabaseError(bug)).toBe(bug);
  });

  it("should leave an error a transaction's own work threw as it is, even one that looks like a lost connection", async () => {
    const database = await freshDatabase();
    const db = new Database({ url: database.url, models: MODELS });
    try {
      // A gateway or webhook call inside a transaction failing: not the database's outage.
      const socketError = Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:443'), { code: 'ECONNREFUSED' });
      await expect(db.transaction(async () => {
        throw socketError;
      })).rejects.toBe(socketError);
    } finally {
      await db.close();
      await database.drop();
    }
  });
});
