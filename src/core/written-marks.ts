import type { Clock } from './clock';
import { streamScopeKey, type StreamScope } from './event-bus';
import { errorForLog, type Logger } from '../logger';

/**
 * How far events had been written at some moment: for a scope, the highest seq then (undefined:
 * not known for that scope). On PostgreSQL one sequence numbers every scope's events, so one
 * value answers for all; on SQLite each scope has its own numbers.
 */
export type WrittenMark = (scope: StreamScope) => number | undefined;

/** Reads how far events have been written now, for `scopes` at least (the open streams' scopes). */
export type ReadWrittenMark = (scopes: readonly StreamScope[]) => Promise<WrittenMark>;

export interface WrittenMarksOptions {
  /** How often a mark is taken. */
  intervalMs: number;
  /** How long marks are kept (the newest older one is kept too). */
  keepMs: number;
}

export const WRITTEN_MARKS_OPTIONS: WrittenMarksOptions = { intervalMs: 10_000, keepMs: 60_000 };

/**
 * Marks of how far events had been written, taken every `intervalMs`, so that what was written
 * after some moment can be told apart by seq rather than by `created_at`. A live fan-out that may
 * have missed messages reads back the events written since its gap opened: by `created_at`
 * alone it would miss those stamped in the past (a test clock's frozen time), which seq, the
 * order they were written in, does not.
 */
export class WrittenMarks {
  /** Marks of every open stream's scope, oldest first. */
  private samples: Array<{ at: number; mark: WrittenMark }> = [];
  /** Marks of one scope each, taken as a stream opened for a scope no mark knew (SQLite), by scope. */
  private readonly opened = new Map<string, { at: number; value: number }>();
  private readonly opening = new Set<string>();
  private timer?: NodeJS.Timeout;
  private failing = false;

  constructor(
    private readonly read: ReadWrittenMark,
    private readonly scopes: () => StreamScope[],
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly options: WrittenMarksOptions = WRITTEN_MARKS_OPTIONS,
  ) {}

  /** Takes the first mark (a failed read is logged, not thrown), then one every `intervalMs`. */
  async start(): Promise<void> {
    await this.sample();
    this.timer = setInterval(() => void this.sample(), this.options.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * A stream opened for `scope`: unless a mark knows the scope already (on PostgreSQL every mark
   * does), a mark of that scope alone is taken now, so that a gap opening before the next mark of
   * every scope, or already open, finds one for it. One read per such scope, whatever their number.
   */
  noteScope(scope: StreamScope): void {
    const key = streamScopeKey(scope);
    const newest = this.samples[this.samples.length - 1];
    if (!this.timer || newest?.mark(scope) !== undefined || this.opened.has(key) || this.opening.has(key)) return;
    this.opening.add(key);
    this.read([scope]).then(
      (mark) => {
        const value = mark(scope);
        if (value !== undefined) this.opened.set(key, { at: this.clock.now().getTime(), value });
      },
      (err) => this.logger.warn({ err: errorForLog(err) }, 'could not take a mark of the events written so far for a new stream'),
    ).finally(() => this.opening.delete(key));
  }

  /** Takes a mark of every open stream's scope now; a failed read (the database away) leaves the earlier ones. */
  async sample(): Promise<void> {
    const scopes = this.scopes();
    let mark: WrittenMark;
    try {
      mark = await this.read(scopes);
    } catch (err) {
      if (!this.failing) this.logger.warn({ err: errorForLog(err) }, 'could not take a mark of the events written so far; keeping the earlier ones');
      this.failing = true;
      return;
    }
    this.failing = false;
    const at = this.clock.now().getTime();
    this.samples.push({ at, mark });
    const older = this.samples.filter((s) => s.at < at - this.options.keepMs);
    if (older.length > 1) this.samples = this.samples.slice(older.length - 1);
    // A scope's own mark is kept while a stream of it is open (a gap may need it), and a while after.
    const open = new Set(scopes.map(streamScopeKey));
    for (const [key, m] of this.opened) if (!open.has(key) && m.at < at - this.options.keepMs) this.opened.delete(key);
  }

  /**
   * For each scope, the newest mark of it taken at or before `time`, else the oldest one taken
   * after. Every event written after `time` is above the first; above the second is every event
   * written after it was taken, which is all a stream owes when it opened since (a scope's own
   * mark), or when the instance is younger than `time`'s distance back (30 to 40 s: the ones
   * written before the instance started are not). The marks of every scope are fixed as called;
   * a scope's own mark taken later (its stream opened during a gap) still answers.
   */
  before(time: number): WrittenMark {
    const samples = [...this.samples];
    return (scope) => {
      const own = this.opened.get(streamScopeKey(scope));
      let atOrBefore: { at: number; value: number } | undefined;
      let after: { at: number; value: number } | undefined;
      const consider = (at: number, value: number | undefined) => {
        if (value === undefined) return;
        if (at <= time) {
          if (!atOrBefore || at > atOrBefore.at) atOrBefore = { at, value };
        } else if (!after || at < after.at) {
          after = { at, value };
        }
      };
      for (const s of samples) consider(s.at, s.mark(scope));
      if (own) consider(own.at, own.value);
      return (atOrBefore ?? after)?.value;
    };
  }
}
