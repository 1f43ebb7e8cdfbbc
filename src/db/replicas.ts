import pg from 'pg';
import { Sequelize } from 'sequelize-typescript';
import { configurePostgresSessions } from './postgres-session';
import { realNow, replicaReadAllowed, type ReadScope } from './read-routing';

/** How often each replica's lag is measured. */
export const REPLICA_CHECK_INTERVAL_MS = 1000;
/** A replica (or the primary's WAL position) that does not answer a check within this is counted unreachable. */
const CHECK_TIMEOUT_MS = 2000;
/** A request's read gives up connecting to a replica after this and reads from the primary. */
const REPLICA_CONNECT_TIMEOUT_MS = 2000;
/** A request's read waits at most this for one of a replica's pooled connections, then reads from the primary. */
const REPLICA_ACQUIRE_MS = 3000;

export interface ReplicaLogger {
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface ReplicaSetOptions {
  /** PostgreSQL URLs of the streaming standbys (DATABASE_REPLICA_URLS). */
  urls: string[];
  /** The primary (DATABASE_URL): its WAL position is what the replicas are measured against. */
  primaryUrl: string;
  /** A replica lagging more than this (REPLICA_MAX_LAG_MS) is skipped. */
  maxLagMs: number;
  checkIntervalMs?: number;
  /** Connections per replica pool (as the primary's). */
  poolMax?: number;
  logger?: ReplicaLogger;
}

/** What `ReplicaSet.status()` reports per replica (for /ready and a lag gauge). */
export interface ReplicaStatus {
  /** `host:port/database` of its URL (no credentials). */
  name: string;
  /** Whether reads may go to it now. */
  healthy: boolean;
  /** Its lag at the last check, in ms (0: it had replayed everything the primary had written); null when not known. */
  lagMs: number | null;
  /** Why it is skipped, when it is. */
  reason?: string;
}

/** `0/3016038` (a pg_lsn as text) as a number of bytes. */
export function parseLsn(text: string | null | undefined): bigint | null {
  if (!text) return null;
  const m = /^([0-9A-F]+)\/([0-9A-F]+)$/i.exec(text);
  return m ? (BigInt(`0x${m[1]}`) << 32n) + BigInt(`0x${m[2]}`) : null;
}

/** `host:port/database` of a PostgreSQL URL: a replica's name in logs, /ready and metrics, never its password. */
export function replicaName(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
}

/** One streaming standby: a connection pool of its own (requests' reads) and a connection for its checks. */
export class Replica {
  readonly name: string;
  /** A Sequelize instance without models: its pool's connections are set up as the primary's are. */
  readonly sequelize: Sequelize;
  healthy = false;
  lagMs: number | null = null;
  reason = 'not checked yet';
  /** Every commit made before this (real time, ms) is on the replica, as of its last check. */
  freshAsOf = -Infinity;
  /** When its last check began (real time, ms); -Infinity before the first. */
  checkedAt = -Infinity;
  /** Reads of read-only requests it served. */
  reads = 0;
  /** `healthy` at the last report (null before the first): what a change is logged against. */
  wasHealthy: boolean | null = null;
  private checker: pg.Client | null = null;

  constructor(readonly url: string, poolMax: number) {
    this.name = replicaName(url);
    this.sequelize = new Sequelize(url, {
      dialect: 'postgres',
      logging: false,
      pool: { max: poolMax, min: 0, idle: 10_000, acquire: REPLICA_ACQUIRE_MS },
      dialectOptions: { connectionTimeoutMillis: REPLICA_CONNECT_TIMEOUT_MS, keepAlive: true },
    });
    configurePostgresSessions(this.sequelize);
  }

  /** Where the replica is: in recovery (a standby), the WAL it has replayed, and when the last transaction it replayed committed. */
  async probe(): Promise<{ standby: boolean; replay: string | null; replayedAt: number | null }> {
    const client = await this.checkClient();
    try {
      const { rows } = await client.query<{ standby: boolean; replay: string | null; replayed_at: number | null }>(
        `SELECT pg_is_in_recovery() AS standby, pg_last_wal_replay_lsn()::text AS replay,
                (extract(epoch FROM pg_last_xact_replay_timestamp()) * 1000)::float8 AS replayed_at`,
      );
      return { standby: rows[0].standby, replay: rows[0].replay, replayedAt: rows[0].replayed_at };
    } catch (err) {
      this.dropChecker();
      throw err;
    }
  }

  private async checkClient(): Promise<pg.Client> {
    if (this.checker) return this.checker;
    const client = checkConnection(this.url);
    client.on('error', () => this.dropChecker());
    try {
      await client.connect();
    } catch (err) {
      client.end().catch(() => undefined);
      throw err;
    }
    this.checker = client;
    return client;
  }

  private dropChecker(): void {
    this.checker?.end().catch(() => undefined);
    this.checker = null;
  }

  async close(): Promise<void> {
    this.dropChecker();
    await this.sequelize.close();
  }
}

function checkConnection(url: string): pg.Client {
  return new pg.Client({ connectionString: url, connectionTimeoutMillis: CHECK_TIMEOUT_MS, query_timeout: CHECK_TIMEOUT_MS, keepAlive: true, application_name: 'payorch-replica-check' });
}

/**
 * The read replicas and their health. Every second each replica's lag is measured against the
 * primary's WAL position; a replica lagging more than `maxLagMs`, or not answering, is skipped
 * until a later check finds it back. When none is usable the primary serves the reads, with one
 * warning (and one info line once a replica is back).
 *
 * The lag is an upper bound of how old what a replica shows may be, from two measures; the
 * smaller is kept:
 * - WAL positions: the primary's `pg_current_wal_lsn()` is sampled at each check (with the time
 *   the sample was asked for). A replica whose `pg_last_wal_replay_lsn()` has reached the latest
 *   sample has everything committed before that sample: lag 0. Otherwise it holds everything
 *   committed before the latest sample it has reached. This needs no clock but the instance's.
 * - `pg_last_xact_replay_timestamp()`: the commit time of the last transaction it replayed; it
 *   holds every commit before it. Alone this is misleading on a primary that writes nothing (the
 *   last commit is old, yet nothing is missing), hence the positions first; it sharpens the
 *   bound between two samples on a busy primary, and assumes the servers' clocks agree (NTP).
 */
export class ReplicaSet {
  readonly replicas: Replica[];
  readonly maxLagMs: number;
  /** Reads of read-only requests the primary served (no replica usable, or fresh enough, or the caller had just written). */
  primaryReads = 0;
  private readonly checkIntervalMs: number;
  private readonly logger?: ReplicaLogger;
  private readonly primaryUrl: string;
  private primaryChecker: pg.Client | null = null;
  /** The primary's WAL positions at recent checks, oldest first. */
  private samples: WalSample[] = [];
  private timer: NodeJS.Timeout | null = null;
  private checking: Promise<void> | null = null;
  /** Whether no replica was usable at the last report (null before the first). */
  private noneUsable: boolean | null = null;
  private turn = 0;
  private closed = false;

  constructor(options: ReplicaSetOptions) {
    this.replicas = options.urls.map((url) => new Replica(url, options.poolMax ?? 10));
    this.maxLagMs = options.maxLagMs;
    this.checkIntervalMs = options.checkIntervalMs ?? REPLICA_CHECK_INTERVAL_MS;
    this.logger = options.logger;
    this.primaryUrl = options.primaryUrl;
  }

  /** Measures every replica once (awaited: reads go to replicas from the start), then every second. */
  async start(): Promise<void> {
    await this.check();
    if (this.closed) return;
    this.timer = setInterval(() => void this.check(), this.checkIntervalMs);
    this.timer.unref();
  }

  /**
   * A replica to read from for `scope`, taking turns among the usable ones: healthy at its last
   * check, that check recent, and, when the scope asks (`notBefore`), holding every commit made
   * before it. Null: read from the primary.
   */
  pick(scope: ReadScope | undefined): Replica | null {
    const now = realNow();
    // A check that has not come back within this leaves its replica out (a hung server).
    const staleAfter = Math.max(this.maxLagMs, 3 * this.checkIntervalMs);
    const notBefore = scope?.notBefore ?? -Infinity;
    const usable = this.replicas.filter((r) => r.healthy && now - r.checkedAt <= staleAfter && r.freshAsOf >= notBefore);
    if (usable.length === 0) return null;
    return usable[this.turn++ % usable.length];
  }

  /**
   * A request's read failed on `replica` for a reason of the server's, not the statement's: the
   * replica is skipped until its next check finds it answering (the read itself is run again on
   * the primary by the caller).
   */
  failed(replica: Replica, err: unknown): void {
    if (!replica.healthy) return;
    replica.healthy = false;
    replica.lagMs = null;
    replica.reason = `unreachable: ${messageOf(err)}`;
    this.report();
  }

  /**
   * A read of a request that only reads: on a usable replica when the scope may read from one,
   * run again on the primary when the replica fails it for a reason of its own (down, shutting
   * down, a recovery conflict, a busy pool; the replica is then skipped), counted either way.
   */
  async read<T>(scope: ReadScope, onReplica: (replica: Replica) => Promise<T>, onPrimary: () => Promise<T>): Promise<T> {
    const replica = replicaReadAllowed(scope) ? this.pick(scope) : null;
    if (replica) {
      try {
        const result = await onReplica(replica);
        replica.reads++;
        return result;
      } catch (err) {
        const failure = replicaFailure(err);
        if (!failure.retry) throw err;
        if (failure.skip) this.failed(replica, err);
      }
    }
    const result = await onPrimary();
    if (scope.replica) this.primaryReads++;
    return result;
  }

  /** One check of every replica; a check still running when the next is due is not doubled. */
  check(): Promise<void> {
    this.checking ??= this.checkAll().finally(() => {
      this.checking = null;
    });
    return this.checking;
  }

  private async checkAll(): Promise<void> {
    const at = realNow();
    const lsn = await this.primaryLsn().catch(() => null);
    const current = lsn === null ? null : { at, lsn };
    if (current) this.samples.push(current);
    // Samples old enough that a replica behind them is skipped anyway are dropped.
    const keepFrom = at - this.maxLagMs - 3 * this.checkIntervalMs;
    while (this.samples.length > 1 && this.samples[0].at < keepFrom) this.samples.shift();
    await Promise.all(this.replicas.map((replica) => this.checkReplica(replica, current)));
    if (!this.closed) this.report();
  }

  private async checkReplica(replica: Replica, current: WalSample | null): Promise<void> {
    const startedAt = realNow();
    let probe: Awaited<ReturnType<Replica['probe']>>;
    try {
      probe = await replica.probe();
    } catch (err) {
      replica.checkedAt = startedAt;
      replica.healthy = false;
      replica.lagMs = null;
      replica.reason = `unreachable: ${messageOf(err)}`;
      return;
    }
    replica.checkedAt = startedAt;
    if (!probe.standby) {
      replica.healthy = false;
      replica.lagMs = null;
      replica.reason = 'not a standby: pg_is_in_recovery() is false';
      return;
    }
    const measured = measureLag({ replay: parseLsn(probe.replay), replayedAt: probe.replayedAt, current, samples: this.samples, at: startedAt });
    replica.freshAsOf = measured.freshAsOf;
    replica.lagMs = measured.lagMs;
    replica.healthy = replica.lagMs !== null && replica.lagMs <= this.maxLagMs;
    replica.reason = replica.healthy ? '' : replica.lagMs === null ? 'lag not known (no WAL position or replayed commit to measure it by)' : `lag ${replica.lagMs} ms over REPLICA_MAX_LAG_MS (${this.maxLagMs} ms)`;
  }

  /** The primary's WAL write position, on a connection of the checks' own. */
  private async primaryLsn(): Promise<bigint | null> {
    try {
      if (!this.primaryChecker) {
        const client = checkConnection(this.primaryUrl);
        client.on('error', () => this.dropPrimaryChecker());
        try {
          await client.connect();
        } catch (err) {
          client.end().catch(() => undefined);
          throw err;
        }
        this.primaryChecker = client;
      }
      const { rows } = await this.primaryChecker.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
      return parseLsn(rows[0].lsn);
    } catch (err) {
      this.dropPrimaryChecker();
      throw err;
    }
  }

  private dropPrimaryChecker(): void {
    this.primaryChecker?.end().catch(() => undefined);
    this.primaryChecker = null;
  }

  /** Logs what changed: a replica skipped or back while others serve, or none usable (one warning) and back. */
  private report(): void {
    const usable = this.replicas.filter((r) => r.healthy);
    const noneUsable = usable.length === 0;
    if (noneUsable) {
      if (this.noneUsable !== true) {
        const reasons = Object.fromEntries(this.replicas.map((r) => [r.name, r.reason]));
        this.logger?.warn({ replicas: reasons }, 'no read replica usable: the primary serves every read');
      }
    } else {
      if (this.noneUsable === true) this.logger?.info({ replicas: usable.map((r) => r.name) }, 'read replicas usable again: reads go to them');
      for (const r of this.replicas) {
        if (!r.healthy && r.wasHealthy !== false) this.logger?.warn({ replica: r.name, reason: r.reason }, 'read replica skipped');
        else if (r.healthy && r.wasHealthy === false && this.noneUsable !== true) this.logger?.info({ replica: r.name, lagMs: r.lagMs }, 'read replica back');
      }
    }
    for (const r of this.replicas) r.wasHealthy = r.healthy;
    this.noneUsable = noneUsable;
  }

  /** Each replica's health and lag at its last check (for /ready and a lag gauge). */
  status(): ReplicaStatus[] {
    return this.replicas.map((r) => ({ name: r.name, healthy: r.healthy, lagMs: r.lagMs, ...(r.healthy ? {} : { reason: r.reason }) }));
  }

  /** Reads of read-only requests served per pool since start: `primary` and each replica by name. */
  readCounts(): Record<string, number> {
    return { primary: this.primaryReads, ...Object.fromEntries(this.replicas.map((r) => [r.name, r.reads])) };
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.checking?.catch(() => undefined);
    this.dropPrimaryChecker();
    await Promise.all(this.replicas.map((r) => r.close()));
  }
}

/** A WAL position of the primary and when it was asked for (real time, ms). */
export interface WalSample {
  at: number;
  lsn: bigint;
}

/**
 * How far behind a standby is, from what it reports (`replay`: pg_last_wal_replay_lsn();
 * `replayedAt`: pg_last_xact_replay_timestamp() in ms) and the primary's WAL positions (`current`:
 * this check's, null when the primary did not answer; `samples`: recent checks', oldest first).
 * `freshAsOf`: every commit made before it is on the standby; `lagMs`: how long before `at` that
 * is (0 when it had replayed the primary's position of this check), null when nothing says.
 * See ReplicaSet for why both measures.
 */
export function measureLag(m: { replay: bigint | null; replayedAt: number | null; current: WalSample | null; samples: readonly WalSample[]; at: number }): { freshAsOf: number; lagMs: number | null } {
  if (m.replay !== null && m.current && m.replay >= m.current.lsn) return { freshAsOf: m.current.at, lagMs: 0 };
  let fresh = -Infinity;
  // The latest moment the primary was known to be at or before what the standby replayed.
  if (m.replay !== null) for (const sample of m.samples) if (sample.lsn <= m.replay && sample.at > fresh) fresh = sample.at;
  if (m.replayedAt !== null) fresh = Math.max(fresh, m.replayedAt);
  return { freshAsOf: fresh, lagMs: Number.isFinite(fresh) ? Math.max(0, Math.round(m.at - fresh)) : null };
}

function messageOf(err: unknown): string {
  const e = err as { message?: unknown; parent?: { message?: unknown }; original?: { message?: unknown } };
  const message = e?.parent?.message ?? e?.original?.message ?? e?.message;
  return typeof message === 'string' && message ? message : String(err);
}

/**
 * Whether a read that failed on a replica should run again on the primary, and whether the
 * replica should be skipped meanwhile: anything but the statement's own refusal (a syntax error,
 * bad input, which the primary would refuse alike). A lost or refused connection, a server
 * shutting down, too many connections, a read cancelled by a conflict with recovery (40001),
 * a statement a standby cannot run (25006, read-only), or a wait for one of its pool's
 * connections that timed out all go to the primary.
 */
export function replicaFailure(err: unknown): { retry: boolean; skip: boolean } {
  // Its pool's connections all busy: read from the primary this once, the replica is fine.
  if ((err as { name?: unknown })?.name === 'SequelizeConnectionAcquireTimeoutError') return { retry: true, skip: false };
  let e = err as { code?: unknown; parent?: unknown; original?: unknown } | undefined;
  for (let depth = 0; e && typeof e === 'object' && depth < 3; depth++) {
    if (e instanceof pg.DatabaseError) {
      const code = e.code ?? '';
      if (/^(08|57|58|XX)/.test(code)) return { retry: true, skip: true };
      if (/^(40|53)/.test(code) || code === '25006') return { retry: true, skip: false };
      return { retry: false, skip: false };
    }
    e = (e.parent ?? e.original) as typeof e;
  }
  return { retry: true, skip: true };
}
