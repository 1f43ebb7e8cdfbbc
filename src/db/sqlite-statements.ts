import type { SqliteConnection } from './sequelize-internals';

/** What Payorch uses of a sqlite3 `Statement` (the driver's public API). */
export interface SqliteStatement {
  run(params: object, cb: (this: { changes: number }, err: Error | null) => void): unknown;
  all(params: object, cb: (err: Error | null, rows: unknown[]) => void): unknown;
  reset(cb?: (err: Error | null) => void): unknown;
  finalize(cb?: (err: Error | null) => void): unknown;
}

type Preparing = SqliteConnection & {
  prepare(sql: string, cb: (err: Error | null) => void): SqliteStatement;
  exec(sql: string, cb: (err: Error | null) => void): unknown;
};

/** Most statements kept prepared per connection; the least recently used is finalized past it. */
export const STATEMENT_CACHE_SIZE = 200;

/**
 * A statement `run` may keep prepared: one that finishes in its single step (node-sqlite3's run()
 * steps once), an INSERT, UPDATE, DELETE or transaction control without RETURNING. A statement
 * returning rows would stay active after run() until its next use, holding its transaction (a
 * write left uncommitted, a read snapshot kept), so it is prepared afresh each time instead.
 */
function runnableOnce(sql: string): boolean {
  return /^\s*(INSERT|UPDATE|DELETE|REPLACE|BEGIN|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE)\b/i.test(sql) && !/\bRETURNING\b/i.test(sql);
}

/**
 * The statements of one sqlite3 connection, prepared once and kept (node-sqlite3 has no cache:
 * `db.run(sql)` prepares, runs and finalizes the text each time, three trips through the thread
 * pool), run one at a time in the order asked: statements of one connection waiting on SQLite's
 * lock side by side would hold every libuv thread, and the transaction holding the lock could
 * then not run its next one. Bounded (least recently used finalized); every statement is
 * finalized before the connection closes (SQLite refuses to close a connection with statements
 * still prepared).
 */
export class SqliteStatements {
  private readonly cache = new Map<string, SqliteStatement>();
  private tail: Promise<unknown> = Promise.resolve();
  /** Statements prepared so far (the cache's misses), for tests and measurements. */
  prepared = 0;

  private constructor(private readonly connection: Preparing) {}

  /** The statements of `connection`, made on its first use; its `close` finalizes them first. */
  static of(connection: SqliteConnection): SqliteStatements {
    const holder = connection as SqliteConnection & { __payorchStatements?: SqliteStatements };
    if (holder.__payorchStatements) return holder.__payorchStatements;
    const statements = new SqliteStatements(connection as Preparing);
    holder.__payorchStatements = statements;
    const close = connection.close.bind(connection);
    connection.close = (cb?: (err: Error | null) => void) => {
      void statements.finalizeAll().then(() => close(cb));
    };
    return statements;
  }

  /** Statements kept prepared now. */
  get size(): number {
    return this.cache.size;
  }

  /**
   * The rows of `sql` (`all`) or the number of rows it changed (`run`), after the statements asked
   * before it. With `fresh` (reads and writes outside a transaction, which must see every commit
   * made before they were asked) the statement is reset once it has run, and the connection's next
   * statement waits for that: one run to its end may still hold its read transaction until reset
   * (SQLite guarantees the release only then), and the connection would go on reading that
   * snapshot. Inside a write transaction no reset is needed: its statements read the latest
   * commit (the write lock is taken on it) and Bind resets a statement before its next run; each
   * reset is a call into the driver, which costs the event loop as much as a run.
   */
  query(method: 'all' | 'run', sql: string, params: object, fresh = false): Promise<unknown[] | number> {
    const next = this.tail.then(() => this.runNow(method, sql, params, fresh));
    this.tail = next.then((r) => r.reset, () => undefined);
    return next.then((r) => r.answer);
  }

  /**
   * Several statements without parameters in one call into the driver (sqlite3_exec, which
   * prepares each), after the statements asked before: transaction control that would otherwise
   * cost a call each (`RELEASE a; SAVEPOINT a`).
   */
  exec(sql: string): Promise<void> {
    const next = this.tail.then(() => new Promise<void>((resolve, reject) => this.connection.exec(sql, (err) => (err ? reject(err) : resolve()))));
    this.tail = next.catch(() => undefined);
    return next;
  }

  private async runNow(method: 'all' | 'run', sql: string, params: object, fresh: boolean): Promise<{ answer: unknown[] | number; reset?: Promise<void> }> {
    if (method === 'run' && !runnableOnce(sql)) {
      // Prepared, run and finalized by the driver.
      const answer = await new Promise<number>((resolve, reject) => this.connection.run(sql, params, function done(err) {
        if (err) reject(err);
        else resolve(this.changes);
      }));
      return { answer };
    }
    const statement = await this.statement(sql);
    const answered = new Promise<unknown[] | number>((resolve, reject) => {
      if (method === 'all') statement.all(params, (err, rows) => (err ? reject(err) : resolve(rows)));
      else statement.run(params, function done(err) {
        if (err) reject(err);
        else resolve(this.changes);
      });
    });
    // Queued behind the run at once; the answer does not wait for it.
    const reset = fresh ? new Promise<void>((resolve) => statement.reset(() => resolve())) : undefined;
    return { answer: await answered, reset };
  }

  private async statement(sql: string): Promise<SqliteStatement> {
    const kept = this.cache.get(sql);
    if (kept) {
      // Most recently used last: a Map keeps insertion order.
      this.cache.delete(sql);
      this.cache.set(sql, kept);
      return kept;
    }
    const statement = await new Promise<SqliteStatement>((resolve, reject) => {
      const s = this.connection.prepare(sql, (err) => (err ? reject(err) : resolve(s)));
    });
    this.prepared++;
    this.cache.set(sql, statement);
    if (this.cache.size > STATEMENT_CACHE_SIZE) {
      const [oldest, old] = this.cache.entries().next().value as [string, SqliteStatement];
      this.cache.delete(oldest);
      old.finalize();
    }
    return statement;
  }

  /** Finalizes every kept statement once those already asked for have run. */
  private async finalizeAll(): Promise<void> {
    await this.tail;
    const statements = [...this.cache.values()];
    this.cache.clear();
    await Promise.all(statements.map((s) => new Promise((resolve) => s.finalize(() => resolve(undefined)))));
  }
}
