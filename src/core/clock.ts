/** All "now" readings go through a Clock so test clocks can drive time later. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export class FixedClock implements Clock {
  constructor(private current: Date) {}
  now(): Date {
    return new Date(this.current.getTime());
  }
  set(to: Date): void {
    this.current = new Date(to.getTime());
  }
  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
}

/**
 * Elapsed time, never a date: a process times the leases it holds on it, so a jump of the wall
 * clock (or of a test clock) neither ends nor stretches them. Milliseconds from any origin.
 */
export interface Stopwatch {
  elapsedMs(): number;
}

export const systemStopwatch: Stopwatch = { elapsedMs: () => performance.now() };

/** A stopwatch that moves only when told (tests). */
export class ManualStopwatch implements Stopwatch {
  private ms = 0;
  elapsedMs(): number {
    return this.ms;
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}
