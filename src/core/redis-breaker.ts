import { Redis } from 'ioredis';
import { systemStopwatch, type Stopwatch } from './clock';
import { errorForLog, type Logger } from '../logger';

// Reconnecting: 100 ms more each attempt, at most this apart, for as long as it takes.
const MAX_RECONNECT_DELAY_MS = 1_000;
// How long the first connection may take before the service starts without Redis.
const START_WAIT_MS = 1_000;

/**
 * A Redis client that never makes a request wait on Redis: each call fails within `timeoutMs`,
 * at once while disconnected (no offline queue), and is never tried again (a stale rate-limit
 * increment or publish resent after a reconnect would count or send twice). It reconnects in
 * the background for as long as it takes.
 */
export function connectRedis(url: string, timeoutMs: number): Redis {
  const redis = new Redis(url, {
    commandTimeout: timeoutMs,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    connectTimeout: Math.max(1_000, timeoutMs),
    retryStrategy: (attempt) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
    // Closing while Redis is away arms a timer on the dead socket (2 s by default) that holds the process.
    disconnectTimeout: 200,
  });
  // Unheard, every failed reconnection would print to stderr; the breaker logs the outage once.
  redis.on('error', () => undefined);
  return redis;
}

export interface RedisBreakerOptions {
  /** How often Redis is asked (PING) whether it answers again while the breaker is open (1 s unless given). */
  probeIntervalMs?: number;
  /** What the service does without Redis, for the warning. */
  fallback?: string;
  stopwatch?: Stopwatch;
}

/**
 * Whether Redis is used (closed) or bypassed (open). A failed or timed-out call, or the
 * connection dropping, opens it: the callers then use their fallback (per-instance counters,
 * PostgreSQL NOTIFY) with one warning logged; a PING every `probeIntervalMs` closes it again
 * once Redis answers, with one info line.
 */
export class RedisBreaker {
  private openedAt?: number;
  private probeTimer?: NodeJS.Timeout;
  private probing = false;
  private stopped = false;
  private readonly probeIntervalMs: number;
  private readonly stopwatch: Stopwatch;
  private readonly watched: Redis[] = [];
  private readonly recoveryListeners: Array<() => void> = [];

  constructor(private readonly redis: Redis, private readonly logger: Logger, private readonly options: RedisBreakerOptions = {}) {
    this.probeIntervalMs = options.probeIntervalMs ?? 1_000;
    this.stopwatch = options.stopwatch ?? systemStopwatch;
    redis.on('close', () => this.failed(new Error('Redis connection closed')));
  }

  /**
   * Waits for the first connection, at most about a second: a Redis that is not there at
   * start-up leaves the service running without it (open), until it answers.
   */
  async start(waitMs = START_WAIT_MS): Promise<void> {
    if (this.redis.status !== 'ready') {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.redis.off('ready', done);
          this.redis.off('error', done);
          resolve();
        };
        const timer = setTimeout(done, waitMs);
        this.redis.on('ready', done);
        this.redis.on('error', done);
      });
    }
    if (this.redis.status !== 'ready') this.failed(new Error(`Redis not reachable at start-up (${this.redis.status})`));
  }

  /**
   * Another connection to the same Redis (the fan-out's subscriber): its dropping opens the
   * breaker too, and the breaker closes only once it is connected again.
   */
  watch(connection: Redis): void {
    this.watched.push(connection);
    connection.on('close', () => this.failed(new Error('Redis connection closed')));
  }

  /** Called each time Redis is used again after an outage. */
  onRecovered(listener: () => void): void {
    this.recoveryListeners.push(listener);
  }

  /** Whether calls go to Redis now. */
  get available(): boolean {
    return this.openedAt === undefined;
  }

  /** A Redis call failed or timed out: bypass Redis until a probe answers. */
  failed(err: unknown): void {
    if (this.stopped || this.openedAt !== undefined) return;
    this.openedAt = this.stopwatch.elapsedMs();
    this.logger.warn(
      { err: errorForLog(err), fallback: this.options.fallback },
      'Redis unavailable: working without it until it answers again',
    );
    this.scheduleProbe();
  }

  private scheduleProbe(): void {
    clearTimeout(this.probeTimer);
    this.probeTimer = setTimeout(() => void this.probe(), this.probeIntervalMs);
    this.probeTimer.unref();
  }

  private async probe(): Promise<void> {
    if (this.stopped || this.openedAt === undefined || this.probing) return;
    this.probing = true;
    try {
      await this.redis.ping();
      if (this.watched.some((c) => c.status !== 'ready')) throw new Error('a watched connection is not ready yet');
    } catch {
      if (!this.stopped) this.scheduleProbe();
      return;
    } finally {
      this.probing = false;
    }
    if (this.stopped || this.openedAt === undefined) return;
    const unavailableMs = Math.round(this.stopwatch.elapsedMs() - this.openedAt);
    this.openedAt = undefined;
    this.logger.info({ unavailableMs }, 'Redis answers again: using it again');
    for (const listener of this.recoveryListeners) listener();
  }

  /** On shutdown: no more probes, and the connection closing is not an outage. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.probeTimer);
  }
}
