import { Transaction } from 'sequelize';
import type { Sequelize } from 'sequelize-typescript';

/*
 * Everything Payorch relies on in Sequelize 6 that is not its documented API, in one place.
 * test/unit/sequelize-internals.test.ts exercises each of these against the installed Sequelize
 * on both dialects and fails when an upgrade changes them.
 *
 * Why they are needed:
 * - Hot-path statements run as named prepared statements (PostgreSQL) or bound statements
 *   (SQLite) straight on the driver connection, skipping Sequelize's per-query work, which costs
 *   about four times the CPU of the statements themselves (bench/README.md). A statement inside a
 *   transaction must run on the transaction's own connection: Sequelize keeps it on
 *   `transaction.connection`, which its typings do not declare. Outside a transaction the
 *   connection comes from `connectionManager.getConnection`, which its typings declare as an
 *   opaque object: that it is a `pg.Client` or a `sqlite3.Database` is undocumented.
 * - SQLite: Sequelize opens a new connection (file open, schema read) for every transaction and
 *   closes it after; it has no option to keep one, no busy-timeout option, and its SQLite dialect
 *   runs no `afterConnect` hook. Transactions run one at a time anyway (Database.transaction), so
 *   they share one persistent connection, and each connection is configured as it opens.
 * - SQLite: Database.transaction runs BEGIN, COMMIT and ROLLBACK on that connection itself
 *   (Sequelize's query path costs more than the statements), and may write several transactions'
 *   work under one COMMIT. Model calls given such a transaction must still run on it: a
 *   `Transaction` made with its constructor, its connection set as `prepareEnvironment` sets it,
 *   and `finished` set once it ends (Sequelize then refuses statements on it, as after a commit).
 */

/** What Payorch uses of a sqlite3 `Database` (the driver's public API). */
export interface SqliteConnection {
  uuid?: string;
  configure(option: 'busyTimeout', value: number): void;
  serialize(fn: () => void): void;
  all(sql: string, params: object, cb: (err: Error | null, rows: unknown[]) => void): void;
  run(sql: string, params: object, cb: (this: { changes: number }, err: Error | null) => void): void;
  close(cb?: (err: Error | null) => void): void;
  /** Calls back once every statement already scheduled on the connection has finished. */
  wait(cb: (err: Error | null) => void): void;
}

/**
 * SQLite: a Sequelize transaction on `connection`, whose BEGIN the caller has run (or will):
 * model calls given it run on that connection. Ended with `endSqliteTransaction`.
 */
export function sqliteTransactionOn(sequelize: Sequelize, connection: SqliteConnection): Transaction {
  const t = new Transaction(sequelize, {});
  Object.assign(t, { connection });
  connection.uuid = (t as Transaction & { id: string }).id;
  return t;
}

/** Marks a transaction of `sqliteTransactionOn` as ended: Sequelize refuses statements on it from then on. */
export function endSqliteTransaction(t: Transaction, state: 'commit' | 'rollback'): void {
  Object.assign(t, { finished: state });
}

/** The driver connection a transaction runs on (a `pg.Client` or a `sqlite3.Database`). */
export function transactionConnection<C extends object>(transaction: Transaction): C {
  const connection = (transaction as Transaction & { connection?: C }).connection;
  if (!connection) throw new Error('Sequelize transaction has no connection: has Transaction#connection moved?');
  return connection;
}

/** A driver connection from Sequelize's pool (PostgreSQL) or its default connection (SQLite). */
export async function acquireConnection<C extends object>(sequelize: Sequelize): Promise<C> {
  return (await sequelize.connectionManager.getConnection({ type: 'write' })) as C;
}

/** Gives a connection back: synchronous on both dialects (the pool takes it back, or SQLite's is kept or closed). */
export function releaseConnection(sequelize: Sequelize, connection: object): void {
  sequelize.connectionManager.releaseConnection(connection);
}

/** What metrics read of a sequelize-pool `Pool` (its getters; the pool object itself is undocumented). */
export interface PoolCounts {
  maxSize: number;
  using: number;
  available: number;
  waiting: number;
}

const isPool = (value: unknown): value is PoolCounts =>
  typeof value === 'object' && value !== null && typeof (value as PoolCounts).using === 'number' && typeof (value as PoolCounts).waiting === 'number';

/**
 * Sequelize's connection pools (`connectionManager.pool`): one, named `primary`, or with
 * replication its `read` and `write` pools. Used by PostgreSQL only (SQLite's connection manager
 * has a pool it never takes connections from).
 */
export function connectionPools(sequelize: Sequelize): Array<{ name: string; pool: PoolCounts }> {
  const pool = (sequelize.connectionManager as unknown as { pool?: unknown }).pool;
  if (isPool(pool)) return [{ name: 'primary', pool }];
  const split = pool as { read?: unknown; write?: unknown } | undefined;
  return (['write', 'read'] as const).flatMap((name) => (isPool(split?.[name]) ? [{ name, pool: split[name] as PoolCounts }] : []));
}

const SHARED_UUID = 'payorch-transactions';

interface SqliteConnectionManager {
  connections: Record<string, SqliteConnection & { __payorchReady?: Promise<void>; __payorchShared?: boolean }>;
  getConnection(options?: { uuid?: string }): Promise<SqliteConnection>;
  releaseConnection(connection: SqliteConnection, force?: boolean): unknown;
}

/**
 * Closes Sequelize's SQLite connections one after another. Closed side by side (Sequelize's own
 * close), each can see the other still open, and then neither checkpoints the WAL into the main
 * file and removes it; the last to close alone does. A copy of the main file alone (a test's
 * template, a backup) then lacks whatever the WAL still held.
 */
export async function closeSqliteConnectionsInTurn(sequelize: Sequelize): Promise<void> {
  const manager = sequelize.connectionManager as unknown as SqliteConnectionManager;
  for (const key of Object.keys(manager.connections)) {
    const connection = manager.connections[key];
    delete manager.connections[key];
    await new Promise<void>((resolve, reject) => connection.close((err) => (err ? reject(err) : resolve())));
  }
}

/**
 * SQLite: every transaction runs on one persistent connection (Sequelize would open one per
 * transaction), and every connection is configured by `configure` once, as it opens.
 * Returns `connection`, which gives that connection (opening it if need be), and `discard`, which
 * closes it (rolling back whatever a failed transaction may have left open); the next
 * transaction opens a fresh one.
 *
 * A connection is handed out only once the statements its opening scheduled without waiting
 * (Sequelize's `PRAGMA FOREIGN_KEYS=ON`, configure's own) have finished. Left running, each sat
 * on a thread of libuv's pool waiting for the connection's mutex while the connection's first
 * BEGIN IMMEDIATE held it waiting for another connection's write lock; with the pool's few
 * threads taken, the holder of that lock had none left for its next statement, and the two
 * waited on each other until the busy timeout refused the BEGIN (15 s, `service_unavailable`).
 */
export function shareSqliteTransactionConnection(
  sequelize: Sequelize,
  configure: (connection: SqliteConnection) => void,
): { connection(): Promise<SqliteConnection>; discard(): void } {
  const manager = sequelize.connectionManager as unknown as SqliteConnectionManager;
  if (typeof manager.getConnection !== 'function' || typeof manager.releaseConnection !== 'function' || typeof manager.connections !== 'object') {
    throw new Error('Sequelize SQLite connection manager changed: getConnection/releaseConnection/connections not found');
  }
  const getConnection = manager.getConnection.bind(manager);
  const releaseConnection = manager.releaseConnection.bind(manager);
  manager.getConnection = async (options?: { uuid?: string }) => {
    // Transactions ask for a connection under their own id; the rest under 'default' or none.
    const forTransaction = options?.uuid !== undefined && options.uuid !== 'default';
    const connection = (await getConnection(forTransaction ? { ...options, uuid: SHARED_UUID } : options)) as SqliteConnectionManager['connections'][string];
    // Callers asking while it opens share one setup (Sequelize hands each the same connection).
    // One asking before it is open sets it up first, before Sequelize schedules its PRAGMA: the
    // wait still comes after it because configure's own PRAGMA is pending then (node-sqlite3 runs
    // an exclusive wait only once nothing is), so configure must keep scheduling a statement.
    connection.__payorchReady ??= new Promise<void>((resolve) => {
      configure(connection);
      connection.wait(() => resolve());
    });
    await connection.__payorchReady;
    if (forTransaction) connection.__payorchShared = true;
    return connection;
  };
  manager.releaseConnection = (connection: SqliteConnection, force?: boolean) => {
    if ((connection as { __payorchShared?: boolean }).__payorchShared && !force) return undefined; // kept for the next transaction
    return releaseConnection(connection, force);
  };
  return {
    connection: () => manager.getConnection({ uuid: SHARED_UUID }),
    discard() {
      const connection = manager.connections[SHARED_UUID];
      if (!connection) return;
      delete manager.connections[SHARED_UUID];
      connection.close(() => undefined);
    },
  };
}

/** The options Sequelize hands `connectionManager.getConnection`: the query's own (its `type`, and what the caller added). */
export type QueryConnectionOptions = Record<string, unknown> & { type?: string };

/**
 * PostgreSQL: a statement Sequelize runs outside a transaction may take its connection from
 * another pool (a read replica's). `route.connection(options)` is asked first with the query's
 * options (Sequelize passes them, copied, to `getConnection`): a connection of its own, or null
 * for the primary's pool; `route.release(connection)` takes back those it lent (true) when the
 * query ends, the rest go back to the primary's pool. Sequelize's `replication` option is not
 * used: it sends every SELECT outside a transaction to the replicas, whereas Payorch decides per
 * request (read-routing.ts) and skips replicas that lag.
 */
export function routeSequelizeConnections(
  sequelize: Sequelize,
  route: { connection(options: QueryConnectionOptions): Promise<object | null>; release(connection: object): boolean },
): void {
  const manager = sequelize.connectionManager as unknown as {
    getConnection(options?: QueryConnectionOptions): Promise<object>;
    releaseConnection(connection: object): unknown;
  };
  if (typeof manager.getConnection !== 'function' || typeof manager.releaseConnection !== 'function') {
    throw new Error('Sequelize connection manager changed: getConnection/releaseConnection not found');
  }
  const getConnection = manager.getConnection.bind(manager);
  const releaseConnection = manager.releaseConnection.bind(manager);
  manager.getConnection = async (options?: QueryConnectionOptions) => (options && (await route.connection(options))) || getConnection(options);
  manager.releaseConnection = (connection: object) => (route.release(connection) ? undefined : releaseConnection(connection));
}
