import 'reflect-metadata';
import pg from 'pg';
import sqlite3 from 'sqlite3';
import { QueryTypes, Transaction } from 'sequelize';
import { Sequelize } from 'sequelize-typescript';
import {
  acquireConnection, connectionPools, endSqliteTransaction, releaseConnection, routeSequelizeConnections, shareSqliteTransactionConnection, sqliteTransactionOn, transactionConnection,
  type SqliteConnection,
} from '../../src/db/sequelize-internals';
import { DIALECT, freshDatabase, type TestDatabase } from '../helpers/db';
import { waitFor } from '../helpers/wait';

// Each undocumented Sequelize behaviour src/db/sequelize-internals.ts relies on, against the
// installed Sequelize. A failure here after an upgrade means that file must change.

let database: TestDatabase;
let sequelize: Sequelize;

function open(options: { pool?: { max: number } } = {}): Sequelize {
  if (DIALECT === 'sqlite') {
    return new Sequelize({ dialect: 'sqlite', storage: database.url.slice('sqlite:'.length), logging: false, transactionType: Transaction.TYPES.IMMEDIATE });
  }
  return new Sequelize(database.url, { dialect: 'postgres', logging: false, pool: options.pool });
}

/** A statement on the driver connection itself, as Database runs its hot-path statements. */
function driverQuery(connection: object, sql: string): Promise<unknown[]> {
  if (DIALECT === 'postgres') return (connection as pg.ClientBase).query(sql).then((r) => r.rows);
  return new Promise((resolve, reject) => (connection as SqliteConnection).all(sql, {}, (err, rows) => (err ? reject(err) : resolve(rows))));
}

const DriverConnection = DIALECT === 'postgres' ? pg.Client : sqlite3.Database;

beforeAll(async () => {
  database = await freshDatabase();
  sequelize = open({ pool: { max: 1 } });
  await sequelize.query('CREATE TABLE internals_probe (id INTEGER PRIMARY KEY)');
});
afterAll(async () => {
  await sequelize.close();
  await database.drop();
});

describe(`Sequelize internals on ${DIALECT}`, () => {
  it("should hold the transaction's own driver connection on Transaction#connection", async () => {
    await expect(sequelize.transaction(async (t) => {
      const connection = transactionConnection(t);
      expect(connection).toBeInstanceOf(DriverConnection);
      await driverQuery(connection, 'INSERT INTO internals_probe (id) VALUES (1)');
      // Visible inside the transaction through Sequelize, so it is the same connection…
      const [inside] = await sequelize.query('SELECT id FROM internals_probe', { transaction: t });
      expect(inside).toEqual([{ id: 1 }]);
      throw new Error('roll back');
    })).rejects.toThrow('roll back');
    // …and rolled back with the transaction.
    const [rows] = await sequelize.query('SELECT id FROM internals_probe');
    expect(rows).toEqual([]);
  });

  it('should lend a driver connection from connectionManager and take it back on release', async () => {
    const first = await acquireConnection(sequelize);
    expect(first).toBeInstanceOf(DriverConnection);
    expect(await driverQuery(first, 'SELECT 1 AS one')).toEqual([{ one: 1 }]);
    releaseConnection(sequelize, first);
    // PostgreSQL: a pool of one hands the released client out again; SQLite: its default connection.
    const second = await acquireConnection(sequelize);
    expect(second).toBe(first);
    releaseConnection(sequelize, second);
  });

  if (DIALECT === 'postgres') {
    it("should count the pool's connections in use, idle and waited for on connectionManager.pool (metrics)", async () => {
      const [{ name, pool }] = connectionPools(sequelize);
      expect(name).toBe('primary');
      const first = await acquireConnection(sequelize);
      let second: Promise<object> | undefined;
      try {
        expect([pool.maxSize, pool.using, pool.waiting]).toEqual([1, 1, 0]);
        second = acquireConnection(sequelize);
        await waitFor(() => pool.waiting === 1, { what: 'a second acquire to wait for the pool of one' });
      } finally {
        releaseConnection(sequelize, first);
        if (second) releaseConnection(sequelize, await second);
      }
      expect([pool.using, pool.available, pool.waiting]).toEqual([0, 1, 0]);
    });
  }

  if (DIALECT === 'sqlite') {
    it('should run every transaction on one configured connection, until it is discarded', async () => {
      const shared = open();
      try {
        const configured: object[] = [];
        const sharing = shareSqliteTransactionConnection(shared, (connection) => {
          connection.configure('busyTimeout', 1234);
          configured.push(connection);
        });
        const inTransaction = () => shared.transaction(async (t) => transactionConnection<SqliteConnection>(t));
        const first = await inTransaction();
        expect(await inTransaction()).toBe(first); // Sequelize alone closes it and opens another
        expect(await driverQuery(first, 'PRAGMA busy_timeout')).toEqual([{ timeout: 1234 }]);
        const plain = await acquireConnection(shared);
        expect(plain).not.toBe(first);
        expect(await driverQuery(plain, 'PRAGMA busy_timeout')).toEqual([{ timeout: 1234 }]);
        expect(configured).toEqual([first, plain]); // once each, as it opened

        sharing.discard();
        await expect(driverQuery(first, 'SELECT 1')).rejects.toThrow(/SQLITE_MISUSE|closed/);
        const next = await inTransaction();
        expect(next).not.toBe(first);
        expect(await driverQuery(next, 'PRAGMA busy_timeout')).toEqual([{ timeout: 1234 }]);
        // `connection` gives that same connection, for transactions begun on the driver.
        expect(await sharing.connection()).toBe(next);
      } finally {
        await shared.close();
      }
    });

    it('should run model calls given a Transaction made on a driver connection on that connection, and refuse them once it is ended', async () => {
      const shared = open();
      try {
        const sharing = shareSqliteTransactionConnection(shared, () => undefined);
        const connection = await sharing.connection();
        await driverQuery(connection, 'BEGIN IMMEDIATE');
        const t = sqliteTransactionOn(shared, connection);
        expect(transactionConnection(t)).toBe(connection);
        await shared.query('INSERT INTO internals_probe (id) VALUES (7)', { transaction: t });
        // Not committed: the default connection does not see it yet.
        expect((await shared.query('SELECT id FROM internals_probe WHERE id = 7'))[0]).toEqual([]);
        await driverQuery(connection, 'ROLLBACK');
        endSqliteTransaction(t, 'rollback');
        await expect(shared.query('SELECT 1', { transaction: t })).rejects.toThrow(/rollback has been called on this transaction/);
        expect((await shared.query('SELECT id FROM internals_probe WHERE id = 7'))[0]).toEqual([]);
      } finally {
        await shared.close();
      }
    });
  }

  if (DIALECT === 'postgres') {
    it("should ask getConnection with the query's own options, and give the connection back through releaseConnection", async () => {
      // Another pool on the same database stands in for a replica's.
      const routed = open({ pool: { max: 1 } });
      const other = open({ pool: { max: 1 } });
      const lent = new Set<object>();
      const asked: Array<string | undefined> = [];
      try {
        routeSequelizeConnections(routed, {
          async connection(options) {
            asked.push(options.type);
            if (options.toOther !== true) return null;
            const connection = await acquireConnection<object>(other);
            lent.add(connection);
            return connection;
          },
          release(connection) {
            if (!lent.delete(connection)) return false;
            releaseConnection(other, connection);
            return true;
          },
        });
        const pid = async (options: Record<string, unknown>) => ((await routed.query('SELECT pg_backend_pid() AS pid', { type: QueryTypes.SELECT, ...options })) as Array<{ pid: number }>)[0].pid;
        const [otherPid] = (await other.query('SELECT pg_backend_pid() AS pid', { type: QueryTypes.SELECT })) as Array<{ pid: number }>;
        expect(await pid({ toOther: true })).toBe(otherPid.pid);
        expect(await pid({})).not.toBe(otherPid.pid);
        // Given back: the pool of one lends it again, and holds nothing lent.
        expect(await pid({ toOther: true })).toBe(otherPid.pid);
        expect(lent.size).toBe(0);
        expect(asked).toEqual(['SELECT', 'SELECT', 'SELECT']);
      } finally {
        await routed.close();
        await other.close();
      }
    });
  }
});
