import type { PublishedEvent } from '../../core/event-bus';
import type { StreamPosition } from './event.store';

/** Where a stream's events come from: live from the bus, and back from the database. */
export interface EventStreamSource {
  /** The scope's committed events that pass the stream's filter, as they are published, from now on. */
  live(): AsyncIterable<PublishedEvent>;
  /** The scope's next `limit` committed events from `position` in the order they were written, oldest first. */
  after(position: StreamPosition, limit: number): Promise<PublishedEvent[]>;
}

export interface EventStreamLimits {
  /** Events read back from the database at once (the most a stream holds of them). */
  pageSize: number;
  /**
   * Live events a stream holds for a subscriber that has not taken them yet. Past this, it drops
   * them and, as the subscriber takes events again, reads them back from the database instead.
   */
  maxBuffered: number;
  /** Ids of events read back or delivered that the stream remembers, so that none is delivered twice. */
  maxReplayedIds: number;
}

export const EVENT_STREAM_LIMITS: EventStreamLimits = { pageSize: 100, maxBuffered: 1000, maxReplayedIds: 10_000 };

/** The position after an event, with its seq when it was read from the database (an ordered stream's live events are). */
export const position = (e: PublishedEvent): StreamPosition => (e.seq === undefined ? { after: e.id } : { after: e.id, seq: e.seq });

/**
 * A live event stream that can start in the past and never holds more than a bounded number of
 * events for its subscriber.
 *
 * It listens live from the moment it is made and buffers what arrives; with a start position it
 * first reads back, page by page, every event after that position (the subscriber's last one),
 * then hands over the buffer, skipping the events it read back already (by id): nothing committed
 * since the start is missed, nothing is delivered twice. An event committed while a page is read
 * is either in that page or arrives live after it (or both: then once).
 *
 * A subscriber that takes events more slowly than they come (a slow socket: graphql-ws sends the
 * next event only once the previous one is written) is not buffered without bound: past
 * `maxBuffered` the buffer is dropped and the stream reads on from the database after the last
 * event it delivered, the same way, one page at a time.
 */
export class ResumableEventStream implements AsyncIterableIterator<PublishedEvent> {
  private readonly live: AsyncIterator<PublishedEvent>;
  /** Live events not delivered yet, in the order they were published. */
  private buffer: PublishedEvent[] = [];
  /** Events read back and not delivered yet, oldest first. */
  private page: PublishedEvent[] = [];
  /** Where the next read from the database starts (exclusive); null once caught up. */
  private readFrom: StreamPosition | null;
  /** The last event delivered: where a stream that fell behind reads on from. */
  private lastDelivered: StreamPosition | null = null;
  /**
   * The events of the first buffer dropped while nothing was delivered yet (no event to read on
   * after): the stream reads on from the first written of them. Kept as they were on later drops,
   * which arrived after them.
   */
  private droppedFrom: string[] | null = null;
  private fellBehind = false;
  /**
   * Ids of events read back or delivered lately, oldest first: a read-back event's live copy may
   * arrive after it was read, and a delivered one may be read back again.
   */
  private readonly replayed = new Set<string>();
  /**
   * The seq of the event the stream starts after, when known: an ordered live source (EventTail)
   * already open for the scope may still be behind it, and its events up to there are the
   * subscriber's already, except those it delivers late (`PublishedEvent.late`).
   */
  private readonly floorSeq: number | null;
  private done = false;
  private liveEnded = false;
  private failure: { error: unknown } | null = null;
  private wake?: () => void;

  constructor(
    private readonly source: EventStreamSource,
    private readonly start: StreamPosition | null,
    /** What the subscriber may see of what is read back (the live side is filtered by the source). */
    private readonly accepts: (event: PublishedEvent) => boolean,
    private readonly limits: EventStreamLimits = EVENT_STREAM_LIMITS,
  ) {
    // Listening starts now, before anything is read back: that is what leaves no gap.
    this.live = source.live()[Symbol.asyncIterator]();
    this.readFrom = start;
    this.floorSeq = start !== null && 'after' in start && start.seq !== undefined ? start.seq : null;
    void this.pump();
  }

  /** Whether this stream started in the past (a resume after an event) rather than now. */
  get resumes(): boolean {
    return this.start !== null;
  }

  /**
   * A stream of the same events as this one (same source, same filter) that starts after
   * `position`: a subscriber that took this stream's events through someone else (a broadcast
   * it fell behind) goes on from its own last event.
   */
  continueAfter(position: StreamPosition): ResumableEventStream {
    return new ResumableEventStream(this.source, position, this.accepts, this.limits);
  }

  /** Live events held for the subscriber now (never more than maxBuffered). */
  get buffered(): number {
    return this.buffer.length;
  }

  /** Takes live events as they come, whether or not the subscriber takes them as fast. */
  private async pump(): Promise<void> {
    try {
      for (;;) {
        const next = await this.live.next();
        if (next.done || this.done) break;
        this.onLive(next.value);
      }
    } catch (error) {
      this.failure = { error };
    } finally {
      this.liveEnded = true;
      this.wake?.();
    }
  }

  private onLive(event: PublishedEvent): void {
    if (this.replayed.has(event.id)) return;
    this.buffer.push(event);
    if (this.buffer.length > this.limits.maxBuffered) {
      // Too far behind: the database holds these; read them back as the subscriber goes on.
      if (this.lastDelivered === null && this.start === null && this.droppedFrom === null) this.droppedFrom = this.buffer.map((e) => e.id);
      this.buffer = [];
      this.fellBehind = true;
    }
    this.wake?.();
  }

  private remember(id: string): void {
    this.replayed.add(id);
    if (this.replayed.size > this.limits.maxReplayedIds) this.replayed.delete(this.replayed.values().next().value as string);
  }

  async next(): Promise<IteratorResult<PublishedEvent>> {
    for (;;) {
      if (this.done) return { value: undefined, done: true };
      if (this.failure) {
        const { error } = this.failure;
        await this.return();
        throw error;
      }
      if (this.fellBehind) {
        this.fellBehind = false;
        // What was read back and not delivered yet is read again (it is not counted as replayed).
        for (const e of this.page) this.replayed.delete(e.id);
        this.page = [];
        // From the last event delivered; with none yet, from the stream's start, or from the
        // first written of the events dropped (kept until something is delivered).
        this.readFrom = this.lastDelivered ?? this.start ?? { from: this.droppedFrom as string[] };
      }
      const event = this.page.shift();
      if (event) return this.deliver(event);
      if (this.readFrom !== null) {
        await this.readPage(this.readFrom);
        continue;
      }
      const live = this.buffer.shift();
      if (live) {
        const belowFloor = this.floorSeq !== null && live.seq !== undefined && live.seq <= this.floorSeq && !live.late;
        if (!this.replayed.has(live.id) && !belowFloor) return this.deliver(live);
        continue;
      }
      if (this.liveEnded) {
        await this.return();
        continue;
      }
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }

  private async readPage(from: StreamPosition): Promise<void> {
    const rows = await this.source.after(from, this.limits.pageSize);
    // Fell behind again while reading: this page may have gaps before it; read again from the last delivered.
    if (this.fellBehind || this.done) return;
    this.readFrom = rows.length < this.limits.pageSize ? null : position(rows[rows.length - 1]);
    for (const row of rows) {
      if (this.replayed.has(row.id) || !this.accepts(row)) continue;
      this.remember(row.id);
      this.page.push(row);
    }
    // What was read back is delivered from the page, not again from the buffer.
    if (this.page.length > 0 && this.buffer.length > 0) this.buffer = this.buffer.filter((e) => !this.replayed.has(e.id));
  }

  private deliver(event: PublishedEvent): IteratorResult<PublishedEvent> {
    this.lastDelivered = position(event);
    this.droppedFrom = null;
    // Remembered, live ones too: a stream that falls behind reads on after its last event, and an
    // event delivered before it but written after it (PostgreSQL numbers events as they are
    // inserted, not as they commit) is then not delivered twice.
    this.remember(event.id);
    return { value: event, done: false };
  }

  async return(): Promise<IteratorResult<PublishedEvent>> {
    if (!this.done) {
      this.done = true;
      this.buffer = [];
      this.page = [];
      this.replayed.clear();
      this.wake?.();
      await this.live.return?.();
    }
    return { value: undefined, done: true };
  }

  async throw(error?: unknown): Promise<IteratorResult<PublishedEvent>> {
    await this.return();
    throw error;
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<PublishedEvent> {
    return this;
  }
}
