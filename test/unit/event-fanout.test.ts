import Redis from 'ioredis';
import { Client } from 'pg';
import { EventBus, type PublishedEvent } from '../../src/core/event-bus';
import { PostgresFanout, RedisFanout } from '../../src/core/event-fanout';
import { createLogger } from '../../src/logger';
import { freshPostgresDatabase } from '../helpers/db';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const CHANNEL = 'payorch_events';

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
    const fanout = new RedisFanout(redis, bus, async () => [], createLogger('silent'));
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
      }, createLogger('silent'));
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
    const a = new PostgresFanout(url, busA, async () => [], createLogger('silent'));
    const busB = new EventBus();
    const b = new PostgresFanout(url, busB, load, createLogger('silent'));
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
