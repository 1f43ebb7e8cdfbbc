import type { RequestContext } from '../../src/core/context';
import { EventStore } from '../../src/modules/events/event.store';
import { nothingWithin, take } from '../helpers/event-streams';
import { refusal, startServices, withPermissions, type ServiceHarness } from '../helpers/services';

/**
 * EventService.stream, the live stream GraphQL's `events` subscription (and the typed ones) run
 * on: it resumes after an event by reading back from the database one page at a time, then goes
 * live with no gap and no duplicate, and never holds more than a bounded number of events for a
 * subscriber that does not take them.
 */

let h: ServiceHarness;
let ctx: RequestContext;
let n = 0;
beforeAll(async () => {
  h = await startServices();
  ctx = (await h.account()).test;
});
afterAll(() => h?.stop());
afterEach(() => {
  jest.restoreAllMocks();
  h.services.events.streamLimits = { pageSize: 100, maxBuffered: 1000, maxReplayedIds: 10_000 };
});

/** A customer.created event, one millisecond after the last (the stream's order is the order events are written). */
async function write(on: RequestContext = ctx, advance = 1): Promise<string> {
  h.clock.advance(advance);
  const customer = await h.services.customers.create(on, { email: `stream-${++n}@example.com` });
  const [event] = (await h.services.events.list(on, { objectId: customer.id }, undefined, { byObject: true })).data;
  return event.id;
}

describe('EventService.stream', () => {
  it('should replay the events after `after` page by page, then go live, every event once, in order, while events are written meanwhile', async () => {
    h.services.events.streamLimits = { pageSize: 5, maxBuffered: 1000, maxReplayedIds: 10_000 };
    const before: string[] = [];
    for (let i = 0; i < 23; i++) before.push(await write());
    // An event written just before each page is read, and one just after: committed while the
    // stream reads back, each is in a page, or arrives live, or both.
    const during: string[] = [];
    const loadAfter = EventStore.prototype.loadAfter;
    const reads = jest.spyOn(EventStore.prototype, 'loadAfter').mockImplementation(async function (this: EventStore, ...args) {
      during.push(await write());
      const rows = await loadAfter.apply(this, args);
      during.push(await write());
      return rows;
    });
    const stream = await h.services.events.stream(ctx, { after: before[2] }, { resource: 'events', types: null });
    const replayed = await take(stream, 20);
    // No read is under way: the stream reads a page only when asked for an event and it has none.
    const pageSizes = reads.mock.calls.map((call) => call[3]);
    reads.mockRestore();
    // Then live: written after it caught up.
    const live: string[] = [];
    for (let i = 0; i < 5; i++) live.push(await write());
    const rest = await take(stream, during.length + live.length);
    await nothingWithin(stream);
    await stream.return();
    expect([...replayed, ...rest].map((e) => e.id)).toEqual([...before.slice(3), ...during, ...live]);
    // Read back 5 at a time, a page only once the subscriber took the one before: the 20 events
    // before it were four pages (those written meanwhile came in later pages or live).
    expect(pageSizes).toEqual([5, 5, 5, 5]);
    expect(during).toHaveLength(8);
  });

  it('should hold at most maxBuffered events for a subscriber that takes none, then give it every one once, in order, read back from the database', async () => {
    h.services.events.streamLimits = { pageSize: 10, maxBuffered: 20, maxReplayedIds: 10_000 };
    const spy = jest.spyOn(EventStore.prototype, 'loadAfter');
    const stream = await h.services.events.stream(ctx, {}, { resource: 'events', types: null });
    const written: string[] = [];
    let most = 0;
    for (let i = 0; i < 95; i++) {
      written.push(await write());
      // The bus hands the stream each event as it is committed.
      await new Promise((resolve) => setImmediate(resolve));
      most = Math.max(most, stream.buffered);
    }
    expect(most).toBeLessThanOrEqual(20);
    expect(most).toBeGreaterThan(0);
    const taken = await take(stream, 95);
    expect(taken.map((e) => e.id)).toEqual(written);
    // Caught up from the database a page at a time; then live again.
    expect(spy).toHaveBeenCalled();
    for (const call of spy.mock.calls) expect(call[3]).toBe(10);
    const live = await write();
    expect((await take(stream, 1))[0].id).toBe(live);
    await nothingWithin(stream);
    await stream.return();
  });

  it('should order events of the same millisecond as they were written (not by id), and resume within them', async () => {
    const same: string[] = [];
    same.push(await write(ctx, 5));
    for (let i = 0; i < 7; i++) same.push(await write(ctx, 0));
    const listed = (await h.services.events.list(ctx, { sortDirection: 'asc', createdAfter: new Date(h.clock.now().getTime() - 1), pageSize: 100 })).data.map((e) => e.id);
    expect(new Set(listed)).toEqual(new Set(same));
    const stream = await h.services.events.stream(ctx, { after: same[2] }, { resource: 'events', types: null });
    expect((await take(stream, 5)).map((e) => e.id)).toEqual(same.slice(3));
    await nothingWithin(stream);
    await stream.return();
  });

  it('should replay only the types asked for and that the key may read', async () => {
    const start = await write();
    h.clock.advance(1);
    const customer = await h.services.customers.create(ctx, { email: `typed-${++n}@example.com` });
    h.clock.advance(1);
    await h.services.customers.update(ctx, customer.id, { name: 'Typed' });
    h.clock.advance(1);
    await h.services.catalog.createProduct(ctx, { name: 'Not a customer event' });
    const updated = (await h.services.events.list(ctx, { type: 'customer.updated', objectId: customer.id }, undefined, { byObject: true })).data.map((e) => e.id);
    expect(updated).toHaveLength(1);
    const typed = await h.services.events.stream(ctx, { after: start }, { resource: 'events', types: ['customer.updated', 'price.created'] });
    expect((await take(typed, 1)).map((e) => e.id)).toEqual(updated);
    await nothingWithin(typed);
    await typed.return();
    // A key that may not read products gets no product event back, even asking for every type.
    const restricted = withPermissions(ctx, ['events:read', 'customers:read']);
    const all = await h.services.events.stream(restricted, { after: start }, { resource: 'events', types: null });
    expect((await take(all, 2)).map((e) => e.type)).toEqual(['customer.created', 'customer.updated']);
    await nothingWithin(all);
    await all.return();
  });

  it('should refuse an after that is no event of the account and mode with invalid_parameter naming after', async () => {
    const mine = await write();
    const other = await h.account();
    const theirs = await write(other.test);
    const live = await write(other.live);
    for (const after of ['evt_unknown', theirs, live, '']) {
      expect([after, await refusal(h.services.events.stream(ctx, { after }, { resource: 'events', types: null }))]).toEqual([after, { code: 'invalid_parameter', param: 'after', status: 400 }]);
    }
    expect(await refusal(h.services.events.stream(other.live, { after: mine }, { resource: 'events', types: null }))).toEqual({ code: 'invalid_parameter', param: 'after', status: 400 });
    expect(await refusal(h.services.events.stream(withPermissions(ctx, ['customers:read']), { after: mine }, { resource: 'events', types: null })))
      .toMatchObject({ code: 'permission_denied' });
  });
});
