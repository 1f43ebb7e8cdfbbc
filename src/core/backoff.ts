/**
 * Retry schedule of leased outboxes (webhook deliveries, mail): exponential backoff with "equal jitter" — half of the
 * exponential step is fixed and half is random — so retries spread out without ever collapsing to
 * an immediate retry, as full jitter can.
 */

// The defaults are webhook delivery's; the mail outbox passes its own.
export const DEFAULT_RETRY_BASE_MS = 30_000;
export const DEFAULT_RETRY_MAX_MS = 6 * 60 * 60 * 1000;
export const MAX_DELIVERY_WINDOW_MS = 3 * 24 * 60 * 60 * 1000;

export interface BackoffOptions {
  /** Step of the first retry, before jitter; default 30 s. */
  baseMs?: number;
  /** Cap of any single wait, Retry-After included; default 6 h. */
  maxMs?: number;
}

export interface RetryScheduleOptions extends BackoffOptions {
  /** How long after the first attempt deliveries stop; default 3 days. */
  windowMs?: number;
}

export type ResolvedRetrySchedule = Required<RetryScheduleOptions>;

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number of milliseconds`);
  return value;
}

/** Fills defaults and validates; `{ baseMs: 50, maxMs: 400, windowMs: 2000 }` gives a test-sized schedule. */
export function resolveRetrySchedule(opts: RetryScheduleOptions = {}): ResolvedRetrySchedule {
  const baseMs = positive(opts.baseMs, DEFAULT_RETRY_BASE_MS, 'baseMs');
  const maxMs = positive(opts.maxMs, Math.max(DEFAULT_RETRY_MAX_MS, baseMs), 'maxMs');
  if (maxMs < baseMs) throw new RangeError('maxMs must not be below baseMs');
  const windowMs = positive(opts.windowMs, MAX_DELIVERY_WINDOW_MS, 'windowMs');
  return { baseMs, maxMs, windowMs };
}

/**
 * Wait before retry number `attempt` (1 = the first retry): the step base·2^(attempt−1), capped
 * at max, then equal jitter — a value in [step/2, step).
 */
export function nextAttemptDelayMs(attempt: number, rng: () => number = Math.random, opts: BackoffOptions = {}): number {
  const { baseMs, maxMs } = resolveRetrySchedule(opts);
  const n = Number.isFinite(attempt) ? Math.max(1, Math.floor(attempt)) : 1;
  // 2^1023 is still finite; beyond that the cap applies anyway.
  const step = Math.min(maxMs, baseMs * 2 ** Math.min(n - 1, 1023));
  const r = Math.min(Math.max(rng(), 0), 1 - Number.EPSILON);
  return Math.floor(step / 2 + r * (step / 2));
}

/** The backoff, or the receiver's Retry-After when that is longer; never above max. */
export function retryDelayMs(
  attempt: number,
  retryAfterMs: number | null,
  rng: () => number = Math.random,
  opts: BackoffOptions = {},
): number {
  const { maxMs } = resolveRetrySchedule(opts);
  const backoff = nextAttemptDelayMs(attempt, rng, opts);
  if (retryAfterMs === null || !Number.isFinite(retryAfterMs) || retryAfterMs <= backoff) return backoff;
  return Math.min(Math.ceil(retryAfterMs), maxMs);
}

/** True once the delivery window, counted from the first attempt, has run out. */
export function shouldGiveUp(firstAttemptAt: Date, now: Date, windowMs: number = MAX_DELIVERY_WINDOW_MS): boolean {
  return now.getTime() - firstAttemptAt.getTime() >= windowMs;
}

export interface RetrySchedule {
  readonly options: ResolvedRetrySchedule;
  /** Wait before retry `attempt`, honouring a longer Retry-After. */
  delayMs(attempt: number, retryAfterMs?: number | null): number;
  /** When retry `attempt` is due, or null when it would fall outside the delivery window. */
  nextAttemptAt(attempt: number, firstAttemptAt: Date, now: Date, retryAfterMs?: number | null): Date | null;
  shouldGiveUp(firstAttemptAt: Date, now: Date): boolean;
}

/** A schedule with its configuration bound in, for the delivery worker and for shortened tests. */
export function createRetrySchedule(opts: RetryScheduleOptions = {}, rng: () => number = Math.random): RetrySchedule {
  const options = resolveRetrySchedule(opts);
  const backoff = { baseMs: options.baseMs, maxMs: options.maxMs };
  return {
    options,
    delayMs: (attempt, retryAfterMs = null) => retryDelayMs(attempt, retryAfterMs, rng, backoff),
    nextAttemptAt(attempt, firstAttemptAt, now, retryAfterMs = null) {
      const at = new Date(now.getTime() + retryDelayMs(attempt, retryAfterMs, rng, backoff));
      return shouldGiveUp(firstAttemptAt, at, options.windowMs) ? null : at;
    },
    shouldGiveUp: (firstAttemptAt, now) => shouldGiveUp(firstAttemptAt, now, options.windowMs),
  };
}
