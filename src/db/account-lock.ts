import type { Transaction } from 'sequelize';
import type { Database } from './database';

/**
 * Serialises one account's writes that read a set and then change it (replace a whole table,
 * count against a cap), until the transaction ends. On PostgreSQL it locks the account's row:
 * `NO KEY UPDATE`, so the foreign-key checks of rows inserted for the account (which take
 * `KEY SHARE`) never wait on it. SQLite runs one writer at a time already.
 */
export async function lockAccount(db: Database, t: Transaction, accountId: string): Promise<void> {
  if (db.dialect !== 'postgres') return;
  await db.select('SELECT id FROM accounts WHERE id = $1 FOR NO KEY UPDATE', [accountId], t);
}
