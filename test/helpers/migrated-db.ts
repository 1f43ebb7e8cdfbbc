import 'reflect-metadata';
import { Database } from '../../src/db/database';
import { MODELS } from '../../src/db/models';
import { migrateUp } from '../../src/db/migrator';
import { migratedDatabaseCopy, type TestDatabase } from './db';

/**
 * A new database (a copy of the run's migrated template), opened with every model and migrated: for tests that build
 * services or stores one by one. `logging` sees each statement. Close `db`, then drop `database`.
 */
export async function migratedDatabase(logging?: (sql: string) => void): Promise<{ database: TestDatabase; db: Database }> {
  const database = await migratedDatabaseCopy();
  const db = new Database({ url: database.url, models: MODELS, logging });
  await db.init();
  await migrateUp(db);
  return { database, db };
}
