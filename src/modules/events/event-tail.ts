import type { Database } from '../../db/database';
import { onPrimary } from '../../db/read-routing';
import { queuedIterator, streamScopeKey, type EventBus, type PublishedEvent, type StreamScope } from '../../core/event-bus';
import { errorForLog, type Logger } from '../../logger';
import { sequenceTop, type EventStore } from './event.store';

/**
 * How far events are settled: every event with a seq up to `top` that will ever be committed is
 * committed (null: all that are visible, SQLite), except those of the transactions no longer
 * waited for (`lateFrom`).
 */
export interface Settled {
  top: number | null;
  /**
   * While transactions no longer waited for are running: a seq below all of theirs. Their events,
   * if any, commit later with a seq above this (and possibly below `top`). Null when none runs.
   */
  lateFrom: number | null;
  /** How many of those have ended so far: once it moves, what they committed can be read. */
  ended: number;
  /**
   * How many times the sequence was seen going back (a failover to a standby that had not all of
   * it): once it moves, every tail reads again from the last event it delivered that the database
   * still holds (EventTail.keptPoint). A count, not a flag: whichever settle sees it, the tail's
   * next read knows.
   */
  backs: number;
}

const noop = () => undefined;

export interface EventHorizon {
  settle(): Promise<Settled>;
}

/** SQLite: one writer at a time numbers each scope's events as it commits them; what is visible is settled. */
export const SQLITE_HORIZON: EventHorizon = { settle: async () => ({ top: null, lateFrom: null, ended: 0, backs: 0 }) };

export interface HorizonOptions {
  /** How soon the transactions being waited for are looked at again, doubling up to 20 ms. */
  pollMs: number;
  /**
   * A transaction still running after this long is no longer waited for (one left open by hand,
   * a long migration): the streams go on, and its events, if it writes any, are delivered late.
   */
  staleMs: number;
}

export const HORIZON_OPTIONS: HorizonOptions = { pollMs: 2, staleMs: 2000 };

/**
 * The transactions running in this database: the ids (xid) of its sessions' transactions,
 * pg_stat_activity's backend_xid, read from the server's list of running transactions as the
 * statement runs. (A snapshot's xip list would not do: it leaves out running transactions whose
 * id is above the last one to complete.) Transactions of the cluster's other databases never
 * write these events and are not waited for. The service's sessions all run as one role, which
 * sees them all.
 */
const RUNNING_SQL = 'SELECT ARRAY(SELECT backend_xid::text FROM pg_stat_activity WHERE datname = current_database() AND backend_xid IS NOT NULL) AS here';

/**
 * PostgreSQL: events take their seq from a sequence as they are inserted, not as they commit, so
 * one numbered 9 may commit after one numbered 10. A tail that read 10 and went on past it would
 * never read 9: a stream resumed after 10 would miss it. The horizon is the sequence's last value,
 * read first, once every transaction of the database running just after that read has ended: any
 * transaction that took a seq up to it had its transaction id before its seq (migration 0031), so
 * it is one of those, and its events are committed or never will be.
 *
 * The sequence must keep CACHE 1 (its default): with a cache, a session would hold seqs taken
 * long before it uses them, below tops already passed. Prepared transactions (two-phase commit)
 * leave pg_stat_activity and are not waited for; the service uses none.
 *
 * Waits are short (a transaction of the service lasts milliseconds). A transaction running past
 * `staleMs` is remembered and no longer waited for, by this settle or the next ones; `lateFrom`
 * says so until it ends.
 */
export class PostgresEventHorizon implements EventHorizon {
  /** Transactions no longer waited for (by id), still running when last looked at, each with a seq below all of its own. */
  private readonly stale = new Map<string, number>();
  /** The highest top of a settle that waited for every transaction it saw (null: none yet). */
  private safeTop: number | null = null;
  private highestTop: number | null = null;
  private ended = 0;
  private backs = 0;
  /** The settle running, and the one callers asking meanwhile share (it starts once that one ends). */
  private current?: Promise<Settled>;
  private next?: Promise<Settled>;

  constructor(
    private readonly db: Database,
    private readonly logger: Logger,
    private readonly options: HorizonOptions = HORIZON_OPTIONS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * One settle at a time: callers asking while one runs share the next, so each gets a top read
   * after it asked, and a burst of streams opening (every scope's tail reads its starting point)
   * costs two settles, not one each.
   */
  settle(): Promise<Settled> {
    if (!this.current) return this.begin();
    this.next ??= this.current.then(noop, noop).then(() => {
      this.next = undefined;
      return this.begin();
    });
    return this.next;
  }

  private begin(): Promise<Settled> {
    const run = this.settleNow().finally(() => {
      if (this.current === run) this.current = undefined;
    });
    this.current = run;
    return run;
  }

  private settleNow(): Promise<Settled> {
    // Autocommit statements (never a transaction: pg_stat_activity is read once per transaction).
    return onPrimary(async () => {
      const top = await sequenceTop(this.db);
      let running = await this.running();
      let waiting = [...running].filter((xid) => !this.stale.has(xid));
      const started = this.now();
      let pause = this.options.pollMs;
      let complete = true;
      while (waiting.length > 0) {
        if (this.now() - started >= this.options.staleMs) {
          // Any of these took its seq after the last complete settle read its running transactions,
          // so above that settle's top.
          for (const xid of waiting) this.stale.set(xid, this.safeTop ?? 0);
          complete = false;
          this.logger.warn({ transactions: waiting, waitedMs: this.options.staleMs }, 'ordered event streams no longer wait for long-running transactions: their events, if any, will be delivered late');
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, pause));
        pause = Math.min(pause * 2, 20);
        running = await this.running();
        waiting = waiting.filter((xid) => running.has(xid));
      }
      for (const xid of this.stale.keys()) {
        if (running.has(xid)) continue;
        this.stale.delete(xid);
        this.ended += 1;
      }
      if (this.highestTop !== null && top < this.highestTop) {
        this.backs += 1;
        this.logger.warn({ top, before: this.highestTop }, 'the events sequence went back (a failover): ordered event streams read again after the last event each delivered that the database still holds');
        this.highestTop = top;
        this.safeTop = Math.min(this.safeTop ?? top, top);
      }
      this.highestTop = Math.max(this.highestTop ?? top, top);
      if (complete) this.safeTop = Math.max(this.safeTop ?? top, top);
      const lateFrom = this.stale.size === 0 ? null : Math.min(...this.stale.values());
      return { top, lateFrom, ended: this.ended, backs: this.backs };
    });
  }

  private async running(): Promise<Set<string>> {
    const [row] = await this.db.select<{ here: string[] }>(RUNNING_SQL);
    return new Set(row.here);
  }
}

export interface TailOptions {
  /** Events read at once for one account and mode. */
  pageSize: number;
  /** With streams open, the tail reads even when nothing woke it this often (an event whose message was lost). */
  sweepMs: number;
  /** Ids of events delivered while transactions are no longer waited for, remembered per account and mode. */
  maxLateIds: number;
  /** The last events delivered, remembered per account and mode: where to read again from if the sequence goes back. */
  keptEvents: number;
}

export const TAIL_OPTIONS: TailOptions = { pageSize: 500, sweepMs: 1000, maxLateIds: 50_000, keptEvents: 32 };

type Listener = (event: PublishedEvent) => void;

interface ScopeTail {
  scope: StreamScope;
  /** The last seq read (null: none yet). */
  read: number | null;
  /** Settles once `read` is where the tail starts (`started`). */
  ready: Promise<void>;
  started: boolean;
  listeners: Set<Listener>;
  dirty: boolean;
  /**
   * While transactions no longer waited for run (Settled.lateFrom): the seq above which their
   * events may still appear, the ids of the scope's events above it already delivered (or before
   * the scope's start), and how many such transactions had ended when it last read them.
   */
  late: { from: number; ids: Set<string>; ended: number } | null;
  /** Where the tail started (its first `read`). */
  start: number | null;
  /** The seq and id of the last events delivered (oldest first, at most TailOptions.keptEvents), and whether older ones were let go. */
  delivered: Array<{ seq: number; id: string }>;
  forgotten: boolean;
}

/**
 * The events of the account and modes that ordered streams (the `events` subscription) listen to,
 * read from the database in the order they were written, never past the horizon: each stream of
 * the instance gets them in seq order, and an event is never delivered before one written before
 * it. A stream resumed after the last event it received (events(after:)) then misses nothing.
 *
 * Any event of a scope (committed here or arriving from another instance) wakes the tail; with
 * streams open it also reads every `sweepMs`, so an event whose message was lost (an outage of
 * NOTIFY or Redis) is still delivered. One read at a time for the whole instance.
 */
export class EventTail {
  private readonly scopes = new Map<string, ScopeTail>();
  private running = false;
  private again = false;
  private sweepTimer?: NodeJS.Timeout;
  private unsubscribe?: () => void;
  private stopped = false;
  /** How many times the sequence went back, as of the last read (Settled.backs). */
  private backs = 0;

  constructor(
    private readonly store: EventStore,
    private readonly horizon: EventHorizon,
    private readonly bus: EventBus,
    private readonly logger: Logger,
    private readonly options: TailOptions = TAIL_OPTIONS,
  ) {}

  /** Whether streams of the scope listen and its tail has its starting point (their events are read from now on). */
  listens(scope: StreamScope): boolean {
    const tail = this.scopes.get(streamScopeKey(scope));
    return tail !== undefined && tail.started && tail.listeners.size > 0;
  }

  /** Waits until the scope's tail, if open, has its starting point. */
  async ready(scope: StreamScope): Promise<void> {
    const tail = this.scopes.get(streamScopeKey(scope));
    if (tail) await tail.ready;
  }

  /**
   * How far a stream of the scope may read back from the database: as far as its tail has read
   * (settled, and at least where the tail started, so its live events go on from there with no
   * gap). Null (no bound) when no stream of the scope is open.
   */
  async readUpTo(scope: StreamScope): Promise<number | null> {
    const tail = this.scopes.get(streamScopeKey(scope));
    if (!tail) return null;
    await tail.ready;
    return tail.read;
  }

  /** The scope's events that pass `filter`, in the order they were written, from the tail's next read on. */
  stream(scope: StreamScope, filter: (event: PublishedEvent) => boolean): AsyncIterableIterator<PublishedEvent> {
    const tail = this.open(scope);
    const stream = queuedIterator<PublishedEvent>(() => {
      tail.listeners.delete(listener);
      if (tail.listeners.size === 0) this.close(tail);
    });
    const listener: Listener = (event) => {
      if (filter(event)) stream.push(event);
    };
    tail.listeners.add(listener);
    return stream.iterator;
  }

  stop(): void {
    this.stopped = true;
    this.idle();
  }

  /** No scope open: nothing to wake for. */
  private idle(): void {
    clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  private open(scope: StreamScope): ScopeTail {
    const key = streamScopeKey(scope);
    const existing = this.scopes.get(key);
    if (existing) return existing;
    const tail: ScopeTail = { scope, read: null, ready: Promise.resolve(), started: false, listeners: new Set(), dirty: false, late: null, start: null, delivered: [], forgotten: false };
    tail.ready = this.startingPoint(tail).then((read) => {
      tail.read = read;
      tail.start = read;
      tail.started = true;
      tail.dirty = true;
      this.wake();
    });
    this.scopes.set(key, tail);
    if (!this.unsubscribe) {
      this.unsubscribe = this.bus.subscribe((event) => {
        const woken = this.scopes.get(streamScopeKey(event));
        if (!woken) return;
        woken.dirty = true;
        this.wake();
      });
      this.sweepTimer = setInterval(() => {
        for (const t of this.scopes.values()) t.dirty = true;
        this.wake();
      }, this.options.sweepMs);
      this.sweepTimer.unref();
    }
    return tail;
  }

  private close(tail: ScopeTail): void {
    if (this.scopes.get(streamScopeKey(tail.scope)) !== tail) return;
    this.scopes.delete(streamScopeKey(tail.scope));
    if (this.scopes.size === 0) this.idle();
  }

  /** Where a scope's tail starts: its settled top (PostgreSQL), or its highest seq now (SQLite). */
  /**
   * Where a scope's tail starts: its settled top (PostgreSQL), or its highest seq now (SQLite).
   * While transactions no longer waited for run, it also reads the ids of the events between
   * where theirs may appear and its start: those came before the streams' start, and only the
   * late transactions' events among them are delivered when those end.
   */
  private async startingPoint(tail: ScopeTail): Promise<number | null> {
    for (let attempt = 0; ; attempt++) {
      try {
        const settled = await this.horizon.settle();
        if (settled.top === null) return await onPrimary(() => this.store.lastSeq(tail.scope));
        if (settled.lateFrom !== null) tail.late = await this.lateSince(tail, settled.lateFrom, settled.top, settled.ended);
        return settled.top;
      } catch (err) {
        // The database is away: tried again until it is back, or until no stream listens.
        if (this.stopped || this.scopes.get(streamScopeKey(tail.scope)) !== tail) return null;
        this.logger.warn({ err: errorForLog(err) }, 'ordered event stream could not start reading; trying again');
        await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 50 * 2 ** attempt)));
      }
    }
  }

  /** The late bookkeeping from `from`, with the ids of the scope's events in (from, upTo] already there. */
  private async lateSince(tail: ScopeTail, from: number, upTo: number, ended: number): Promise<ScopeTail['late']> {
    const ids = new Set<string>();
    for (let after = from; ;) {
      const rows = await onPrimary(() => this.store.loadSeqRange(tail.scope, after, upTo, this.options.pageSize));
      for (const row of rows) ids.add(row.id);
      if (rows.length < this.options.pageSize) break;
      after = rows[rows.length - 1].seq as number;
    }
    return { from, ids, ended };
  }

  private wake(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    void this.run();
  }

  private async run(): Promise<void> {
    try {
      do {
        this.again = false;
        await this.readOnce();
      } while (this.again && !this.stopped);
    } catch (err) {
      // Nothing is lost: `read` did not move past what was not delivered; the sweep tries again.
      this.logger.warn({ err: errorForLog(err) }, 'ordered event streams could not read events; trying again');
    } finally {
      this.running = false;
    }
  }

  private async readOnce(): Promise<void> {
    // A scope still finding its starting point is read once it has one. Marked read before the
    // horizon is settled: an event that wakes the scope meanwhile gets a read of its own.
    const woken = [...this.scopes.values()].filter((t) => t.dirty && t.started && t.listeners.size > 0);
    if (woken.length === 0) return;
    for (const tail of woken) tail.dirty = false;
    const settled = await this.horizon.settle();
    const wentBack = settled.backs !== this.backs;
    this.backs = settled.backs;
    // Every scope that went on without the late transactions reads what those that ended
    // committed, woken or not; after the sequence went back, every scope reads again from the
    // last event it delivered that is still there (keptPoint).
    for (const tail of this.scopes.values()) {
      if (!tail.started || woken.includes(tail)) continue;
      if (wentBack || (tail.late && tail.late.ended !== settled.ended)) woken.push(tail);
    }
    const current = (tail: ScopeTail) => this.scopes.get(streamScopeKey(tail.scope)) === tail;
    for (const tail of woken) {
      if (!current(tail)) continue;
      if (wentBack) tail.read = await this.keptPoint(tail, settled.top);
      if (settled.lateFrom !== null && !tail.late && tail.read !== null) {
        tail.late = await this.lateSince(tail, Math.min(settled.lateFrom, tail.read), tail.read, settled.ended);
      }
    }
    const firstPages = await this.firstPages(woken.filter(current), settled.top);
    for (const tail of woken) {
      if (!current(tail)) continue;
      await this.readScope(tail, settled.top, firstPages.get(tail));
      if (tail.late && tail.late.ended !== settled.ended) await this.readLate(tail, settled);
    }
  }

  /**
   * PostgreSQL, several scopes to read: the first page of each in one statement (a sweep reads
   * every open scope; one statement each would be thousands a second with thousands open).
   */
  private async firstPages(tails: ScopeTail[], top: number | null): Promise<Map<ScopeTail, PublishedEvent[]>> {
    const pages = new Map<ScopeTail, PublishedEvent[]>();
    const batched = tails.filter((t) => t.read !== null);
    if (top === null || batched.length < 2) return pages;
    const rows = await onPrimary(() => this.store.loadSeqRanges(batched.map((t) => ({ scope: t.scope, afterSeq: t.read as number })), top, this.options.pageSize));
    if (rows === null) return pages;
    for (const tail of batched) pages.set(tail, []);
    const byScope = new Map(batched.map((t) => [streamScopeKey(t.scope), pages.get(t) as PublishedEvent[]]));
    for (const row of rows) byScope.get(streamScopeKey(row))?.push(row);
    return pages;
  }

  /** The scope's events after `read`, up to `top`, page by page (the first one given when read already). */
  private async readScope(tail: ScopeTail, top: number | null, firstPage?: PublishedEvent[]): Promise<void> {
    for (let given = firstPage; ; given = undefined) {
      const rows = given ?? await onPrimary(() => this.store.loadSeqRange(tail.scope, tail.read, top, this.options.pageSize));
      for (const event of rows) this.deliver(tail, event);
      if (rows.length > 0) tail.read = rows[rows.length - 1].seq as number;
      if (rows.length < this.options.pageSize) {
        if (top !== null && (tail.read === null || tail.read < top)) tail.read = top;
        return;
      }
    }
  }

  /**
   * Transactions no longer waited for ended: the events they committed were written before
   * others already delivered. They are delivered now, late and out of order, rather than never.
   */
  private async readLate(tail: ScopeTail, settled: Settled): Promise<void> {
    const late = tail.late as NonNullable<ScopeTail['late']>;
    for (let after = late.from; ;) {
      const rows = await onPrimary(() => this.store.loadSeqRange(tail.scope, after, tail.read, this.options.pageSize));
      for (const event of rows) if (!late.ids.has(event.id)) this.deliver(tail, { ...event, late: true });
      if (rows.length < this.options.pageSize) break;
      after = rows[rows.length - 1].seq as number;
    }
    // Read: counted only now, so a failed read is done again.
    late.ended = settled.ended;
    if (settled.lateFrom === null) tail.late = null;
  }

  /**
   * After the sequence went back (a failover to a standby that lacked the last events): where the
   * tail reads again from. The events it delivered last that the database no longer holds were
   * lost with the old primary; every event the database holds past the last one still there was
   * written since (the tail delivered each event up to `read`, in order), numbered with the
   * values the lost ones had. So the tail reads again after that one, and delivers those too,
   * however many were written before it saw the sequence go back. When none of those it
   * remembers is there: from where it started if it remembers every event since, else (more
   * were lost than it remembers) from the sequence's value now if below what it had read.
   */
  private async keptPoint(tail: ScopeTail, top: number | null): Promise<number | null> {
    if (tail.delivered.length > 0) {
      const there = new Set((await onPrimary(() => this.store.loadPublished(tail.delivered.map((d) => d.id)))).map((e) => e.id));
      for (let i = tail.delivered.length - 1; i >= 0; i--) {
        if (!there.has(tail.delivered[i].id)) continue;
        tail.delivered.length = i + 1;
        return Math.min(tail.delivered[i].seq, tail.read ?? Infinity);
      }
    }
    // Nothing delivered is there any more (or nothing was delivered: the events up to `read` were
    // none of this scope's).
    tail.delivered.length = 0;
    const from = tail.forgotten || tail.start === null ? tail.read : tail.start;
    return top !== null && from !== null && from > top ? top : from;
  }

  private deliver(tail: ScopeTail, event: PublishedEvent): void {
    if (typeof event.seq === 'number' && !event.late) {
      tail.delivered.push({ seq: event.seq, id: event.id });
      // Let go in batches: a splice per event would copy the array each time.
      if (tail.delivered.length >= 2 * this.options.keptEvents) {
        tail.delivered.splice(0, tail.delivered.length - this.options.keptEvents);
        tail.forgotten = true;
      }
    }
    if (tail.late) {
      tail.late.ids.add(event.id);
      if (tail.late.ids.size > this.options.maxLateIds) {
        this.logger.warn({ accountId: tail.scope.accountId }, 'ordered event stream stopped waiting for the events of long-running transactions');
        tail.late = null;
      }
    }
    for (const listener of tail.listeners) listener(event);
  }
}
