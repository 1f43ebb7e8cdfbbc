import { Writable } from 'node:stream';
import type { Redis } from 'ioredis';
import { EventBus, type PublishedEvent } from '../../src/core/event-bus';
import { RedisFanout, type LoadEventsSince, type LoadWrittenAfter } from '../../src/core/event-fanout';
import { WrittenMarks } from '../../src/core/written-marks';
import { RedisBreaker, connectRedis } from '../../src/core/redis-breaker';
import { createLogger } from '../../src/logger';
import { systemClock } from '../../src/core/clock';
import { startRedisServer, type RedisServer } from '../helpers/redis-server';
import { assertStaysTrue, waitFor } from '../helpers/wait';

/**
 * The Redis fan-out without NOTIFY beside it (SQLite), on a redis-server of the test's own: what
 * an instance could not send while Redis was down goes out once it is back, and what an instance
 * missed while its subscription was down is read back from the database once it is made again.
 */

let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.destroy();
});

const SCOPE = { accountId: 'acct_x', livemode: false };
function event(i: number): PublishedEvent {
  return { id: `evt_${i}`, object: 'event', type: 'customer.created', createdAt: new Date().toISOString(), livemode: false, accountId: SCOPE.accountId, data: { object: { i } } };
}

interface Instance {
  marks: WrittenMarks;
  bus: EventBus;
  breaker: RedisBreaker;
  redis: Redis;
  received: string[];
  fanout: RedisFanout;
}
const instances: Instance[] = [];
afterEach(async () => {
  for (const i of instances.splice(0)) {
    i.breaker.stop();
    i.marks.stop();
    await i.fanout.stop();
    i.redis.disconnect();
  }
});

/**
 * An instance's fan-out, with an open stream (what a read-back is for), reading back from
 * `committed` (`onReadBack` is called as each read-back starts), by created_at and by seq (an
 * event's place in `committed`, from 1); `prepare` sees its Redis client first.
 */
async function instance(committed: PublishedEvent[] = [], { onReadBack, prepare }: { onReadBack?: () => void; prepare?: (redis: Redis) => void } = {}): Promise<Instance> {
  const quiet = createLogger('silent', new Writable({ write: (_c, _e, cb) => cb() }));
  const redis = connectRedis(server.url, 50);
  prepare?.(redis);
  const breaker = new RedisBreaker(redis, quiet, { probeIntervalMs: 50 });
  await breaker.start();
  const bus = new EventBus();
  const loadSince: LoadEventsSince = async (scope, since) => {
    const read = committed.filter((e) => e.accountId === scope.accountId && e.createdAt >= since.toISOString());
    onReadBack?.();
    return read;
  };
  const withSeq = () => committed.map((e, i) => ({ ...e, seq: i + 1 }));
  const marks = new WrittenMarks(async () => {
    const written = committed.length;
    return () => written;
  }, () => bus.streamScopes(), systemClock, quiet);
  const loadWrittenAfter: LoadWrittenAfter = async (scope, afterSeq, createdBefore, limit) =>
    withSeq().filter((e) => e.accountId === scope.accountId && e.seq > afterSeq && e.createdAt < createdBefore.toISOString()).slice(0, limit);
  const fanout = new RedisFanout(redis, bus, async () => [], quiet, systemClock, { breaker, loadSince, written: { marks, load: loadWrittenAfter } });
  bus.stream(SCOPE, () => true);
  await marks.start();
  await fanout.start();
  bus.connectRemote(fanout);
  const received: string[] = [];
  bus.subscribe((e) => received.push(e.id));
  const made = { marks, bus, breaker, redis, received, fanout };
  instances.push(made);
  return made;
}

describe('event fan-out over Redis, without NOTIFY, across an outage', () => {
  it('should keep what it could not send while Redis was down and send it, once, when Redis is back', async () => {
    // A sends what it kept as soon as its own connections answer again. B, with nothing to read
    // back here (no database), gets it only if Redis already has B's subscription again, which
    // in a real outage B's read-back covers: A's probe is held until B has subscribed again (B
    // reads back only once Redis has answered its SUBSCRIBE).
    let bSubscribedAgain = false;
    const a = await instance([], {
      prepare: (redis) => {
        const ping = redis.ping.bind(redis) as () => Promise<string>;
        jest.spyOn(redis, 'ping').mockImplementation((() => (bSubscribedAgain ? ping() : Promise.reject(new Error('held until B has subscribed again')))) as never);
      },
    });
    const b = await instance([], { onReadBack: () => (bSubscribedAgain = true) });
    a.bus.publish(event(1));
    await waitFor(() => b.received.includes('evt_1'), { what: 'the first event on B' });
    await server.kill();
    await waitFor(() => !a.breaker.available, { what: 'A to see Redis gone' });
    a.bus.publish(event(2));
    a.bus.publish(event(3));
    await server.start();
    await waitFor(() => b.received.length === 3, { what: "A's events sent while Redis was down, on B" });
    await assertStaysTrue(() => b.received.length === 3, 300, 'each event delivered once');
    expect(b.received).toEqual(['evt_1', 'evt_2', 'evt_3']);
    expect(a.received).toEqual(['evt_1', 'evt_2', 'evt_3']);
  }, 30_000);

  it('should read back, once subscribed again, what was committed while its subscription was down, and not what it had', async () => {
    const committed: PublishedEvent[] = [];
    const a = await instance();
    const b = await instance(committed);
    const first = event(10);
    committed.push(first);
    a.bus.publish(first);
    await waitFor(() => b.received.includes('evt_10'), { what: 'the first event on B' });
    // Committed, but its message lost (an instance that died before sending it, a message Redis
    // took just before it was killed): only the database has it.
    committed.push(event(11));
    await server.kill();
    await server.start();
    await waitFor(() => b.received.includes('evt_11'), { what: 'the lost event read back on B' });
    await assertStaysTrue(() => b.received.length === 2, 300, 'nothing delivered twice');
    expect(b.received).toEqual(['evt_10', 'evt_11']);
  }, 30_000);

  it('should read back what was written while its subscription was down but stamped long before (a test clock\'s time)', async () => {
    const committed: PublishedEvent[] = [];
    const a = await instance();
    const b = await instance(committed);
    const first = event(30);
    committed.push(first);
    a.bus.publish(first);
    await waitFor(() => b.received.includes('evt_30'), { what: 'the first event on B' });
    // Written during the outage, its message lost, stamped a year before: by created_at alone
    // the read-back (from the gap's start, less its margin) would not find it.
    committed.push({ ...event(31), createdAt: new Date(Date.now() - 365 * 86_400_000).toISOString() });
    await server.kill();
    await server.start();
    await waitFor(() => b.received.includes('evt_31'), { what: 'the event stamped in the past, read back on B' });
    await assertStaysTrue(() => b.received.length === 2, 300, 'nothing delivered twice');
    expect(b.received).toEqual(['evt_30', 'evt_31']);
  }, 30_000);

  it('should start reading back only once Redis has the subscription again, so that nothing published after the read is missed', async () => {
    const committed: PublishedEvent[] = [];
    const a = await instance();
    let readBacks = 0;
    // The subscriber's SUBSCRIBE after a reconnection (ioredis sends it as it emits `ready`) held
    // back 300 ms, as a slow Redis or network would: a read-back started at `ready` reads the
    // database before Redis has the subscription, and an event published in between, after the
    // read, reaches neither.
    const b = await instance(committed, {
      onReadBack: () => {
        if (readBacks++ === 0) a.bus.publish(event(21));
      },
      prepare: (redis) => {
        const duplicate = redis.duplicate.bind(redis);
        jest.spyOn(redis, 'duplicate').mockImplementation((...args: Parameters<Redis['duplicate']>) => {
          const subscriber = duplicate(...args);
          const subscribe = subscriber.subscribe.bind(subscriber) as (...a: unknown[]) => Promise<unknown>;
          let calls = 0;
          (subscriber as unknown as { subscribe: (...a: unknown[]) => Promise<unknown> }).subscribe = (...a: unknown[]) =>
            (calls++ === 0 ? subscribe(...a) : new Promise((resolve) => setTimeout(resolve, 300)).then(() => subscribe(...a)));
          return subscriber;
        });
      },
    });
    a.bus.publish(event(20));
    await waitFor(() => b.received.includes('evt_20'), { what: 'the first event on B' });
    await server.kill();
    await server.start();
    await waitFor(() => b.received.includes('evt_21'), { what: 'the event published as the read-back started, on B', timeoutMs: 5_000 });
    expect(b.received).toEqual(['evt_20', 'evt_21']);
  }, 30_000);
});
