import type { RequestContext } from '../../src/core/context';
import { newId } from '../../src/core/ids';
import { createLogger } from '../../src/logger';
import { EventStore, type ApiEvent } from '../../src/modules/events/event.store';
import { EventTail, PostgresEventHorizon, SQLITE_HORIZON, TAIL_OPTIONS, type EventHorizon } from '../../src/modules/events/event-tail';
import type { ResumableEventStream } from '../../src/modules/events/event-stream';
import { DIALECT } from '../helpers/db';
import { nothingWithin, take } from '../helpers/event-streams';
import { startServices, type ServiceHarness } from '../helpers/services';
import { waitFor } from '../helpers/wait';

/**
 * The ordered live streams (GraphQL's `events` subscription): their live events come from the
 * instance's EventTail, in the order events were written, never past the horizon. On PostgreSQL
 * an event takes its seq as it is inserted, not as it commits: an event written after another but
 * committed first is held back until the other one is committed, so a subscriber that stops after
 * it and resumes after it misses nothing.
 */

let h: ServiceHarness;
let ctx: RequestContext;
let store: EventStore;
const original: { tail?: EventTail } = {};
beforeAll(async () => {
  h = await startServices();
  ctx = (await h.account()).test;
  store = new EventStore(h.services.db);
  original.tail = h.services.events.tail;
});
afterAll(() => h?.stop());
afterEach(() => {
  if (h.services.events.tail !== original.tail) h.services.events.tail?.stop();
  h.services.events.tail = original.tail;
});

const scope = () => ({ accountId: ctx.accountId, mode: ctx.mode });

function event(): ApiEvent {
  return { id: newId('evt'), object: 'event', type: 'customer.created', createdAt: h.clock.now().toISOString(), livemode: false, data: { object: { id: newId('cus') } } };
}

function publish(e: ApiEvent): void {
  h.services.bus.publish({ ...e, accountId: ctx.accountId });
}

/** An event written and committed, and published as the services publish theirs. */
async function commit(): Promise<ApiEvent> {
  const e = event();
  await h.services.db.transaction((t) => store.insert(t, e, scope()));
  publish(e);
  return e;
}

/** An event written in a transaction left open until `end` is called (PostgreSQL). */
async function uncommitted(): Promise<{ event: ApiEvent; end: (announce?: boolean) => Promise<void> }> {
  const e = event();
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let inserted!: () => void;
  const written = new Promise<void>((resolve) => (inserted = resolve));
  const done = h.services.db.transaction(async (t) => {
    await store.insert(t, e, scope());
    inserted();
    await held;
  });
  await written;
  return {
    event: e,
    end: async (announce = true) => {
      release();
      await done;
      if (announce) publish(e);
    },
  };
}

function ordered(after?: string): Promise<ResumableEventStream> {
  return h.services.events.stream(ctx, after === undefined ? {} : { after }, { resource: 'events', types: null, ordered: true });
}

/** A tail of its own for the services' event service (restored after the test). */
function useTail(options: { horizon?: EventHorizon; sweepMs?: number; pageSize?: number } = {}): EventTail {
  const logger = createLogger('silent');
  const horizon = options.horizon ?? (DIALECT === 'postgres' ? new PostgresEventHorizon(h.services.db, logger) : SQLITE_HORIZON);
  const tail = new EventTail(store, horizon, h.services.bus, logger, { ...TAIL_OPTIONS, sweepMs: options.sweepMs ?? TAIL_OPTIONS.sweepMs, pageSize: options.pageSize ?? TAIL_OPTIONS.pageSize });
  h.services.events.tail = tail;
  return tail;
}

/** A tail that stops waiting for a transaction after 300 ms (a long-running one, for a test). */
function useImpatientTail(sweepMs: number): EventTail {
  return useTail({ horizon: new PostgresEventHorizon(h.services.db, createLogger('silent'), { pollMs: 2, staleMs: 300 }), sweepMs });
}

describe('ordered event streams (EventTail)', () => {
  it('should deliver the events written after the stream started, in the order they were written, each once', async () => {
    const tail = h.services.events.tail!;
    const streamScope = { accountId: ctx.accountId, livemode: false };
    expect(tail.listens(streamScope)).toBe(false);
    const stream = await ordered();
    await tail.ready(streamScope);
    expect(tail.listens(streamScope)).toBe(true);
    const written = [];
    for (let i = 0; i < 5; i++) written.push(await commit());
    expect((await take(stream, 5)).map((e) => e.id)).toEqual(written.map((e) => e.id));
    await stream.return();
    expect(tail.listens(streamScope)).toBe(false);
  });

  it('should deliver every event of many concurrent writers once, in the order they were written', async () => {
    const stream = await ordered();
    await h.services.events.tail?.ready({ accountId: ctx.accountId, livemode: false });
    const written: string[] = [];
    await Promise.all(Array.from({ length: 8 }, async () => {
      for (let i = 0; i < 25; i++) written.push((await commit()).id);
    }));
    const got = await take(stream, written.length);
    await nothingWithin(stream, 300);
    await stream.return();
    expect(new Set(got.map((e) => e.id))).toEqual(new Set(written));
    const seqs = got.map((e) => e.seq as number);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  });

  it('should deliver an event that no message announced (a lost NOTIFY or Redis message), at the next sweep', async () => {
    useTail({ sweepMs: 100 });
    const stream = await ordered();
    await h.services.events.tail?.ready({ accountId: ctx.accountId, livemode: false });
    const e = event();
    await h.services.db.transaction((t) => store.insert(t, e, scope()));
    expect((await take(stream, 1)).map((x) => x.id)).toEqual([e.id]);
    await stream.return();
  });

  it(`should read every open scope's new events at a sweep${DIALECT === 'postgres' ? ', all in one statement, page by page' : ''}`, async () => {
    const tail = useTail({ sweepMs: 100, pageSize: 2 });
    const single = jest.spyOn(store, 'loadSeqRange');
    const batched = jest.spyOn(store, 'loadSeqRanges');
    const contexts = [ctx, (await h.account()).test, (await h.account()).test];
    const streams = await Promise.all(contexts.map((c) => h.services.events.stream(c, {}, { resource: 'events', types: null, ordered: true })));
    try {
      for (const c of contexts) await tail.ready({ accountId: c.accountId, livemode: false });
      // Each scope's first read, as it gets its starting point, may be its own; once a sweep has
      // read them together, every later one does.
      if (DIALECT === 'postgres') await waitFor(() => batched.mock.calls.length > 0, { what: 'a sweep of the three scopes' });
      else await new Promise((resolve) => setTimeout(resolve, 300));
      single.mockClear();
      // Announced to no one: only the sweep reads them. The first scope has more than a page.
      const written: ApiEvent[][] = [];
      for (const [i, c] of contexts.entries()) {
        written.push([]);
        for (let n = 0; n < (i === 0 ? 5 : 1); n++) {
          const e = event();
          await h.services.db.transaction((t) => store.insert(t, e, { accountId: c.accountId, mode: c.mode }));
          written[i].push(e);
        }
      }
      for (const [i, stream] of streams.entries()) expect((await take(stream, written[i].length)).map((e) => e.id)).toEqual(written[i].map((e) => e.id));
      if (DIALECT === 'postgres') {
        // The other scopes were read only with the first scope's first page, in one statement;
        // only the first scope's further pages on their own.
        expect(single.mock.calls.every(([scope]) => scope.accountId === ctx.accountId)).toBe(true);
      } else {
        expect(single).toHaveBeenCalled();
      }
      for (const stream of streams) await nothingWithin(stream, 150);
    } finally {
      single.mockRestore();
      batched.mockRestore();
      await Promise.all(streams.map((s) => s.return()));
    }
  });

  if (DIALECT === 'postgres') {
    it('should hold back an event committed before one written before it, until that one commits, then deliver both in the order written', async () => {
      const stream = await ordered();
      await h.services.events.tail?.ready({ accountId: ctx.accountId, livemode: false });
      const first = await uncommitted();
      const second = await commit();
      // The stream must not hand `second` over yet: a subscriber that stopped after it would
      // resume after it and never see `first`.
      await nothingWithin(stream, 400);
      await first.end();
      expect((await take(stream, 2)).map((e) => e.id)).toEqual([first.event.id, second.id]);
      await stream.return();

      // Resumed after the last event received: nothing written before it again, nothing missed.
      const third = await commit();
      const resumed = await ordered(second.id);
      expect((await take(resumed, 1)).map((e) => e.id)).toEqual([third.id]);
      await nothingWithin(resumed, 200);
      await resumed.return();
    });

    it('should resume after an event while the instance\'s tail is still behind it: no event up to it again', async () => {
      const open = await ordered();
      await h.services.events.tail?.ready({ accountId: ctx.accountId, livemode: false });
      // The tail cannot read past `blocker` while it is uncommitted.
      const blocker = await uncommitted();
      const before = await commit();
      const after = await commit();
      const resumed = await ordered(before.id);
      await blocker.end();
      // The resumed stream's live side gets blocker, before and after from the tail; only
      // `after` follows `before` in the order written.
      expect((await take(resumed, 1)).map((e) => e.id)).toEqual([after.id]);
      await nothingWithin(resumed, 300);
      expect((await take(open, 3)).map((e) => e.id)).toEqual([blocker.event.id, before.id, after.id]);
      await Promise.all([resumed.return(), open.return()]);
    });

    it('should stop waiting for a transaction that runs too long, and deliver its event late rather than never', async () => {
      useImpatientTail(100);
      const stream = await ordered();
      await h.services.events.tail?.ready({ accountId: ctx.accountId, livemode: false });
      const long = await uncommitted();
      const next = await commit();
      const started = Date.now();
      expect((await take(stream, 1)).map((e) => e.id)).toEqual([next.id]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(250);
      await long.end();
      expect((await take(stream, 1)).map((e) => e.id)).toEqual([long.event.id]);
      // Later events are not held back by it any more, and none comes twice.
      const last = await commit();
      expect((await take(stream, 1)).map((e) => e.id)).toEqual([last.id]);
      await nothingWithin(stream, 300);
      await stream.return();
    });

    it('should deliver a late transaction\'s event to a stream resumed while it ran, after its scope had closed', async () => {
      useImpatientTail(100);
      const first = await ordered();
      await h.services.events.tail?.ready({ accountId: ctx.accountId, livemode: false });
      const seen = await commit();
      expect((await take(first, 1)).map((e) => e.id)).toEqual([seen.id]);
      const long = await uncommitted();
      const after = await commit();
      expect((await take(first, 1)).map((e) => e.id)).toEqual([after.id]);
      // The client goes away (its scope's tail closes) and comes back after the last event it had before.
      await first.return();
      const resumed = await ordered(seen.id);
      expect((await take(resumed, 1)).map((e) => e.id)).toEqual([after.id]);
      await long.end();
      expect((await take(resumed, 1)).map((e) => e.id)).toEqual([long.event.id]);
      await nothingWithin(resumed, 300);
      await resumed.return();
    });

    it('should deliver a late transaction\'s event to a stream resumed, while it ran, after an event written after it', async () => {
      useImpatientTail(100);
      const first = await ordered();
      await h.services.events.tail?.ready({ accountId: ctx.accountId, livemode: false });
      const long = await uncommitted();
      const after = await commit();
      expect((await take(first, 1)).map((e) => e.id)).toEqual([after.id]);
      await first.return();
      // Its seq is below the one resumed after, but the client never had it.
      const resumed = await ordered(after.id);
      await nothingWithin(resumed, 200);
      await long.end();
      expect((await take(resumed, 1)).map((e) => e.id)).toEqual([long.event.id]);
      await nothingWithin(resumed, 300);
      await resumed.return();
    });

    it('should deliver a late transaction\'s event even when another read of the horizon saw it end first', async () => {
      const tail = useImpatientTail(200);
      const stream = await ordered();
      await tail.ready({ accountId: ctx.accountId, livemode: false });
      const long = await uncommitted();
      const next = await commit();
      expect((await take(stream, 1)).map((e) => e.id)).toEqual([next.id]);
      // It commits, announced to no one, and another account's new stream reads the horizon first.
      await long.end(false);
      const other = (await h.account()).test;
      const elsewhere = await h.services.events.stream(other, {}, { resource: 'events', types: null, ordered: true });
      await tail.ready({ accountId: other.accountId, livemode: false });
      expect((await take(stream, 1)).map((e) => e.id)).toEqual([long.event.id]);
      await Promise.all([stream.return(), elsewhere.return()]);
    });

    /**
     * A stream of `tail` that received `kept` and two more events, then a failover to a standby
     * that had everything up to `kept` and nothing after: the events written after it, and the
     * sequence's values past kept's, are gone. Returns the stream and kept's seq.
     */
    async function streamThroughFailover(tail: EventTail): Promise<{ stream: ResumableEventStream; keptSeq: number }> {
      const stream = await ordered();
      await tail.ready({ accountId: ctx.accountId, livemode: false });
      const kept = await commit();
      const lost = [await commit(), await commit()];
      expect((await take(stream, 3)).map((e) => e.id)).toEqual([kept.id, ...lost.map((e) => e.id)]);
      const [row] = await h.services.db.select<{ seq: string | number }>('SELECT seq FROM events WHERE id = $1', [kept.id]);
      const keptSeq = Number(row.seq);
      await h.services.db.execute('DELETE FROM events WHERE seq > $1', [keptSeq]);
      await h.services.db.select('SELECT setval(\'events_stream_seq\', $1)', [keptSeq]);
      return { stream, keptSeq };
    }

    async function seqsOf(events: ApiEvent[]): Promise<number[]> {
      const rows = await h.services.db.select<{ seq: string | number }>(`SELECT seq FROM events WHERE ${h.services.db.inJsonList('id', '$1')} ORDER BY seq`, [h.services.db.jsonParam(events.map((e) => e.id))]);
      return rows.map((r) => Number(r.seq));
    }

    it('should go on delivering live once it sees the events sequence went back (a failover to a standby that lacked the last events)', async () => {
      const tail = useTail({ sweepMs: 50 });
      const { stream, keptSeq } = await streamThroughFailover(tail);
      // A sweep reads the sequence's value, below what the tail had read, and the tail reads again after `kept`.
      await waitFor(async () => (await tail.readUpTo({ accountId: ctx.accountId, livemode: false })) === keptSeq, { what: 'the tail to see the sequence go back' });
      // New events take the seqs the lost ones had, at or below what the stream delivered: still
      // delivered, in order, instead of waiting until the sequence passes the old value.
      const next = [await commit(), await commit(), await commit()];
      expect(await seqsOf(next)).toEqual([keptSeq + 1, keptSeq + 2, keptSeq + 3]);
      expect((await take(stream, 3)).map((e) => e.id)).toEqual(next.map((e) => e.id));
      await nothingWithin(stream, 300);
      await stream.return();
    });

    it('should deliver the events written after a failover before the tail saw the sequence go back, reading again after the last event still there', async () => {
      // No sweep in between: the tail reads only when an event wakes it.
      const tail = useTail({ sweepMs: 60_000 });
      const { stream, keptSeq } = await streamThroughFailover(tail);
      // Written before the tail read the sequence again: its read sees the sequence at this event,
      // below where it had read, and this event is one the tail had not delivered.
      const first = await commit();
      expect(await seqsOf([first])).toEqual([keptSeq + 1]);
      expect((await take(stream, 1)).map((e) => e.id)).toEqual([first.id]);
      const then = [await commit(), await commit()];
      expect((await take(stream, 2)).map((e) => e.id)).toEqual(then.map((e) => e.id));
      await nothingWithin(stream, 300);
      await stream.return();
    });

    it('should notice the sequence went back when another scope\'s start read it first', async () => {
      const tail = useTail({ sweepMs: 60_000 });
      const { stream } = await streamThroughFailover(tail);
      // Another account's stream opens: its starting point's settle is the one that sees the sequence below where it was.
      const other = (await h.account()).test;
      const elsewhere = await h.services.events.stream(other, {}, { resource: 'events', types: null, ordered: true });
      await tail.ready({ accountId: other.accountId, livemode: false });
      const first = await commit();
      expect((await take(stream, 1)).map((e) => e.id)).toEqual([first.id]);
      await Promise.all([stream.return(), elsewhere.return()]);
    });

    it('should run one settle at a time, those asked meanwhile sharing the next, each reading the sequence after it was asked', async () => {
      const horizon = new PostgresEventHorizon(h.services.db, createLogger('silent'));
      const select = jest.spyOn(h.services.db, 'select');
      try {
        const first = horizon.settle();
        const e = await commit();
        const [row] = await h.services.db.select<{ seq: string | number }>('SELECT seq FROM events WHERE id = $1', [e.id]);
        select.mockClear();
        const asked = await Promise.all(Array.from({ length: 20 }, () => horizon.settle()));
        const tops = asked.map((settled) => settled.top as number);
        // Every one asked after e was committed: each top is at or past it.
        expect(Math.min(...tops)).toBeGreaterThanOrEqual(Number(row.seq));
        // The one running when they asked, if any, then one for them all (20 without sharing).
        const sequenceReads = select.mock.calls.filter(([sql]) => sql.includes('events_stream_seq'));
        expect(sequenceReads.length).toBeLessThanOrEqual(2);
        expect(new Set(tops).size).toBeLessThanOrEqual(2);
        await first;
      } finally {
        select.mockRestore();
      }
    });
  }
});
