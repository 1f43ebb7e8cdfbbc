import type { EventBus } from '../../src/core/event-bus';
import { readTime, type Database } from '../../src/db/database';

/**
 * Waits on what a test is waiting for, rather than for a fixed time: a condition polled with a
 * deadline, the database's clock passing an instant, a session blocked on a lock, the event
 * streams GraphQL subscriptions open. A fixed sleep is either too long (time wasted) or, on a
 * busy machine, too short (a flaky test); these end as soon as the thing happened, and say what
 * did not happen when it does not.
 */

export interface WaitOptions {
  /** Fails past this (10 s unless given). */
  timeoutMs?: number;
  /** What is waited for, for the error when it does not happen. */
  what?: string;
  /** How often the condition is polled (10 ms unless given). */
  intervalMs?: number;
  /**
   * An error of the condition's own that counts as "not yet" rather than failing the wait (the
   * test's own statement refused for a lock the instance under test holds, say); the last one
   * passed over is named if the wait times out.
   */
  passOver?: (err: unknown) => boolean;
}

type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

/**
 * Polls `condition` until it returns a truthy value, and returns that value; throws once the
 * deadline has passed without one (the condition is looked at once more at the deadline).
 */
export async function waitFor<T>(condition: () => T | Promise<T>, { timeoutMs = 10_000, what = 'the condition', intervalMs = 10, passOver }: WaitOptions = {}): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  let passedOver: unknown;
  for (;;) {
    const past = Date.now() >= deadline;
    let value: T | undefined;
    try {
      value = await condition();
    } catch (err) {
      if (!passOver?.(err)) throw err;
      passedOver = err;
    }
    if (value) return value as Truthy<T>;
    if (past) {
      const last = passedOver === undefined ? '' : ` (last passed over: ${passedOver instanceof Error ? passedOver.message : String(passedOver)})`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last}`);
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(intervalMs, deadline - Date.now()))));
  }
}

/**
 * For a check that something does NOT happen: `condition` must hold for the whole of `forMs`
 * (polled), or this throws at once, naming `what`. The wait is the thing tested here, so it is a
 * bounded time by nature; keep it to what the behaviour needs (a few periods of the timer that
 * would wrongly fire, say).
 */
export async function assertStaysTrue(condition: () => boolean | Promise<boolean>, forMs: number, what: string, intervalMs = 10): Promise<void> {
  const until = Date.now() + forMs;
  for (;;) {
    if (!(await condition())) throw new Error(`no longer true: ${what}`);
    if (Date.now() >= until) return;
    await new Promise((resolve) => setTimeout(resolve, Math.min(intervalMs, Math.max(until - Date.now(), 1))));
  }
}

/** The database's clock now (what leases shared by instances are measured on). */
export async function databaseNow(db: Database): Promise<Date> {
  const [row] = await db.select<{ now: unknown }>(`SELECT ${db.nowSql} AS now`);
  return readTime(row.now) as Date;
}

/**
 * Waits until the database's clock is past `instant`: a lease measured on it (webhook deliveries,
 * mail) has then run out unless something renewed it. A test cannot move that clock, only wait.
 */
export async function waitForDatabaseTime(db: Database, instant: Date, options: WaitOptions = {}): Promise<void> {
  await waitFor(async () => (await databaseNow(db)).getTime() > instant.getTime(), { what: `the database clock to pass ${instant.toISOString()}`, ...options });
}

/**
 * Whether another session of this PostgreSQL database is blocked on a lock (a row lock, or a
 * transaction it waits to end: a unique index entry not yet committed). SQLite has no such sessions:
 * its writers queue in-process (Database.transaction).
 */
export async function someoneWaitsOnLock(db: Database): Promise<boolean> {
  if (db.dialect !== 'postgres') throw new Error('someoneWaitsOnLock reads pg_stat_activity: PostgreSQL only');
  const rows = await db.select(
    "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
  );
  return rows.length > 0;
}

/**
 * Counts the live subscriptions started on `bus`'s instance from now on, and those ended since: a
 * GraphQL subscription counts as started once its event stream listens (from then on it sees every
 * event committed, whether it streams alone or in a broadcast group), and as ended when it
 * completes or its socket closes (before graphql-ws's onComplete/onClose hooks run, a few promise
 * turns later). `stop()` puts the bus back as it was.
 */
export function watchStreams(bus: EventBus): { opened(): number; closed(): number; stop(): void } {
  const opened = jest.spyOn(bus, 'subscriptionOpened');
  const closed = jest.spyOn(bus, 'subscriptionClosed');
  return {
    opened: () => opened.mock.calls.length,
    closed: () => closed.mock.calls.length,
    stop: () => {
      opened.mockRestore();
      closed.mockRestore();
    },
  };
}
