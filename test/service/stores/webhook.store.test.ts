import 'reflect-metadata';
import { Database, readTime } from '../../../src/db/database';
import { Params } from '../../../src/db/params';
import { FixedClock } from '../../../src/core/clock';
import { newId } from '../../../src/core/ids';
import type { ApiEvent } from '../../../src/modules/events/event.store';
import { WebhookEndpointModel } from '../../../src/modules/webhooks/webhook-endpoint.model';
import { WebhookStore, type ClaimedDelivery } from '../../../src/modules/webhooks/webhook.store';
import { DIALECT, type TestDatabase } from '../../helpers/db';
import { migratedDatabase } from '../../helpers/migrated-db';

const LEASE_MS = 15_000;

let database: TestDatabase;
let db: Database;
let store: WebhookStore;
let clock: FixedClock;
/** Statements run since the last `statements.length = 0`. */
const statements: string[] = [];

beforeAll(async () => {
  ({ database, db } = await migratedDatabase((sql) => statements.push(sql)));
  store = new WebhookStore(db);
});

// The claim reads every account's outbox: what one test leaves due must not reach the next.
beforeEach(async () => {
  clock = new FixedClock(new Date(Date.now() - 1_000));
  await db.execute("UPDATE webhook_deliveries SET status = 'abandoned' WHERE status IN ('pending', 'held')");
  statements.length = 0;
});

afterAll(async () => {
  await db?.close();
  await database?.drop();
});

type Scope = { accountId: string; mode: 'test' | 'live' };

const scope = (mode: 'test' | 'live' = 'test'): Scope => ({ accountId: newId('acct'), mode });

async function endpoint(
  at: Scope,
  events: string[] = ['*'],
  extra: Partial<Pick<WebhookEndpointModel, 'status' | 'deletedAt' | 'previousSecretSealed' | 'previousSecretExpiresAt'>> = {},
): Promise<string> {
  const id = newId('we');
  const now = clock.now();
  await WebhookEndpointModel.create({
    id, accountId: at.accountId, mode: at.mode, url: `https://rx.example.com/${id}`, description: null, events: JSON.stringify(events),
    secretSealed: `sealed-${id}`, status: 'enabled', disabledReason: null, createdAt: now, updatedAt: now, deletedAt: null, ...extra,
  });
  return id;
}

function event(at: Scope, type = 'customer.created'): ApiEvent {
  return {
    id: newId('evt'), object: 'event', type, createdAt: clock.now().toISOString(), livemode: at.mode === 'live',
    data: { object: { id: newId('cus'), object: 'customer', note: 'quote " backslash \\ percent % underscore _' } },
  };
}

/** One event's deliveries, queued as the outbox hook queues them, due at `at` (default now). */
function queue(to: Scope, type = 'customer.created', at = clock.now()): Promise<number> {
  return db.transaction((t) => store.insertDeliveries(t, to, event(to, type), at));
}

interface Row {
  id: string; endpoint_id: string; event_id: string; event_type: string; payload: string; status: string; attempts: number;
  next_attempt_at: unknown; first_attempt_at: unknown; locked_until: unknown; lock_token: string | null; last_error: string | null;
  last_status_code: number | null; delivered_at: unknown;
}

async function rows(of: { endpointId?: string; accountId?: string }): Promise<Row[]> {
  const [column, value] = of.endpointId ? ['endpoint_id', of.endpointId] : ['account_id', of.accountId];
  const found = await db.select<Row>(
    `SELECT id, endpoint_id, event_id, event_type, payload, status, attempts, next_attempt_at, first_attempt_at, locked_until, lock_token, last_error,
            last_status_code, delivered_at
       FROM webhook_deliveries WHERE ${column} = $1 ORDER BY next_attempt_at, id`,
    [value],
  );
  return found.map((r) => ({ ...r, attempts: Number(r.attempts) }));
}

async function row(id: string): Promise<Row> {
  const [found] = await db.select<Row>('SELECT * FROM webhook_deliveries WHERE id = $1', [id]);
  return { ...found, attempts: Number(found.attempts) };
}

function claim(limit = 100, opts: { inFlight?: Map<string, number>; perEndpoint?: number; leaseMs?: number } = {}): Promise<ClaimedDelivery[]> {
  return store.claim({ clock, limit, inFlight: opts.inFlight ?? new Map(), perEndpoint: opts.perEndpoint ?? 16, leaseMs: opts.leaseMs ?? LEASE_MS });
}

/** The lease ran out, as it does on the database's clock when its worker died. */
async function expireLease(deliveryId: string) {
  await db.execute('UPDATE webhook_deliveries SET locked_until = $1 WHERE id = $2', [new Date(Date.now() - 1_000), deliveryId]);
}

const settleWrite = (status: 'pending' | 'delivered' | 'failed', extra: { nextAttemptAt?: Date | null; statusCode?: number | null } = {}) => ({
  status,
  nextAttemptAt: extra.nextAttemptAt ?? null,
  statusCode: extra.statusCode === undefined ? (status === 'delivered' ? 200 : 500) : extra.statusCode,
  error: status === 'delivered' ? null : 'HTTP 500',
  latencyMs: 12,
  deliveredAt: status === 'delivered' ? clock.now() : null,
  now: clock.now(),
});

describe('WebhookStore.insertDeliveries', () => {
  it('should queue one pending delivery per enabled, subscribed endpoint of the scope, carrying the event as its payload', async () => {
    const at = scope();
    const wildcard = await endpoint(at, ['*']);
    const subscribed = await endpoint(at, ['customer.updated', 'customer.created']);
    await endpoint(at, ['customer.updated']);
    await endpoint(at, ['customer.created'], { status: 'disabled' });
    await endpoint(at, ['customer.created'], { deletedAt: clock.now() });
    await endpoint({ ...at, mode: 'live' }, ['*']);
    await endpoint(scope(), ['*']);
    const e = event(at);

    statements.length = 0;
    const queued = await db.transaction((t) => store.insertDeliveries(t, at, e, clock.now()));
    expect(statements.filter((s) => s.includes('webhook_deliveries'))).toHaveLength(1);

    expect(queued).toBe(2);
    const found = await rows({ accountId: at.accountId });
    expect(found.map((r) => r.endpoint_id).sort()).toEqual([wildcard, subscribed].sort());
    for (const r of found) {
      // whd_ + 20 characters shared by the statement + the endpoint id's random part.
      expect(r.id).toMatch(/^whd_[0-9A-Za-z]{44}$/);
      expect(r.id.slice(24)).toBe(r.endpoint_id.slice(3));
      expect(r).toMatchObject({ event_id: e.id, event_type: 'customer.created', status: 'pending', attempts: 0, lock_token: null, first_attempt_at: null });
      expect(r.payload).toBe(JSON.stringify(e));
      expect(readTime(r.next_attempt_at)).toEqual(clock.now());
    }
    expect(found[0].id.slice(0, 24)).toBe(found[1].id.slice(0, 24));
  });

  it('should match event types literally, not as LIKE patterns', async () => {
    const at = scope();
    await endpoint(at, ['paymentXlink.created']);
    await endpoint(at, ['payment%']);
    const exact = await endpoint(at, ['payment_link.created']);
    expect(await queue(at, 'payment_link.created')).toBe(1);
    expect((await rows({ accountId: at.accountId })).map((r) => r.endpoint_id)).toEqual([exact]);
  });

  it('should write in the caller transaction, so a rollback leaves no delivery', async () => {
    const at = scope();
    await endpoint(at);
    await expect(db.transaction(async (t) => {
      expect(await store.insertDeliveries(t, at, event(at), clock.now())).toBe(1);
      throw new Error('the change failed');
    })).rejects.toThrow('the change failed');
    expect(await rows({ accountId: at.accountId })).toEqual([]);
  });
});

// The batch statement exists on PostgreSQL only (SQLite writes each event in its own transaction).
if (DIALECT === 'postgres') {
  describe('WebhookStore.deliveriesBatchPart (PostgreSQL)', () => {
    /** One statement: the events CTE `evt` inserts `inserted`, the part queues deliveries for `batched`. */
    async function batchStatement(batched: Array<{ event: ApiEvent; at: Scope }>, inserted: Array<{ event: ApiEvent; at: Scope }>) {
      const p = new Params();
      const events = p.add(db.jsonParam(inserted.map(({ event: e, at }) => ({
        id: e.id, account_id: at.accountId, mode: at.mode, type: e.type, data: JSON.stringify(e.data), created_at: e.createdAt,
      }))), 'json');
      const part = store.deliveriesBatchPart(batched.map(({ event: e, at }) => ({ event: e, accountId: at.accountId, mode: at.mode })), p, 'evt', clock.now());
      const sql = `WITH evt AS (
          INSERT INTO events (id, account_id, mode, type, data, created_at)
          SELECT id, account_id, mode, type, data, created_at
            FROM json_to_recordset(${events}) AS v(id text, account_id text, mode text, type text, data text, created_at timestamptz)
          RETURNING id, account_id, mode, type, data, created_at),
        evt_hook0 AS (${part} RETURNING id)
        SELECT (SELECT COUNT(*) FROM evt) AS events, (SELECT COUNT(*) FROM evt_hook0) AS deliveries`;
      const [counts] = await db.select<{ events: string; deliveries: string }>(sql, p.values);
      return { part, counts: { events: Number(counts.events), deliveries: Number(counts.deliveries) } };
    }

    it('should queue, inside the one statement, a delivery per subscribed endpoint of each event the events CTE inserted', async () => {
      const a = scope();
      const b = scope('live');
      const aAll = await endpoint(a, ['*']);
      const aPaid = await endpoint(a, ['payment.succeeded']);
      await endpoint(a, ['paymentXlink.created']); // `_` is no wildcard
      await endpoint(a, ['payment.succeeded'], { status: 'disabled' });
      await endpoint(a, ['*'], { deletedAt: clock.now() });
      const bAll = await endpoint(b, ['*']);
      await endpoint({ ...b, mode: 'test' }, ['*']);

      const paid = { event: event(a, 'payment.succeeded'), at: a };
      const created = { event: event(a, 'customer.created'), at: a };
      const other = { event: event(b, 'payment.succeeded'), at: b };
      const link = { event: event(a, 'payment_link.created'), at: a };
      const notInserted = { event: event(a, 'payment.succeeded'), at: a };
      const { counts } = await batchStatement([paid, created, other, link, notInserted], [paid, created, other, link]);
      expect(counts).toEqual({ events: 4, deliveries: 5 });

      const found = [...await rows({ accountId: a.accountId }), ...await rows({ accountId: b.accountId })];
      expect(found.map((r) => `${r.event_id} ${r.endpoint_id}`).sort()).toEqual([
        `${paid.event.id} ${aAll}`, `${paid.event.id} ${aPaid}`, `${created.event.id} ${aAll}`, `${other.event.id} ${bAll}`, `${link.event.id} ${aAll}`,
      ].sort());
      const byEvent = new Map([paid, created, other, link].map((x) => [x.event.id, x.event]));
      for (const r of found) {
        expect(r.id).toMatch(/^whd_[0-9A-Za-z]{44}$/);
        expect(r.id.slice(24)).toBe(r.endpoint_id.slice(3));
        expect(r).toMatchObject({ status: 'pending', attempts: 0, event_type: byEvent.get(r.event_id)?.type });
        // The payload is built from the events row: the same bytes as the single-event path.
        expect(r.payload).toBe(JSON.stringify(byEvent.get(r.event_id)));
        expect(readTime(r.next_attempt_at)).toEqual(clock.now());
      }
    });

    it('should give the same statement text whatever the number of events (one prepared plan)', () => {
      const at = scope();
      const text = (n: number) => store.deliveriesBatchPart(
        Array.from({ length: n }, () => ({ event: event(at), accountId: at.accountId, mode: at.mode })), new Params(), 'evt', clock.now(),
      );
      expect(text(3)).toBe(text(1));
    });
  });
}

describe('WebhookStore.claim', () => {
  it('should lease only due rows, counting the attempt and returning what sending needs', async () => {
    const at = scope();
    const id = await endpoint(at, ['*']);
    await queue(at, 'customer.created', new Date(clock.now().getTime() - 5_000));
    await queue(at, 'customer.updated', new Date(clock.now().getTime() + 60_000)); // not due yet
    await queue(at, 'customer.created', new Date(clock.now().getTime() - 4_000));
    const [due, held, later] = await rows({ endpointId: id });
    await db.execute("UPDATE webhook_deliveries SET status = 'held' WHERE id = $1", [held.id]);

    statements.length = 0;
    const claimed = await claim();
    // One statement on PostgreSQL; a look, the write and the read back on SQLite.
    expect(statements.filter((s) => s.includes('webhook_deliveries'))).toHaveLength(DIALECT === 'postgres' ? 1 : 3);

    expect(claimed).toHaveLength(1);
    const [c] = claimed;
    expect(c).toEqual({
      id: due.id, accountId: at.accountId, mode: 'test', endpointId: id, eventId: due.event_id, eventType: 'customer.created', payload: due.payload,
      attempt: 1, firstAttemptAt: clock.now(), lockToken: expect.stringMatching(/^[0-9A-Za-z]{24}$/),
      endpoint: {
        url: `https://rx.example.com/${id}`, secrets: { current: `sealed-${id}`, previous: null, previousExpiresAt: null }, status: 'enabled', deleted: false, events: ['*'], goneSince: null,
      },
    });
    const leased = await row(due.id);
    expect(leased).toMatchObject({ status: 'pending', attempts: 1, lock_token: c.lockToken });
    // The lease runs on the database's clock, LEASE_MS from the claim.
    const until = (readTime(leased.locked_until) as Date).getTime();
    expect(until).toBeGreaterThan(Date.now() + LEASE_MS - 5_000);
    expect(until).toBeLessThanOrEqual(Date.now() + LEASE_MS + 1_000);
    expect((await row(later.id)).attempts).toBe(0);
    expect((await row(held.id)).status).toBe('held');
  });

  it('should not claim a leased row until its lease ends, then count the next attempt and keep the first attempt time', async () => {
    const at = scope();
    await endpoint(at);
    await queue(at);
    const [first] = await claim();
    expect(await claim()).toEqual([]);

    clock.advance(30_000);
    expect(await claim()).toEqual([]); // business time does not end a lease
    await expireLease(first.id);
    const [again] = await claim();
    expect(again).toMatchObject({ id: first.id, attempt: 2, firstAttemptAt: first.firstAttemptAt });
    expect(again.lockToken).not.toBe(first.lockToken);
  });

  it('should claim nothing when asked for nothing', async () => {
    const at = scope();
    await endpoint(at);
    await queue(at);
    expect(await claim(0)).toEqual([]);
    expect((await rows({ accountId: at.accountId }))[0].attempts).toBe(0);
  });

  it('should serve every endpoint round-robin, so one backlog does not starve another', async () => {
    const busy = scope();
    const quiet = scope();
    const backlogged = await endpoint(busy);
    const other = await endpoint(quiet);
    const t0 = clock.now().getTime();
    for (let i = 0; i < 20; i++) await queue(busy, 'customer.created', new Date(t0 - 100_000 + i));
    await queue(quiet, 'customer.created', new Date(t0 - 1_000));
    await queue(quiet, 'customer.created', new Date(t0 - 999));

    // Oldest first would give the backlog all four.
    const claimed = await claim(4);
    expect(claimed.map((c) => c.endpointId).sort()).toEqual([backlogged, backlogged, other, other].sort());
    // Within an endpoint, oldest first.
    const [oldest, second] = (await rows({ endpointId: backlogged })).map((r) => r.id);
    expect(claimed.filter((c) => c.endpointId === backlogged).map((c) => c.id).sort()).toEqual([oldest, second].sort());
  });

  it('should cap each endpoint at perEndpoint, counting what the worker already has in flight', async () => {
    const busy = scope();
    const quiet = scope();
    const backlogged = await endpoint(busy);
    const other = await endpoint(quiet);
    for (let i = 0; i < 6; i++) await queue(busy);
    await queue(quiet);

    const capped = await claim(100, { perEndpoint: 3, inFlight: new Map([[backlogged, 2]]) });
    expect(capped.filter((c) => c.endpointId === backlogged)).toHaveLength(1);
    expect(capped.filter((c) => c.endpointId === other)).toHaveLength(1);

    // Full in flight: none for it; the rest stay claimable later.
    expect(await claim(100, { perEndpoint: 3, inFlight: new Map([[backlogged, 3]]) })).toEqual([]);
    expect(await claim(100, { perEndpoint: 3 })).toHaveLength(3);
  });

  it('should extend the leases of claims still pending or held (an endpoint disabled while they are in flight)', async () => {
    const at = scope();
    await endpoint(at);
    await queue(at);
    await queue(at);
    const [a, b] = await claim();
    await expireLease(a.id);
    await expireLease(b.id);
    await db.execute("UPDATE webhook_deliveries SET status = 'held' WHERE id = $1", [b.id]);

    // One claim, one token: the held row is still being sent, so its lease is kept too (else,
    // enabled again, it could be claimed and sent a second time while the first send runs).
    expect(b.lockToken).toBe(a.lockToken);
    expect(await store.renewLeases([a.lockToken, 'unknown-token'], LEASE_MS)).toBe(2);
    for (const id of [a.id, b.id]) expect((readTime((await row(id)).locked_until) as Date).getTime()).toBeGreaterThan(Date.now() + LEASE_MS - 5_000);
    await db.execute("UPDATE webhook_deliveries SET status = 'delivered' WHERE id = $1", [b.id]);
    await expireLease(b.id);
    expect(await store.renewLeases([a.lockToken], LEASE_MS)).toBe(1);
    expect(await claim()).toEqual([]);
    expect(await store.renewLeases([], LEASE_MS)).toBe(0);
  });
});

describe('WebhookStore settling', () => {
  async function claimOne(at = scope()): Promise<ClaimedDelivery> {
    await endpoint(at);
    await queue(at);
    const [c] = await claim();
    return c;
  }

  it('should record a success and end the lease, once', async () => {
    const c = await claimOne();
    expect(await db.transaction((t) => store.settleClaim(t, c, settleWrite('delivered')))).toBe('delivered');
    expect(await row(c.id)).toMatchObject({ status: 'delivered', last_status_code: 200, last_error: null, lock_token: null, locked_until: null });
    expect(readTime((await row(c.id)).delivered_at)).toEqual(clock.now());
    // The claim is spent: a second settle of it is not the owner's.
    expect(await db.transaction((t) => store.settleClaim(t, c, settleWrite('failed')))).toBeNull();
    expect((await row(c.id)).status).toBe('delivered');
  });

  it('should schedule a failed attempt for retry, then claim it again when due', async () => {
    const c = await claimOne();
    const retryAt = new Date(clock.now().getTime() + 2_000);
    expect(await db.transaction((t) => store.settleClaim(t, c, settleWrite('pending', { nextAttemptAt: retryAt })))).toBe('pending');
    const r = await row(c.id);
    expect(r).toMatchObject({ status: 'pending', attempts: 1, last_status_code: 500, last_error: 'HTTP 500', lock_token: null, locked_until: null, delivered_at: null });
    expect(readTime(r.next_attempt_at)).toEqual(retryAt);

    expect(await claim()).toEqual([]);
    clock.set(retryAt);
    expect(await claim()).toMatchObject([{ id: c.id, attempt: 2, firstAttemptAt: c.firstAttemptAt }]);
  });

  it('should give up a delivery whose retries are over', async () => {
    const c = await claimOne();
    expect(await db.transaction((t) => store.settleClaim(t, c, settleWrite('failed')))).toBe('failed');
    expect(await row(c.id)).toMatchObject({ status: 'failed', lock_token: null });
    clock.advance(86_400_000);
    expect(await claim()).toEqual([]);
  });

  it('should keep a delivery held while it was in flight held, unless the attempt delivered it', async () => {
    const at = scope();
    const id = await endpoint(at);
    await queue(at);
    await queue(at);
    const [failing, succeeding] = await claim();
    await db.transaction((t) => store.holdPending(t, id, clock.now(), 'endpoint disabled'));
    expect(await db.transaction((t) => store.settleClaim(t, failing, settleWrite('pending', { nextAttemptAt: clock.now() })))).toBe('held');
    expect(await db.transaction((t) => store.settleClaim(t, succeeding, settleWrite('delivered')))).toBe('delivered');
    expect(await row(failing.id)).toMatchObject({ status: 'held', lock_token: null });
  });

  it('should record a 2xx answered after the row was given up as delivered, and not send it again', async () => {
    const at = scope();
    const c = await claimOne(at);
    await db.transaction((t) => store.abandonPending(t, c.endpointId, clock.now(), 'endpoint deleted'));
    await db.transaction(async (t) => {
      expect(await store.settleClaim(t, c, settleWrite('delivered'))).toBeNull();
      expect(await store.dropLease(t, c)).toBe(true); // our token was still on it
      expect(await store.recordLateDelivery(t, c.id, { statusCode: 204, latencyMs: 7, now: clock.now() })).toBe(true);
      expect(await store.deliveryStatus(t, c.id)).toBe('delivered');
    });
    expect(await row(c.id)).toMatchObject({ status: 'delivered', last_status_code: 204, last_error: null, lock_token: null });
    expect(await claim()).toEqual([]);
  });

  it('should record a 2xx answered after the lease was lost as delivered, so the new owner does not settle it again', async () => {
    const first = await claimOne();
    await expireLease(first.id);
    const [second] = await claim();
    expect(second.id).toBe(first.id);
    await db.transaction(async (t) => {
      expect(await store.settleClaim(t, first, settleWrite('delivered'))).toBeNull();
      expect(await store.dropLease(t, first)).toBe(false); // the token is the new owner's
      expect(await store.recordLateDelivery(t, first.id, { statusCode: 200, latencyMs: 5, now: clock.now() })).toBe(true);
    });
    expect(await db.transaction((t) => store.settleClaim(t, second, settleWrite('pending', { nextAttemptAt: clock.now() })))).toBeNull();
    expect(await db.transaction((t) => store.recordLateDelivery(t, first.id, { statusCode: 200, latencyMs: 5, now: clock.now() }))).toBe(false);
    expect((await row(first.id)).status).toBe('delivered');
    await expireLease(first.id);
    expect(await claim()).toEqual([]);
  });

  it('should answer null for the status of an unknown delivery', async () => {
    expect(await db.transaction((t) => store.deliveryStatus(t, 'whd_unknown'))).toBeNull();
  });

  it('should give a claim back unsent without counting the attempt', async () => {
    const at = scope();
    await endpoint(at);
    await queue(at);
    await queue(at);
    const [held, abandoned] = await claim();
    await store.releaseUnsent(held, 'held', 'endpoint disabled', clock.now());
    await store.releaseUnsent(abandoned, 'abandoned', 'endpoint deleted', clock.now());
    expect(await row(held.id)).toMatchObject({ status: 'held', attempts: 0, last_error: 'endpoint disabled', lock_token: null, locked_until: null });
    expect(await row(abandoned.id)).toMatchObject({ status: 'abandoned', attempts: 0, last_error: 'endpoint deleted', lock_token: null });
    // Only while the claim is still ours.
    await store.releaseUnsent(held, 'abandoned', 'again', clock.now());
    expect((await row(held.id)).status).toBe('held');
  });

  it('should give back a claim whose endpoint was disabled meanwhile (its row held)', async () => {
    const at = scope();
    const id = await endpoint(at);
    await queue(at);
    const [c] = await claim();
    await db.transaction((t) => store.holdPending(t, id, clock.now(), 'endpoint disabled'));
    await store.releaseUnsent(c, 'held', 'endpoint disabled', clock.now());
    expect(await row(c.id)).toMatchObject({ status: 'held', attempts: 0, lock_token: null, locked_until: null });
  });

  it('should log attempts and list them newest first, filtered, within the scope', async () => {
    const at = scope();
    const c = await claimOne(at);
    const base = clock.now().getTime();
    const attempt = (n: number, succeeded: boolean) => db.transaction((t) => store.insertAttempt(t, {
      accountId: at.accountId, mode: at.mode, endpointId: c.endpointId, deliveryId: c.id, eventId: c.eventId, eventType: c.eventType, attempt: n,
      succeeded, statusCode: succeeded ? 200 : null, latencyMs: 40 + n, error: succeeded ? null : 'connection refused',
      nextRetryAt: succeeded ? null : new Date(base + 60_000), createdAt: new Date(base + n),
    }));
    await attempt(1, false);
    await attempt(2, true);
    // What settling the second attempt leaves on the delivery (an attempt's nextRetryAt is read beside it).
    await db.execute("UPDATE webhook_deliveries SET status = 'delivered', attempts = 2, locked_until = NULL, lock_token = NULL WHERE id = $1", [c.id]);
    const list = (query: { status?: 'succeeded' | 'failed'; eventId?: string } = {}, where: Scope = at) =>
      store.listAttempts(where, c.endpointId, { page: 1, pageSize: 10, sortField: 'createdAt', sortDirection: 'desc', ...query, status: query.status && [query.status] });

    const all = await list();
    expect(all.total).toBe(2);
    expect(all.data[1]).toEqual({
      id: expect.stringMatching(/^wha_[0-9A-Za-z]{24}$/), object: 'webhook_delivery_attempt', livemode: false, endpointId: c.endpointId, deliveryId: c.id,
      eventId: c.eventId, eventType: 'customer.created', attempt: 1, status: 'failed', statusCode: null, latencyMs: 41, error: 'connection refused',
      nextRetryAt: new Date(base + 60_000).toISOString(), createdAt: new Date(base + 1).toISOString(), updatedAt: new Date(base + 1).toISOString(),
    });
    expect(all.data[0]).toMatchObject({ attempt: 2, status: 'succeeded', statusCode: 200, error: null, nextRetryAt: null });
    expect((await list({ status: 'succeeded' })).data.map((a) => a.attempt)).toEqual([2]);
    expect((await list({ status: 'failed' })).data.map((a) => a.attempt)).toEqual([1]);
    expect((await list({ eventId: 'evt_other' })).total).toBe(0);
    expect((await list({}, { ...at, mode: 'live' })).total).toBe(0);
    expect((await list({}, scope())).total).toBe(0);
  });

  it('should give several endpoints the same page of their logs as each one\'s own list, in one statement for all (and one for the totals)', async () => {
    const at = scope();
    await endpoint(at);
    await endpoint(at);
    await queue(at);
    const [first, second] = await claim(); // one delivery per endpoint
    expect(first.endpointId).not.toBe(second.endpointId);
    const empty = await endpoint(at);
    const base = clock.now().getTime();
    let n = 0;
    for (const c of [first, second, first, first, second, first]) {
      n += 1;
      const succeeded = n % 2 === 0;
      await db.transaction((t) => store.insertAttempt(t, {
        accountId: at.accountId, mode: at.mode, endpointId: c.endpointId, deliveryId: c.id, eventId: c.eventId, eventType: c.eventType, attempt: n,
        succeeded, statusCode: succeeded ? 200 : 500, latencyMs: 10, error: succeeded ? null : 'HTTP 500', nextRetryAt: null, createdAt: new Date(base + n),
      }));
    }
    const ids = [first.endpointId, second.endpointId, empty, first.endpointId];
    for (const query of [
      { page: 1, pageSize: 10, sortDirection: 'desc' as const }, { page: 2, pageSize: 2, sortDirection: 'desc' as const },
      { page: 1, pageSize: 3, sortDirection: 'asc' as const }, { page: 1, pageSize: 10, sortDirection: 'desc' as const, status: ['failed' as const] },
    ]) {
      const input = { sortField: 'createdAt' as const, ...query };
      statements.length = 0;
      const pages = await store.listAttemptsFor(at, ids, input);
      expect(statements).toHaveLength(2);
      expect([...pages.keys()]).toEqual([first.endpointId, second.endpointId, empty]);
      for (const id of pages.keys()) expect([query, id, pages.get(id)]).toEqual([query, id, await store.listAttempts(at, id, input)]);
      statements.length = 0;
      const uncounted = await store.listAttemptsFor(at, ids, input, { countTotal: false });
      expect(statements).toHaveLength(1);
      expect(uncounted.get(first.endpointId)).toEqual({ ...pages.get(first.endpointId), total: null });
    }
    // Within the scope only.
    expect((await store.listAttemptsFor({ ...at, mode: 'live' }, ids, { page: 1, pageSize: 10, sortField: 'createdAt', sortDirection: 'desc' })).get(first.endpointId))
      .toEqual({ data: [], total: 0, page: 1, pageSize: 10, hasMore: false });
    expect(await store.listAttemptsFor(at, [], { page: 1, pageSize: 10, sortField: 'createdAt', sortDirection: 'desc' })).toEqual(new Map());
  });
});

describe('WebhookStore endpoint changes', () => {
  /** An endpoint with one delivery of each type, pending, plus a held and a delivered one. */
  async function setup(events: string[] = ['*']) {
    const at = scope();
    const id = await endpoint(at, events);
    const t0 = clock.now().getTime();
    await queue(at, 'customer.created', new Date(t0 - 4));
    await queue(at, 'customer.updated', new Date(t0 - 3));
    await queue(at, 'payment.succeeded', new Date(t0 - 2));
    await queue(at, 'payment.succeeded', new Date(t0 - 1));
    const [created, updated, paidHeld, paidDelivered] = await rows({ endpointId: id });
    await db.execute("UPDATE webhook_deliveries SET status = 'held' WHERE id = $1", [paidHeld.id]);
    await db.execute("UPDATE webhook_deliveries SET status = 'delivered' WHERE id = $1", [paidDelivered.id]);
    return { at, id, created, updated, paidHeld, paidDelivered };
  }

  it('should abandon the queued and held deliveries of the types an endpoint no longer subscribes to', async () => {
    const { id, created, updated, paidHeld, paidDelivered } = await setup();
    const bystander = await setup();
    clock.advance(1_000);
    await db.transaction((t) => store.abandonUnsubscribed(t, id, ['customer.created'], clock.now()));
    expect((await row(created.id)).status).toBe('pending');
    for (const r of [updated, paidHeld]) {
      expect(await row(r.id)).toMatchObject({ status: 'abandoned', last_error: 'endpoint no longer subscribed to this event type' });
    }
    expect((await row(paidDelivered.id)).status).toBe('delivered');
    expect((await rows({ endpointId: bystander.id })).map((r) => r.status).sort()).toEqual(['delivered', 'held', 'pending', 'pending']);
  });

  it('should hold the pending deliveries of a disabled endpoint, and requeue them due now with a fresh window when enabled', async () => {
    const { id, created, updated, paidHeld, paidDelivered } = await setup();
    const [inFlight] = await claim(1);
    expect(inFlight.id).toBe(created.id);
    await db.transaction((t) => store.holdPending(t, id, clock.now(), 'endpoint disabled'));
    for (const r of [created, updated]) expect(await row(r.id)).toMatchObject({ status: 'held', last_error: 'endpoint disabled' });
    expect(await claim()).toEqual([]);

    clock.advance(60_000);
    await db.transaction((t) => store.requeueHeld(t, id, clock.now()));
    for (const r of [created, updated, paidHeld]) {
      const requeued = await row(r.id);
      expect(requeued).toMatchObject({ status: 'pending', last_error: null, first_attempt_at: null });
      expect(readTime(requeued.next_attempt_at)).toEqual(clock.now());
    }
    expect((await row(paidDelivered.id)).status).toBe('delivered');
    // The one in flight keeps its lease: it is not sent twice.
    expect((await row(created.id)).lock_token).toBe(inFlight.lockToken);
    expect((await claim()).map((c) => c.id).sort()).toEqual([updated.id, paidHeld.id].sort());
  });

  it('should abandon the queued and held deliveries of a deleted endpoint', async () => {
    const { id, created, updated, paidHeld, paidDelivered } = await setup();
    await db.transaction((t) => store.abandonPending(t, id, clock.now(), 'endpoint deleted'));
    for (const r of [created, updated, paidHeld]) expect(await row(r.id)).toMatchObject({ status: 'abandoned', last_error: 'endpoint deleted' });
    expect((await row(paidDelivered.id)).status).toBe('delivered');
  });

  it('should list the scope endpoints that are not deleted, by status', async () => {
    const at = scope();
    const enabled = await endpoint(at);
    const disabled = await endpoint(at, ['*'], { status: 'disabled' });
    await endpoint(at, ['*'], { deletedAt: clock.now() });
    await endpoint({ ...at, mode: 'live' });
    const list = (status?: 'enabled' | 'disabled') =>
      store.listEndpoints(at, { status: status && [status], page: 1, pageSize: 10, sortField: 'createdAt', sortDirection: 'asc' }, (r) => `${r.id} ${r.status} ${r.secret_sealed}`);
    expect((await list()).data.sort()).toEqual([`${enabled} enabled sealed-${enabled}`, `${disabled} disabled sealed-${disabled}`].sort());
    expect((await list('disabled')).data).toEqual([`${disabled} disabled sealed-${disabled}`]);
  });
});

describe('WebhookStore.purge', () => {
  it('should delete old attempts and old finished deliveries in batches, keeping what is queued or recent', async () => {
    const at = scope();
    const id = await endpoint(at);
    // Long before every other test's rows, so only this test's count.
    const cutoff = new Date('2000-01-02T00:00:00.000Z');
    const old = new Date('2000-01-01T00:00:00.000Z');
    const delivery = async (status: string, due: Date) => {
      await queue(at, 'customer.created', due);
      await db.execute('UPDATE webhook_deliveries SET status = $1 WHERE endpoint_id = $2 AND next_attempt_at = $3', [status, id, due]);
    };
    const statuses = ['delivered', 'failed', 'abandoned', 'pending', 'held'];
    for (const [i, status] of statuses.entries()) await delivery(status, new Date(old.getTime() + i));
    await delivery('delivered', cutoff);
    // More old attempts than one purge batch takes, and a recent one.
    const time = DIALECT === 'postgres' ? '$3::timestamptz' : '$3';
    await db.execute(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1)
       INSERT INTO webhook_attempts (id, account_id, mode, endpoint_id, delivery_id, event_id, event_type, attempt, succeeded, status_code, latency_ms, error, next_retry_at, created_at)
       SELECT 'wha_old_' || $2 || '_' || i, $2, 'test', 'we_x', 'whd_x', 'evt_x', 'customer.created', 1, ${DIALECT === 'postgres' ? 'true' : '1'}, 200, 1, NULL, NULL, ${time} FROM n`,
      [1_005, at.accountId, old],
    );
    await db.transaction((t) => store.insertAttempt(t, {
      accountId: at.accountId, mode: 'test', endpointId: id, deliveryId: 'whd_x', eventId: 'evt_x', eventType: 'customer.created', attempt: 1, succeeded: true,
      statusCode: 200, latencyMs: 1, error: null, nextRetryAt: null, createdAt: cutoff,
    }));

    expect(await store.purge(cutoff)).toEqual({ deliveries: 3, attempts: 1_005 });
    expect(await db.select("SELECT id FROM webhook_attempts WHERE id LIKE 'wha_old_%'")).toEqual([]);
    expect(await db.select('SELECT id FROM webhook_attempts WHERE account_id = $1', [at.accountId])).toHaveLength(1);
    const left = await rows({ endpointId: id });
    expect(left.map((r) => r.status).sort()).toEqual(['delivered', 'held', 'pending']);
  });
});

describe('WebhookStore.sealedSigningSecrets', () => {
  it('should give the current secret alone when there is no overlap', async () => {
    const id = await endpoint(scope());
    expect(await store.sealedSigningSecrets(id, clock.now())).toEqual({ current: `sealed-${id}`, previous: null });
  });

  it('should give the replaced secret too while its overlap lasts, and no longer after', async () => {
    const ends = new Date(clock.now().getTime() + 60_000);
    const id = await endpoint(scope(), ['*'], { previousSecretSealed: 'sealed-previous', previousSecretExpiresAt: ends });
    expect(await store.sealedSigningSecrets(id, clock.now())).toEqual({ current: `sealed-${id}`, previous: 'sealed-previous' });
    expect(await store.sealedSigningSecrets(id, new Date(ends.getTime() - 1))).toEqual({ current: `sealed-${id}`, previous: 'sealed-previous' });
    expect(await store.sealedSigningSecrets(id, ends)).toEqual({ current: `sealed-${id}`, previous: null });
  });

  it('should ignore a replaced secret without an overlap end, and answer null for an unknown endpoint', async () => {
    const id = await endpoint(scope(), ['*'], { previousSecretSealed: 'sealed-previous', previousSecretExpiresAt: null });
    expect(await store.sealedSigningSecrets(id, clock.now())).toEqual({ current: `sealed-${id}`, previous: null });
    expect(await store.sealedSigningSecrets('we_unknown', clock.now())).toBeNull();
  });
});
