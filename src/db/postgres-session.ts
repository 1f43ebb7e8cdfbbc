/**
 * Every PostgreSQL session of the service runs without JIT compilation. The service's statements
 * are short (a page, a claim, a payment's writes); PostgreSQL compiles a statement whose estimated
 * cost passes jit_above_cost (100,000 by default), and an estimate inflated by what the planner
 * cannot know (a LIMIT computed per row, a recursive CTE's rows) crosses it now and then: the
 * webhook claim, a 1 ms statement, spent 21 ms compiling on each run during a backlog's drain.
 */
export const POSTGRES_SESSION_OPTIONS = '-c jit=off';
