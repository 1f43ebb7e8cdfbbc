import type { Database } from '../../src/db/database';
import type { TestDatabase } from './db';
import { migratedDatabase } from './migrated-db';

/** A statement as the database logging saw it, without Sequelize's `Executing (…): ` prefix. */
export const loggedSql = (logged: string): string => logged.replace(/^Executing \([^)]*\): /, '');

const literal = (value: unknown): string => (typeof value === 'number' ? String(value) : `'${String(value).replace(/'/g, "''")}'`);

/**
 * PostgreSQL's plans of `statements`, each as a prepared statement's custom and generic plan
 * (`EXPLAIN EXECUTE`; the code's statements are named prepared statements, whose generic plan is
 * what runs after five executions), once `seed` (INSERT … SELECT generate_series, say) has run and
 * the tables are analyzed, in one transaction rolled back: the rows and their statistics go.
 */
export async function postgresPlans(
  db: Database, seed: string[], statements: Array<{ sql: string; args: unknown[] }>,
  /** Run after ANALYZE: the statistics then describe the table as it was before these (stale, as between two autovacuums). */
  afterAnalyze: string[] = [],
): Promise<string[]> {
  const plans: string[] = [];
  const rollback = new Error('rollback');
  await db.transaction(async (t) => {
    for (const sql of seed) await db.execute(sql, [], t);
    await db.execute('ANALYZE', [], t);
    for (const sql of afterAnalyze) await db.execute(sql, [], t);
    for (const [i, { sql, args }] of statements.entries()) {
      await db.execute(`PREPARE plan_${i} AS ${sql}`, [], t);
      for (const mode of ['force_custom_plan', 'force_generic_plan']) {
        await db.execute(`SET LOCAL plan_cache_mode = ${mode}`, [], t);
        const rows = await db.select<Record<string, string>>(`EXPLAIN EXECUTE plan_${i}(${args.map(literal).join(', ')})`, [], t);
        plans.push(rows.map((r) => r['QUERY PLAN']).join('\n'));
      }
      await db.execute(`DEALLOCATE plan_${i}`, [], t);
    }
    throw rollback;
  }).catch((err) => { if (err !== rollback) throw err; });
  return plans;
}

/**
 * A migrated database of the test file's own for plan tests, opened in the file's beforeAll and
 * dropped in its afterAll: `db` (from the file's first test on), and `statementsOf(run, match)`,
 * the statements `run` sent (those matching `match`, when given), as the database logged them.
 */
export function plansDatabase(): { readonly db: Database; statementsOf(run: () => Promise<unknown>, match?: RegExp): Promise<string[]> } {
  let opened: { database: TestDatabase; db: Database } | undefined;
  const statements: string[] = [];
  beforeAll(async () => {
    opened = await migratedDatabase((sql) => statements.push(loggedSql(sql)));
  });
  afterAll(async () => {
    await opened?.db.close();
    await opened?.database.drop();
  });
  return {
    get db() {
      if (!opened) throw new Error('plansDatabase: its database opens in beforeAll');
      return opened.db;
    },
    async statementsOf(run, match) {
      statements.length = 0;
      await run();
      return statements.filter((s) => match === undefined || match.test(s));
    },
  };
}
