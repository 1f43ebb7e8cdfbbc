import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Where a statement outside a transaction reads from, when read replicas are configured
 * (DATABASE_REPLICA_URLS): decided per request, not per statement kind. Everything runs on the
 * primary unless the request said it only reads (a GET route, a GraphQL query, a hosted page, an
 * export's pages): only then may `Database.select` and the models' finders go to a replica, and
 * even then a transaction's statements, and whatever the request reads after it wrote anything,
 * stay on the primary. A POST never reads from a replica, so nothing that decides money (a
 * payment, a refund, an idempotency key, a lease) can act on a replica's older view.
 */
export interface ReadScope {
  /** The request only reads: its statements outside transactions may go to a replica. */
  replica: boolean;
  /**
   * A replica serves this scope only once it holds every commit made before this moment (real
   * time, ms since the epoch): the caller's own last write, or an export's creation.
   */
  notBefore?: number;
  /** The caller wrote within REPLICA_READ_AFTER_WRITE_MS: its reads go to the primary. */
  afterWrite?: boolean;
  /** Something wrote in this scope (a transaction, a statement that changes rows): from then on it reads from the primary. */
  wrote?: boolean;
  /** The routing that made the scope (an HTTP request's), for `allowReplicaReads`. */
  routing?: ReadRouting;
}

const scopes = new AsyncLocalStorage<ReadScope>();

/** The scope the current statement runs in, if any. */
export function currentReadScope(): ReadScope | undefined {
  return scopes.getStore();
}

/** Whether a statement outside a transaction may read from a replica now. */
export function replicaReadAllowed(scope = scopes.getStore()): boolean {
  return scope !== undefined && scope.replica && !scope.afterWrite && !scope.wrote;
}

/** A write ran (or is about to) in the current scope: its later reads go to the primary. */
export function noteScopeWrote(): void {
  const scope = scopes.getStore();
  if (scope) scope.wrote = true;
}

/**
 * Runs `fn` in a scope of its own whose reads may go to a replica holding every commit made
 * before `notBefore` (an export's pages: the rows committed before it was asked for).
 */
export function withReplicaReads<T>(fn: () => Promise<T>, options: { notBefore?: number } = {}): Promise<T> {
  return scopes.run({ replica: true, notBefore: options.notBefore }, fn);
}

/**
 * Runs `fn` with every statement on the primary, whatever scope it was called from: the ordered
 * live streams' reads (EventTail), which must see what the primary's horizon says has ended.
 */
export function onPrimary<T>(fn: () => Promise<T>): Promise<T> {
  return scopes.run({ replica: false }, fn);
}

/**
 * The current request only reads: its reads may go to a replica, unless `caller` (an API key's
 * id, or a public request's client address) wrote within REPLICA_READ_AFTER_WRITE_MS. Without a
 * scope (no replicas configured) it does nothing.
 */
export function allowReplicaReads(caller: string): void {
  const scope = scopes.getStore();
  scope?.routing?.allow(scope, caller);
}

/**
 * Read-your-writes for the requests of one instance: when each caller last wrote. A caller that
 * wrote within `afterWriteMs` reads from the primary; after that, from a replica only once that
 * replica holds every commit made before its write (ReadScope.notBefore). A caller that was sent
 * an event (a GraphQL subscription) reads only from a replica holding it, so the dashboard's
 * refresh on an event shows what the event announced. Kept in this process's memory: a caller
 * whose write went to another instance is not known here (README, "Read replicas").
 */
export class ReadRouting {
  /** Per caller: its last write, and the latest of that and the last event it was sent. */
  private readonly last = new Map<string, { wroteAt: number | null; at: number }>();
  private sweepAt = 0;

  /**
   * `keepMs`: how long a write is remembered, past the window: long enough that any replica still
   * counted healthy (its lag under REPLICA_MAX_LAG_MS) holds it by the time it is forgotten.
   */
  constructor(readonly afterWriteMs: number, private readonly keepMs: number, private readonly now: () => number = realNow) {}

  /** Runs one request in a scope of its own: on the primary until the request says it only reads. */
  run<T>(fn: (scope: ReadScope) => Promise<T>): Promise<T> {
    const scope: ReadScope = { replica: false, routing: this };
    return scopes.run(scope, () => fn(scope));
  }

  allow(scope: ReadScope, caller: string): void {
    scope.replica = true;
    const last = this.last.get(caller);
    if (last === undefined) return;
    scope.notBefore = last.at;
    scope.afterWrite = last.wroteAt !== null && this.now() - last.wroteAt < this.afterWriteMs;
  }

  /** `caller` wrote (or may have: a request that is not a read, finished). */
  noteWrite(caller: string): void {
    const now = this.now();
    this.remember(caller, { wroteAt: now, at: now });
  }

  /** `caller` was sent an event: what it reads next must hold it. */
  noteSeen(caller: string): void {
    const now = this.now();
    this.remember(caller, { wroteAt: this.last.get(caller)?.wroteAt ?? null, at: now });
  }

  private remember(caller: string, last: { wroteAt: number | null; at: number }): void {
    const now = last.at;
    this.last.delete(caller);
    this.last.set(caller, last);
    // Oldest first (re-inserted each time): forgotten from the front.
    if (now >= this.sweepAt) {
      this.sweepAt = now + 1000;
      for (const [key, { at }] of this.last) {
        if (now - at <= this.afterWriteMs + this.keepMs) break;
        this.last.delete(key);
      }
    }
  }

  /** Callers remembered now (tests). */
  get size(): number {
    return this.last.size;
  }
}

/**
 * Real time in ms since the epoch that never goes back (the process's monotonic clock from its
 * start), for replica lag and write times: not the services' injectable clock, which tests freeze.
 */
export function realNow(): number {
  return performance.timeOrigin + performance.now();
}
