import sqlite3 from 'sqlite3';
import { sqliteStorage } from '../../src/db/database';
import { DIALECT } from '../helpers/db';
import { startServices } from '../helpers/services';

/*
 * The SQLite durability settings logged at start are a diagnostic: reading the transactions'
 * connection's one takes the write lock, and another instance holding it past the busy timeout
 * must not stop this one from starting (it logs a warning and goes on).
 */
describe(`start-up while another connection holds SQLite's write lock (${DIALECT})`, () => {
  it('should start and say the settings could not be read, rather than fail', async () => {
    if (DIALECT !== 'sqlite') return; // PostgreSQL reads no such setting
    let other: sqlite3.Database | undefined;
    const h = await startServices({
      // The copy is migrated already: nothing before the settings' read needs the lock.
      services: { sqliteBusyTimeoutMs: 200, migrate: false },
      beforeCreate: async (url: string) => {
        other = new sqlite3.Database(sqliteStorage(url));
        await new Promise<void>((resolve, reject) => other!.exec('BEGIN IMMEDIATE', (err) => (err ? reject(err) : resolve())));
      },
    });
    try {
      const lines = h.logs.map((line) => JSON.parse(line) as { msg: string; level: string });
      expect(lines).toContainEqual(expect.objectContaining({ msg: 'sqlite durability settings could not be read', level: 'warn' }));
      await new Promise<void>((resolve) => other!.exec('ROLLBACK', () => resolve()));
      // The lock released, the service writes.
      const account = await h.account();
      expect(account.accountId).toMatch(/^acct_/);
    } finally {
      await new Promise<void>((resolve) => other?.close(() => resolve()));
      await h.stop();
    }
  });
});
