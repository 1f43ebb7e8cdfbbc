import { createSourceEventStream, execute, type ExecutionArgs, type ExecutionResult, type FormattedExecutionResult } from 'graphql';
import type { Socket } from 'node:net';
import WebSocket from 'ws';
import type { EventBus, PublishedEvent } from '../src/core/event-bus';
import type { StreamPosition } from '../src/modules/events/event.store';
import { position, ResumableEventStream } from '../src/modules/events/event-stream';
import type { GqlContext } from './context';
import { executeSharingLoaders, type EventLoaders } from './loaders';

/** Where a subscription's results go when they are broadcast: its socket and its operation's id. */
export interface LiveTarget {
  socket: WebSocket;
  id: string;
}

/** What the broadcast needs of the server to write a result the way graphql-ws's onNext would. */
export interface BroadcastFormat {
  /** `extensions.cost` minus `remaining` (the same for every subscriber of a document and result). */
  cost(args: ExecutionArgs, data: ExecutionResult['data']): { requested: number; actual: number };
  /** Results were written to this subscriber (once per batch). */
  sent(args: ExecutionArgs): void;
  /** A result with errors (or extensions of its own), formatted for one subscriber: the slow path. */
  formatted(args: ExecutionArgs, result: ExecutionResult): FormattedExecutionResult;
}

export interface BroadcastLimits {
  /** Events a group takes from its stream and runs together at most. */
  batch: number;
  /** Events a group holds that it has not run yet; past this it stops taking from its stream (which then reads back). */
  queued: number;
  /** Bytes a subscriber's socket may hold unsent before it leaves the broadcast for a stream of its own. */
  socketBuffer: number;
  /**
   * The least time between the starts of two batches. An event after a quiet spell goes at once;
   * under a stream of events, those of this span go together, in one write per socket: a write
   * to a TLS socket costs about the same for one message as for ten, and 200 sockets × 500
   * events a second is 100,000 writes one by one. It adds at most this to an event's way.
   */
  intervalMs: number;
}

export const BROADCAST_LIMITS: BroadcastLimits = { batch: 500, queued: 2000, socketBuffer: 1 << 20, intervalMs: 50 };

const ctxOf = (args: ExecutionArgs) => args.contextValue as GqlContext & { live?: LiveTarget };

/**
 * Live subscriptions that ask the same thing are run once per event and written to each socket.
 *
 * Subscribers of one account and mode, with the same permissions, that sent the same document with
 * the same variables get the same events and the same results: they form a group. The group holds
 * one event stream (the first subscriber's), runs each event's selection once (the events that
 * came together in one execution, with one set of loaders), turns the result into JSON text once,
 * and writes each subscriber's message straight to its socket: only the operation id and the
 * subscriber's `extensions.cost.remaining` differ, spliced into the text. Each socket gets a
 * batch's messages as one buffer of frames, in one TLS write (sendFrames).
 *
 * A subscriber whose socket holds more than `socketBuffer` unsent bytes leaves the group for a
 * stream of its own from its last event (ResumableEventStream.continueAfter), which graphql-ws then
 * drives at the socket's pace, reading back from the database what it missed: a slow socket never
 * holds the group up and never loses an event. A subscription that resumes (`after`) runs on its
 * own from the start, as do results with errors (formatted per subscriber, each under its own
 * request id).
 */
export class LiveBroadcast {
  private readonly groups = new Map<string, BroadcastGroup>();

  constructor(
    private readonly bus: EventBus,
    private readonly eventLoaders: EventLoaders,
    private readonly format: BroadcastFormat,
    private readonly limits: BroadcastLimits = BROADCAST_LIMITS,
  ) {}

  /** Groups running now, and their subscribers (tests). */
  get stats(): { groups: number; members: number } {
    let members = 0;
    for (const g of this.groups.values()) members += g.size;
    return { groups: this.groups.size, members };
  }

  /** graphql-ws's `subscribe`: the subscription joins its group, or runs alone where it cannot. */
  async subscribe(args: ExecutionArgs): Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult> {
    const source = await createSourceEventStream(args);
    if (!(Symbol.asyncIterator in Object(source))) return source as ExecutionResult;
    const context = ctxOf(args);
    // Counted once it listens, and once more when it ends, whichever way (SubscriptionCount).
    const count = new SubscriptionCount(this.bus);
    if (!context.live || !(source instanceof ResumableEventStream) || source.resumes) {
      return alone(args, source as AsyncIterableIterator<unknown>, this.eventLoaders, count);
    }
    const key = groupKey(args);
    const group = this.groups.get(key);
    if (group && !group.ended) {
      // The group's stream carries the same events from now on: this one's own is not needed.
      await source.return();
      return group.join(args, context.live, count);
    }
    const created = new BroadcastGroup(source, args, this.eventLoaders, this.format, this.limits, () => {
      if (this.groups.get(key) === created) this.groups.delete(key);
    });
    this.groups.set(key, created);
    return created.join(args, context.live, count);
  }
}

/** What makes two subscriptions' results the same: the scope, the permissions, the document and its variables. */
function groupKey(args: ExecutionArgs): string {
  const { rc } = ctxOf(args);
  const query = (args.document.loc?.source.body) ?? JSON.stringify(args.document);
  return JSON.stringify([rc.accountId, rc.mode, [...rc.permissions].sort(), query, args.operationName ?? null, args.variableValues ?? null]);
}

/** One subscription on the bus's count of open ones: opened when made, closed once. */
class SubscriptionCount {
  private open = true;

  constructor(private readonly bus: EventBus) {
    bus.subscriptionOpened();
  }

  close(): void {
    if (!this.open) return;
    this.open = false;
    this.bus.subscriptionClosed();
  }
}

/** A subscription run on its own: each event executed with the loaders shared for it. */
function alone(args: ExecutionArgs, events: AsyncIterator<unknown>, eventLoaders: EventLoaders, count?: SubscriptionCount): AsyncIterableIterator<ExecutionResult> {
  const close = async () => {
    count?.close();
    await events.return?.();
  };
  const results: AsyncIterableIterator<ExecutionResult> = {
    async next() {
      let next: IteratorResult<unknown>;
      try {
        next = await events.next();
      } catch (err) {
        await close().catch(() => undefined);
        throw err;
      }
      if (next.done) {
        count?.close();
        return { value: undefined, done: true };
      }
      return { value: await executeSharingLoaders(args, next.value, eventLoaders), done: false };
    },
    async return() {
      await close();
      return { value: undefined, done: true };
    },
    async throw(err?: unknown) {
      await close();
      throw err;
    },
    [Symbol.asyncIterator]() {
      return results;
    },
  };
  return results;
}

/**
 * Writes text messages to a socket as one buffer of WebSocket frames (RFC 6455: FIN and the text
 * opcode, unmasked as a server's are, then the length in 7, 16 or 64 bits), in one write to the
 * TLS socket underneath: one encryption and one system call for the batch instead of two writes
 * per message through ws. Safe beside ws's own writes because ws queues nothing of its own
 * without permessage-deflate, which the server leaves off: every frame it sends goes straight to
 * the same socket, in order. Without a socket underneath (never for a live connection), ws sends
 * them.
 */
export function sendFrames(socket: WebSocket, messages: readonly string[]): void {
  const raw = (socket as unknown as { _socket?: Socket })._socket;
  if (!raw || socket.extensions !== '') {
    for (const message of messages) socket.send(message);
    return;
  }
  const lengths = messages.map((m) => Buffer.byteLength(m));
  const total = lengths.reduce((sum, n) => sum + n + (n < 126 ? 2 : n < 65536 ? 4 : 10), 0);
  const frames = Buffer.allocUnsafe(total);
  let at = 0;
  for (let i = 0; i < messages.length; i++) {
    const n = lengths[i];
    frames[at++] = 0x81;
    if (n < 126) {
      frames[at++] = n;
    } else if (n < 65536) {
      frames[at++] = 126;
      frames.writeUInt16BE(n, at);
      at += 2;
    } else {
      frames[at++] = 127;
      frames.writeBigUInt64BE(BigInt(n), at);
      at += 8;
    }
    at += frames.write(messages[i], at, 'utf8');
  }
  raw.write(frames);
}

/** One subscriber of a group, as graphql-ws iterates it. */
class Member implements AsyncIterableIterator<ExecutionResult> {
  /** The last event written to this subscriber. */
  last: StreamPosition | null = null;
  /** Its own results, once it left the group (fell behind). */
  private own: AsyncIterableIterator<ExecutionResult> | null = null;
  private waiting: { resolve(r: IteratorResult<ExecutionResult>): void; reject(err: unknown): void } | null = null;
  private finished: { error?: unknown } | null = null;

  constructor(
    readonly args: ExecutionArgs,
    readonly target: LiveTarget,
    /** The group's count of events when this subscriber joined: it gets those after. */
    readonly joinedAt: number,
    /** The budget left when the operation was counted (its `extensions.cost.remaining`). */
    readonly remaining: number,
    private readonly leave: (member: Member) => void,
    /** Closed when the subscription ends (here) or its own stream does (alone). */
    readonly count: SubscriptionCount,
  ) {}

  /** Goes on alone with `results` (the group's events from where this subscriber is). */
  goAlone(results: AsyncIterableIterator<ExecutionResult>): void {
    this.own = results;
    const waiting = this.waiting;
    this.waiting = null;
    if (waiting) results.next().then(waiting.resolve, waiting.reject);
  }

  /** The group ended: its stream is over, or failed. */
  end(error?: unknown): void {
    this.count.close();
    this.finished = error === undefined ? {} : { error };
    const waiting = this.waiting;
    this.waiting = null;
    if (!waiting) return;
    if (error === undefined) waiting.resolve({ value: undefined, done: true });
    else waiting.reject(error);
  }

  next(): Promise<IteratorResult<ExecutionResult>> {
    if (this.own) return this.own.next();
    if (this.finished) {
      if ('error' in this.finished) return Promise.reject(this.finished.error);
      return Promise.resolve({ value: undefined, done: true });
    }
    // While in the group, its results are written straight to the socket: nothing passes here
    // until the subscription ends or the subscriber leaves the group.
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
  }

  async return(): Promise<IteratorResult<ExecutionResult>> {
    this.leave(this);
    this.end();
    this.finished = {};
    const own = this.own;
    this.own = null;
    await own?.return?.();
    return { value: undefined, done: true };
  }

  async throw(err?: unknown): Promise<IteratorResult<ExecutionResult>> {
    await this.return();
    throw err;
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<ExecutionResult> {
    return this;
  }
}

class BroadcastGroup {
  private readonly members = new Set<Member>();
  private readonly queue: Array<{ seq: number; event: PublishedEvent }> = [];
  /** Events taken from the stream so far: a subscriber gets those after its joining count. */
  private taken = 0;
  private batches = 0;
  /** When the last batch began (performance.now()). */
  private lastBatchAt = -Infinity;
  ended = false;
  private wakePump?: () => void;
  private wakePull?: () => void;

  constructor(
    private readonly source: ResumableEventStream,
    /** The first subscriber's arguments: the document, variables and scope every member shares. */
    private readonly args: ExecutionArgs,
    private readonly eventLoaders: EventLoaders,
    private readonly format: BroadcastFormat,
    private readonly limits: BroadcastLimits,
    private readonly onEnd: () => void,
  ) {
    void this.pull();
    void this.pump();
  }

  get size(): number {
    return this.members.size;
  }

  join(args: ExecutionArgs, target: LiveTarget, count: SubscriptionCount): Member {
    const member = new Member(args, target, this.taken, ctxOf(args).cost?.remaining ?? 0, (m) => this.leave(m), count);
    this.members.add(member);
    return member;
  }

  private leave(member: Member): void {
    if (!this.members.delete(member) || this.members.size > 0 || this.ended) return;
    // The last subscriber left: the stream closes.
    this.finish();
  }

  private finish(error?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd();
    this.queue.length = 0;
    this.wakePump?.();
    this.wakePull?.();
    for (const member of this.members) member.end(error);
    this.members.clear();
    this.source.return().catch(() => undefined);
  }

  /** Takes events from the stream as they come, holding at most `queued` not yet run. */
  private async pull(): Promise<void> {
    try {
      for (;;) {
        while (this.queue.length >= this.limits.queued && !this.ended) await new Promise<void>((resolve) => (this.wakePull = resolve));
        if (this.ended) return;
        const next = await this.source.next();
        if (this.ended) return;
        if (next.done) return this.finish();
        this.taken += 1;
        this.queue.push({ seq: this.taken, event: next.value });
        this.wakePump?.();
      }
    } catch (err) {
      this.finish(err);
    }
  }

  /** Runs what the stream gave, a batch at a time, and writes it to every subscriber. */
  private async pump(): Promise<void> {
    try {
      for (;;) {
        while (this.queue.length === 0 && !this.ended) await new Promise<void>((resolve) => (this.wakePump = resolve));
        // Events that came together (one fan-out message, one commit's events) are taken from the
        // stream one promise turn each: what arrived in this turn is all queued by the next one.
        // Under a stream of events, the batch also waits out the interval since the last one began.
        const wait = this.lastBatchAt + this.limits.intervalMs - performance.now();
        await new Promise<void>((resolve) => (wait > 1 ? setTimeout(resolve, wait) : setImmediate(resolve)));
        if (this.ended) return;
        this.lastBatchAt = performance.now();
        const batch = this.queue.splice(0, this.limits.batch);
        this.wakePull?.();
        const results = await this.run(batch.map((b) => b.event));
        if (this.ended) return;
        this.write(batch, results);
      }
    } catch (err) {
      this.finish(err);
    }
  }

  /** The batch's events executed once, together, with one set of loaders (one statement per field for the batch). */
  private async run(events: PublishedEvent[]): Promise<ExecutionResult[]> {
    const context = ctxOf(this.args);
    this.batches += 1;
    const shared = this.eventLoaders.acquire(context.rc, `broadcast:${this.batches}:${events[0].id}`);
    try {
      return await Promise.all(events.map(async (event) => execute({ ...this.args, rootValue: event, contextValue: { ...context, loaders: shared.loaders } })));
    } finally {
      shared.release();
    }
  }

  /** Each subscriber's messages for the batch, written as one buffer of WebSocket frames. */
  private write(batch: Array<{ seq: number; event: PublishedEvent }>, results: ExecutionResult[]): void {
    // Each result as JSON text once: what every subscriber's message shares.
    const texts = results.map((result) => {
      if (result.errors || result.extensions) return null;
      const { requested, actual } = this.format.cost(this.args, result.data);
      return `"payload":{"data":${JSON.stringify(result.data)},"extensions":{"cost":{"requested":${requested},"actual":${actual},"remaining":`;
    });
    for (const member of [...this.members]) {
      const { socket, id } = member.target;
      if (socket.readyState !== WebSocket.OPEN) continue;
      const head = `{"id":${JSON.stringify(id)},"type":"next",`;
      const messages: string[] = [];
      for (let i = 0; i < batch.length; i++) {
        const { seq, event } = batch[i];
        if (seq <= member.joinedAt) continue;
        if (socket.bufferedAmount > this.limits.socketBuffer) {
          // Too slow for the group: on alone, after its last event (or from this one).
          this.members.delete(member);
          const from = member.last ?? { from: [event.id] };
          member.goAlone(alone(member.args, this.source.continueAfter(from), this.eventLoaders, member.count));
          break;
        }
        const text = texts[i];
        messages.push(text === null
          ? JSON.stringify({ id, type: 'next', payload: this.format.formatted(member.args, results[i]) })
          : `${head}${text}${member.remaining}}}}}`);
        member.last = position(event);
      }
      if (messages.length === 0) continue;
      sendFrames(socket, messages);
      this.format.sent(member.args);
    }
    if (this.members.size === 0 && !this.ended) this.finish();
  }
}
