/**
 * Waiting on what a test waits for, never on a fixed time: a state polled until it shows (with a
 * deadline, so a test that will never see it fails saying what it waited for), and, where the
 * wait itself is what is checked ("nothing more happens within X"), a bounded, named window.
 */

export interface WaitOptions {
  /** How long the condition may take before the wait fails (10 s unless given). */
  timeoutMs?: number;
  /** How often it is looked at (25 ms unless given). */
  intervalMs?: number;
  /** What is waited for, for the failure's message. */
  what?: string;
}

/**
 * Polls `check` until it returns a truthy value, and resolves with that value; rejects once
 * `timeoutMs` has passed without one. `check` is always looked at once more at the deadline.
 */
export async function waitFor<T>(check: () => T | Promise<T>, opts: WaitOptions = {}): Promise<NonNullable<T>> {
  const { timeoutMs = 10_000, intervalMs = 25, what = 'a condition' } = opts;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const past = Date.now() >= deadline;
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (past) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, Math.max(0, Math.min(intervalMs, deadline - Date.now()))));
  }
}

/**
 * A negative check over a window: `check` must stay true for the whole of `ms` (looked at every
 * `intervalMs` and once at the end); rejects at the first look where it is not. For a test whose
 * point is that something does NOT happen within a time (a retry that must not come, a socket that
 * must stay open past a timeout): the window is then the test, so it is given here, by name.
 */
export async function assertStaysTrue(check: () => boolean | Promise<boolean>, ms: number, what: string, intervalMs = 25): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    const last = Date.now() >= end;
    if (!(await check())) throw new Error(`expected ${what} for ${ms} ms; it stopped being so`);
    if (last) return;
    await new Promise((r) => setTimeout(r, Math.max(0, Math.min(intervalMs, end - Date.now()))));
  }
}
