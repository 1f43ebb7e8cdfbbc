import Redis from 'ioredis';
import { Client } from 'pg';
import { EventBus, type PublishedEvent } from '../../src/core/event-bus';
import { PostgresFanout, RedisFanout, type LoadEventsSince } from '../../src/core/event-fanout';
import { createLogger } from '../../src/logger';
import { systemClock } from '../../src/core/clock';
import { freshPostgresDatabase } from '../helpers/db';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const CHANNEL = 'payorch_events';
const noReplay = async () => [];

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
    await new Promise((r) => setTimeout(r, 300));
    expect(b.received).toEqual(['evt_0', 'evt_1', 'evt_2', 'evt_3', 'evt_4']);
    expect(a.received).toEqual(['evt_0', 'evt_1', 'evt_2', 'evt_3', 'evt_4']); // local delivery once, no echo
    expect(messages).toHaveLength(1);
    expect(JSON.parse(messages[0]).items).toHaveLength(5);
  });

  it('should send what is waiting in the window when it stops', async () => {
    const a = await start();
    const b = await start();
    a.bus.publish(event(99));
    // As on shutdown: the fan-out stops, then its Redis connection closes at once.
    await a.fanout.stop();
    a.redis.disconnect();
    await new Promise((r) => setTimeout(r, 300));
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
    const stored = new Map(Array.from({ length: 4 }, (_, i) => [`evt_${i}`, event(i)]));
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
    await new Promise((r) => setTimeout(r, 400));
    await raw.end();

    expect(messages).toHaveLength(1);
    const items = JSON.parse(messages[0]).items;
    expect(items).toEqual([{ ref: 'evt_0' }, { ref: 'evt_1' }, { ref: 'evt_2' }, { ref: 'evt_3' }]);
    expect(messages[0]).not.toContain('customer.created'); // no event body on the wire
    expect(lookups).toEqual([['evt_0', 'evt_1', 'evt_2', 'evt_3']]); // B, once; A skips its echo
    expect(b.received.map((e) => e.id)).toEqual(['evt_0', 'evt_1', 'evt_2', 'evt_3']);
    expect(b.received[2]).toEqual(event(2));
    expect(a.received.map((e) => e.id)).toEqual(['evt_0', 'evt_1', 'evt_2', 'evt_3']);
  });

  it('should deliver messages in the order they arrived even when an earlier read back is slower, and retry a failed read once', async () => {
    const stored = new Map(Array.from({ length: 3 }, (_, i) => [`evt_${i}`, event(i)]));
    let calls = 0;
    const load = async (ids: string[]) => {
      calls++;
      if (calls === 1) await new Promise((r) => setTimeout(r, 300)); // the first message reads slowly
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
    await new Promise((r) => setTimeout(r, 60));
    busA.publish(event(1)); // a second message
    busA.publish(event(2));
    await new Promise((r) => setTimeout(r, 900));
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
    const readsSince: Date[] = [];
    const loadSince: LoadEventsSince = async (scope, since, after, limit) => {
      readsSince.push(since);
      return stored
        .filter((e) => e.accountId === scope.accountId && e.livemode === scope.livemode)
        .filter((e) => !after || e.createdAt > after.createdAt || (e.createdAt === after.createdAt && e.id > after.id))
        .slice(0, limit);
    };
    const load = async (ids: string[]) => stored.filter((e) => ids.includes(e.id));
    const logger = createLogger('silent');
    const busA = new EventBus();
    const a = new PostgresFanout(url, busA, load, loadSince, logger, systemClock);
    const busB = new EventBus();
    const b = new PostgresFanout(url, busB, load, loadSince, logger, systemClock);
    for (const [f, bus] of [[a, busA], [b, busB]] as const) {
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

    publish(0);
    await new Promise((r) => setTimeout(r, 200));
    expect(gotB).toEqual(['evt_0']);

    // Both LISTEN connections are cut and cannot come back for now; NOTIFY itself still works.
    await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`);
    try {
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND query = 'LISTEN payorch_events'", [database]);
      await new Promise((r) => setTimeout(r, 300));
      for (let i = 1; i <= 3; i++) publish(i);
      await new Promise((r) => setTimeout(r, 800));
      expect(gotB).toEqual(['evt_0']); // nobody was listening
    } finally {
      await admin.query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS true`);
    }

    // Back: B reads back what it missed (A had published those itself: nothing twice).
    await new Promise((r) => setTimeout(r, 2_500));
    publish(4);
    await new Promise((r) => setTimeout(r, 300));
    expect(gotB).toEqual(['evt_0', 'evt_1', 'evt_2', 'evt_3', 'evt_4']);
    expect(gotA).toEqual(['evt_0', 'evt_1', 'evt_2', 'evt_3', 'evt_4']);
    expect(gotOther).toEqual([]);
    expect(readsSince.length).toBeGreaterThan(0);
    await streamA.return?.();
    await streamB.return?.();
    await otherB.return?.();
    expect(busB.streamScopes()).toEqual([]);
  }, 20_000);
});
