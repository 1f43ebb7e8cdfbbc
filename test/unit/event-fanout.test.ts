import Redis from 'ioredis';
import { EventBus, type PublishedEvent } from '../../src/core/event-bus';
import { RedisFanout } from '../../src/core/event-fanout';
import { createLogger } from '../../src/logger';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const CHANNEL = 'payorch_events';

function event(i: number): PublishedEvent {
  return { id: `evt_${i}`, object: 'event', type: 'customer.created', createdAt: new Date().toISOString(), livemode: false, accountId: 'acct_x', data: { object: { i } } };
}

describe('event fan-out over Redis', () => {
  const clients: Redis[] = [];
  const fanouts: RedisFanout[] = [];
  const start = async () => {
    const redis = new Redis(REDIS_URL);
    clients.push(redis);
    const bus = new EventBus();
    const fanout = new RedisFanout(redis, bus, async () => null, createLogger('silent'));
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
