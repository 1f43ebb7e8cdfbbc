import 'reflect-metadata';
import sqlite3 from 'sqlite3';
import type { Transaction } from 'sequelize';
import { Database, SQLITE_GROUP_MAX } from '../../src/db/database';
import { MODELS } from '../../src/db/models';
import { acquireConnection, transactionConnection, type SqliteConnection } from '../../src/db/sequelize-internals';
import { SqliteStatements, STATEMENT_CACHE_SIZE } from '../../src/db/sqlite-statements';
import { freshDatabase, DIALECT, type TestDatabase } from '../helpers/db';
import { seeded } from '../helpers/seeded';

/*
 * Database.transaction's group commit (SQLite: transactions marked `group` waiting together share
 * one BEGIN/COMMIT, each in a SAVEPOINT) and the SQLite statements kept prepared per connection.
 * PostgreSQL: `group` changes nothing.
 */
let database: TestDatabase;
let db: Database;
const sql: string[] = [];

beforeAll(async () => {
  database = await freshDatabase();
  db = new Database({ url: database.url, models: MODELS, logging: (s) => sql.push(s.replace(/^Executing \([^)]*\): /, '')) });
  await db.init();
  await db.execute('CREATE TABLE group_probe (id INTEGER PRIMARY KEY, note TEXT)');
});
afterAll(async () => {
  await db.close();
  await database.drop();
});

const ids = async () => (await db.select<{ id: number }>('SELECT id FROM group_probe ORDER BY id')).map((r) => Number(r.id));
const committedIds = async () => (await db.select<{ id: number }>('SELECT id FROM group_amounts')).map((r) => Number(r.id));
const begins = (from: number) => sql.slice(from).filter((s) => /^(BEGIN|START TRANSACTION)/i.test(s)).length;

/** A transaction that holds the writer until `release` is called, so the next ones wait together. */
function holdWriter(): { started: Promise<void>; release(): void; done: Promise<void> } {
  let release!: () => void;
  let started!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const startedP = new Promise<void>((resolve) => (started = resolve));
  const done = db.transaction(async () => {
    started();
    await gate;
  });
  return { started: startedP, release, done };
}

describe(`group commit on ${DIALECT}`, () => {
  beforeEach(async () => {
    await db.execute('DELETE FROM group_probe');
  });

  it('should write grouped transactions waiting together under one BEGIN and COMMIT, each answered once it is committed', async () => {
    const writer = holdWriter();
    await writer.started;
    const committed: number[] = [];
    const from = sql.length;
    const writes = Array.from({ length: 5 }, (_, i) => db.transaction(async (t) => {
      t.afterCommit(() => {
        committed.push(i);
      });
      await db.execute('INSERT INTO group_probe (id, note) VALUES ($1, $2)', [i + 1, 'grouped'], t);
      return i;
    }, { group: true }));
    writer.release();
    expect(await Promise.all(writes)).toEqual([0, 1, 2, 3, 4]);
    await writer.done;
    expect(await ids()).toEqual([1, 2, 3, 4, 5]);
    // In the order asked on SQLite (one writer); PostgreSQL commits them side by side.
    expect(DIALECT === 'sqlite' ? committed : [...committed].sort()).toEqual([0, 1, 2, 3, 4]);
    // SQLite: one BEGIN for the five (the writer's own came before `from`); PostgreSQL: one each.
    expect(begins(from)).toBe(DIALECT === 'sqlite' ? 1 : 5);
    if (DIALECT === 'sqlite') {
      // n + 1 calls into the driver to control a group of n (the writer's COMMIT first).
      expect(sql.slice(from).filter((s) => /^(BEGIN|RELEASE|SAVEPOINT|ROLLBACK|COMMIT)/.test(s))).toEqual([
        'COMMIT', 'BEGIN IMMEDIATE; SAVEPOINT payorch_item', ...Array(4).fill('RELEASE payorch_item; SAVEPOINT payorch_item'), 'COMMIT',
      ]);
    }
  });

  it('should fail only the grouped transaction that throws, its writes undone and the others committed', async () => {
    const writer = holdWriter();
    await writer.started;
    const hooks: number[] = [];
    const from = sql.length;
    const writes = [1, 2, 3].map((id) => db.transaction(async (t) => {
      t.afterCommit(() => {
        hooks.push(id);
      });
      await db.execute('INSERT INTO group_probe (id, note) VALUES ($1, $2)', [id, 'grouped'], t);
      if (id === 2) {
        // A statement refused (duplicate key) after a write of its own, then thrown. The duplicate
        // is of its own row: on PostgreSQL the three run side by side, so a duplicate of another
        // transaction's row could win the race and fail that one instead.
        await db.execute('INSERT INTO group_probe (id, note) VALUES ($1, $2)', [20, 'undone'], t);
        await db.execute('INSERT INTO group_probe (id, note) VALUES ($1, $2)', [20, 'duplicate'], t);
      }
      return id;
    }, { group: true }).then((v) => ({ ok: v }), (err: unknown) => ({ err })));
    writer.release();
    const results = await Promise.all(writes);
    await writer.done;
    expect(results[0]).toEqual({ ok: 1 });
    expect(results[1]).toHaveProperty('err');
    expect(results[2]).toEqual({ ok: 3 });
    expect(await ids()).toEqual([1, 3]);
    expect([...hooks].sort()).toEqual([1, 3]);
    expect(begins(from)).toBe(DIALECT === 'sqlite' ? 1 : 3);
    if (DIALECT === 'sqlite') {
      // After a rollback to it, the savepoint is where the next one starts: nothing to release.
      expect(sql.slice(from).filter((s) => /^(BEGIN|RELEASE|SAVEPOINT|ROLLBACK|COMMIT)/.test(s))).toEqual([
        'COMMIT', 'BEGIN IMMEDIATE; SAVEPOINT payorch_item', 'RELEASE payorch_item; SAVEPOINT payorch_item', 'ROLLBACK TO payorch_item', 'COMMIT',
      ]);
    }
    // The connection is kept and writes on.
    await db.transaction((t) => db.execute('INSERT INTO group_probe (id, note) VALUES ($1, $2)', [4, 'after'], t), { group: true });
    expect(await ids()).toEqual([1, 3, 4]);
  });

  it('should not group transactions that did not ask to be, nor more than SQLITE_GROUP_MAX', async () => {
    const writer = holdWriter();
    await writer.started;
    const from = sql.length;
    const insert = (id: number) => (t: Transaction) => db.execute('INSERT INTO group_probe (id, note) VALUES ($1, $2)', [id, 'x'], t);
    const writes = [
      db.transaction(insert(1)),
      db.transaction(insert(2)),
      ...Array.from({ length: SQLITE_GROUP_MAX + 1 }, (_, i) => db.transaction(insert(100 + i), { group: true })),
    ];
    writer.release();
    await Promise.all(writes);
    await writer.done;
    expect((await ids()).length).toBe(SQLITE_GROUP_MAX + 3);
    // Two alone, then a full group and one more.
    expect(begins(from)).toBe(DIALECT === 'sqlite' ? 4 : SQLITE_GROUP_MAX + 3);
  });

  it('should start a transaction alone at once, without waiting on any timer', async () => {
    // Timers frozen: a transaction that waited for a batching window (setImmediate, setTimeout)
    // would never finish. The database's own I/O callbacks still run.
    jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] });
    try {
      const from = sql.length;
      expect(await db.transaction((t) => db.execute('INSERT INTO group_probe (id, note) VALUES ($1, $2)', [7, 'alone'], t), { group: true })).toBe(1);
      // Alone: no SAVEPOINT around it.
      expect(sql.slice(from).filter((s) => /SAVEPOINT/.test(s))).toEqual([]);
    } finally {
      jest.useRealTimers();
    }
    expect(await ids()).toEqual([7]);
  });

  it('should fail every transaction of a group whose COMMIT fails, and write none of them', async () => {
    if (DIALECT !== 'sqlite') return; // PostgreSQL commits each alone (database-transactions.test.ts)
    // A deferred foreign key checked at COMMIT: the group's commit is refused whole.
    await db.execute('CREATE TABLE IF NOT EXISTS group_parent (id INTEGER PRIMARY KEY)');
    await db.execute('CREATE TABLE IF NOT EXISTS group_child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES group_parent (id) DEFERRABLE INITIALLY DEFERRED)');
    const writer = holdWriter();
    await writer.started;
    const hooks: number[] = [];
    const writes = [1, 2].map((id) => db.transaction(async (t) => {
      t.afterCommit(() => {
        hooks.push(id);
      });
      await db.execute('INSERT INTO group_probe (id, note) VALUES ($1, $2)', [id, 'x'], t);
      if (id === 2) await db.execute('INSERT INTO group_child (id, parent) VALUES (1, 999)', [], t);
    }, { group: true }).then(() => 'ok', () => 'failed'));
    writer.release();
    expect(await Promise.all(writes)).toEqual(['failed', 'failed']);
    await writer.done;
    expect(await ids()).toEqual([]);
    expect(hooks).toEqual([]);
    // A fresh connection writes on.
    await db.transaction((t) => db.execute('INSERT INTO group_probe (id, note) VALUES ($1, $2)', [5, 'after'], t), { group: true });
    expect(await ids()).toEqual([5]);
  });

  it('should answer a grouped transaction that threw only once the group is committed, with the group\'s failure if COMMIT fails', async () => {
    if (DIALECT !== 'sqlite') return;
    await db.execute('CREATE TABLE IF NOT EXISTS group_parent (id INTEGER PRIMARY KEY)');
    await db.execute('CREATE TABLE IF NOT EXISTS group_child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES group_parent (id) DEFERRABLE INITIALLY DEFERRED)');
    const writer = holdWriter();
    await writer.started;
    // The first job's write dooms the COMMIT; the second refuses on its own (as a hold refused on
    // reading the first job's uncommitted payment would): what it read never came to be.
    const first = db.transaction((t) => db.execute('INSERT INTO group_child (id, parent) VALUES (2, 998)', [], t), { group: true });
    const second = db.transaction(async () => {
      throw new Error('refused on what the first job wrote');
    }, { group: true });
    const outcomes = Promise.allSettled([first, second]);
    writer.release();
    const [a, b] = await outcomes;
    await writer.done;
    expect(a.status).toBe('rejected');
    expect(b.status).toBe('rejected');
    expect(((b as PromiseRejectedResult).reason as Error).message).not.toBe('refused on what the first job wrote');
  });

  it('should keep the write connection and its statements after a transaction alone fails on its own, and replace it after a failed COMMIT', async () => {
    if (DIALECT !== 'sqlite') return;
    const connection = () => db.transaction(async (t) => transactionConnection<object>(t));
    const before = await connection();
    await expect(db.transaction(async (t) => {
      await db.execute('INSERT INTO group_probe (id, note) VALUES ($1, $2)', [7, 'undone'], t);
      throw new Error('not found');
    })).rejects.toThrow('not found');
    expect(await ids()).toEqual([]);
    expect(await connection()).toBe(before);
    await db.execute('CREATE TABLE IF NOT EXISTS group_parent (id INTEGER PRIMARY KEY)');
    await db.execute('CREATE TABLE IF NOT EXISTS group_child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES group_parent (id) DEFERRABLE INITIALLY DEFERRED)');
    await expect(db.transaction((t) => db.execute('INSERT INTO group_child (id, parent) VALUES (3, 997)', [], t))).rejects.toBeDefined();
    expect(await connection()).not.toBe(before);
  });

  // What a group writes against a model kept apart: every transaction that did not throw is
  // committed whole (its amount counted once), every one that threw wrote nothing, and a group
  // whose COMMIT is refused writes nothing at all; each is answered with its own outcome.
  it.each([1, 2, 3, 4, 5, 6, 7, 8])('should commit exactly the grouped transactions that did not throw (seed %i)', async (seed) => {
    const random = seeded(seed);
    await db.execute('CREATE TABLE IF NOT EXISTS group_amounts (id INTEGER PRIMARY KEY, amount INTEGER NOT NULL)');
    await db.execute('CREATE TABLE IF NOT EXISTS group_parent (id INTEGER PRIMARY KEY)');
    await db.execute('CREATE TABLE IF NOT EXISTS group_child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES group_parent (id) DEFERRABLE INITIALLY DEFERRED)');
    await db.execute('DELETE FROM group_amounts');
    await db.execute('DELETE FROM group_child');
    let next = 1;
    let expected = 0;
    const expectedIds: number[] = [];
    for (let round = 0; round < 6; round++) {
      const writer = holdWriter();
      await writer.started;
      const doomed = DIALECT === 'sqlite' && random() < 0.2; // one job's write refused at COMMIT
      const jobs = Array.from({ length: 2 + Math.floor(random() * 12) }, () => {
        const id = next++;
        const amount = 1 + Math.floor(random() * 100_000);
        const when = random() < 0.3 ? (random() < 0.5 ? 'before' : 'after') : 'never';
        return { id, amount, when };
      });
      const dooming = doomed ? jobs[Math.floor(random() * jobs.length)].id : -1;
      // Its refused write dooms the COMMIT only if the job keeps it (one that throws rolls it back).
      const groupDoomed = jobs.some(({ id, when }) => id === dooming && when === 'never');
      const outcomes = Promise.allSettled(jobs.map(({ id, amount, when }) => db.transaction(async (t) => {
        if (when === 'before') throw new Error(`refused ${id}`);
        await db.execute('INSERT INTO group_amounts (id, amount) VALUES ($1, $2)', [id, amount], t);
        if (id === dooming) await db.execute('INSERT INTO group_child (id, parent) VALUES ($1, 999999)', [id], t);
        if (when === 'after') throw new Error(`refused ${id}`);
        return id;
      }, { group: true })));
      writer.release();
      const settled = await outcomes;
      await writer.done;
      jobs.forEach(({ id, amount, when }, i) => {
        const outcome = settled[i];
        if (groupDoomed) {
          expect(outcome.status).toBe('rejected');
          return;
        }
        if (when === 'never' && id !== dooming) {
          expect(outcome).toEqual({ status: 'fulfilled', value: id });
          expected += amount;
          expectedIds.push(id);
        } else if (id === dooming) {
          expect(outcome.status).toBe('rejected'); // PostgreSQL: each commits alone, this one refused
        } else {
          expect(outcome).toEqual({ status: 'rejected', reason: new Error(`refused ${id}`) });
        }
      });
      const [{ total }] = await db.select<{ total: number | null }>('SELECT SUM(amount) AS total FROM group_amounts');
      expect(Number(total ?? 0)).toBe(expected);
      expect((await committedIds()).sort((a, b) => a - b)).toEqual([...expectedIds].sort((a, b) => a - b));
    }
  });

  it('should keep model calls given a grouped transaction inside it', async () => {
    const writer = holdWriter();
    await writer.started;
    const writes = [1, 2].map((id) => db.transaction(async (t) => {
      await db.sequelize.query(`INSERT INTO group_probe (id, note) VALUES (${id}, 'model')`, { transaction: t });
      if (id === 2) throw new Error('undo mine');
    }, { group: true }).then(() => 'ok', (err: Error) => err.message));
    writer.release();
    expect(await Promise.all(writes)).toEqual(['ok', 'undo mine']);
    await writer.done;
    expect(await ids()).toEqual([1]);
  });
});

describe('SQLite statements kept prepared', () => {
  if (DIALECT !== 'sqlite') {
    it('should be SQLite only (PostgreSQL names its prepared statements: database.ts)', () => expect(DIALECT).toBe('postgres'));
    return;
  }

  const open = async (): Promise<SqliteConnection> => new Promise((resolve, reject) => {
    const c = new sqlite3.Database(database.url.slice('sqlite:'.length), (err) => (err ? reject(err) : resolve(c as unknown as SqliteConnection)));
  });

  it('should prepare a statement once and reuse it, in the order asked', async () => {
    const connection = await open();
    const statements = SqliteStatements.of(connection);
    expect(SqliteStatements.of(connection)).toBe(statements);
    const results = await Promise.all([1, 2, 3].map((n) => statements.query('all', 'SELECT $1 AS n', { $1: n })));
    expect(results).toEqual([[{ n: 1 }], [{ n: 2 }], [{ n: 3 }]]);
    expect(statements.prepared).toBe(1);
    await statements.query('run', 'UPDATE group_probe SET note = note WHERE id = $1', { $1: 1 });
    await statements.query('run', 'UPDATE group_probe SET note = note WHERE id = $1', { $1: 2 });
    expect(statements.prepared).toBe(2);
    expect(statements.size).toBe(2);
    await new Promise<void>((resolve, reject) => connection.close((err) => (err ? reject(err) : resolve())));
  });

  it('should not keep a statement returning rows through run (it would stay active, its write uncommitted)', async () => {
    const connection = await open();
    const statements = SqliteStatements.of(connection);
    await statements.query('run', 'INSERT INTO group_probe (id, note) VALUES ($1, $2) RETURNING id', { $1: 42, $2: 'returned' });
    expect(statements.size).toBe(0);
    // Committed: another connection sees it.
    expect(await ids()).toContain(42);
    await new Promise<void>((resolve, reject) => connection.close((err) => (err ? reject(err) : resolve())));
  });

  it('should finalize the least recently used past its bound, and every statement before the connection closes', async () => {
    const connection = await open();
    const statements = SqliteStatements.of(connection);
    const finalized: string[] = [];
    const prepare = (connection as unknown as { prepare: (...a: unknown[]) => { finalize(cb?: () => void): unknown } }).prepare.bind(connection);
    Object.assign(connection, {
      prepare: (text: string, cb: (err: Error | null) => void) => {
        const s = prepare(text, cb);
        const finalize = s.finalize.bind(s);
        s.finalize = (done?: () => void) => {
          finalized.push(text);
          return finalize(done);
        };
        return s;
      },
    });
    for (let i = 0; i <= STATEMENT_CACHE_SIZE; i++) await statements.query('all', `SELECT ${i} AS n`, {});
    expect(statements.size).toBe(STATEMENT_CACHE_SIZE);
    expect(finalized).toEqual(['SELECT 0 AS n']);
    // SQLite refuses to close a connection with statements still prepared (SQLITE_BUSY).
    await new Promise<void>((resolve, reject) => connection.close((err) => (err ? reject(err) : resolve())));
    expect(finalized.length).toBe(STATEMENT_CACHE_SIZE + 1);
    expect(statements.size).toBe(0);
  });

  it("should run the Database's statements prepared once on its default connection", async () => {
    const connection = await acquireConnection<SqliteConnection>(db.sequelize);
    const statements = SqliteStatements.of(connection);
    const before = statements.prepared;
    for (let i = 0; i < 3; i++) await db.select('SELECT count(*) AS n FROM group_probe WHERE id > $1', [i]);
    expect(statements.prepared).toBe(before + 1);
  });
});
