import type { Clock } from './clock';
import type { StreamScope } from './event-bus';
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

const NOTHING_KNOWN: WrittenMark = () => undefined;

/**
 * Marks of how far events had been written, taken every `intervalMs`, so that what was written
 * after some moment can be told apart by seq rather than by `created_at`. A live fan-out that may
 * have missed messages reads back the events written since its gap opened: by `created_at`
 * alone it would miss those stamped in the past (a test clock's frozen time), which seq, the
 * order they were written in, does not.
 */
export class WrittenMarks {
  private samples: Array<{ at: number; mark: WrittenMark }> = [];
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
   * A stream opened for `scope`: a mark is taken now unless the newest one knows the scope
   * already (on PostgreSQL every mark does), so that a gap opening before the next one finds
   * one for it.
   */
  noteScope(scope: StreamScope): void {
    const newest = this.samples[this.samples.length - 1];
    if (this.timer && newest?.mark(scope) === undefined) void this.sample();
  }

  /** Takes a mark now; a failed read (the database away) leaves the earlier ones. */
  async sample(): Promise<void> {
    let mark: WrittenMark;
    try {
      mark = await this.read(this.scopes());
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
  }

  /**
   * For each scope, the newest mark taken at or before `time`, or, when none was (the instance
   * is younger), the oldest one taken since: every event written after `time` is above it.
   * Fixed as called (later marks do not change it).
   */
  before(time: number): WrittenMark {
    const samples = [...this.samples];
    if (samples.length === 0) return NOTHING_KNOWN;
    return (scope) => {
      let found: number | undefined;
      for (const s of samples) {
        const value = s.mark(scope);
        if (value === undefined) continue;
        if (s.at <= time || found === undefined) found = value;
        if (s.at > time) break;
      }
      return found;
    };
  }
}
