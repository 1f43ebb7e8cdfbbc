import Redis from 'ioredis';
import { Client } from 'pg';
import { EventBus, type PublishedEvent, type StreamScope } from '../../src/core/event-bus';
import { PostgresFanout, RedisFanout, type LoadEventsSince, type LoadWrittenAfter, type WrittenReadBack } from '../../src/core/event-fanout';
import { WrittenMarks } from '../../src/core/written-marks';
import { createLogger } from '../../src/logger';
import { systemClock } from '../../src/core/clock';
import { freshPostgresDatabase } from '../helpers/db';
import { waitFor } from '../helpers/wait';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const CHANNEL = 'payorch_events';
const noReplay = async () => [];
/** A read back that takes this long: slow enough that the next message arrives meanwhile. */
const SLOW_READ_MS = 300;

function event(i: number): PublishedEvent {
  return { id: `evt_${i}`, object: 'event', type: 'customer.created', createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(), livemode: false, accountId: 'acct_x', data: { object: { i } } };
}

describe('event fan-out over Redis', () => {
  const clients: Redis[] = [];
  const fanouts: RedisFanout[] = [];
  const start = async () => {
    const redis = new Redis(REDIS_URL);
    clients.push(redis);
    const bus = new EventBus();
    const fanout = new RedisFanout(redis, bus, async () => [], createLogger('silent'), systemClock);
    await fanout.start();
    bus.connectRemote(fanout);
    fanouts.push(fanout);
    const received: string[] = [];
    bus.subscribe((e) => received.push(e.id));
    return { bus, fanout, received, redis };
  };
  afterAll(async () => {
    for (const f of fanouts) await f.stop().catch(() => undefined);
    for (const c of clients) c.disconnect();
  });

  it('should carry the events committed within one window in one message, and not echo them back', async () => {
    const raw = new Redis(REDIS_URL);
    clients.push(raw);
    const messages: string[] = [];
    raw.on('message', (_c: string, m: string) => messages.push(m));
    await raw.subscribe(CHANNEL);
    const a = await start();
    const b = await start();
    for (let i = 0; i < 5; i++) a.bus.publish(event(i));
    await waitFor(() => b.received.length >= 5, { what: 'B to receive the five events' });
    // A marker from B, sent once B had A's message: Redis hands each subscriber the channel's
    // messages in the order it took them, so A's echo (and any further message of A's batch)
    // reaches A and the raw subscriber before the marker does.
    b.bus.publish(event(100));
    await waitFor(() => a.received.includes('evt_100') && messages.length >= 2, { what: "B's marker to reach A and the raw subscriber" });
    expect(b.received).toEqual(['evt_0', 'evt_1', 'evt_2', 'evt_3', 'evt_4', 'evt_100']);
    expect(a.received).toEqual(['evt_0', 'evt_1', 'evt_2', 'evt_3', 'evt_4', 'evt_100']); // local delivery once, no echo
    expect(messages).toHaveLength(2); // A's five events in one message, then B's marker
    expect(JSON.parse(messages[0]).items).toHaveLength(5);
  });

  it('should send what is waiting in the window when it stops', async () => {
    const a = await start();
    const b = await start();
    a.bus.publish(event(99));
    // As on shutdown: the fan-out stops, then its Redis connection closes at once.
    await a.fanout.stop();
    a.redis.disconnect();
    await waitFor(() => b.received.length >= 1, { what: 'B to receive the event sent on stop' });
    expect(b.received).toEqual(['evt_99']);
  });
});

describe('event fan-out over PostgreSQL NOTIFY', () => {
  let url: string;
  let drop: () => Promise<void>;
  const fanouts: PostgresFanout[] = [];
  beforeAll(async () => {
    ({ url, drop } = await freshPostgresDatabase());
  });
  afterAll(async () => {
    for (const f of fanouts) await f.stop().catch(() => undefined);
    await drop();
  });

  it('should send event ids only and let each other instance read a message back in one lookup', async () => {
    const stored = new Map([0, 1, 2, 3, 100].map((i) => [`evt_${i}`, event(i)]));
    const lookups: string[][] = [];
    const start = async () => {
      const bus = new EventBus();
      const fanout = new PostgresFanout(url, bus, async (ids) => {
        lookups.push(ids);
        return ids.flatMap((id) => (stored.has(id) ? [stored.get(id)!] : []));
      }, noReplay, createLogger('silent'), systemClock);
      await fanout.start();
      bus.connectRemote(fanout);
      fanouts.push(fanout);
      const received: PublishedEvent[] = [];
      bus.subscribe((e) => received.push(e));
      return { bus, received };
    };
    const raw = new Client({ connectionString: url });
    await raw.connect();
    const messages: string[] = [];
    raw.on('notification', (m) => messages.push(m.payload ?? ''));
    await raw.query(`LISTEN ${CHANNEL}`);
    const a = await start();
    const b = await start();
    for (let i = 0; i < 4; i++) a.bus.publish(event(i));
    await waitFor(() => b.received.length >= 4, { what: 'B to read the four events back' });
    // A marker from B, sent once B had A's message: each listener gets the notifications in
    // commit order, so A has handled its own echo (and any further message of A's) by the time
    // it reads the marker back.
    b.bus.publish(event(100));
    await waitFor(() => a.received.some((e) => e.id === 'evt_100') && messages.length >= 2, { what: "B's marker to reach A and the raw listener" });
    await raw.end();

    expect(messages).toHaveLength(2); // A's four events in one message, then B's marker
    const items = JSON.parse(messages[0]).items;
    expect(items).toEqual([{ ref: 'evt_0' }, { ref: 'evt_1' }, { ref: 'evt_2' }, { ref: 'evt_3' }]);
    expect(messages[0]).not.toContain('customer.created'); // no event body on the wire
    // B reads A's message back once; A skips its echo, and reads back only B's marker (B skips its own).
    expect(lookups).toEqual([['evt_0', 'evt_1', 'evt_2', 'evt_3'], ['evt_100']]);
    expect(b.received.map((e) => e.id)).toEqual(['evt_0', 'evt_1', 'evt_2', 'evt_3', 'evt_100']);
    expect(b.received[2]).toEqual(event(2));
    expect(a.received.map((e) => e.id)).toEqual(['evt_0', 'evt_1', 'evt_2', 'evt_3', 'evt_100']);
  });

  it('should deliver messages in the order they arrived even when an earlier read back is slower, and retry a failed read once', async () => {
    const stored = new Map(Array.from({ length: 3 }, (_, i) => [`evt_${i}`, event(i)]));
    let calls = 0;
    const load = async (ids: string[]) => {
      calls++;
      if (calls === 1) await new Promise((r) => setTimeout(r, SLOW_READ_MS)); // the first message reads slowly
      if (calls === 2) throw new Error('connection reset'); // the second message's first read fails
      return ids.flatMap((id) => (stored.has(id) ? [stored.get(id)!] : []));
    };
    const busA = new EventBus();
    const a = new PostgresFanout(url, busA, async () => [], noReplay, createLogger('silent'), systemClock);
    const busB = new EventBus();
    const b = new PostgresFanout(url, busB, load, noReplay, createLogger('silent'), systemClock);
    for (const [f, bus] of [[a, busA], [b, busB]] as const) {
      await f.start();
      bus.connectRemote(f);
      fanouts.push(f);
    }
    const received: string[] = [];
    busB.subscribe((e) => received.push(e.id));
    busA.publish(event(0)); // one message
    // B is reading it back (slowly) when the second message arrives.
    await waitFor(() => calls === 1, { what: 'B to start reading the first message back' });
    busA.publish(event(1)); // a second message
    busA.publish(event(2));
    await waitFor(() => received.length >= 3, { what: 'B to deliver the three events' });
    expect(received).toEqual(['evt_0', 'evt_1', 'evt_2']);
    expect(calls).toBe(3); // the failed read was tried again
  });
});

describe('event fan-out over PostgreSQL NOTIFY, when the LISTEN connection drops', () => {
  let url: string;
  let drop: () => Promise<void>;
  let admin: Client;
  const fanouts: PostgresFanout[] = [];
  beforeAll(async () => {
    ({ url, drop } = await freshPostgresDatabase());
    const adminUrl = new URL(url);
    adminUrl.pathname = '/postgres';
    admin = new Client({ connectionString: adminUrl.toString() });
    await admin.connect();
  });
  afterAll(async () => {
    for (const f of fanouts) await f.stop().catch(() => undefined);
    await admin.end();
    await drop();
  });

  it('should reconnect and deliver the events committed while it was down to open streams, once each', async () => {
    const database = new URL(url).pathname.slice(1);
    // The events table, as far as the fan-out can tell.
    const stored: PublishedEvent[] = [];
    /** When each instance read back from the events table, per stream scope it has open. */
    const readsSince = { a: [] as Date[], b: [] as Date[] };
    const inScope = (scope: StreamScope) => (e: PublishedEvent) => e.accountId === scope.accountId && e.livemode === scope.livemode;
    const loadSince = (reads: Date[]): LoadEventsSince => async (scope, since, after, limit) => {
      reads.push(since);
      return stored
        .filter(inScope(scope))
        .filter((e) => e.createdAt >= since.toISOString())
        .filter((e) => !after || e.createdAt > after.createdAt || (e.createdAt === after.createdAt && e.id > after.id))
        .slice(0, limit);
    };
    // The events below are stamped in January (as a test clock's frozen time would stamp them),
    // long before the gap: only their seq (their place in `stored`, from 1) finds them.
    const writtenAfter: LoadWrittenAfter = async (scope, afterSeq, createdBefore, limit) =>
      stored.map((e, i) => ({ ...e, seq: i + 1 })).filter((e) => inScope(scope)(e) && e.seq > afterSeq && e.createdAt < createdBefore.toISOString()).slice(0, limit);
    const load = async (ids: string[]) => stored.filter((e) => ids.includes(e.id));
    const logger = createLogger('silent');
    const written = (bus: EventBus): WrittenReadBack => ({
      marks: new WrittenMarks(async () => {
        const n = stored.length;
        return () => n;
      }, () => bus.streamScopes(), systemClock, logger),
      load: writtenAfter,
    });
    const busA = new EventBus();
    const writtenA = written(busA);
    const a = new PostgresFanout(url, busA, load, loadSince(readsSince.a), logger, systemClock, undefined, writtenA);
    const busB = new EventBus();
    const writtenB = written(busB);
    const b = new PostgresFanout(url, busB, load, loadSince(readsSince.b), logger, systemClock, undefined, writtenB);
    for (const [f, bus, w] of [[a, busA, writtenA], [b, busB, writtenB]] as const) {
      await w.marks.start();
      w.marks.stop();
      await f.start();
      bus.connectRemote(f);
      fanouts.push(f);
    }
    const publish = (i: number) => {
      stored.push(event(i));
      busA.publish(event(i));
    };
    // A subscriber on each instance; another account's stream on B sees none of them.
    const streamA = busA.stream({ accountId: 'acct_x', livemode: false }, () => true);
    const streamB = busB.stream({ accountId: 'acct_x', livemode: false }, () => true);
    const otherB = busB.stream({ accountId: 'acct_y', livemode: false }, () => true);
    const collect = (stream: AsyncIterableIterator<PublishedEvent>, into: string[]) => {
      void (async () => {
        for await (const e of stream) into.push(e.id);
      })();
    };
    const gotA: string[] = [];
    const gotB: string[] = [];
    const gotOther: string[] = [];
    collect(streamA, gotA);
    collect(streamB, gotB);
    collect(otherB, gotOther);
    // A listener of our own that stays up (its last statement is not the LISTEN the cut below
    // matches): it tells when A's notifications are committed.
    const spare = new Client({ connectionString: url });
    await spare.connect();
    const notified: string[] = [];
    spare.on('notification', (m) => notified.push(m.payload ?? ''));
    await spare.query(`LISTEN ${CHANNEL}`);
    await spare.query('SELECT 1');

    publish(0);
    await waitFor(() => gotB.length >= 1, { what: 'B to get evt_0' });
    expect(gotB).toEqual(['evt_0']);

    // Both LISTEN connections are cut and cannot come back for now; NOTIFY itself still works.
    const listeners = async () => (await admin.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND query = 'LISTEN payorch_events'", [database])).rows[0].n as number;
    await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`);
    try {
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND query = 'LISTEN payorch_events'", [database]);
      await waitFor(async () => (await listeners()) === 0, { what: "the fan-outs' LISTEN sessions to end" });
      for (let i = 1; i <= 3; i++) publish(i);
      await waitFor(() => notified.some((n) => n.includes('"evt_3"')), { what: "A's notification of evt_1..3 to be committed" });
      expect(gotB).toEqual(['evt_0']); // nobody was listening
    } finally {
      await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`);
    }
    await spare.end();

    // Back: each reconnects (backoff at most 2 s) and reads back what its open streams missed
    // (B: both its scopes; A had published those events itself: nothing twice), on reconnecting,
    // not only at the connection check 10 s on.
    await waitFor(() => readsSince.a.length >= 1 && readsSince.b.length >= 2, { timeoutMs: 6_000, what: 'both fan-outs to reconnect and read back' });
    await waitFor(() => gotB.length >= 4, { what: 'B to deliver the events it missed' });
    publish(4);
    await waitFor(() => gotB.length >= 5, { what: 'B to get evt_4 over the new LISTEN connection' });
    expect(gotB).toEqual(['evt_0', 'evt_1', 'evt_2', 'evt_3', 'evt_4']);
    expect(gotA).toEqual(['evt_0', 'evt_1', 'evt_2', 'evt_3', 'evt_4']);
    expect(gotOther).toEqual([]);
    await streamA.return?.();
    await streamB.return?.();
    await otherB.return?.();
    expect(busB.streamScopes()).toEqual([]);
  }, 20_000);
});
