import { EventEmitter } from 'node:events';

export interface PublishedEvent {
  id: string;
  object: 'event';
  type: string;
  createdAt: string;
  livemode: boolean;
  accountId: string;
  data: { object: Record<string, unknown> };
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

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  connectRemote(remote: RemoteEventSink | undefined): void {
    this.remote = remote;
  }

  publish(event: PublishedEvent): void {
    this.deliverLocal(event);
    this.remote?.send(event);
  }

  /** An event that arrived from another instance: local listeners only. */
  deliverLocal(event: PublishedEvent): void {
    this.emitter.emit('event', event);
  }

  subscribe(listener: (event: PublishedEvent) => void): () => void {
    this.emitter.on('event', listener);
    return () => this.emitter.off('event', listener);
  }

  /** An async iterator of the events passing `filter`, for GraphQL subscriptions. */
  stream(filter: (event: PublishedEvent) => boolean): AsyncIterableIterator<PublishedEvent> {
    const queue: PublishedEvent[] = [];
    let wake: (() => void) | undefined;
    let done = false;
    const unsubscribe = this.subscribe((event) => {
      if (!filter(event)) return;
      queue.push(event);
      wake?.();
    });
    const finish = async () => {
      done = true;
      unsubscribe();
      wake?.();
      return { value: undefined, done: true } as IteratorResult<PublishedEvent>;
    };
    const iterator: AsyncIterableIterator<PublishedEvent> = {
      async next() {
        while (!done && queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        if (queue.length > 0) return { value: queue.shift() as PublishedEvent, done: false };
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
    return iterator;
  }
}
