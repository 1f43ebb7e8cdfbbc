import 'reflect-metadata';
import { Database } from '../../src/db/database';
import { MODELS } from '../../src/db/models';
import { isUniqueViolation } from '../../src/db/list';
import { freshDatabase, DIALECT, type TestDatabase } from '../helpers/db';

let database: TestDatabase;
let db: Database;

beforeAll(async () => {
  database = await freshDatabase();
  db = new Database({ url: database.url, models: MODELS });
  await db.init();
  await db.execute('CREATE TABLE tx_probe (id INTEGER PRIMARY KEY, note TEXT)');
});
afterAll(async () => {
  await db.close();
  await database.drop();
});

const count = async () => Number((await db.select<{ n: number }>('SELECT count(*) AS n FROM tx_probe'))[0].n);

describe(`transactions on ${DIALECT}`, () => {
  it('should roll a failed transaction back and run the next ones normally', async () => {
    await expect(db.transaction(async (t) => {
      await db.execute('INSERT INTO tx_probe (id, note) VALUES ($1, $2)', [1, 'doomed'], t);
      throw new Error('boom');
    })).rejects.toThrow('boom');
    expect(await count()).toBe(0);
    // A statement error inside the transaction (duplicate key) leaves nothing behind either.
    await db.execute('INSERT INTO tx_probe (id, note) VALUES ($1, $2)', [2, 'kept']);
    const duplicate = await db.transaction(async (t) => {
      await db.execute('INSERT INTO tx_probe (id, note) VALUES ($1, $2)', [3, 'doomed'], t);
      await db.execute('INSERT INTO tx_probe (id, note) VALUES ($1, $2)', [2, 'duplicate'], t);
    }).then(() => null, (err: unknown) => err);
    // The duplicate key itself, as services recognise it (not any failure, say a broken statement).
    expect(isUniqueViolation(duplicate)).toBe(true);
    for (let i = 10; i < 15; i++) {
      await db.transaction((t) => db.execute('INSERT INTO tx_probe (id, note) VALUES ($1, $2)', [i, 'ok'], t));
    }
    expect(await count()).toBe(6);
  });

  it('should run afterCommit hooks once the commit succeeded, and never when it failed', async () => {
    const ran: string[] = [];
    await db.transaction(async (t) => {
      t.afterCommit(() => {
        ran.push('committed');
      });
      await db.execute('INSERT INTO tx_probe (id, note) VALUES ($1, $2)', [50, 'hooked'], t);
      expect(ran).toEqual([]); // not before the commit
    });
    expect(ran).toEqual(['committed']);
    await expect(db.transaction(async (t) => {
      t.afterCommit(() => {
        ran.push('rolled back');
      });
      throw new Error('boom');
    })).rejects.toThrow('boom');
    if (DIALECT === 'postgres') {
      // COMMIT itself fails (a deferred constraint here; a lost connection in an outage): Sequelize
      // would still run the hooks, and an event of a change that never happened would go out.
      await db.execute('CREATE TABLE tx_deferred (id INTEGER, CONSTRAINT tx_deferred_u UNIQUE (id) DEFERRABLE INITIALLY DEFERRED)');
      const failed = await db.transaction(async (t) => {
        t.afterCommit(() => {
          ran.push('commit failed');
        });
        await db.execute('INSERT INTO tx_deferred (id) VALUES (1), (1)', [], t);
      }).then(() => null, (err: unknown) => err);
      expect(isUniqueViolation(failed)).toBe(true);
    }
    expect(ran).toEqual(['committed']);
    await db.execute('DELETE FROM tx_probe WHERE id = 50');
  });

  it('should run concurrent transactions one after another without losing writes', async () => {
    const before = await count();
    await Promise.all(Array.from({ length: 20 }, (_, i) => db.transaction(async (t) => {
      await db.execute('INSERT INTO tx_probe (id, note) VALUES ($1, $2)', [100 + i, 'concurrent'], t);
      await db.execute('UPDATE tx_probe SET note = $1 WHERE id = $2', ['concurrent!', 100 + i], t);
    })));
    expect(await count()).toBe(before + 20);
  });

  it('should run sequential transactions on a reused connection (one persistent connection on SQLite)', async () => {
    const used: unknown[] = [];
    for (let i = 0; i < 3; i++) {
      await db.transaction(async (t) => {
        used.push((t as unknown as { connection: unknown }).connection);
        await db.execute('UPDATE tx_probe SET note = note WHERE id = $1', [2], t);
      });
    }
    // SQLite: the same connection object every time (Sequelize alone opens and closes one per
    // transaction); PostgreSQL: connections come back from the pool rather than new ones.
    expect(new Set(used).size).toBe(1);
    if (DIALECT === 'sqlite') {
      const open = Object.keys((db.sequelize.connectionManager as unknown as { connections: Record<string, unknown> }).connections);
      expect(open.sort()).toEqual(['default', 'payorch-transactions']);
    }
  });
});
