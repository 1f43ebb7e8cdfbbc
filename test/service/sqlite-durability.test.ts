import { QueryTypes } from 'sequelize';
import { Replica } from '../../src/db/replicas';
import { DIALECT } from '../helpers/db';
import { startServices, type ServiceHarness } from '../helpers/services';

/*
 * SQLite's durability settings as the service writes with them: WAL (kept in the file) and
 * synchronous=NORMAL, which is a per-connection setting. Transactions run on a connection of
 * their own (src/db/sequelize-internals.ts); it must commit as the default connection does, not
 * at SQLite's default (FULL: an fsync of the WAL on every commit), which made the service's writes
 * cost what the benchmark's baseline, at NORMAL, did not.
 */
let h: ServiceHarness;
beforeAll(async () => {
  h = await startServices();
});
afterAll(() => h?.stop());

describe(`the database's durability settings (${DIALECT})`, () => {
  it('should write in WAL mode with synchronous=NORMAL on every connection, the transactions\' one included (SQLite)', async () => {
    const db = h.services.db;
    if (db.dialect !== 'sqlite') {
      // PostgreSQL: the server's settings (fsync, synchronous_commit) are the operator's; the service changes none.
      const [{ synchronous_commit: commit }] = await db.select<{ synchronous_commit: string }>('SHOW synchronous_commit');
      expect(commit).toBe('on');
      return;
    }
    const read = async (t?: Parameters<Parameters<typeof db.transaction>[0]>[0]) => ({
      journal: (await db.select<{ journal_mode: string }>('PRAGMA journal_mode', [], t))[0].journal_mode,
      synchronous: Number((await db.select<{ synchronous: number }>('PRAGMA synchronous', [], t))[0].synchronous),
    });
    // 1 is NORMAL (0 OFF, 2 FULL).
    expect(await read()).toEqual({ journal: 'wal', synchronous: 1 });
    expect(await db.transaction((t) => read(t))).toEqual({ journal: 'wal', synchronous: 1 });
  });

  // PostgreSQL only: SQLite has no JIT.
  if (DIALECT === 'postgres') it('should run PostgreSQL sessions without JIT compilation, transactions\' included', async () => {
    const db = h.services.db;
    // A short statement's estimate crossing jit_above_cost compiled it on every run (src/db/postgres-session.ts).
    expect((await db.select<{ jit: string }>('SHOW jit'))[0].jit).toBe('off');
    expect(await db.transaction(async (t) => (await db.select<{ jit: string }>('SHOW jit', [], t))[0].jit)).toBe('off');
    // A read replica's pool the same (here on the primary's URL; any server does for a setting).
    const replica = new Replica(h.services.config.databaseUrl, 1);
    try {
      expect(await replica.sequelize.query('SHOW jit', { type: QueryTypes.SELECT })).toEqual([{ jit: 'off' }]);
    } finally {
      await replica.close();
    }
  });

  it('should log the settings at start, as bench/create-payment reads them to compare with its baseline', () => {
    const logged = h.logs.map((line) => JSON.parse(line) as { msg: string }).filter((l) => l.msg === 'sqlite durability');
    if (DIALECT !== 'sqlite') {
      expect(logged).toEqual([]);
      return;
    }
    expect(logged).toEqual([expect.objectContaining({ journalMode: 'wal', synchronous: 'NORMAL', transactionsSynchronous: 'NORMAL' })]);
  });
});
