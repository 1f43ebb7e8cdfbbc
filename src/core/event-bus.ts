import { EventEmitter } from 'node:events';

export interface PublishedEvent {
  id: string;
  object: 'event';
  type: string;
  createdAt: string;
  livemode: boolean;
  accountId: string;
  data: { object: Record<string, unknown> };
  /**
   * Where it was written in its account and mode's order (`events.seq`), when it was read from
   * the database (the ordered streams' tail, a read-back): the streams' own, never sent.
   */
  seq?: number;
  /**
   * Delivered by the tail after events written after it (its transaction ran too long to be
   * waited for): a stream resumed after one of those has not had it, though its seq is lower.
   */
  late?: true;
}

/** An account and mode that open streams (GraphQL subscriptions) listen to. */
export interface StreamScope {
  accountId: string;
  livemode: boolean;
}

/** One key per scope (maps of scopes: open streams, marks, the tail's woken scopes). */
export function streamScopeKey(scope: StreamScope): string {
  return `${scope.accountId}:${scope.livemode}`;
}

/** Carries committed events to the other instances (PostgreSQL NOTIFY or Redis pub/sub). */
export interface RemoteEventSink {
  send(event: PublishedEvent): void;
}

/**
 * Fan-out of committed events: to this process's listeners (GraphQL subscriptions, worker
 * wake-ups) and, through the remote sink, to every other instance.
 */
export class EventBus {
  private readonly emitter = new EventEmitter();
  private remote?: RemoteEventSink;
  /** Told of the events committed on this instance only (metrics count each move once, where it was made). */
  private readonly committedListeners = new Set<(event: PublishedEvent) => void>();
  /** Open streams per account and mode: what the fan-out replays after missing events. */
  private readonly openStreams = new Map<string, StreamScope & { streams: number }>();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  connectRemote(remote: RemoteEventSink | undefined): void {
    this.remote = remote;
  }

  publish(event: PublishedEvent): void {
    for (const listener of this.committedListeners) listener(event);
    this.deliverLocal(event);
    this.remote?.send(event);
  }

  /** An event that arrived from another instance: local listeners only. */
  deliverLocal(event: PublishedEvent): void {
    this.emitter.emit('event', event);
  }

  /** Events committed by this instance (publish), not those other instances committed (deliverLocal). */
  onCommitted(listener: (event: PublishedEvent) => void): () => void {
    this.committedListeners.add(listener);
    return () => this.committedListeners.delete(listener);
  }

  subscribe(listener: (event: PublishedEvent) => void): () => void {
    this.emitter.on('event', listener);
    return () => this.emitter.off('event', listener);
  }

  private subscriptions = 0;

  /**
   * A live subscription (GraphQL) started, or ended. Several may share one stream (the GraphQL
   * broadcast): these count the subscriptions themselves.
   */
  subscriptionOpened(): void {
    this.subscriptions += 1;
  }

  subscriptionClosed(): void {
    this.subscriptions -= 1;
  }

  /** Live subscriptions open on this instance. */
  get openSubscriptions(): number {
    return this.subscriptions;
  }

  private readonly scopeListeners: Array<(scope: StreamScope) => void> = [];

  /** Called as a stream opens for an account and mode no other open stream listens to. */
  onScopeOpened(listener: (scope: StreamScope) => void): void {
    this.scopeListeners.push(listener);
  }

  /** The accounts and modes that open streams listen to. */
  streamScopes(): StreamScope[] {
    return [...this.openStreams.values()].map(({ accountId, livemode }) => ({ accountId, livemode }));
  }

  /**
   * An async iterator of the events of `scope` passing `filter`, for GraphQL subscriptions. The
   * scope is remembered while the stream is open, so events missed can be read back for it.
   */
  stream(scope: StreamScope, filter: (event: PublishedEvent) => boolean): AsyncIterableIterator<PublishedEvent> {
    const scopeKey = streamScopeKey(scope);
    const known = this.openStreams.get(scopeKey);
    const open = known ?? { ...scope, streams: 0 };
    open.streams += 1;
    this.openStreams.set(scopeKey, open);
    if (!known) for (const listener of this.scopeListeners) listener({ accountId: scope.accountId, livemode: scope.livemode });
    const stream = queuedIterator<PublishedEvent>(() => {
      open.streams -= 1;
      if (open.streams === 0) this.openStreams.delete(scopeKey);
      unsubscribe();
    });
    const unsubscribe = this.subscribe((event) => {
      if (event.accountId !== scope.accountId || event.livemode !== scope.livemode || !filter(event)) return;
      stream.push(event);
    });
    return stream.iterator;
  }
}

/**
 * An async iterator over values pushed to it, in the order pushed, held until taken; `onEnd` runs
 * once, when the consumer ends it (return or throw).
 */
export function queuedIterator<T>(onEnd: () => void): { push(value: T): void; iterator: AsyncIterableIterator<T> } {
  const queue: T[] = [];
  let wake: (() => void) | undefined;
  let done = false;
  const finish = async (): Promise<IteratorResult<T>> => {
    if (!done) {
      done = true;
      onEnd();
    }
    wake?.();
    return { value: undefined, done: true };
  };
  const iterator: AsyncIterableIterator<T> = {
    async next() {
      while (!done && queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
      if (queue.length > 0) return { value: queue.shift() as T, done: false };
      return { value: undefined, done: true };
    },
    return: finish,
    throw: async (err) => {
      await finish();
      throw err;
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return {
    push(value) {
      if (done) return;
      queue.push(value);
      wake?.();
    },
    iterator,
  };
}
