import { Transaction } from 'sequelize';
import { Sequelize, type ModelCtor } from 'sequelize-typescript';
import pg from 'pg';
import { createHash } from 'node:crypto';
import { DomainError } from '../core/errors';
import { storableDeep } from '../core/text';

// Amounts and counts are int8 in PostgreSQL; every value we store fits in a double (≤ 10^12).
pg.types.setTypeParser(20, (v: string) => Number(v));

export type Dialect = 'sqlite' | 'postgres';

export interface DatabaseOptions {
  url: string;
  models: ModelCtor[];
  logging?: (sql: string) => void;
  poolMax?: number;
}

/**
 * The Sequelize instance plus the few things every service needs from it: transactions that
 * behave the same on both dialects, bound raw statements for hot paths, and a timestamp
 * encoding that matches what the models write.
 */
export class Database {
  readonly sequelize: Sequelize;
  readonly dialect: Dialect;
  private sqliteWriteQueue: Promise<unknown> = Promise.resolve();
  private readonly logSql?: (sql: string) => void;
  private readonly statementNames = new Map<string, string>();

  constructor(options: DatabaseOptions) {
    const logging = options.logging ?? false;
    this.logSql = options.logging;
    if (options.url.startsWith('sqlite:')) {
      this.dialect = 'sqlite';
      const storage = options.url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '') || ':memory:';
      this.sequelize = new Sequelize({
        dialect: 'sqlite',
        storage,
        logging,
        models: options.models,
        // One writer at a time is SQLite's rule; IMMEDIATE takes the write lock at BEGIN so a
        // transaction never fails half-way on a lock upgrade.
        transactionType: Transaction.TYPES.IMMEDIATE,
        define: { timestamps: false, underscored: true },
      });
      this.configureSqliteConnections();
    } else {
      this.dialect = 'postgres';
      this.sequelize = new Sequelize(options.url, {
        dialect: 'postgres',
        logging,
        models: options.models,
        pool: { max: options.poolMax ?? 10, min: 0, idle: 10_000, acquire: 30_000 },
        define: { timestamps: false, underscored: true },
      });
    }
  }

  /**
   * Every connection waits up to 15 s for SQLite's lock. Sequelize opens a new connection (file
   * open, schema read) for each transaction and closes it after; since `transaction` runs
   * SQLite transactions one at a time anyway, they all share one persistent connection instead.
   */
  private configureSqliteConnections(): void {
    type SqliteConnection = { configure(opt: string, v: number): void; __payorch?: boolean; __payorchTx?: boolean };
    const manager = this.sequelize.connectionManager as unknown as {
      getConnection(options?: { uuid?: string }): Promise<SqliteConnection>;
      releaseConnection(connection: SqliteConnection, force?: boolean): unknown;
    };
    const original = manager.getConnection.bind(manager);
    const release = manager.releaseConnection.bind(manager);
    manager.getConnection = async (options?: { uuid?: string }) => {
      const forTransaction = options?.uuid !== undefined && options.uuid !== 'default';
      const connection = await original(forTransaction ? { ...options, uuid: 'payorch-transactions' } : options);
      if (!connection.__payorch) {
        connection.configure('busyTimeout', 15_000);
        connection.__payorch = true;
      }
      if (forTransaction) connection.__payorchTx = true;
      return connection;
    };
    manager.releaseConnection = (connection: SqliteConnection, force?: boolean) => {
      if (connection.__payorchTx && !force) return undefined; // kept for the next transaction
      return release(connection, force);
    };
    // After a failed transaction the shared connection is closed (rolling back whatever may be
    // left open) and the next transaction opens a fresh one.
    this.discardTransactionConnection = () => {
      const connections = (manager as unknown as { connections: Record<string, { close(cb: () => void): void }> }).connections;
      const connection = connections['payorch-transactions'];
      if (!connection) return;
      delete connections['payorch-transactions'];
      connection.close(() => undefined);
    };
  }

  private discardTransactionConnection?: () => void;

  async init(): Promise<void> {
    if (this.dialect === 'sqlite') {
      await this.sequelize.query('PRAGMA journal_mode=WAL');
      await this.sequelize.query('PRAGMA synchronous=NORMAL');
    }
  }

  /** Runs fn in a transaction; on SQLite write transactions are queued in-process. */
  async transaction<T>(fn: (t: Transaction) => Promise<T>): Promise<T> {
    if (this.dialect === 'postgres') return this.sequelize.transaction((t) => fn(t));
    const once = () =>
      this.sequelize.transaction((t) => fn(t)).catch((err: unknown) => {
        this.discardTransactionConnection?.();
        throw err;
      });
    const run = this.sqliteWriteQueue.then(once, once);
    this.sqliteWriteQueue = run.catch(() => undefined);
    return run;
  }

  /** Bound SELECT returning plain rows; `$1, $2…` placeholders on both dialects. */
  async select<R = Record<string, unknown>>(sql: string, bind: unknown[] = [], transaction?: Transaction): Promise<R[]> {
    if (this.dialect === 'postgres') return (await this.pgQuery(sql, bind, transaction)).rows as R[];
    return (await this.sqliteQuery('all', sql, bind, transaction)) as R[];
  }

  /** Bound INSERT/UPDATE/DELETE; returns the number of rows it touched. */
  async execute(sql: string, bind: unknown[] = [], transaction?: Transaction): Promise<number> {
    if (this.dialect === 'postgres') return (await this.pgQuery(sql, bind, transaction)).rowCount ?? 0;
    return (await this.sqliteQuery('run', sql, bind, transaction)) as number;
  }

  /**
   * Hot-path statements on SQLite: straight on the sqlite3 connection Sequelize holds (the
   * transaction's, or its default one), skipping Sequelize's per-query work, which formats a
   * stack trace for every statement. `$1, $2…` are bound by name; logged as Sequelize logs.
   * Returns the rows (`all`) or the number of rows changed (`run`).
   */
  private async sqliteQuery(method: 'all' | 'run', sql: string, bind: unknown[], transaction?: Transaction): Promise<unknown[] | number> {
    type SqliteConnection = {
      uuid?: string;
      serialize(fn: () => void): void;
      all(sql: string, params: object, cb: (err: Error | null, rows: unknown[]) => void): void;
      run(sql: string, params: object, cb: (this: { changes: number }, err: Error | null) => void): void;
    };
    const held = (transaction as unknown as { connection?: SqliteConnection } | undefined)?.connection;
    const connection = held ?? (await (this.sequelize.connectionManager as unknown as { getConnection(o: object): Promise<SqliteConnection> }).getConnection({}));
    this.logSql?.(`Executing (${connection.uuid || 'default'}): ${sql}`);
    const params: Record<string, unknown> = {};
    bind.forEach((v, i) => {
      params[`$${i + 1}`] = this.encode(v);
    });
    // One statement at a time per connection, as Sequelize runs them: statements of one
    // connection waiting on SQLite's lock in parallel would hold every libuv thread, and the
    // transaction holding the lock could then not run its next statement.
    return new Promise((resolve, reject) => connection.serialize(() => {
      if (method === 'all') connection.all(sql, params, (err, rows) => (err ? reject(err) : resolve(rows)));
      else connection.run(sql, params, function done(err) {
        if (err) reject(err);
        else resolve(this.changes);
      });
    }));
  }

  /**
   * Hot-path statements on PostgreSQL: a named prepared statement on the Sequelize pool's own
   * connection (the transaction's, when there is one), skipping Sequelize's per-query work.
   */
  private async pgQuery(sql: string, bind: unknown[], transaction?: Transaction): Promise<pg.QueryResult> {
    this.logSql?.(`Executing (${transaction ? 'transaction' : 'default'}): ${sql}`);
    const query = { name: this.statementName(sql), text: sql, values: bind.map((v) => this.encode(v)) };
    const held = (transaction as unknown as { connection?: pg.ClientBase } | undefined)?.connection;
    if (held) return held.query(query);
    const manager = this.sequelize.connectionManager as unknown as {
      getConnection(o: { type: 'read' | 'write' }): Promise<pg.ClientBase>;
      releaseConnection(c: pg.ClientBase): Promise<void>;
    };
    const client = await manager.getConnection({ type: 'write' });
    try {
      return await client.query(query);
    } finally {
      await manager.releaseConnection(client);
    }
  }

  private statementName(sql: string): string {
    let name = this.statementNames.get(sql);
    if (!name) {
      name = `po_${createHash('sha1').update(sql).digest('hex').slice(0, 16)}`;
      if (this.statementNames.size < 5000) this.statementNames.set(sql, name);
    }
    return name;
  }

  /** Values bound to raw statements: dates in the same text form the models use on SQLite. */
  encode(value: unknown): unknown {
    // Ids from paths and other unvalidated text: a NUL would be a 500 from PostgreSQL.
    if (typeof value === 'string' && value.includes('\u0000')) {
      throw new DomainError('invalid_parameter', 'Text may not contain NUL characters');
    }
    if (value instanceof Date) return this.dialect === 'sqlite' ? sqliteTime(value) : value.toISOString();
    if (typeof value === 'boolean') return this.dialect === 'sqlite' ? (value ? 1 : 0) : value;
    if (value !== null && typeof value === 'object') return JSON.stringify(value);
    return value ?? null;
  }

  /**
   * Rows bound as one JSON parameter (PostgreSQL's `json_to_recordset`): the statement text stays
   * the same whatever the number of rows, so it is prepared once per connection. Text that
   * PostgreSQL refuses (NUL, unpaired surrogates; input validation refuses NUL earlier) is
   * replaced by U+FFFD rather than failing the statement, and with it every row it carries.
   */
  jsonParam(rows: unknown[]): string {
    const json = JSON.stringify(rows);
    // JSON.stringify escapes exactly these as \u0000 and \udXXX (paired surrogates stay raw).
    return /\\u(?:0000|d[89a-f])/i.test(json) ? JSON.stringify(storableDeep(rows)) : json;
  }

  /** `FOR UPDATE` where the dialect has it; SQLite serialises writers anyway. */
  get forUpdate(): string {
    return this.dialect === 'postgres' ? ' FOR UPDATE' : '';
  }

  async close(): Promise<void> {
    await this.sequelize.close();
  }
}

/**
 * An error the PostgreSQL server answered a statement with: the statement failed as a whole and
 * wrote nothing (as opposed to a lost connection, after which its outcome is unknown).
 */
export function isStatementRefused(err: unknown): boolean {
  return err instanceof pg.DatabaseError;
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** Sequelize's SQLite DATE text form, so raw and model writes sort together. */
export function sqliteTime(d: Date): string {
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(
    d.getUTCMinutes(),
  )}:${pad(d.getUTCSeconds())}.${pad(d.getUTCMilliseconds(), 3)} +00:00`;
}

/** Reads a timestamp coming back from either dialect (Date, SQLite text or ISO text). */
export function readTime(value: unknown): Date | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value;
  const text = String(value);
  const m = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d+)?) ?([+-]\d{2}:\d{2})?$/.exec(text);
  if (m) return new Date(`${m[1]}T${m[2]}${m[3] ?? 'Z'}`);
  return new Date(text);
}

export function isoTime(value: unknown): string | null {
  const d = readTime(value);
  return d ? d.toISOString() : null;
}

export function readJson<T>(value: unknown, fallback: T): T {
  if (value === null || value === undefined) return fallback;
  if (typeof value === 'string') return JSON.parse(value) as T;
  return value as T;
}

export function readBool(value: unknown): boolean {
  return value === true || value === 1 || value === '1' || value === 't' || value === 'true';
}
