import { Transaction } from 'sequelize';
import { Sequelize, type ModelCtor } from 'sequelize-typescript';
import pg from 'pg';
import fs from 'node:fs';
import { createHash } from 'node:crypto';
import { DomainError, isDomainError } from '../core/errors';
import { storableDeep } from '../core/text';
import { prepareSqliteFile } from '../core/private-files';
import { translateDatabaseError } from './database-errors';
import {
  acquireConnection, closeSqliteConnectionsInTurn, connectionPools, endSqliteTransaction, releaseConnection, routeSequelizeConnections, shareSqliteTransactionConnection,
  sqliteTransactionOn, transactionConnection, type QueryConnectionOptions, type SqliteConnection,
} from './sequelize-internals';
import { SqliteStatements } from './sqlite-statements';
import type { PoolUsage } from '../observability/metrics';
import { configurePostgresSessions } from './postgres-session';
import { ReplicaSet, REPLICA_CHECK_INTERVAL_MS, type Replica, type ReplicaLogger } from './replicas';
import { currentReadScope, noteScopeWrote, ReadRouting } from './read-routing';

// Amounts and counts are int8 in PostgreSQL; every value we store fits in a double (≤ 10^12).
pg.types.setTypeParser(20, (v: string) => Number(v));

export type Dialect = 'sqlite' | 'postgres';

/** What SQLite opens for a `sqlite:` URL: a path (`sqlite:///abs` as `/abs`), `file:` URI, or `:memory:`. */
export function sqliteStorage(url: string): string {
  return url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '') || ':memory:';
}

const CONNECT_TIMEOUT_MS = 5_000;
const POOL_ACQUIRE_MS = 8_000;

function rethrowTranslated(err: unknown): never {
  throw translateDatabaseError(err);
}

/**
 * Every statement Sequelize runs (model calls, migrations, BEGIN/COMMIT) goes through `query`:
 * its driver errors are translated here, once, as the raw statements' are. Sequelize has no
 * error hook (`afterQuery` runs, but cannot replace the error).
 */
class TranslatingSequelize extends Sequelize {
  /** Set when reads may go to replicas (Database): runs each statement, choosing the pool it takes its connection from. */
  routeQuery?: (options: QueryConnectionOptions | undefined, run: (options: QueryConnectionOptions | undefined) => Promise<unknown>) => Promise<unknown>;

  override async query(...args: Parameters<Sequelize['query']>): Promise<never> {
    try {
      if (!this.routeQuery) return (await super.query(...args)) as never;
      const [sql, options] = args as unknown as [string, QueryConnectionOptions | undefined];
      const query = super.query.bind(this) as unknown as (sql: string, options?: QueryConnectionOptions) => Promise<unknown>;
      return (await this.routeQuery(options, (o) => query(sql, o))) as never;
    } catch (err) {
      return rethrowTranslated(err);
    }
  }
}

/** The option naming the replica (its index) a model's read takes its connection from (routeSequelizeConnections). */
const REPLICA_OPTION = 'payorchReplica';

/**
 * Whether a statement only reads, so may run on a standby: a SELECT (or WITH) that changes no
 * row, takes no row lock, and calls nothing that writes (sequences, advisory locks). Statements
 * that write through `select` (… RETURNING) stay on the primary and count as the scope's write.
 */
export function readOnlySql(sql: string): boolean {
  return /^\s*(SELECT|WITH)\b/i.test(sql)
    && !/\b(INSERT|UPDATE|DELETE|MERGE|nextval|setval|pg_advisory\w*|pg_try_advisory\w*|FOR\s+(NO\s+)?(KEY\s+)?(UPDATE|SHARE))\b/i.test(sql);
}

/** Database.transaction's options. */
export interface TransactionOptions {
  /**
   * SQLite: this transaction may share one COMMIT with others marked so that are waiting at the
   * same moment (group commit), each in a SAVEPOINT of its own, so one failing rolls back only its
   * own work. Only for transactions that read what they depend on through their own transaction
   * (never through the default connection, which would not see the group's earlier writes).
   * PostgreSQL: no effect.
   */
  group?: boolean;
}

/** Most transactions written under one COMMIT (SQLite group commit). */
export const SQLITE_GROUP_MAX = 64;

interface SqliteJob {
  fn(t: Transaction): Promise<unknown>;
  group: boolean;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/** What one transaction of a SQLite group holds until the group's COMMIT. */
interface SqliteDone {
  job: SqliteJob;
  t: Transaction;
  result: unknown;
  afterCommit: Array<(t: Transaction) => unknown>;
}

/** A statement of the transaction's control (BEGIN, SAVEPOINT, COMMIT) failed: the connection's state is unknown. */
class ControlFailed extends Error {
  constructor(readonly err: unknown) {
    super('SQLite transaction control statement failed');
  }
}

export interface DatabaseOptions {
  url: string;
  models: ModelCtor[];
  logging?: (sql: string) => void;
  poolMax?: number;
  /** How long a SQLite statement waits for another writer's lock before SQLITE_BUSY. */
  sqliteBusyTimeoutMs?: number;
  /** PostgreSQL read replicas (DATABASE_REPLICA_URLS) and how reads go to them (README, "Read replicas"). */
  replicas?: {
    urls: string[];
    /** REPLICA_MAX_LAG_MS: a replica lagging more is skipped. */
    maxLagMs: number;
    /** REPLICA_READ_AFTER_WRITE_MS: a caller that wrote within this reads from the primary. */
    afterWriteMs: number;
    logger?: ReplicaLogger;
    checkIntervalMs?: number;
  };
}

/**
 * The Sequelize instance plus the few things every service needs from it: transactions that
 * behave the same on both dialects, bound raw statements for hot paths, and a timestamp
 * encoding that matches what the models write.
 */
export class Database {
  readonly sequelize: Sequelize;
  readonly dialect: Dialect;
  /** SQLite write transactions waiting for the one connection that writes, oldest first. */
  private sqliteJobs: SqliteJob[] = [];
  private sqliteWriting = false;
  /** SQLite transactions written (COMMITs or ROLLBACKs run), for tests and measurements. */
  sqliteTransactions = 0;

  /** SQLite write transactions waiting for the writer now (tests). */
  get sqliteWaiting(): number {
    return this.sqliteJobs.length;
  }
  private readonly logSql?: (sql: string) => void;
  private readonly statementNames = new Map<string, string>();
  private readonly readOnlyStatements = new Map<string, boolean>();
  private readonly sqliteFile?: string;
  /** The read replicas, when DATABASE_REPLICA_URLS names any (PostgreSQL only). */
  readonly replicas?: ReplicaSet;
  /** Which requests may read from the replicas, and read-your-writes (with `replicas`). */
  readonly readRouting?: ReadRouting;

  constructor(options: DatabaseOptions) {
    const logging = options.logging ?? false;
    this.logSql = options.logging;
    if (options.url.startsWith('sqlite:')) {
      this.dialect = 'sqlite';
      const storage = sqliteStorage(options.url);
      if (storage !== ':memory:' && !storage.startsWith('file:')) this.sqliteFile = storage;
      this.sequelize = new TranslatingSequelize({
        dialect: 'sqlite',
        storage,
        logging,
        models: options.models,
        // One writer at a time is SQLite's rule; IMMEDIATE takes the write lock at BEGIN so a
        // transaction never fails half-way on a lock upgrade.
        transactionType: Transaction.TYPES.IMMEDIATE,
        define: { timestamps: false, underscored: true },
      });
      this.configureSqliteConnections(options.sqliteBusyTimeoutMs ?? 15_000);
    } else {
      this.dialect = 'postgres';
      this.sequelize = new TranslatingSequelize(options.url, {
        dialect: 'postgres',
        logging,
        models: options.models,
        // Fail fast when the server is gone: a connection attempt gives up after 5 s (a server
        // that does not answer, not only one that refuses), and a request waits at most 8 s for a
        // pooled connection, so it is answered service_unavailable well within 10 s.
        pool: { max: options.poolMax ?? 10, min: 0, idle: 10_000, acquire: POOL_ACQUIRE_MS },
        dialectOptions: { connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true },
        define: { timestamps: false, underscored: true },
      });
      configurePostgresSessions(this.sequelize);
      const replicas = options.replicas;
      if (replicas && replicas.urls.length > 0) {
        const checkIntervalMs = replicas.checkIntervalMs ?? REPLICA_CHECK_INTERVAL_MS;
        this.replicas = new ReplicaSet({
          urls: replicas.urls, primaryUrl: options.url, maxLagMs: replicas.maxLagMs, checkIntervalMs, poolMax: options.poolMax, logger: replicas.logger,
        });
        // A write is remembered until any replica still counted healthy holds it.
        this.readRouting = new ReadRouting(replicas.afterWriteMs, replicas.maxLagMs + 3 * checkIntervalMs);
        this.routeModelReads(this.sequelize as TranslatingSequelize, this.replicas);
      }
    }
  }

  /**
   * The connection pools as they stand (metrics, at scrape time): PostgreSQL's pool (or its read
   * and write pools with replication); on SQLite the single writer, a pool of one whose waiting
   * are the write transactions queued for it.
   */
  poolUsage(): PoolUsage[] {
    if (this.dialect === 'sqlite') {
      const used = this.sqliteWriting ? 1 : 0;
      return [{ pool: 'sqlite_writer', max: 1, used, idle: 1 - used, waiting: this.sqliteJobs.length }];
    }
    return connectionPools(this.sequelize).map(({ name, pool }) => ({ pool: name, max: pool.maxSize, used: pool.using, idle: pool.available, waiting: pool.waiting }));
  }

  /**
   * The models' reads: a finder's SELECT outside a transaction, in a scope that may read from a
   * replica, takes a connection of a usable replica's pool; a failure of the replica's (not of
   * the statement) runs it again on the primary. Every other statement runs on the primary, and
   * one that writes outside a transaction makes the rest of its scope read from the primary.
   */
  private routeModelReads(sequelize: TranslatingSequelize, replicas: ReplicaSet): void {
    const lent = new WeakMap<object, Replica>();
    routeSequelizeConnections(sequelize, {
      async connection(options) {
        const index = options[REPLICA_OPTION];
        if (typeof index !== 'number') return null;
        const replica = replicas.replicas[index];
        const connection = await acquireConnection<object>(replica.sequelize);
        lent.set(connection, replica);
        return connection;
      },
      release(connection) {
        const replica = lent.get(connection);
        if (!replica) return false;
        lent.delete(connection);
        releaseConnection(replica.sequelize, connection);
        return true;
      },
    });
    sequelize.routeQuery = async (options, run) => {
      const scope = currentReadScope();
      if (!scope || options?.transaction) return run(options);
      if (options?.type !== 'SELECT') {
        scope.wrote = true;
        return run(options);
      }
      return replicas.read(scope, (replica) => run({ ...options, [REPLICA_OPTION]: replicas.replicas.indexOf(replica) }), () => run(options));
    };
  }

  /**
   * SQLite: one shared connection for transactions; every connection waits for the lock (15 s by
   * default) and commits with `synchronous=NORMAL` (a per-connection setting: set on each as it
   * opens, before its first statement, so the transactions' connection writes as the default one
   * does; in WAL mode a commit survives the process's crash, kill -9 loses nothing acknowledged).
   */
  private configureSqliteConnections(busyTimeoutMs: number): void {
    this.sharedSqlite = shareSqliteTransactionConnection(this.sequelize, (connection) => {
      connection.configure('busyTimeout', busyTimeoutMs);
      connection.run('PRAGMA synchronous=NORMAL', {}, () => undefined);
    });
  }

  private sharedSqlite?: { connection(): Promise<SqliteConnection>; discard(): void };

  /** Database files found readable by other users and made 0600 by `init` (SQLite). */
  tightenedFiles: string[] = [];

  async init(): Promise<void> {
    if (this.sqliteFile) this.tightenedFiles = prepareSqliteFile(this.sqliteFile);
    if (this.dialect === 'sqlite') {
      // Kept in the file: every connection, of this process and any other, writes the WAL.
      await this.sequelize.query('PRAGMA journal_mode=WAL');
    }
    // The replicas' first check, so that reads may go to them from the first request.
    await this.replicas?.start();
  }

  /**
   * SQLite: the durability settings writes commit with, read back from the connections
   * themselves: the journal mode (kept in the file) and `synchronous` of the default connection
   * and of the one transactions write on (a per-connection setting). Logged at start, and read
   * from that log by bench/create-payment, whose baseline must write with the same.
   */
  async sqliteDurability(): Promise<{ journalMode: string; synchronous: string; transactionsSynchronous: string } | null> {
    if (this.dialect !== 'sqlite') return null;
    const names = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];
    const synchronous = async (t?: Transaction) => {
      const [row] = await this.select<{ synchronous: number }>('PRAGMA synchronous', [], t);
      return names[Number(row.synchronous)] ?? String(row.synchronous);
    };
    const [{ journal_mode: journalMode }] = await this.select<{ journal_mode: string }>('PRAGMA journal_mode');
    return { journalMode, synchronous: await synchronous(), transactionsSynchronous: await this.transaction((t) => synchronous(t)) };
  }

  /**
   * Runs fn in a transaction; on SQLite write transactions are queued in-process. A lost or
   * refused connection (taking one, BEGIN, COMMIT) is `service_unavailable`, as in every
   * statement; what fn throws is its own (its statements are translated already, and an error
   * of something else it called, a socket error say, is not the database's). Hooks given to
   * `t.afterCommit` run only once the commit is known to have succeeded.
   */
  async transaction<T>(fn: (t: Transaction) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    // Whatever the request reads after its transaction, it reads from the primary.
    noteScopeWrote();
    if (this.dialect === 'postgres') return this.postgresTransaction(fn);
    return new Promise<T>((resolve, reject) => {
      this.sqliteJobs.push({ fn, group: options.group === true, resolve: resolve as (v: unknown) => void, reject });
      this.nextSqliteTransaction();
    });
  }

  private postgresTransaction<T>(fn: (t: Transaction) => Promise<T>): Promise<T> {
    const failures = new WeakSet<object>();
    // Sequelize runs afterCommit hooks even when COMMIT fails (a lost connection): they are
    // held here and run only once the commit is known to have succeeded, so no event of a
    // change that did not happen is published.
    const afterCommit: Array<{ hook: (t: Transaction) => unknown; t: Transaction }> = [];
    return this.sequelize.transaction((t) => {
      t.afterCommit = (hook) => {
        afterCommit.push({ hook, t });
      };
      return fn(t).catch((err: unknown) => {
        if (err !== null && typeof err === 'object') failures.add(err);
        throw err;
      });
    }).then(async (result) => {
      for (const { hook, t } of afterCommit) await hook(t);
      return result;
    }, (err: unknown) => {
      throw err !== null && typeof err === 'object' && failures.has(err) ? err : translateDatabaseError(err);
    });
  }

  /**
   * SQLite has one writer: transactions run one at a time on the one shared connection, in the
   * order asked. A transaction alone starts at once. Those marked `group` waiting together (they
   * arrived while the previous one ran) are written under one BEGIN and COMMIT, up to
   * SQLITE_GROUP_MAX: one commit's WAL write for all of them, and the queue's wait shared.
   */
  private nextSqliteTransaction(): void {
    if (this.sqliteWriting || this.sqliteJobs.length === 0) return;
    this.sqliteWriting = true;
    let n = 1;
    if (this.sqliteJobs[0].group) while (n < this.sqliteJobs.length && n < SQLITE_GROUP_MAX && this.sqliteJobs[n].group) n++;
    const jobs = this.sqliteJobs.splice(0, n);
    void this.runSqliteTransactions(jobs).finally(() => {
      this.sqliteWriting = false;
      this.nextSqliteTransaction();
    });
  }

  /**
   * BEGIN IMMEDIATE (the write lock taken at once: a transaction never fails half-way on a lock
   * upgrade), each job's fn (in a SAVEPOINT of its own when there are several: one that throws
   * rolls back to it and fails alone), COMMIT; run on the driver connection, not through
   * Sequelize's query path. Each job's transaction is a Sequelize Transaction on that connection,
   * so model calls given it run inside. After a failure whose outcome on the connection is not
   * known to be clean, the connection is discarded (closed, rolling back what it held).
   *
   * A group costs n + 1 calls into the driver besides its jobs' own: `BEGIN IMMEDIATE; SAVEPOINT`,
   * `RELEASE; SAVEPOINT` between jobs (none after a job rolled back to it: the savepoint is then
   * where the next job starts), and COMMIT, which releases the last savepoint with the rest.
   */
  private async runSqliteTransactions(jobs: SqliteJob[]): Promise<void> {
    const shared = this.sharedSqlite as NonNullable<Database['sharedSqlite']>;
    const grouped = jobs.length > 1;
    const done: SqliteDone[] = [];
    const failed: Array<{ job: SqliteJob; err: unknown }> = [];
    let connection: SqliteConnection | undefined;
    const control = async (sql: string) => {
      this.logSql?.(`Executing (transaction): ${sql}`);
      try {
        const statements = SqliteStatements.of(connection as SqliteConnection);
        // One statement: kept prepared; several: one sqlite3_exec call.
        if (sql.includes(';')) await statements.exec(sql);
        else await statements.query('run', sql, {});
      } catch (err) {
        throw new ControlFailed(err);
      }
    };
    try {
      try {
        connection = await shared.connection();
      } catch (err) {
        throw new ControlFailed(err);
      }
      await control(grouped ? 'BEGIN IMMEDIATE; SAVEPOINT payorch_item' : 'BEGIN IMMEDIATE');
      // Whether the savepoint holds a job's work (to be released before the next job starts).
      let used = false;
      for (const job of jobs) {
        if (used) await control('RELEASE payorch_item; SAVEPOINT payorch_item');
        used = true;
        const t = sqliteTransactionOn(this.sequelize, connection);
        const afterCommit: SqliteDone['afterCommit'] = [];
        t.afterCommit = (hook) => {
          afterCommit.push(hook);
        };
        let result: unknown;
        try {
          result = await job.fn(t);
        } catch (err) {
          endSqliteTransaction(t, 'rollback');
          if (!grouped) throw err;
          // Its own work undone; the group's goes on from this savepoint. Answered once the
          // group's COMMIT is known: what it read may have been an earlier job's uncommitted write.
          await control('ROLLBACK TO payorch_item');
          used = false;
          failed.push({ job, err });
          continue;
        }
        done.push({ job, t, result, afterCommit });
      }
      await control('COMMIT');
    } catch (err) {
      // Nothing of the group is written: every job fails, with the failure of the group.
      for (const d of done) endSqliteTransaction(d.t, 'rollback');
      const rolledBack = connection
        ? await this.sqliteStatement(connection, 'run', 'ROLLBACK', {}).then(() => true, () => false)
        : false;
      // A job alone that threw its own error (a refusal, a not-found) leaves the connection
      // clean once ROLLBACK succeeds: kept, with its prepared statements. A failed BEGIN, COMMIT
      // or ROLLBACK leaves it in a state not known: closed (rolling back what it held).
      if (err instanceof ControlFailed || !rolledBack) shared.discard();
      this.sqliteTransactions++;
      // Alone, what fn threw is its own; in a group only a control statement fails the group.
      const failure = err instanceof ControlFailed ? translateDatabaseError(err.err) : err;
      for (const job of jobs) job.reject(failure);
      return;
    }
    this.sqliteTransactions++;
    for (const { job, err } of failed) job.reject(err);
    for (const d of done) {
      endSqliteTransaction(d.t, 'commit');
      try {
        for (const hook of d.afterCommit) await hook(d.t);
        d.job.resolve(d.result);
      } catch (err) {
        d.job.reject(err);
      }
    }
  }

  /** Bound SELECT returning plain rows; `$1, $2…` placeholders on both dialects. */
  async select<R = Record<string, unknown>>(sql: string, bind: unknown[] = [], transaction?: Transaction): Promise<R[]> {
    try {
      if (this.dialect === 'postgres') {
        if (this.replicas && !transaction) return (await this.pgRead(this.replicas, sql, bind)).rows as R[];
        return (await this.pgQuery(sql, bind, transaction)).rows as R[];
      }
      return (await this.sqliteQuery('all', sql, bind, transaction)) as R[];
    } catch (err) {
      return rethrowTranslated(err);
    }
  }

  /** Bound INSERT/UPDATE/DELETE; returns the number of rows it touched. */
  async execute(sql: string, bind: unknown[] = [], transaction?: Transaction): Promise<number> {
    noteScopeWrote();
    try {
      if (this.dialect === 'postgres') return (await this.pgQuery(sql, bind, transaction)).rowCount ?? 0;
      return (await this.sqliteQuery('run', sql, bind, transaction)) as number;
    } catch (err) {
      return rethrowTranslated(err);
    }
  }

  /**
   * One write outside any transaction. On SQLite it goes through the in-process write queue
   * (its own grouped transaction on the write connection) instead of the default connection: a
   * write there waits for the process's own write lock on a libuv pool thread, and enough of them
   * at once (more than the pool's threads) leave no thread for the COMMIT they wait for, until
   * the busy timeout (15 s) refuses them. Never call it inside a transaction's callback: use
   * `execute` with the transaction there. On PostgreSQL it is `execute`.
   */
  async executeAlone(sql: string, bind: unknown[] = []): Promise<number> {
    if (this.dialect === 'postgres') return this.execute(sql, bind);
    return this.transaction((t) => this.execute(sql, bind, t), { group: true });
  }

  /**
   * Hot-path statements on SQLite: straight on the sqlite3 connection Sequelize holds (the
   * transaction's, or its default one), skipping Sequelize's per-query work, which formats a
   * stack trace for every statement. `$1, $2…` are bound by name; logged as Sequelize logs.
   * Returns the rows (`all`) or the number of rows changed (`run`).
   */
  private async sqliteQuery(method: 'all' | 'run', sql: string, bind: unknown[], transaction?: Transaction): Promise<unknown[] | number> {
    // SQLite's default connection stays open: nothing to release.
    const connection = transaction ? transactionConnection<SqliteConnection>(transaction) : await acquireConnection<SqliteConnection>(this.sequelize);
    this.logSql?.(`Executing (${connection.uuid || 'default'}): ${sql}`);
    const params: Record<string, unknown> = {};
    bind.forEach((v, i) => {
      params[`$${i + 1}`] = this.encode(v);
    });
    // Outside a transaction, a statement must see every commit made before it was asked.
    return this.sqliteStatement(connection, method, sql, params, !transaction);
  }

  /** A statement prepared once per connection and kept (SqliteStatements), one at a time per connection. */
  private sqliteStatement(connection: SqliteConnection, method: 'all' | 'run', sql: string, params: object, fresh = false): Promise<unknown[] | number> {
    return SqliteStatements.of(connection).query(method, sql, params, fresh);
  }

  /**
   * Hot-path statements on PostgreSQL: a named prepared statement on the Sequelize pool's own
   * connection (the transaction's, when there is one), skipping Sequelize's per-query work.
   */
  private async pgQuery(sql: string, bind: unknown[], transaction?: Transaction): Promise<pg.QueryResult> {
    this.logSql?.(`Executing (${transaction ? 'transaction' : 'default'}): ${sql}`);
    const query = { name: this.statementName(sql), text: sql, values: bind.map((v) => this.encode(v)) };
    if (transaction) return transactionConnection<pg.ClientBase>(transaction).query(query);
    const client = await acquireConnection<pg.ClientBase>(this.sequelize);
    try {
      return await client.query(query);
    } finally {
      releaseConnection(this.sequelize, client);
    }
  }

  /**
   * A statement outside a transaction, with replicas configured: on a usable replica when the
   * request only reads (ReadScope) and the statement only reads; run again on the primary when the
   * replica fails it for a reason of its own (down, shutting down, a recovery conflict).
   */
  private async pgRead(replicas: ReplicaSet, sql: string, bind: unknown[]): Promise<pg.QueryResult> {
    const scope = currentReadScope();
    if (!scope) return this.pgQuery(sql, bind);
    if (!this.isReadOnly(sql)) {
      scope.wrote = true;
      return this.pgQuery(sql, bind);
    }
    return replicas.read(scope, (replica) => this.pgReplicaQuery(replica, sql, bind), () => this.pgQuery(sql, bind));
  }

  /** pgQuery on a connection of the replica's pool (logged as `Executing (replica <name>)`). */
  private async pgReplicaQuery(replica: Replica, sql: string, bind: unknown[]): Promise<pg.QueryResult> {
    this.logSql?.(`Executing (replica ${replica.name}): ${sql}`);
    const query = { name: this.statementName(sql), text: sql, values: bind.map((v) => this.encode(v)) };
    const client = await acquireConnection<pg.ClientBase>(replica.sequelize);
    try {
      return await client.query(query);
    } finally {
      releaseConnection(replica.sequelize, client);
    }
  }

  private isReadOnly(sql: string): boolean {
    let readOnly = this.readOnlyStatements.get(sql);
    if (readOnly === undefined) {
      readOnly = readOnlySql(sql);
      if (this.readOnlyStatements.size < 5000) this.readOnlyStatements.set(sql, readOnly);
    }
    return readOnly;
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

  /**
   * A subquery yielding the text elements of the JSON array bound at `placeholder` (`$n`): a list
   * of ids bound as one parameter, so the statement has one text whatever their number.
   */
  jsonTextList(placeholder: string): string {
    return this.dialect === 'postgres' ? `SELECT json_array_elements_text(${placeholder}::json)` : `SELECT value FROM json_each(${placeholder})`;
  }

  /**
   * `column` among the text elements of the JSON array bound at `placeholder` (`$n`), each looked
   * up in an index on `column`. PostgreSQL gets them as an array, `= ANY (ARRAY(…))`, an index
   * condition: as `IN (SELECT …)` it counts on the set-returning function's 100 rows and, once a
   * table has some ten thousand rows per account, hash-joins a sequential scan of them instead
   * (in generic plans of prepared statements too). SQLite keeps `IN (…)`, a lookup per element.
   */
  inJsonList(column: string, placeholder: string): string {
    const list = this.jsonTextList(placeholder);
    return this.dialect === 'postgres' ? `${column} = ANY (ARRAY(${list}))` : `${column} IN (${list})`;
  }

  /**
   * `column` not among the text elements of the JSON array bound at `placeholder`: on PostgreSQL
   * `<> ALL (ARRAY(…))`, one filter over the rows however they are found, rather than a hashed
   * subplan. It differs from `NOT IN` only when the list or `column` holds NULL (`NOT IN` is then
   * unknown for every row); callers pass columns that are never NULL and lists of ids that are
   * never null, where the two are the same, true for an empty list included.
   */
  notInJsonList(column: string, placeholder: string): string {
    const list = this.jsonTextList(placeholder);
    return this.dialect === 'postgres' ? `${column} <> ALL (ARRAY(${list}))` : `${column} NOT IN (${list})`;
  }

  /**
   * The database's clock, as SQL: what leases shared by instances are measured on, never an
   * instance's own clock, which can run ahead, behind or jump. On SQLite, the text form the
   * models write (sqliteTime), so comparisons with stored times stay textual.
   */
  get nowSql(): string {
    return databaseNowSql(this.dialect);
  }

  /** The database's clock `ms` milliseconds on, as SQL; `ms` is a placeholder (`$n`) bound to an integer. */
  nowPlusSql(ms: string): string {
    return databaseNowPlusSql(this.dialect, ms);
  }

  /** `FOR UPDATE` where the dialect has it; SQLite serialises writers anyway. */
  get forUpdate(): string {
    return this.dialect === 'postgres' ? ' FOR UPDATE' : '';
  }

  /** The model finder's `lock` option for `forUpdate`: a row lock on PostgreSQL, none on SQLite. */
  rowLock(t: Transaction | undefined): Transaction['LOCK'][keyof Transaction['LOCK']] | undefined {
    return t && this.dialect === 'postgres' ? t.LOCK.UPDATE : undefined;
  }

  /**
   * Whether the database answers (for /ready): a statement on PostgreSQL; on SQLite also that the
   * file is still there, since an open handle keeps reading and writing a file deleted or moved
   * away, and what it writes is then lost on restart.
   */
  async ping(): Promise<void> {
    if (this.dialect === 'sqlite' && this.sqliteFile && !fs.existsSync(this.sqliteFile)) {
      throw new DomainError('service_unavailable', 'The database file is missing');
    }
    await this.select('SELECT 1 AS ok');
  }

  async close(): Promise<void> {
    await this.replicas?.close();
    if (this.dialect === 'sqlite') await closeSqliteConnectionsInTurn(this.sequelize);
    await this.sequelize.close();
  }
}

/** `Database.nowSql` of a dialect, for statements written once per dialect. */
export function databaseNowSql(dialect: Dialect): string {
  return dialect === 'postgres' ? 'statement_timestamp()' : "(strftime('%Y-%m-%d %H:%M:%f', 'now') || ' +00:00')";
}

/** `Database.nowPlusSql` of a dialect. */
export function databaseNowPlusSql(dialect: Dialect, ms: string): string {
  return dialect === 'postgres'
    ? `(statement_timestamp() + ${ms}::integer * interval '1 millisecond')`
    : `(strftime('%Y-%m-%d %H:%M:%f', 'now', printf('%+.3f seconds', ${ms} / 1000.0)) || ' +00:00')`;
}

/**
 * An error the PostgreSQL server answered a statement with: the statement failed as a whole and
 * wrote nothing (as opposed to a lost connection, after which its outcome is unknown).
 */
export function isStatementRefused(err: unknown): boolean {
  // Text PostgreSQL cannot store arrives translated to invalid_parameter, its refusal as cause.
  const driverError = isDomainError(err) && err.code === 'invalid_parameter' ? err.cause : err;
  return driverError instanceof pg.DatabaseError;
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
