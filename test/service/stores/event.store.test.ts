import { EventStore, type ApiEvent } from '../../../src/modules/events/event.store';
import { newId } from '../../../src/core/ids';
import { Params } from '../../../src/db/params';
import { cteList } from '../../../src/db/statement';
import { DIALECT } from '../../helpers/db';
import { START, startServices, type ServiceHarness } from '../../helpers/services';

/** EventStore's contract on both dialects (`npm test` runs this file on SQLite and PostgreSQL). */
let h: ServiceHarness;
let store: EventStore;
beforeAll(async () => {
  h = await startServices();
  store = new EventStore(h.services.db);
});
afterAll(() => h?.stop());

const A = { accountId: 'acct_evt_a', mode: 'test' };
const B = { accountId: 'acct_evt_b', mode: 'test' };
const event = (type: string, at: Date, mode = 'test'): ApiEvent => ({
  id: newId('evt'), object: 'event', type, createdAt: at.toISOString(), livemode: mode === 'live', data: { object: { id: 'cus_1', name: 'Zoë "q" \\ ✓' } },
});
const write = (scope: { accountId: string; mode: string }, e: ApiEvent) => h.services.db.transaction((t) => store.insert(t, e, scope));
const at = (seconds: number) => new Date(START.getTime() + seconds * 1000);

describe('EventStore', () => {
  it('should read back an event exactly as written, only in its account and mode', async () => {
    const e = event('customer.created', at(1));
    await write(A, e);
    expect(await store.find(A, e.id)).toEqual(e);
    expect(await store.find(B, e.id)).toBeNull();
    expect(await store.find({ ...A, mode: 'live' }, e.id)).toBeNull();
  });

  it('should write nothing when the transaction rolls back', async () => {
    const e = event('customer.created', at(2));
    await expect(h.services.db.transaction(async (t) => {
      await store.insert(t, e, A);
      throw new Error('rolled back');
    })).rejects.toThrow('rolled back');
    expect(await store.find(A, e.id)).toBeNull();
  });

  it('should load events by id for the fan-out, with their account, ignoring unknown ids', async () => {
    const e1 = event('customer.updated', at(3));
    const e2 = event('payment.succeeded', at(4), 'live');
    await write(A, e1);
    await write({ ...B, mode: 'live' }, e2);
    const loaded = await store.loadPublished([e1.id, 'evt_unknown', e2.id]);
    expect(loaded.sort((x, y) => x.createdAt.localeCompare(y.createdAt))).toEqual([
      { ...e1, accountId: A.accountId },
      { ...e2, accountId: B.accountId },
    ]);
    expect(await store.loadPublished([])).toEqual([]);
  });

  it('should load one scope\'s events since a time, oldest first, after a cursor, up to a limit', async () => {
    const scope = { accountId: 'acct_evt_since', mode: 'test' };
    const written = [event('customer.created', at(10)), event('customer.updated', at(11)), event('customer.updated', at(12))];
    for (const e of written) await write(scope, e);
    await write({ ...scope, mode: 'live' }, event('customer.created', at(11), 'live'));
    const stream = { accountId: scope.accountId, livemode: false };
    expect((await store.loadPublishedSince(stream, at(10), undefined, 10)).map((e) => e.id)).toEqual(written.map((e) => e.id));
    expect((await store.loadPublishedSince(stream, at(11), undefined, 10)).map((e) => e.id)).toEqual([written[1].id, written[2].id]);
    expect((await store.loadPublishedSince(stream, at(10), { createdAt: written[0].createdAt, id: written[0].id }, 1)).map((e) => e.id)).toEqual([written[1].id]);
  });

  it('should mark how far events were written, and load a scope\'s events written after a mark but stamped before a time, in the order written', async () => {
    const scope = { accountId: 'acct_evt_written', mode: 'test' };
    const stream = { accountId: scope.accountId, livemode: false };
    const other = { accountId: 'acct_evt_written_other', livemode: false };
    const before = await store.writtenMark([stream, other]);
    // SQLite numbers each scope's events (a scope without any: 0); PostgreSQL has one sequence.
    if (DIALECT === 'sqlite') expect([before(stream), before(other)]).toEqual([0, 0]);
    else expect(before(other)).toBe(before(stream));
    expect(await store.loadWrittenAfter(stream, before(stream)!, at(100), 10)).toEqual([]);
    // Stamped in the past (a test clock's frozen time), the middle one after the time asked for.
    const written = [event('customer.created', at(-3600)), event('customer.updated', at(200)), event('customer.updated', at(-7200))];
    for (const e of written) await write(scope, e);
    await write({ ...scope, mode: 'live' }, event('customer.created', at(-3600), 'live'));
    const after = await store.writtenMark([stream]);
    expect(after(stream)).toBeGreaterThan(before(stream)!);
    const loaded = await store.loadWrittenAfter(stream, before(stream)!, at(100), 10);
    expect(loaded.map((e) => e.id)).toEqual([written[0].id, written[2].id]);
    expect(loaded[0]).toMatchObject({ ...written[0], accountId: scope.accountId });
    expect((await store.loadWrittenAfter(stream, loaded[0].seq!, at(100), 10)).map((e) => e.id)).toEqual([written[2].id]);
    expect((await store.loadWrittenAfter(stream, before(stream)!, at(100), 1)).map((e) => e.id)).toEqual([written[0].id]);
    expect(await store.loadWrittenAfter(stream, after(stream)!, at(100), 10)).toEqual([]);
  });

  it('should list a scope\'s events newest first, filtered by type', async () => {
    const scope = { accountId: 'acct_evt_list', mode: 'test' };
    const written = [event('customer.created', at(20)), event('payment.failed', at(21)), event('customer.created', at(22))];
    for (const e of written) await write(scope, e);
    const page = await store.list(scope, { page: 1, pageSize: 10, sortField: 'createdAt', sortDirection: 'desc', type: 'customer.created' });
    expect(page.data.map((e) => e.id)).toEqual([written[2].id, written[0].id]);
    expect(page.data[0]).toEqual(written[2]);
  });

  it('should list the events of any of several objects, newest first, with the type filters, counted, in its scope only', async () => {
    const scope = { accountId: 'acct_evt_objects', mode: 'test' };
    const of = (type: string, seconds: number, id: string) => ({ ...event(type, at(seconds)), data: { object: { id } } });
    const written = [of('payment.succeeded', 30, 'pay_o1'), of('refund.created', 31, 're_o1'), of('customer.created', 32, 'cus_o1'), of('refund.created', 33, 're_o2'), of('refund.succeeded', 34, 're_o1')];
    for (const e of written) await write(scope, e);
    await write({ ...scope, mode: 'live' }, { ...of('refund.created', 35, 're_o1'), livemode: true });
    await write({ ...B }, of('refund.created', 36, 're_o1'));
    const list = (objectIds: string[], more: { type?: string; page?: number; pageSize?: number } = {}, types: string[] | null = null) =>
      store.list(scope, { page: more.page ?? 1, pageSize: more.pageSize ?? 10, sortField: 'createdAt', sortDirection: 'desc', objectIds, type: more.type }, types);
    const all = await list(['pay_o1', 're_o1', 're_o2', 're_o1']);
    expect(all.data).toEqual([written[4], written[3], written[1], written[0]]);
    expect(all.total).toBe(4);
    expect(await list(['pay_o1', 're_o1', 're_o2'], { page: 2, pageSize: 3 })).toEqual({ data: [written[0]], total: 4, page: 2, pageSize: 3, hasMore: false });
    expect((await list(['pay_o1', 're_o1', 're_o2'], { type: 'refund.created' })).data).toEqual([written[3], written[1]]);
    expect(await list(['pay_o1', 're_o1', 'cus_o1'], {}, ['customer.created', 'payment.succeeded'])).toMatchObject({ data: [written[2], written[0]], total: 2 });
    expect(await list([])).toMatchObject({ data: [], total: 0 });
    expect(await list(['re_unknown'])).toMatchObject({ data: [], total: 0 });
  });

  it('should insert many events at once (the billing run\'s batches) exactly as written alone, each listed by its object', async () => {
    const scope = { accountId: 'acct_evt_many', mode: 'test' };
    const many = [event('invoice.created', at(40)), event('invoice.paid', at(41))];
    // Text JSON escapes, non-ASCII and a number with a fraction: stored as JSON.stringify writes them.
    many[1].data = { object: { id: 'in_many_2', status: 'paid', memo: 'Zaż\u00f3łć "quoted" \\ tab\t Ωμέγα 😀', ratio: 0.125 } };
    const rows = many.map((e) => ({ event: e, ...scope }));
    const written = await h.services.db.transaction(async (t) => {
      // PostgreSQL: one statement with the hooks' parts (here one that reads the inserted rows back).
      const one = await store.insertManyWith(t, rows, [(_p, cte) => `SELECT id FROM ${cte}`]);
      if (!one) for (const r of rows) await store.insert(t, r.event, r);
      return one;
    });
    expect(written).toBe(DIALECT === 'postgres');
    for (const e of many) expect(await store.find(scope, e.id)).toEqual(e);
    const [raw] = await h.services.db.select<{ data: string }>('SELECT data FROM events WHERE id = $1', [many[1].id]);
    expect(raw.data).toBe(JSON.stringify(many[1].data));
    const byObject = await store.list(scope, { page: 1, pageSize: 10, sortField: 'createdAt', sortDirection: 'desc', objectId: 'in_many_2' });
    expect(byObject.data).toEqual([many[1]]);
  });

  if (DIALECT === 'postgres') {
    it('should insert, as a CTE part, only the events whose source row the guard returned, with the same JSON as written alone', async () => {
      const scope = { accountId: 'acct_evt_part', mode: 'test' };
      const kept = event('payment.succeeded', at(30));
      const dropped = event('payment.succeeded', at(31));
      const objects = [{ id: 'pay_kept', json: JSON.stringify(kept.data.object) }, { id: 'pay_dropped', json: JSON.stringify(dropped.data.object) }];
      const p = new Params();
      const part = store.insertPart('evt', [
        { event: kept, ...scope, sourceId: 'pay_kept' },
        { event: dropped, ...scope, sourceId: 'pay_dropped' },
      ], p, 'guard', { relation: 'src', jsonColumn: 'json' });
      await h.services.db.select(
        `WITH src AS (SELECT * FROM json_to_recordset(${p.add(JSON.stringify(objects), 'json')}) AS s(id text, json text)),
        guard AS (SELECT id FROM src WHERE id = 'pay_kept'),
        ${cteList([part])} SELECT id FROM evt`,
        p.values,
      );
      expect(await store.find(scope, kept.id)).toEqual(kept);
      expect(await store.find(scope, dropped.id)).toBeNull();
      // Listed by its object, as an event written alone is.
      const byObject = await store.list(scope, { page: 1, pageSize: 10, sortField: 'createdAt', sortDirection: 'desc', objectId: String(kept.data.object.id) });
      expect(byObject.data).toEqual([kept]);
    });
  }

  if (DIALECT === 'postgres') it('should number a batch\'s events in the order given, whatever order the statement joins them in', async () => {
    const scope = { accountId: 'acct_evt_order', mode: 'test' };
    const batch = Array.from({ length: 200 }, (_, i) => ({ event: event('payment.succeeded', at(500 + i)), ...scope, sourceId: `pay_order_${i}` }));
    // The source rows come in the other order, and outnumber the events the guard lets through.
    const objects = batch.map((r) => ({ id: r.sourceId, json: JSON.stringify(r.event.data.object) })).reverse();
    const p = new Params();
    const part = store.insertPart('evt', batch, p, 'guard', { relation: 'src', jsonColumn: 'json' });
    await h.services.db.select(
      `WITH src AS (SELECT * FROM json_to_recordset(${p.add(JSON.stringify(objects), 'json')}) AS s(id text, json text)),
      guard AS (SELECT id FROM src),
      ${cteList([part])} SELECT id FROM evt`,
      p.values,
    );
    const many = batch.slice(0, 50).map(() => ({ event: event('invoice.created', at(800)), ...scope }));
    await h.services.db.transaction((t) => store.insertManyWith(t, many, []));
    const ordered = await store.loadSeqRange({ accountId: scope.accountId, livemode: false }, null, null, 1000);
    expect(ordered.map((e) => e.id)).toEqual([...batch.map((r) => r.event.id), ...many.map((r) => r.event.id)]);
  });

  // PostgreSQL only: an instance of the release before migration 0029, still running during a
  // rolling upgrade, writes events without seq (SQLite has one instance per file).
  if (DIALECT === 'postgres') it('should number an event written without seq, after those written before it, and read it back from a position', async () => {
    const first = event('customer.created', at(300));
    await write(A, first);
    const old = event('customer.updated', at(301));
    await h.services.db.execute(
      'INSERT INTO events (id, account_id, mode, type, object_id, data, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
      [old.id, A.accountId, A.mode, old.type, 'cus_1', JSON.stringify(old.data), new Date(old.createdAt)],
    );
    const seqs = await h.services.db.select<{ id: string; seq: string | number | null }>('SELECT id, seq FROM events WHERE id IN ($1, $2)', [first.id, old.id]);
    const seqOf = (id: string) => Number(seqs.find((r) => r.id === id)?.seq);
    expect(seqOf(old.id)).toBeGreaterThan(seqOf(first.id));
    expect((await store.loadAfter(A, { after: first.id }, null, 10)).map((e) => e.id)).toEqual([old.id]);
  });

  // PostgreSQL only (migration 0031): the ordered streams' horizon waits for the transactions
  // running after it read the sequence, which covers one that took a seq only if it had its
  // transaction id first. The default takes the id even when the event is the first thing written.
  if (DIALECT === 'postgres') it('should give a transaction its id before it takes an event\'s seq', async () => {
    const [{ seq }] = await h.services.db.select<{ seq: string }>(
      "SELECT pg_get_expr(d.adbin, d.adrelid) AS seq FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum WHERE d.adrelid = 'events'::regclass AND a.attname = 'seq'",
    );
    // Three transactions: plain nextval gives one an id only when it logs the sequence (one call in 32).
    for (let i = 0; i < 3; i++) {
      const assigned = await h.services.db.transaction(async (t) => {
        const [before] = await h.services.db.select<{ xid: string | null }>('SELECT pg_current_xact_id_if_assigned()::text AS xid', [], t);
        await h.services.db.select(`SELECT ${seq} AS taken`, [], t);
        const [after] = await h.services.db.select<{ xid: string | null }>('SELECT pg_current_xact_id_if_assigned()::text AS xid', [], t);
        return { before: before.xid, after: after.xid };
      });
      expect(assigned).toEqual({ before: null, after: expect.any(String) });
    }
  });
});
