import 'reflect-metadata';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import sqlite3 from 'sqlite3';
import { Database } from '../../src/db/database';
import { DIALECT, freshDatabase, type TestDatabase } from '../helpers/db';

/*
 * A SQLite connection's opening schedules statements without waiting for them (Sequelize's
 * `PRAGMA FOREIGN_KEYS=ON`, Payorch's `PRAGMA synchronous=NORMAL`). Left running while the new
 * connection's first BEGIN IMMEDIATE waited for another connection's write lock, each sat on a
 * thread of libuv's pool waiting for the connection's mutex (the BEGIN held it); the lock's holder
 * had no thread left for its next statement, and both waited until the busy timeout refused the
 * BEGIN: 15 s and a `service_unavailable` (a mail test with two instances failed CI so).
 */
const ROOT = path.resolve(__dirname, '..', '..');
const run = promisify(execFile);

let database: TestDatabase;
beforeAll(async () => {
  database = await freshDatabase();
});
afterAll(() => database?.drop());

describe(`a new SQLite connection (${DIALECT})`, () => {
  it('should have finished every statement its opening scheduled before its first transaction begins', async () => {
    if (DIALECT !== 'sqlite') return; // PostgreSQL's connections are set up by the pool, awaited
    type Raw = { run: (...args: unknown[]) => unknown; prepare: (...args: unknown[]) => unknown };
    const proto = sqlite3.Database.prototype as unknown as Raw;
    const { run: realRun, prepare: realPrepare } = proto;
    let outstanding = 0;
    const atBegin: number[] = [];
    proto.run = function run(this: unknown, ...args: unknown[]) {
      outstanding++;
      const cb = typeof args[args.length - 1] === 'function' ? (args.pop() as (...a: unknown[]) => void) : undefined;
      return realRun.call(this, ...args, function done(this: unknown, ...result: unknown[]) {
        outstanding--;
        cb?.apply(this, result);
      });
    };
    proto.prepare = function prepare(this: unknown, ...args: unknown[]) {
      if (typeof args[0] === 'string' && /^\s*BEGIN/i.test(args[0])) atBegin.push(outstanding);
      return realPrepare.call(this, ...args);
    };
    const db = new Database({ url: database.url, models: [] });
    try {
      await db.init();
      await db.transaction((t) => db.select('SELECT 1 AS one', [], t));
    } finally {
      proto.run = realRun;
      proto.prepare = realPrepare;
      await db.close();
    }
    expect(atBegin).toEqual([0]);
  });

  it('should let the holder of the write lock go on while a new connection of another instance waits for it, on a pool of two threads', async () => {
    if (DIALECT !== 'sqlite') return;
    // Its own process: the thread pool's size is fixed at its first use. Ten rounds, each with a
    // new instance: the statements' order on the pool varies, and without the fix some rounds
    // stalled until the waiting instance's busy timeout (3 s here) refused its BEGIN.
    const script = `
      require('reflect-metadata');
      const { Database } = require(${JSON.stringify(path.join(ROOT, 'dist', 'src', 'db', 'database.js'))});
      (async () => {
        const url = process.env.PROBE_URL;
        const a = new Database({ url, models: [] });
        await a.init();
        await a.execute('CREATE TABLE IF NOT EXISTS setup_probe (id INTEGER PRIMARY KEY)');
        const rounds = [];
        for (let i = 0; i < 10; i++) {
          let release, holding;
          const held = new Promise((r) => (release = r));
          const hold = new Promise((r) => (holding = r));
          const first = a.transaction(async (t) => {
            await a.execute('INSERT INTO setup_probe (id) VALUES ($1)', [i * 10], t);
            holding();
            await held;
            const started = Date.now();
            await a.execute('INSERT INTO setup_probe (id) VALUES ($1)', [i * 10 + 1], t);
            return Date.now() - started;
          });
          await hold;
          const b = new Database({ url, models: [], sqliteBusyTimeoutMs: 3000 });
          await b.init();
          const second = b.transaction((t) => b.execute('INSERT INTO setup_probe (id) VALUES ($1)', [i * 10 + 5], t)).then(() => 'written', (e) => String(e.cause ? e.cause.message : e.message));
          await new Promise((r) => setTimeout(r, 100));
          release();
          rounds.push({ holderNextMs: await first, waiter: await second });
          await b.close();
        }
        await a.close();
        process.stdout.write(JSON.stringify(rounds));
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: ROOT, env: { ...process.env, UV_THREADPOOL_SIZE: '2', PROBE_URL: database.url }, timeout: 60_000 });
    const rounds = JSON.parse(stdout) as { holderNextMs: number; waiter: string }[];
    expect(rounds).toHaveLength(10);
    for (const round of rounds) {
      expect(round.waiter).toBe('written');
      expect(round.holderNextMs).toBeLessThan(1_000);
    }
  });
});
