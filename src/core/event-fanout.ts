import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Redis } from 'ioredis';
import type { EventBus, PublishedEvent, RemoteEventSink } from './event-bus';
import { errorForLog, type Logger } from '../logger';

const CHANNEL = 'payorch_events';
// NOTIFY payloads are capped at 8000 bytes; a message never exceeds this, bigger events travel
// by id and are read back.
const MAX_INLINE = 7000;
// Events committed within this window travel in one message: under load one NOTIFY (a round
// trip and a commit in PostgreSQL) carries many events; a remote subscriber waits at most this.
const FLUSH_WINDOW_MS = 10;

export interface EventFanout extends RemoteEventSink {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Reads committed events back by id (those that exist, in any order). */
type LoadEvents = (ids: string[]) => Promise<PublishedEvent[]>;

/** Shared plumbing: tag outgoing events with our origin and ignore our own echoes. */
abstract class BaseFanout implements EventFanout {
  protected readonly origin = randomBytes(8).toString('hex');
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
  ) {}
  abstract start(): Promise<void>;
  abstract stop(): Promise<void>;
  protected abstract transmit(payload: string): Promise<void>;

  private pending: string[] = [];
  private flushScheduled = false;
  private flushTimer?: NodeJS.Timeout;

  /** Events committed within FLUSH_WINDOW_MS travel together: one message instead of one each. */
  send(event: PublishedEvent): void {
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

  private receiving: Promise<void> = Promise.resolve();

  /**
   * Messages are handled one at a time, in the order they arrived: a message whose events must
   * be read back first does not let a later one overtake it.
   */
  protected receive(payload: string): Promise<void> {
    // Our own messages come back too (NOTIFY reaches every listener): skip them unparsed.
    if (payload.startsWith(`{"origin":"${this.origin}"`)) return Promise.resolve();
    const next = this.receiving.then(() => this.deliver(payload));
    this.receiving = next.catch(() => undefined);
    return next;
  }

  private async deliver(payload: string): Promise<void> {
    const envelope = JSON.parse(payload) as { origin: string; items: Array<PublishedEvent | { ref: string }> };
    if (envelope.origin === this.origin) return;
    const refs = envelope.items.flatMap((item) => ('ref' in item ? [item.ref] : []));
    const loaded = new Map((refs.length > 0 ? await this.loadWithRetry(refs) : []).map((e) => [e.id, e]));
    for (const item of envelope.items) {
      const event = 'ref' in item ? loaded.get(item.ref) : item;
      if (event) this.bus.deliverLocal(event);
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

/** PostgreSQL LISTEN/NOTIFY on a dedicated connection. */
export class PostgresFanout extends BaseFanout {
  private listener?: pg.Client;
  private notifier?: pg.Pool;

  constructor(private readonly url: string, bus: EventBus, load: LoadEvents, logger: Logger) {
    super(bus, load, logger, false);
  }

  private stopped = false;

  async start(): Promise<void> {
    this.notifier = new pg.Pool({ connectionString: this.url, max: 2 });
    await this.listen();
  }

  /** A dedicated LISTEN connection; when it drops, reconnect with backoff and LISTEN again. */
  private async listen(attempt = 0): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    client.on('notification', (msg) => {
      if (msg.channel === CHANNEL && msg.payload) {
        this.receive(msg.payload).catch((err) => this.logger.warn({ err: errorForLog(err) }, 'event fan-out receive failed'));
      }
    });
    let reconnecting = false;
    const reconnect = (err?: unknown) => {
      if (this.stopped || reconnecting) return;
      reconnecting = true;
      if (err) this.logger.error({ err: errorForLog(err) }, 'event listener connection lost; reconnecting');
      client.end().catch(() => undefined);
      const delay = Math.min(30_000, 250 * 2 ** attempt);
      setTimeout(() => this.listen(attempt + 1).catch((e) => this.logger.error({ err: errorForLog(e) }, 'event listener reconnect failed')), delay).unref();
    };
    client.on('error', reconnect);
    client.on('end', () => reconnect());
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (err) {
      if (attempt === 0) throw err; // first start: fail loudly
      reconnect(err);
      return;
    }
    this.listener = client;
  }

  protected async transmit(payload: string): Promise<void> {
    await this.notifier?.query({ name: 'payorch_notify', text: 'SELECT pg_notify($1, $2)', values: [CHANNEL, payload] });
  }

  async stop(): Promise<void> {
    this.flush();
    this.stopped = true;
    await this.listener?.end().catch(() => undefined);
    await this.notifier?.end().catch(() => undefined);
  }
}

/** Redis pub/sub (used whenever REDIS_URL is set, whatever the database). */
export class RedisFanout extends BaseFanout {
  private subscriber?: Redis;

  constructor(private readonly redis: Redis, bus: EventBus, load: LoadEvents, logger: Logger) {
    super(bus, load, logger, true);
  }

  async start(): Promise<void> {
    this.subscriber = this.redis.duplicate();
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel === CHANNEL) this.receive(message).catch((err) => this.logger.warn({ err: errorForLog(err) }, 'event fan-out receive failed'));
    });
    await this.subscriber.subscribe(CHANNEL);
  }

  protected async transmit(payload: string): Promise<void> {
    await this.redis.publish(CHANNEL, payload);
  }

  async stop(): Promise<void> {
    this.flush();
    this.subscriber?.disconnect();
  }
}
