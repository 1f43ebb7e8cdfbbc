import type { Sequelize } from 'sequelize';

/**
 * Every PostgreSQL session of the service runs without JIT compilation. The service's statements
 * are short (a page, a claim, a payment's writes); PostgreSQL compiles a statement whose estimated
 * cost passes jit_above_cost (100,000 by default), and an estimate inflated by what the planner
 * cannot know (a LIMIT computed per row, a recursive CTE's rows) crosses it now and then: the
 * webhook claim, a 1 ms statement, spent 21 ms compiling on each run during a backlog's drain.
 */
const SETTINGS: Record<string, string> = { jit: 'off' };

/**
 * The settings as `pg`'s `options` (a startup parameter), for the benchmarks' own connections,
 * which must run their statements as the service does. The service itself sets them with SET
 * (configurePostgresSessions): connection poolers such as PgBouncer refuse unknown startup
 * parameters, and a DATABASE_URL's own `?options=` would replace these.
 */
export const POSTGRES_SESSION_OPTIONS = Object.entries(SETTINGS).map(([name, value]) => `-c ${name}=${value}`).join(' ');

/** Each new connection of `sequelize`'s pool gets the settings before its first statement. */
export function configurePostgresSessions(sequelize: Sequelize): void {
  const statement = Object.entries(SETTINGS).map(([name, value]) => `SET ${name} = ${value}`).join('; ');
  sequelize.addHook('afterConnect', async (connection: unknown) => {
    await (connection as { query(sql: string): Promise<unknown> }).query(statement);
  });
}
