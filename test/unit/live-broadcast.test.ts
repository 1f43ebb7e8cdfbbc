import { GraphQLID, GraphQLInt, GraphQLObjectType, GraphQLSchema, GraphQLString, parse, type ExecutionArgs } from 'graphql';
import WebSocket, { WebSocketServer } from 'ws';
import { EventBus, type PublishedEvent } from '../../src/core/event-bus';
import type { RequestContext } from '../../src/core/context';
import type { Services } from '../../src/services';
import { ResumableEventStream } from '../../src/modules/events/event-stream';
import { EventLoaders } from '../../schema/loaders';
import { LiveBroadcast, sendFrames } from '../../schema/live-broadcast';
import { waitFor } from '../helpers/wait';

/*
 * LiveBroadcast on a schema of its own: subscribers asking the same thing share one run per event
 * and one JSON text, each message with its own operation id and remaining budget; a subscriber
 * gets only what came after it joined; a slow socket leaves for a stream of its own from its last
 * event, missing nothing and getting nothing twice; the stream closes with the last subscriber.
 */

const ACCOUNT = 'acct_1';
let runs = 0;
/** Every event committed, in order: what a stream reads back from "the database". */
let committed: PublishedEvent[] = [];
let bus: EventBus;
let seq = 0;

/**
 * Set: what the live side of every new stream yields first, then the bus's events, as an ordered
 * tail (EventTail) still behind the events a group's stream read back gives them.
 */
let behind: PublishedEvent[] = [];
function after(first: PublishedEvent[], events: AsyncIterableIterator<PublishedEvent>): AsyncIterableIterator<PublishedEvent> {
  const pending = [...first];
  const iterator: AsyncIterableIterator<PublishedEvent> = {
    next: async () => (pending.length > 0 ? { value: pending.shift() as PublishedEvent, done: false } : events.next()),
    return: () => events.return!(),
    [Symbol.asyncIterator]: () => iterator,
  };
  return iterator;
}

/** Set: the live side of every stream fails with it at its next event (a lost connection, say). */
let liveFailure: Error | null = null;
function failing(events: AsyncIterableIterator<PublishedEvent>): AsyncIterableIterator<PublishedEvent> {
  const iterator: AsyncIterableIterator<PublishedEvent> = {
    next: async () => {
      const next = await events.next();
      if (liveFailure) throw liveFailure;
      return next;
    },
    return: () => events.return!(),
    [Symbol.asyncIterator]: () => iterator,
  };
  return iterator;
}

const Tick = new GraphQLObjectType({
  name: 'Tick',
  fields: {
    id: { type: GraphQLID },
    n: {
      type: GraphQLInt,
      resolve: (o: { n: number }) => {
        runs += 1;
        return o.n;
      },
    },
    label: { type: GraphQLString, args: { prefix: { type: GraphQLString } }, resolve: (o: { n: number }, a: { prefix?: string }) => `${a.prefix ?? ''}${o.n}` },
  },
});
const schema = new GraphQLSchema({
  query: new GraphQLObjectType({ name: 'Query', fields: { x: { type: GraphQLInt } } }),
  subscription: new GraphQLObjectType({
    name: 'Subscription',
    fields: {
      tick: {
        type: Tick,
        subscribe: () => new ResumableEventStream({
          live: () => failing(after(behind, bus.stream({ accountId: ACCOUNT, livemode: false }, () => true))),
          // `committed` is in the order the events were written.
          after: async (position, limit) => {
            const ids = committed.map((e) => e.id);
            const start = 'after' in position ? ids.indexOf(position.after) + 1 : Math.min(...position.from.map((id) => ids.indexOf(id)));
            return committed.slice(start, start + limit);
          },
        }, null, () => true),
        resolve: (e: PublishedEvent) => e.data.object,
      },
    },
  }),
});

/** Reads text frames (unmasked, as a server writes them) back into messages. */
function readFrames(buffer: Buffer): string[] {
  const out: string[] = [];
  let at = 0;
  while (at < buffer.length) {
    expect(buffer[at]).toBe(0x81);
    let n = buffer[at + 1];
    at += 2;
    if (n === 126) {
      n = buffer.readUInt16BE(at);
      at += 2;
    } else if (n === 127) {
      n = Number(buffer.readBigUInt64BE(at));
      at += 8;
    }
    out.push(buffer.subarray(at, at + n).toString('utf8'));
    at += n;
  }
  return out;
}

/** A socket that records the frames written under it; `bufferedAmount` is set by the test. */
class FakeSocket {
  readyState: number = WebSocket.OPEN;
  extensions = '';
  bufferedAmount = 0;
  sent: string[] = [];
  writes = 0;
  _socket = {
    write: (frames: Buffer) => {
      this.writes += 1;
      this.sent.push(...readFrames(frames));
    },
  };
}

const rc = (): RequestContext => ({ accountId: ACCOUNT, mode: 'test', permissions: ['*'], requestId: `req_${Math.random()}`, clock: { now: () => new Date() } } as RequestContext);

function args(socket: FakeSocket, id: string, remaining: number, query = 'subscription { tick { id n } }', variables?: Record<string, unknown>): ExecutionArgs {
  return {
    schema,
    document: parse(query),
    variableValues: variables,
    contextValue: { rc: rc(), services: {} as Services, loaders: {}, cost: { base: 1, requested: 1, remaining }, live: { socket: socket as unknown as WebSocket, id } },
  };
}

function publish(n: number): PublishedEvent {
  seq += 1;
  const event: PublishedEvent = {
    id: `evt_${String(seq).padStart(6, '0')}`, object: 'event', type: 'tick', createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, seq)).toISOString(),
    livemode: false, accountId: ACCOUNT, data: { object: { id: `tick_${n}`, n } }, seq,
  };
  committed.push(event);
  bus.publish(event);
  return event;
}

const next = (payload: Record<string, unknown>, id: string) => JSON.parse(JSON.stringify({ id, type: 'next', payload }));
const messages = (socket: FakeSocket) => socket.sent.map((t) => JSON.parse(t) as { id: string; type: string; payload: { data: { tick: { n: number } } } });
const ns = (socket: FakeSocket) => messages(socket).map((m) => m.payload.data.tick.n);

function broadcastFor(limits = { batch: 200, queued: 1000, socketBuffer: 1000, intervalMs: 20 }) {
  return new LiveBroadcast(bus, new EventLoaders({} as Services, 10), {
    cost: () => ({ requested: 1, actual: 1 }),
    sent: () => undefined,
    formatted: (a, result) => ({ ...result, extensions: { cost: { requested: 1, actual: 1, remaining: (a.contextValue as { cost: { remaining: number } }).cost.remaining } } }) as never,
  }, limits);
}

beforeEach(() => {
  liveFailure = null;
  behind = [];
  runs = 0;
  committed = [];
  bus = new EventBus();
});

describe('LiveBroadcast', () => {
  it('should run each event once for subscribers asking the same thing and write each its own message', async () => {
    const broadcast = broadcastFor();
    const [a, b] = [new FakeSocket(), new FakeSocket()];
    await broadcast.subscribe(args(a, 'op-a', 41));
    await broadcast.subscribe(args(b, 'op-b', 7));
    expect(broadcast.stats).toEqual({ groups: 1, members: 2 });
    expect(bus.openSubscriptions).toBe(2);
    publish(1);
    publish(2);
    await waitFor(() => a.sent.length === 2 && b.sent.length === 2, { what: 'both events to both subscribers' });
    // One run per event, however many subscribers.
    expect(runs).toBe(2);
    expect(messages(a)).toEqual([1, 2].map((n) => next({ data: { tick: { id: `tick_${n}`, n } }, extensions: { cost: { requested: 1, actual: 1, remaining: 41 } } }, 'op-a')));
    expect(messages(b)).toEqual([1, 2].map((n) => next({ data: { tick: { id: `tick_${n}`, n } }, extensions: { cost: { requested: 1, actual: 1, remaining: 7 } } }, 'op-b')));
  });

  it('should keep other documents, variables and scopes apart', async () => {
    const broadcast = broadcastFor();
    const sockets = [new FakeSocket(), new FakeSocket(), new FakeSocket()];
    const query = 'subscription ($p: String) { tick { label(prefix: $p) } }';
    await broadcast.subscribe(args(sockets[0], '1', 1, query, { p: 'a' }));
    await broadcast.subscribe(args(sockets[1], '1', 1, query, { p: 'b' }));
    await broadcast.subscribe(args(sockets[2], '1', 1));
    expect(broadcast.stats).toEqual({ groups: 3, members: 3 });
    publish(5);
    await waitFor(() => sockets.every((s) => s.sent.length === 1), { what: 'the event to all three' });
    expect(sockets.map((s) => messages(s)[0].payload.data.tick)).toEqual([{ label: 'a5' }, { label: 'b5' }, { id: 'tick_5', n: 5 }]);
  });

  it('should give a subscriber only the events that came after it joined', async () => {
    const broadcast = broadcastFor();
    const [a, b] = [new FakeSocket(), new FakeSocket()];
    await broadcast.subscribe(args(a, '1', 1));
    publish(1);
    await waitFor(() => a.sent.length === 1, { what: 'the first event' });
    await broadcast.subscribe(args(b, '1', 1));
    publish(2);
    await waitFor(() => a.sent.length === 2 && b.sent.length === 1, { what: 'the second event to both' });
    expect(ns(b)).toEqual([2]);
  });

  it('should write one batch of events to a socket in one write', async () => {
    const broadcast = broadcastFor();
    const a = new FakeSocket();
    const iterator = await broadcast.subscribe(args(a, '1', 1)) as AsyncIterableIterator<unknown>;
    for (let n = 1; n <= 20; n++) publish(n);
    await waitFor(() => a.sent.length === 20, { what: 'twenty events' });
    expect(ns(a)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    // Published in one turn: taken and written together, far fewer writes than events.
    expect(a.writes).toBeLessThan(5);
    await iterator.return?.();
  });

  // Behind: the stream it goes on with gets, live, the events from the first one on again (an
  // ordered tail still behind); it skips them by its last event's place in the order written.
  it.each([['a live side from now', false], ['a live side still behind its last event', true]])(
    'should let a slow subscriber go on alone from its last event, missing nothing and getting nothing twice, without holding the others up (%s)',
    async (_name, lagging) => {
      const broadcast = broadcastFor();
      const [fast, slow] = [new FakeSocket(), new FakeSocket()];
      await broadcast.subscribe(args(fast, '1', 1));
      const slowResults = await broadcast.subscribe(args(slow, '1', 1)) as AsyncIterableIterator<{ data: { tick: { n: number } } }>;
      publish(1);
      publish(2);
      await waitFor(() => slow.sent.length === 2, { what: 'two events to the slow subscriber' });
      if (lagging) behind = committed.slice();
      // Its socket backs up: the next events find it over the limit.
      slow.bufferedAmount = 5000;
      for (let n = 3; n <= 6; n++) publish(n);
      await waitFor(() => fast.sent.length === 6, { what: 'the fast subscriber to get every event' });
      expect(broadcast.stats).toEqual({ groups: 1, members: 1 });
      // Alone, it is driven by graphql-ws through its iterator, from after event 2.
      const alone: number[] = [];
      while (alone.length < 4) alone.push((await slowResults.next()).value!.data.tick.n);
      publish(7);
      alone.push((await slowResults.next()).value!.data.tick.n);
      expect([...ns(slow), ...alone]).toEqual([1, 2, 3, 4, 5, 6, 7]);
      await waitFor(() => fast.sent.length === 7, { what: 'the fast one to get event 7' });
      await slowResults.return?.();
      expect(bus.openSubscriptions).toBe(1);
    },
  );

  it('should close the stream with its last subscriber, and count every subscription ended once', async () => {
    const broadcast = broadcastFor();
    const [a, b] = [new FakeSocket(), new FakeSocket()];
    const ia = await broadcast.subscribe(args(a, '1', 1)) as AsyncIterableIterator<unknown>;
    const ib = await broadcast.subscribe(args(b, '1', 1)) as AsyncIterableIterator<unknown>;
    expect(bus.streamScopes()).toHaveLength(1);
    await ia.return?.();
    await ia.return?.();
    expect(bus.openSubscriptions).toBe(1);
    expect(broadcast.stats).toEqual({ groups: 1, members: 1 });
    await ib.return?.();
    expect(bus.openSubscriptions).toBe(0);
    expect(broadcast.stats).toEqual({ groups: 0, members: 0 });
    await waitFor(() => bus.streamScopes().length === 0, { what: 'the stream to close' });
    // A new subscriber starts a new group.
    const c = new FakeSocket();
    await broadcast.subscribe(args(c, '1', 1));
    publish(9);
    await waitFor(() => c.sent.length === 1, { what: 'the event to the new group' });
  });

  it('should end every subscriber with the error when the group\'s stream fails', async () => {
    const broadcast = broadcastFor();
    const [a, b] = [new FakeSocket(), new FakeSocket()];
    const ia = await broadcast.subscribe(args(a, '1', 1)) as AsyncIterableIterator<unknown>;
    const ib = await broadcast.subscribe(args(b, '1', 1)) as AsyncIterableIterator<unknown>;
    const pending = [ia.next(), ib.next()];
    liveFailure = new Error('database gone');
    publish(1);
    await expect(pending[0]).rejects.toThrow('database gone');
    await expect(pending[1]).rejects.toThrow('database gone');
    expect(broadcast.stats).toEqual({ groups: 0, members: 0 });
    expect(bus.openSubscriptions).toBe(0);
  });

  it('should write frames any WebSocket client reads, whatever their length (7-, 16- and 64-bit lengths)', async () => {
    const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise<void>((resolve) => server.once('listening', resolve));
    const connected = new Promise<WebSocket>((resolve) => server.once('connection', resolve));
    const client = new WebSocket(`ws://127.0.0.1:${(server.address() as { port: number }).port}`);
    const received: string[] = [];
    client.on('message', (data) => received.push(String(data)));
    const socket = await connected;
    const messages = ['short', `é${'x'.repeat(200)}`, 'y'.repeat(70_000), '{"id":"1"}'];
    sendFrames(socket, messages);
    socket.send('after');
    try {
      await waitFor(() => received.length === 5, { what: 'the five messages' });
      expect(received).toEqual([...messages, 'after']);
    } finally {
      client.close();
      server.close();
    }
  });
});
