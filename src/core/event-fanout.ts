import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Redis } from 'ioredis';
import type { EventBus, PublishedEvent, RemoteEventSink, StreamScope } from './event-bus';
import type { Clock } from './clock';
import type { RedisBreaker } from './redis-breaker';
import type { WrittenMark, WrittenMarks } from './written-marks';
import { errorForLog, type Logger } from '../logger';

const CHANNEL = 'payorch_events';
// NOTIFY payloads are capped at 8000 bytes; a message never exceeds this, bigger events travel
// by id and are read back.
const MAX_INLINE = 7000;
// Events committed within this window travel in one message: under load one NOTIFY (a round
// trip and a commit in PostgreSQL) carries many events; a remote subscriber waits at most this.
const FLUSH_WINDOW_MS = 10;
// Ids of events delivered here are kept this long (and at most SEEN_MAX of them), so events read
// back after a gap are not delivered twice.
const SEEN_KEEP_MS = 120_000;
const SEEN_MAX = 100_000;

export interface EventFanout extends RemoteEventSink {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Reads committed events back by id (those that exist, in any order). */
type LoadEvents = (ids: string[]) => Promise<PublishedEvent[]>;

/** Reads one account and mode's committed events from `since` on, oldest first, after a cursor. */
export type LoadEventsSince = (
  scope: StreamScope, since: Date, after: { createdAt: string; id: string } | undefined, limit: number,
) => Promise<PublishedEvent[]>;

/**
 * Reads one account and mode's events written after a seq and stamped before a moment, in the
 * order they were written (what a read-back by `created_at` from that moment does not find).
 */
export type LoadWrittenAfter = (scope: StreamScope, afterSeq: number, createdBefore: Date, limit: number) => Promise<PublishedEvent[]>;

/**
 * What a fan-out reads back by seq besides `created_at`, so that events stamped in the past (a
 * test clock's frozen time) that were written while it may have missed messages are read back too.
 */
export interface WrittenReadBack {
  marks: WrittenMarks;
  load: LoadWrittenAfter;
}

/** A gap's read-back by seq: how far events were written when the gap opened, and the loader. */
interface PinnedWritten {
  mark: WrittenMark;
  load: LoadWrittenAfter;
}

/**
 * The ids of the events published or delivered here lately (oldest first), with when: an event
 * that reaches this process twice (read back after a gap, or by Redis and NOTIFY both) is
 * delivered once. Fan-outs carrying the same events share one.
 */
export class DeliveredEvents {
  /** Tags every message this process sends, so that it skips its own when they come back. */
  readonly origin = randomBytes(8).toString('hex');
  private readonly seen = new Map<string, number>();
  /** Ids are forgotten only while nothing may have been missed (by any of the fan-outs): a replay needs them all. */
  private readonly gaps = new Set<string>();

  constructor(private readonly clock: Clock) {}

  has(id: string): boolean {
    return this.seen.has(id);
  }

  remember(id: string): void {
    const now = this.clock.now().getTime();
    this.seen.delete(id);
    this.seen.set(id, now);
    for (const [oldest, at] of this.seen) {
      if (this.seen.size <= SEEN_MAX && (this.gaps.size > 0 || at >= now - SEEN_KEEP_MS)) break;
      this.seen.delete(oldest);
    }
  }

  /** `path` (NOTIFY, Redis) may have missed events since a moment (open) or read them all back since (closed). */
  gap(path: string, open: boolean): void {
    if (open) this.gaps.add(path);
    else this.gaps.delete(path);
  }
}

/** Shared plumbing: tag outgoing events with our origin and ignore our own echoes. */
abstract class BaseFanout implements EventFanout {
  protected readonly delivered: DeliveredEvents;
  protected readonly origin: string;
  constructor(
    protected readonly bus: EventBus,
    protected readonly load: LoadEvents,
    protected readonly logger: Logger,
    /**
     * Whether events travel whole (up to MAX_INLINE) or by id only. Ids keep NOTIFY traffic, and
     * the work PostgreSQL does for it, small; each listening instance then reads a message's
     * events back in one query.
     */
    private readonly inline: boolean,
    protected readonly clock: Clock,
    delivered?: DeliveredEvents,
  ) {
    this.delivered = delivered ?? new DeliveredEvents(clock);
    this.origin = this.delivered.origin;
  }
  abstract start(): Promise<void>;
  abstract stop(): Promise<void>;
  protected abstract transmit(payload: string): Promise<void>;

  private pending: string[] = [];
  private flushScheduled = false;
  private flushTimer?: NodeJS.Timeout;

  /** Events committed within FLUSH_WINDOW_MS travel together: one message instead of one each. */
  send(event: PublishedEvent): void {
    this.delivered.remember(event.id);
    const whole = this.inline ? JSON.stringify(event) : undefined;
    this.pending.push(whole !== undefined && Buffer.byteLength(whole) + 64 <= MAX_INLINE ? whole : JSON.stringify({ ref: event.id }));
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      this.flushTimer = setTimeout(() => this.flush(), FLUSH_WINDOW_MS);
    }
  }

  /** Sends what is waiting now (on stop: nothing committed is left behind). */
  protected flush(): void {
    clearTimeout(this.flushTimer);
    this.flushScheduled = false;
    let batch: string[] = [];
    let size = 0;
    const emit = () => {
      if (batch.length === 0) return;
      const payload = `{"origin":"${this.origin}","items":[${batch.join(',')}]}`;
      this.transmit(payload).catch((err) => this.logger.warn({ err: errorForLog(err) }, 'event fan-out send failed'));
      batch = [];
      size = 0;
    };
    for (const item of this.pending) {
      const bytes = Buffer.byteLength(item);
      if (size + bytes + 64 > MAX_INLINE) emit();
      batch.push(item);
      size += bytes + 1;
    }
    emit();
    this.pending = [];
  }

  /** Delivers an event to this process's listeners unless it was published or delivered here already. */
  protected deliverOnce(event: PublishedEvent): void {
    if (this.delivered.has(event.id)) return;
    this.delivered.remember(event.id);
    this.bus.deliverLocal(event);
  }

  private receiving: Promise<void> = Promise.resolve();

  /** Work on received events runs one piece at a time, in the order it was queued. */
  protected enqueue(work: () => Promise<void>): Promise<void> {
    const next = this.receiving.then(work);
    this.receiving = next.catch(() => undefined);
    return next;
  }

  /**
   * Messages are handled one at a time, in the order they arrived: a message whose events must
   * be read back first does not let a later one overtake it.
   */
  protected receive(payload: string): Promise<void> {
    // Our own messages come back too (NOTIFY reaches every listener): skip them unparsed.
    if (payload.startsWith(`{"origin":"${this.origin}"`)) return Promise.resolve();
    return this.enqueue(() => this.deliver(payload));
  }

  /**
   * Reads back, for every open stream's account and mode, the events committed since `since`,
   * and delivers those not delivered here yet; returns how many were read. With `written`, also
   * those stamped before `since` but written after its mark (taken at or before `since`).
   */
  protected async readBack(loadSince: LoadEventsSince, since: Date, written?: PinnedWritten): Promise<number> {
    let read = 0;
    const deliver = (page: PublishedEvent[]) => {
      for (const event of page) {
        this.deliverOnce(event);
        read += 1;
      }
    };
    for (const scope of this.bus.streamScopes()) {
      let after: { createdAt: string; id: string } | undefined;
      for (;;) {
        const page = await loadSince(scope, since, after, REPLAY_PAGE);
        deliver(page);
        if (page.length < REPLAY_PAGE) break;
        const last = page[page.length - 1];
        after = { createdAt: last.createdAt, id: last.id };
      }
      let afterSeq = written?.mark(scope);
      while (written && afterSeq !== undefined) {
        const page = await written.load(scope, afterSeq, since, REPLAY_PAGE);
        deliver(page);
        afterSeq = page.length < REPLAY_PAGE ? undefined : page[page.length - 1].seq;
      }
    }
    return read;
  }

  /**
   * What `readBack` reads by seq for a gap that opened at `gapSince` (ms), when marks are kept:
   * taken as the gap opens (the marks from then may no longer be kept once it closes).
   */
  protected writtenSince(written: WrittenReadBack | undefined, gapSince: number): PinnedWritten | undefined {
    return written ? { mark: written.marks.before(gapSince - REPLAY_MARGIN_MS), load: written.load } : undefined;
  }

  /** A message's events could not be read back: they are lost unless the fan-out reads them later. */
  protected missed(): void {}

  private async deliver(payload: string): Promise<void> {
    const envelope = JSON.parse(payload) as { origin: string; items: Array<PublishedEvent | { ref: string }> };
    if (envelope.origin === this.origin) return;
    const refs = envelope.items.flatMap((item) => ('ref' in item ? [item.ref] : []));
    let loaded: Map<string, PublishedEvent>;
    try {
      loaded = new Map((refs.length > 0 ? await this.loadWithRetry(refs) : []).map((e) => [e.id, e]));
    } catch (err) {
      this.missed();
      throw err;
    }
    for (const item of envelope.items) {
      const event = 'ref' in item ? loaded.get(item.ref) : item;
      if (event) this.deliverOnce(event);
    }
  }

  /** One more try after a failed read (a dropped connection, a busy pool) before giving the message up. */
  private async loadWithRetry(ids: string[]): Promise<PublishedEvent[]> {
    try {
      return await this.load(ids);
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100));
      return this.load(ids);
    }
  }
}

// Connecting to PostgreSQL gives up after this (a server that does not answer, not only one that refuses).
const CONNECT_TIMEOUT_MS = 5_000;
// Reconnecting the LISTEN connection: 250 ms doubling up to this, so the fan-out resumes within
// about this long once the server is back.
const MAX_RECONNECT_DELAY_MS = 2_000;
// The LISTEN connection proves it is alive this often; a check unanswered for CHECK_TIMEOUT_MS
// counts as a lost connection (a peer gone without a word is otherwise noticed only by TCP).
const CHECK_INTERVAL_MS = 10_000;
const CHECK_TIMEOUT_MS = 5_000;
// After a gap, events are read back from this long before the connection was last known good:
// covers transactions that committed after their events were stamped, and clocks apart by less.
const REPLAY_MARGIN_MS = 30_000;
/** The LISTEN connection's application_name. */
export const LISTENER_NAME = 'payorch event listener';
const REPLAY_PAGE = 500;

/**
 * PostgreSQL LISTEN/NOTIFY on a dedicated connection. When it drops (a server restart, a
 * network failure), it reconnects with backoff and, once it listens again, reads back from the
 * events table what open streams may have missed meanwhile (deduplicated by id), before any
 * newer notification: subscribers get every committed event, at least once.
 */
export class PostgresFanout extends BaseFanout {
  private listener?: pg.Client;
  private notifier?: pg.Pool;
  private stopped = false;
  private failures = 0;
  private reconnectTimer?: NodeJS.Timeout;
  private checkTimer?: NodeJS.Timeout;
  /** When the LISTEN connection was last known to receive everything. */
  private healthyAt = 0;
  /** Since when notifications may have been missed; unset once they have been read back. */
  private missedSince?: number;
  /** What to read back by seq for that gap. */
  private missedWritten?: PinnedWritten;

  constructor(
    private readonly url: string,
    bus: EventBus,
    load: LoadEvents,
    private readonly loadSince: LoadEventsSince,
    logger: Logger,
    clock: Clock,
    delivered?: DeliveredEvents,
    private readonly written?: WrittenReadBack,
  ) {
    super(bus, load, logger, false, clock, delivered);
  }

  async start(): Promise<void> {
    this.notifier = new pg.Pool({ connectionString: this.url, max: 2, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true, keepAliveInitialDelayMillis: 10_000 });
    // An idle connection that the server drops is an 'error' on the pool: unheard, it ends the process.
    this.notifier.on('error', (err) => this.logger.warn({ err: errorForLog(err) }, 'event notifier connection lost'));
    await this.listen(true);
  }

  /** A dedicated LISTEN connection; when it drops, reconnect with backoff and LISTEN again. */
  private async listen(first = false): Promise<void> {
    // Named, so that an operator (or a test) tells it apart in pg_stat_activity.
    const client = new pg.Client({
      connectionString: this.url, application_name: LISTENER_NAME, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true, keepAliveInitialDelayMillis: 10_000,
    });
    client.on('notification', (msg) => {
      if (msg.channel === CHANNEL && msg.payload) {
        this.healthyAt = this.clock.now().getTime();
        this.receive(msg.payload).catch((err) => this.logger.warn({ err: errorForLog(err) }, 'event fan-out receive failed'));
      }
    });
    let lost = false;
    const reconnect = (err?: unknown) => {
      if (lost) return;
      lost = true;
      if (this.listener === client) this.listener = undefined;
      clearInterval(this.checkTimer);
      client.end().catch(() => undefined);
      if (this.stopped) return;
      this.openGap();
      this.logger.error({ err: err ? errorForLog(err) : undefined, attempt: this.failures + 1 }, 'event listener connection lost; reconnecting');
      const delay = Math.min(MAX_RECONNECT_DELAY_MS, 250 * 2 ** this.failures) * (0.8 + 0.4 * Math.random());
      this.failures += 1;
      this.reconnectTimer = setTimeout(() => {
        if (this.stopped) return;
        this.listen().catch((e) => this.logger.error({ err: errorForLog(e) }, 'event listener reconnect failed'));
      }, delay);
      this.reconnectTimer.unref();
    };
    client.on('error', reconnect);
    client.on('end', () => reconnect());
    try {
      await client.connect();
      if (!lost) this.listener = client;
      const listening = client.query(`LISTEN ${CHANNEL}`);
      // Queued before any notification can arrive, so what was missed is delivered first.
      if (this.missedSince !== undefined) this.queueReplay(client, listening);
      await listening;
    } catch (err) {
      if (first) {
        // First start: fail loudly, and leave nothing behind that tries again.
        this.stopped = true;
        clearTimeout(this.reconnectTimer);
        await client.end().catch(() => undefined);
        throw err;
      }
      reconnect(err);
      return;
    }
    if (lost || this.stopped) return;
    this.failures = 0;
    this.healthyAt = this.clock.now().getTime();
    this.checkTimer = setInterval(() => this.check(client, reconnect), CHECK_INTERVAL_MS);
    this.checkTimer.unref();
  }

  private check(client: pg.Client, reconnect: (err?: unknown) => void): void {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('event listener check timed out')), CHECK_TIMEOUT_MS);
    });
    Promise.race([client.query('SELECT 1'), timedOut]).then(
      () => {
        if (this.listener === client) this.healthyAt = this.clock.now().getTime();
        if (this.missedSince !== undefined && this.listener === client) this.queueReplay(client);
      },
      (err) => reconnect(err),
    ).finally(() => clearTimeout(timer));
  }

  /**
   * A replay, queued behind the messages received so far (and after `listening`, when given:
   * the LISTEN it must follow). Nothing waits for it: replay logs a failed read itself and leaves
   * the gap open for the next try, and anything else it might throw is logged here instead of
   * becoming an unhandled rejection, which would end the process.
   */
  private queueReplay(client: pg.Client, listening?: Promise<unknown>): void {
    const work = listening ? () => listening.then(() => this.replay(client), () => undefined) : () => this.replay(client);
    this.enqueue(work).catch((err) => this.logger.error({ err: errorForLog(err) }, 'event fan-out replay failed'));
  }

  /** From now on events may be missed, from the last moment the connection was known good. */
  private openGap(): void {
    if (this.missedSince === undefined) {
      this.missedSince = this.healthyAt || this.clock.now().getTime();
      this.missedWritten = this.writtenSince(this.written, this.missedSince);
    }
    this.delivered.gap('notify', true);
  }

  /** A message could not be read back: read it (and whatever else) back again soon. */
  protected override missed(): void {
    this.openGap();
  }

  /**
   * Reads back, for every open stream's account and mode, the events committed since the gap
   * opened, and delivers those not delivered here yet. On failure the gap stays open: the next
   * check or reconnection tries again.
   */
  private async replay(client: pg.Client): Promise<void> {
    const gapSince = this.missedSince;
    if (gapSince === undefined || this.stopped) return;
    const since = new Date(gapSince - REPLAY_MARGIN_MS);
    let replayed = 0;
    try {
      replayed = await this.readBack(this.loadSince, since, this.missedWritten);
    } catch (err) {
      this.logger.warn({ err: errorForLog(err) }, 'reading back missed events failed; trying again later');
      return;
    }
    // Only if nothing was lost meanwhile (a gap opened again keeps its earlier start).
    if (this.listener === client && this.missedSince === gapSince) {
      this.missedSince = undefined;
      this.missedWritten = undefined;
      this.delivered.gap('notify', false);
      this.logger.info({ since: since.toISOString(), read: replayed }, 'event fan-out caught up after a gap');
    }
  }

  /** Sends a message another fan-out made (RedisFanout's, while Redis is unavailable). */
  relay(payload: string): Promise<void> {
    return this.transmit(payload);
  }

  protected async transmit(payload: string): Promise<void> {
    const notify = () => this.notifier?.query({ name: 'payorch_notify', text: 'SELECT pg_notify($1, $2)', values: [CHANNEL, payload] });
    try {
      await notify();
    } catch {
      // An idle pool connection the server dropped fails once; a new one is taken for the retry.
      await new Promise((resolve) => setTimeout(resolve, 100));
      await notify();
    }
  }

  async stop(): Promise<void> {
    this.flush();
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    clearInterval(this.checkTimer);
    await this.listener?.end().catch(() => undefined);
    await this.notifier?.end().catch(() => undefined);
  }
}

// How long start() waits for the subscription before going on without it (it is made in the background).
const SUBSCRIBE_WAIT_MS = 2_000;
// A read-back that failed is tried again after this.
const READ_BACK_RETRY_MS = 1_000;
// Without NOTIFY (SQLite), messages that could not go out are kept for when Redis is back, up to
// this many bytes (the oldest are given up past it).
const MAX_UNSENT_BYTES = 4 * 1024 * 1024;

/** What the Redis fan-out does while Redis is unavailable, and after. */
export interface RedisFanoutOptions {
  breaker: RedisBreaker;
  /**
   * PostgreSQL NOTIFY, listening beside Redis all the time (an instance that has not yet noticed
   * the outage still receives what the others send this way). None on SQLite: while Redis is
   * unavailable, what this instance sends is kept and goes out once Redis is back.
   */
  notify?: PostgresFanout;
  /** What `notify` was made with: the two deliver each event once, and skip each other's echoes. */
  delivered?: DeliveredEvents;
  /** Reads back what open streams missed while the subscription was down, once it is up again. */
  loadSince?: LoadEventsSince;
  /** And what was written meanwhile but stamped earlier (with `loadSince` only). */
  written?: WrittenReadBack;
}

/** Redis pub/sub (used whenever REDIS_URL is set, whatever the database). */
export class RedisFanout extends BaseFanout {
  private subscriber?: Redis;
  private stopped = false;
  /** Since when messages may have been missed (the subscription dropped); unset once read back. */
  private missedSince?: number;
  /** What to read back by seq for that gap. */
  private missedWritten?: PinnedWritten;
  private retryTimer?: NodeJS.Timeout;
  /** Messages kept while Redis was unavailable, without NOTIFY to carry them (SQLite). */
  private unsent: string[] = [];
  private unsentBytes = 0;
  private unsentDropped = 0;

  constructor(private readonly redis: Redis, bus: EventBus, load: LoadEvents, logger: Logger, clock: Clock, private readonly options?: RedisFanoutOptions) {
    super(bus, load, logger, true, clock, options?.delivered);
  }

  async start(): Promise<void> {
    await this.options?.notify?.start();
    // Its own connection (a subscribed one can do nothing else), which waits for Redis as long as
    // it takes: the subscription is made, and made again after each reconnection, whenever it can be.
    const subscriber = this.redis.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null, commandTimeout: undefined });
    this.subscriber = subscriber;
    subscriber.on('error', () => undefined);
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === CHANNEL) this.receive(message).catch((err) => this.logger.warn({ err: errorForLog(err) }, 'event fan-out receive failed'));
    });
    const options = this.options;
    if (!options) {
      await subscriber.subscribe(CHANNEL);
      return;
    }
    // Until it is subscribed again after an outage, events sent by Redis would not reach it.
    options.breaker.watch(subscriber);
    options.breaker.onRecovered(() => this.sendUnsent());
    subscriber.on('close', () => {
      if (this.stopped) return;
      if (this.missedSince === undefined) {
        this.missedSince = this.clock.now().getTime();
        this.missedWritten = this.writtenSince(this.options?.written, this.missedSince);
      }
      this.delivered.gap('redis', true);
    });
    // ioredis emits `ready` as it sends the subscription again, before Redis has it: a read-back
    // started then could read the database before an event's commit and subscribe after its
    // message. A SUBSCRIBE of ours, sent after ioredis's, answers once Redis has the subscription:
    // what is sent from then on is received, what was sent before is read back.
    const resubscribed = () => {
      if (this.missedSince === undefined || this.stopped || subscriber.status !== 'ready') return;
      subscriber.subscribe(CHANNEL).then(
        () => this.readBackMissed(),
        // Dropped again before the answer: the next `ready` tries again; refused on a connection
        // still up: tried again shortly.
        () => {
          if (this.stopped || subscriber.status !== 'ready') return;
          clearTimeout(this.retryTimer);
          this.retryTimer = setTimeout(resubscribed, READ_BACK_RETRY_MS);
          this.retryTimer.unref();
        },
      );
    };
    subscriber.on('ready', resubscribed);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      subscriber.subscribe(CHANNEL).catch((err) => this.logger.warn({ err: errorForLog(err) }, 'event fan-out could not subscribe to Redis')),
      new Promise((resolve) => (timer = setTimeout(resolve, SUBSCRIBE_WAIT_MS))),
    ]);
    clearTimeout(timer);
  }

  /** Reads back, behind the messages received so far, what open streams may have missed while unsubscribed. */
  private readBackMissed(): void {
    const since = this.missedSince;
    const loadSince = this.options?.loadSince;
    if (since === undefined || this.stopped) return;
    if (!loadSince) {
      this.missedSince = undefined;
      this.missedWritten = undefined;
      this.delivered.gap('redis', false);
      return;
    }
    this.enqueue(async () => {
      try {
        await this.readBack(loadSince, new Date(since - REPLAY_MARGIN_MS), this.missedWritten);
      } catch (err) {
        this.logger.warn({ err: errorForLog(err) }, 'reading back missed events failed; trying again later');
        clearTimeout(this.retryTimer);
        this.retryTimer = setTimeout(() => this.readBackMissed(), READ_BACK_RETRY_MS);
        this.retryTimer.unref();
        return;
      }
      // Only if the subscription has not dropped again meanwhile.
      if (this.missedSince === since && this.subscriber?.status === 'ready') {
        this.missedSince = undefined;
        this.missedWritten = undefined;
        this.delivered.gap('redis', false);
      }
    }).catch((err) => this.logger.error({ err: errorForLog(err) }, 'event fan-out read-back failed'));
  }

  protected async transmit(payload: string): Promise<void> {
    const options = this.options;
    if (!options) {
      await this.redis.publish(CHANNEL, payload);
      return;
    }
    let published = false;
    if (options.breaker.available) {
      try {
        await this.redis.publish(CHANNEL, payload);
        published = true;
      } catch (err) {
        // A publish that timed out may still have gone out: receivers deliver each event once.
        options.breaker.failed(err);
      }
    }
    if (published) return;
    if (options.notify) await options.notify.relay(payload);
    else this.keepUnsent(payload);
  }

  private keepUnsent(payload: string): void {
    this.unsent.push(payload);
    this.unsentBytes += payload.length;
    while (this.unsentBytes > MAX_UNSENT_BYTES) {
      this.unsentBytes -= this.unsent.shift()!.length;
      if (this.unsentDropped++ === 0) this.logger.warn({ keptBytes: MAX_UNSENT_BYTES }, 'Redis unavailable too long: the oldest live events of this outage will not reach the other instances');
    }
  }

  /** Redis is back: what could not go out goes now, oldest first (receivers deliver each event once). */
  private sendUnsent(): void {
    const kept = this.unsent;
    this.unsent = [];
    this.unsentBytes = 0;
    this.unsentDropped = 0;
    for (const payload of kept) this.transmit(payload).catch((err) => this.logger.warn({ err: errorForLog(err) }, 'event fan-out send failed'));
  }

  async stop(): Promise<void> {
    this.flush();
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.unsent = [];
    this.subscriber?.disconnect();
    await this.options?.notify?.stop();
  }
}
