import 'reflect-metadata';
import fs from 'node:fs';
import sqlite3 from 'sqlite3';
import { Database, sqliteStorage } from '../../src/db/database';
import { MODELS } from '../../src/db/models';
import { DIALECT, freshDatabase } from '../helpers/db';

/*
 * Closing a SQLite Database leaves everything in the main file: its connections close one after
 * another, so the last checkpoints the WAL and removes it. Closed side by side, each could see the
 * other still open and leave the WAL behind; a copy of the main file alone (the tests' migrated
 * template) then had no tables. The race showed about one close in four, so it is tried ten times.
 */
describe(`closing a Database (${DIALECT})`, () => {
  it('should leave the WAL checkpointed into the main file, with no -wal file left', async () => {
    if (DIALECT !== 'sqlite') return; // PostgreSQL has no such file
    for (let i = 0; i < 10; i++) {
      const database = await freshDatabase();
      try {
        const file = sqliteStorage(database.url);
        const db = new Database({ url: database.url, models: MODELS });
        await db.init();
        await db.execute('CREATE TABLE close_probe (id INTEGER PRIMARY KEY)');
        // Both connections used: a transaction's and the default one.
        await db.transaction((t) => db.execute('INSERT INTO close_probe (id) VALUES ($1)', [1], t));
        await db.select('SELECT count(*) AS n FROM close_probe');
        await db.close();
        expect(fs.existsSync(`${file}-wal`)).toBe(false);
        // The main file alone, copied, holds the table and its row.
        const copy = `${file}.copy`;
        fs.copyFileSync(file, copy);
        const other = new sqlite3.Database(copy);
        const rows = await new Promise<unknown[]>((resolve, reject) => other.all('SELECT id FROM close_probe', (err, r) => (err ? reject(err) : resolve(r))));
        await new Promise<void>((resolve) => other.close(() => resolve()));
        expect(rows).toEqual([{ id: 1 }]);
      } finally {
        await database.drop();
      }
    }
  });
});
