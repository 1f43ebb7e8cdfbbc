import { startTestApp, type TestApp, type TestAccount } from '../helpers/app';
import { collect, duplicates, eventIds, wsClientAt } from '../helpers/live-events';
import { assertStaysTrue, waitFor, watchStreams } from '../helpers/wait';
import { EventStore } from '../../src/modules/events/event.store';

/**
 * The `events` subscription resumes: with `after` (the last event a client received) it replays,
 * in order, every event of the account and mode written after that one, then goes live, with no
 * gap and no duplicate, also while events are being written during the replay.
 */

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const wsClient = (_app: TestApp, key: string) => wsClientAt(app.baseUrl, app.server.cert, key);
afterEach(() => {
  jest.restoreAllMocks();
  app.server.services.events.streamLimits = { pageSize: 100, maxBuffered: 1000, maxReplayedIds: 10_000 };
});

const LIVE = 'subscription($after: ID, $types: [String!]) { events(after: $after, types: $types) { id type createdAt data } }';
type Received = { id: string; type: string; createdAt: string; data: { object: { id: string } } };
const pick = (data: Record<string, any>) => data.events as Received;

let emails = 0;
async function writeCustomer(account: TestAccount): Promise<string> {
  const res = await app.request('POST', '/v1/customers', { key: account.testKey, body: { email: `resume-${++emails}@example.com` } });
  expect(res.status).toBe(201);
  return res.body.data.id;
}

const after = (ids: string[], cursor: string) => ids.slice(ids.indexOf(cursor) + 1);

describe('events(after:) over graphql-ws', () => {
  it('should replay the events written while the client was away, in order, then go on live, each once', async () => {
    const account = await app.createAccount();
    const streams = watchStreams(app.server.services.bus);
    try {
      const first = wsClient(app, account.testKey);
      const seen = collect(first, LIVE, {}, pick);
      await waitFor(() => streams.opened() === 1, { what: 'the first subscription to start' });
      for (let i = 0; i < 3; i++) await writeCustomer(account);
      await waitFor(() => seen.items.length === 3, { what: 'the first three events' });
      await first.dispose();
      await waitFor(() => streams.closed() === 1, { what: 'the first subscription to end' });

      // Away: five events the client does not see.
      for (let i = 0; i < 5; i++) await writeCustomer(account);
      const cursor = seen.items[2].id;
      const second = wsClient(app, account.testKey);
      const resumed = collect(second, LIVE, { after: cursor }, pick);
      await waitFor(() => streams.opened() === 2, { what: 'the resumed subscription to start' });
      for (let i = 0; i < 2; i++) await writeCustomer(account);
      await waitFor(() => resumed.items.length >= 7, { what: 'the five missed events and two new ones' });
      await assertStaysTrue(() => resumed.items.length === 7, 300, 'no event delivered twice');
      const expected = after(await eventIds(app, account), cursor);
      expect(expected).toHaveLength(7);
      expect(resumed.items.map((e) => e.id)).toEqual(expected);
      expect(resumed.errors).toEqual([]);
      expect([...seen.items, ...resumed.items].map((e) => e.type)).toEqual(Array(10).fill('customer.created'));
      await second.dispose();
    } finally {
      streams.stop();
    }
  });

  it('should deliver every event exactly once, in order, when events are written while it replays', async () => {
    const account = await app.createAccount();
    // Four events a page: the replay takes several reads, between which the writes go on.
    app.server.services.events.streamLimits = { pageSize: 4, maxBuffered: 1000, maxReplayedIds: 10_000 };
    for (let i = 0; i < 14; i++) await writeCustomer(account);
    const backlog = await eventIds(app, account);
    const cursor = backlog[1];
    let written = 0;
    const writesAtRead: number[] = [];
    const loadAfter = EventStore.prototype.loadAfter;
    jest.spyOn(EventStore.prototype, 'loadAfter').mockImplementation(function (this: EventStore, ...args) {
      writesAtRead.push(written);
      return loadAfter.apply(this, args);
    });
    const client = wsClient(app, account.testKey);
    let resumed: ReturnType<typeof collect<Received>> | undefined;
    // A loop writing while the subscription starts and replays.
    for (let i = 0; i < 40; i++) {
      await writeCustomer(account);
      written += 1;
      if (i === 2) resumed = collect(client, LIVE, { after: cursor }, pick);
    }
    const expected = after(await eventIds(app, account), cursor);
    expect(expected).toHaveLength(12 + 40);
    await waitFor(() => resumed!.items.length >= expected.length, { what: `${expected.length} events`, timeoutMs: 20_000 });
    await assertStaysTrue(() => resumed!.items.length === expected.length, 300, 'no event delivered twice');
    const ids = resumed!.items.map((e) => e.id);
    expect(duplicates(ids)).toEqual([]);
    expect(ids).toEqual(expected);
    // The replay read several pages, some of them while the loop was still writing.
    expect(writesAtRead.length).toBeGreaterThanOrEqual(4);
    expect(writesAtRead.some((w) => w > 3 && w < 40)).toBe(true);
    await client.dispose();
  });

  it('should replay and stream only the types asked for', async () => {
    const account = await app.createAccount();
    const key = account.testKey;
    const start = await writeCustomer(account);
    const cursor = (await eventIds(app, account)).at(-1)!;
    const updated = await app.request('PATCH', `/v1/customers/${start}`, { key, body: { name: 'Updated while away' } });
    expect(updated.status).toBe(200);
    await app.request('POST', '/v1/products', { key, body: { name: 'not a customer event' } });
    await writeCustomer(account);
    const streams = watchStreams(app.server.services.bus);
    const client = wsClient(app, key);
    try {
      const typed = collect(client, LIVE, { after: cursor, types: ['customer.updated'] }, pick);
      await waitFor(() => streams.opened() === 1, { what: 'the subscription to start' });
      await waitFor(() => typed.items.length === 1, { what: 'the update made while away' });
      const again = await app.request('PATCH', `/v1/customers/${start}`, { key, body: { name: 'Updated live' } });
      expect(again.status).toBe(200);
      await writeCustomer(account);
      await waitFor(() => typed.items.length === 2, { what: 'the live update' });
      await assertStaysTrue(() => typed.items.length === 2, 300, 'only customer.updated events');
      expect(typed.items.map((e) => [e.type, e.data.object.id])).toEqual([['customer.updated', start], ['customer.updated', start]]);
    } finally {
      streams.stop();
      await client.dispose();
    }
  });

  it('should resume in the order events were written, not their createdAt, which a test clock sets to its own time', async () => {
    const account = await app.createAccount();
    const key = account.testKey;
    // A clock a month ahead and one a month behind: what is made on them is stamped with their time.
    const clocks: string[] = [];
    for (const days of [30, -30]) {
      const clock = await app.request('POST', '/v1/test-clocks', { key, body: { frozenTime: new Date(Date.now() + days * 86_400_000).toISOString() } });
      expect(clock.status).toBe(201);
      clocks.push(clock.body.data.id);
    }
    const onClock = async (testClockId: string) => {
      const res = await app.request('POST', '/v1/customers', { key, body: { email: `clock-${++emails}@example.com`, testClockId } });
      expect(res.status).toBe(201);
      return res.body.data.id as string;
    };
    await onClock(clocks[0]);
    const cursor = (await eventIds(app, account)).at(-1)!;
    // Written after the cursor, stamped before it: now, and a month ago.
    const written = [await writeCustomer(account), await onClock(clocks[1]), await writeCustomer(account)];
    const streams = watchStreams(app.server.services.bus);
    const client = wsClient(app, key);
    try {
      const resumed = collect(client, LIVE, { after: cursor }, pick);
      await waitFor(() => streams.opened() === 1, { what: 'the subscription to start' });
      await waitFor(() => resumed.items.length >= 3, { what: 'the three customers written after the cursor' });
      await assertStaysTrue(() => resumed.items.length === 3, 300, 'nothing else replayed');
      expect(resumed.items.map((e) => e.data.object.id)).toEqual(written);
    } finally {
      streams.stop();
      await client.dispose();
    }
  });

  it('should refuse an after that is not an event of the account and mode with invalid_parameter naming after', async () => {
    const account = await app.createAccount();
    const other = await app.createAccount();
    await writeCustomer(other);
    const theirs = (await eventIds(app, other))[0];
    const liveCustomer = await app.request('POST', '/v1/customers', { key: account.liveKey, body: { email: `live-${++emails}@example.com` } });
    const live = (await app.request('GET', `/v1/events?objectId=${liveCustomer.body.data.id}`, { key: account.liveKey })).body.data[0].id;
    const client = wsClient(app, account.testKey);
    try {
      for (const cursor of ['evt_doesnotexist000000000000', theirs, live]) {
        const refused = collect(client, LIVE, { after: cursor }, pick);
        await waitFor(() => refused.completed || refused.errors.length > 0, { what: `the refusal of ${cursor}` });
        expect([cursor, refused.errors[0]?.[0]?.extensions]).toEqual([cursor, expect.objectContaining({ code: 'invalid_parameter', param: 'after' })]);
        expect(refused.items).toEqual([]);
      }
    } finally {
      await client.dispose();
    }
  });
});
