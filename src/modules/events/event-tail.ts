import type { Database } from '../../db/database';
import { onPrimary } from '../../db/read-routing';
import { queuedIterator, type EventBus, type PublishedEvent, type StreamScope } from '../../core/event-bus';
import { errorForLog, type Logger } from '../../logger';
import type { EventStore } from './event.store';

/**
 * How far an account and mode's events are settled: every event with a seq up to `top` that will
 * ever be committed is committed (null: all that are visible, SQLite).
 */
export interface Settled {
  top: number | null;
  /** Transactions that ran too long to be waited for are still running: events below `top` may yet appear. */
  unsettled: boolean;
  /** Some of those ended since the last settle: their events, if any, can be read now. */
  ended: boolean;
}

export interface EventHorizon {
  settle(): Promise<Settled>;
}

/** SQLite: one writer at a time numbers each scope's events as it commits them; what is visible is settled. */
export const SQLITE_HORIZON: EventHorizon = { settle: async () => ({ top: null, unsettled: false, ended: false }) };

export interface HorizonOptions {
  /** How often the transactions being waited for are looked at again. */
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
 * Waits are short (a transaction of the service lasts milliseconds). A transaction running past
 * `staleMs` is remembered and no longer waited for, by this settle or the next ones; `unsettled`
 * says so until it ends.
 */
export class PostgresEventHorizon implements EventHorizon {
  /** Transactions no longer waited for (by id), still running when last looked at. */
  private readonly stale = new Set<string>();

  constructor(
    private readonly db: Database,
    private readonly logger: Logger,
    private readonly options: HorizonOptions = HORIZON_OPTIONS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  settle(): Promise<Settled> {
    return onPrimary(async () => {
      const [seq] = await this.db.select<{ last_value: unknown; is_called: unknown }>('SELECT last_value, is_called FROM events_stream_seq');
      const top = Number(seq.last_value) - (seq.is_called === true || seq.is_called === 't' ? 0 : 1);
      let running = await this.running();
      let waiting = [...running].filter((xid) => !this.stale.has(xid));
      const started = this.now();
      while (waiting.length > 0) {
        if (this.now() - started >= this.options.staleMs) {
          for (const xid of waiting) this.stale.add(xid);
          this.logger.warn({ transactions: waiting, waitedMs: this.options.staleMs }, 'ordered event streams no longer wait for long-running transactions: their events, if any, will be delivered late');
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, this.options.pollMs));
        running = await this.running();
        waiting = waiting.filter((xid) => running.has(xid));
      }
      let ended = false;
      for (const xid of this.stale) {
        if (running.has(xid)) continue;
        this.stale.delete(xid);
        ended = true;
      }
      return { top, unsettled: this.stale.size > 0, ended };
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
  maxUnsettledIds: number;
}

export const TAIL_OPTIONS: TailOptions = { pageSize: 500, sweepMs: 1000, maxUnsettledIds: 50_000 };

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
  /** While transactions are no longer waited for: where that began, and the ids delivered since. */
  unsettled: { from: number | null; ids: Set<string> } | null;
  /** Some of those ended: what they committed is read at the scope's next read. */
  lateDue: boolean;
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

  constructor(
    private readonly store: EventStore,
    private readonly horizon: EventHorizon,
    private readonly bus: EventBus,
    private readonly logger: Logger,
    private readonly options: TailOptions = TAIL_OPTIONS,
  ) {}

  /**
   * Waits until the scope's tail has its starting point (a stream's read-back must reach at
   * least there), opening it for the duration if nothing listens yet.
   */
  async ready(scope: StreamScope): Promise<void> {
    const tail = this.scopes.get(keyOf(scope));
    if (tail) await tail.ready;
  }

  /** The horizon now (see EventHorizon): how far a stream's read-back may read. */
  async settledTop(): Promise<number | null> {
    return (await this.horizon.settle()).top;
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
    const key = keyOf(scope);
    const existing = this.scopes.get(key);
    if (existing) return existing;
    const tail: ScopeTail = { scope, read: null, ready: Promise.resolve(), started: false, listeners: new Set(), dirty: false, unsettled: null, lateDue: false };
    tail.ready = this.startingPoint(tail).then((read) => {
      tail.read = read;
      tail.started = true;
      tail.dirty = true;
      this.wake();
    });
    this.scopes.set(key, tail);
    if (!this.unsubscribe) {
      this.unsubscribe = this.bus.subscribe((event) => {
        const woken = this.scopes.get(`${event.accountId}:${event.livemode}`);
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
    if (this.scopes.get(keyOf(tail.scope)) !== tail) return;
    this.scopes.delete(keyOf(tail.scope));
    if (this.scopes.size === 0) this.idle();
  }

  /** Where a scope's tail starts: its settled top (PostgreSQL), or its highest seq now (SQLite). */
  private async startingPoint(tail: ScopeTail): Promise<number | null> {
    for (let attempt = 0; ; attempt++) {
      try {
        const { top } = await this.horizon.settle();
        return top ?? (await onPrimary(() => this.store.lastSeq(tail.scope)));
      } catch (err) {
        // The database is away: tried again until it is back, or until no stream listens.
        if (this.stopped || this.scopes.get(keyOf(tail.scope)) !== tail) return null;
        this.logger.warn({ err: errorForLog(err) }, 'ordered event stream could not start reading; trying again');
        await new Promise((resolve) => setTimeout(resolve, Math.min(1000, 50 * 2 ** attempt)));
      }
    }
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
    if (settled.ended) {
      // Every scope that went on without them reads what they committed, woken or not.
      for (const tail of this.scopes.values()) {
        if (!tail.unsettled) continue;
        tail.lateDue = true;
        if (!woken.includes(tail)) woken.push(tail);
      }
    }
    for (const tail of woken) {
      if (this.scopes.get(keyOf(tail.scope)) !== tail) continue;
      if (settled.unsettled && !tail.unsettled) tail.unsettled = { from: tail.read, ids: new Set() };
      await this.readScope(tail, settled.top);
      if (tail.lateDue && tail.unsettled) {
        tail.lateDue = false;
        await this.readLate(tail, settled.unsettled);
      }
    }
  }

  /** The scope's events after `read`, up to `top`, page by page. */
  private async readScope(tail: ScopeTail, top: number | null): Promise<void> {
    for (;;) {
      const rows = await onPrimary(() => this.store.loadSeqRange(tail.scope, tail.read, top, this.options.pageSize));
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
  private async readLate(tail: ScopeTail, stillUnsettled: boolean): Promise<void> {
    const late = tail.unsettled as { from: number | null; ids: Set<string> };
    let after = late.from;
    for (;;) {
      const rows = await onPrimary(() => this.store.loadSeqRange(tail.scope, after, tail.read, this.options.pageSize));
      for (const event of rows) if (!late.ids.has(event.id)) this.deliver(tail, event);
      if (rows.length < this.options.pageSize) break;
      after = rows[rows.length - 1].seq as number;
    }
    if (!stillUnsettled) tail.unsettled = null;
  }

  private deliver(tail: ScopeTail, event: PublishedEvent): void {
    if (tail.unsettled) {
      tail.unsettled.ids.add(event.id);
      if (tail.unsettled.ids.size > this.options.maxUnsettledIds) {
        this.logger.warn({ accountId: tail.scope.accountId }, 'ordered event stream stopped waiting for the events of long-running transactions');
        tail.unsettled = null;
      }
    }
    for (const listener of tail.listeners) listener(event);
  }
}

function keyOf(scope: StreamScope): string {
  return `${scope.accountId}:${scope.livemode}`;
}
