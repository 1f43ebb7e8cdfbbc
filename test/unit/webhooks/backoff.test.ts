import {
  DEFAULT_RETRY_BASE_MS,
  DEFAULT_RETRY_MAX_MS,
  MAX_DELIVERY_WINDOW_MS,
  createRetrySchedule,
  nextAttemptDelayMs,
  resolveRetrySchedule,
  retryDelayMs,
  shouldGiveUp,
} from '../../../src/core/backoff';

const low = () => 0;
const high = () => 0.999999;
const HOUR = 3_600_000;

/** A small deterministic generator so jittered runs repeat exactly. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

describe('nextAttemptDelayMs', () => {
  it('should default to a 30 s base, a 6 h cap and a 3 day window', () => {
    expect(DEFAULT_RETRY_BASE_MS).toBe(30_000);
    expect(DEFAULT_RETRY_MAX_MS).toBe(6 * HOUR);
    expect(MAX_DELIVERY_WINDOW_MS).toBe(72 * HOUR);
  });

  it('should keep the first retry between half and all of the base', () => {
    expect(nextAttemptDelayMs(1, low)).toBe(15_000);
    expect(nextAttemptDelayMs(1, high)).toBeLessThan(30_000);
    expect(nextAttemptDelayMs(1, high)).toBeGreaterThan(29_990);
  });

  it('should double the step with each attempt', () => {
    expect([1, 2, 3, 4, 5].map((n) => nextAttemptDelayMs(n, low))).toEqual([15_000, 30_000, 60_000, 120_000, 240_000]);
  });

  it('should cap the step at maxMs', () => {
    expect(nextAttemptDelayMs(30, low)).toBe(3 * HOUR);
    expect(nextAttemptDelayMs(30, high)).toBeLessThan(6 * HOUR);
    expect(nextAttemptDelayMs(10_000, high)).toBeLessThan(6 * HOUR);
    expect(nextAttemptDelayMs(Number.MAX_SAFE_INTEGER, low)).toBe(3 * HOUR);
  });

  it('should stay within [step/2, step) for every attempt and random value', () => {
    const rng = seeded(42);
    for (let attempt = 1; attempt <= 40; attempt += 1) {
      const step = Math.min(DEFAULT_RETRY_MAX_MS, DEFAULT_RETRY_BASE_MS * 2 ** (attempt - 1));
      for (let i = 0; i < 50; i += 1) {
        const delay = nextAttemptDelayMs(attempt, rng);
        expect(delay).toBeGreaterThanOrEqual(step / 2);
        expect(delay).toBeLessThan(step);
        expect(Number.isInteger(delay)).toBe(true);
      }
    }
  });

  it('should never shrink from one attempt to the next at the same random value', () => {
    for (const r of [0, 0.25, 0.5, 0.99]) {
      let previous = 0;
      for (let attempt = 1; attempt <= 20; attempt += 1) {
        const delay = nextAttemptDelayMs(attempt, () => r);
        expect(delay).toBeGreaterThanOrEqual(previous);
        previous = delay;
      }
    }
  });

  it('should spread retries with jitter', () => {
    const rng = seeded(7);
    const delays = new Set(Array.from({ length: 20 }, () => nextAttemptDelayMs(3, rng)));
    expect(delays.size).toBeGreaterThan(15);
  });

  it('should treat attempts below one, fractions and NaN as the first retry', () => {
    expect(nextAttemptDelayMs(0, low)).toBe(15_000);
    expect(nextAttemptDelayMs(-3, low)).toBe(15_000);
    expect(nextAttemptDelayMs(Number.NaN, low)).toBe(15_000);
    expect(nextAttemptDelayMs(2.9, low)).toBe(30_000);
  });

  it('should clamp a random source that strays outside [0, 1)', () => {
    expect(nextAttemptDelayMs(1, () => -1)).toBe(15_000);
    expect(nextAttemptDelayMs(1, () => 1)).toBeLessThan(30_000);
    expect(nextAttemptDelayMs(1, () => 7)).toBeLessThan(30_000);
  });

  it('should follow a shortened schedule', () => {
    const opts = { baseMs: 50, maxMs: 400 };
    expect([1, 2, 3, 4, 5, 6].map((n) => nextAttemptDelayMs(n, low, opts))).toEqual([25, 50, 100, 200, 200, 200]);
  });
});

describe('retryDelayMs', () => {
  it('should use the backoff when there is no Retry-After', () => {
    expect(retryDelayMs(2, null, low)).toBe(30_000);
  });

  it('should use the backoff when Retry-After is shorter', () => {
    expect(retryDelayMs(3, 5_000, low)).toBe(60_000);
  });

  it('should honour a longer Retry-After', () => {
    expect(retryDelayMs(1, 120_000, low)).toBe(120_000);
  });

  it('should cap a Retry-After at maxMs', () => {
    expect(retryDelayMs(1, 30 * 24 * HOUR, low)).toBe(6 * HOUR);
    expect(retryDelayMs(1, 10_000, low, { baseMs: 50, maxMs: 400 })).toBe(400);
  });

  it('should ignore a non-finite Retry-After', () => {
    expect(retryDelayMs(1, Number.POSITIVE_INFINITY, low)).toBe(15_000);
    expect(retryDelayMs(1, Number.NaN, low)).toBe(15_000);
  });
});

describe('shouldGiveUp', () => {
  const first = new Date('2024-01-01T00:00:00Z');

  it('should keep retrying inside three days', () => {
    expect(shouldGiveUp(first, new Date(first.getTime() + MAX_DELIVERY_WINDOW_MS - 1))).toBe(false);
  });

  it('should give up once three days have passed', () => {
    expect(shouldGiveUp(first, new Date(first.getTime() + MAX_DELIVERY_WINDOW_MS))).toBe(true);
    expect(shouldGiveUp(first, new Date(first.getTime() + 4 * 24 * HOUR))).toBe(true);
  });

  it('should accept a shorter window', () => {
    expect(shouldGiveUp(first, new Date(first.getTime() + 1_000), 1_000)).toBe(true);
  });
});

describe('createRetrySchedule', () => {
  it('should fill in the defaults', () => {
    expect(resolveRetrySchedule()).toEqual({ baseMs: 30_000, maxMs: 6 * HOUR, windowMs: MAX_DELIVERY_WINDOW_MS });
  });

  it('should raise the default cap when the base is above it', () => {
    expect(resolveRetrySchedule({ baseMs: 7 * HOUR }).maxMs).toBe(7 * HOUR);
  });

  it('should reject invalid configuration', () => {
    expect(() => resolveRetrySchedule({ baseMs: 0 })).toThrow(RangeError);
    expect(() => resolveRetrySchedule({ maxMs: -1 })).toThrow(RangeError);
    expect(() => resolveRetrySchedule({ windowMs: Number.NaN })).toThrow(RangeError);
    expect(() => resolveRetrySchedule({ baseMs: 1_000, maxMs: 500 })).toThrow('maxMs must not be below baseMs');
  });

  it('should give a test-sized schedule that runs out within its window', () => {
    const schedule = createRetrySchedule({ baseMs: 50, maxMs: 400, windowMs: 2_000 }, high);
    const first = new Date(0);
    let now = first;
    const waits: number[] = [];
    for (let attempt = 1; attempt < 100; attempt += 1) {
      const next = schedule.nextAttemptAt(attempt, first, now);
      if (next === null) break;
      waits.push(next.getTime() - now.getTime());
      now = next;
    }
    expect(waits.length).toBeGreaterThan(3);
    expect(waits.every((w) => w <= 400)).toBe(true);
    expect(now.getTime() - first.getTime()).toBeLessThan(2_000);
    expect(schedule.shouldGiveUp(first, new Date(2_000))).toBe(true);
  });

  it('should honour Retry-After through the schedule', () => {
    const schedule = createRetrySchedule({ baseMs: 50, maxMs: 400 }, low);
    expect(schedule.delayMs(1)).toBe(25);
    expect(schedule.delayMs(1, 300)).toBe(300);
    expect(schedule.delayMs(1, 5_000)).toBe(400);
  });

  it('should schedule the default retries so that they span about three days', () => {
    const schedule = createRetrySchedule({}, () => 0.5);
    const first = new Date(0);
    let now = first;
    let attempts = 1;
    for (;;) {
      const next = schedule.nextAttemptAt(attempts, first, now);
      if (next === null) break;
      now = next;
      attempts += 1;
    }
    expect(attempts).toBeGreaterThan(10);
    expect(attempts).toBeLessThan(30);
    expect(MAX_DELIVERY_WINDOW_MS - now.getTime()).toBeLessThan(6 * HOUR);
  });
});
