import 'reflect-metadata';
import pg from 'pg';
import { Writable } from 'node:stream';
import { Database } from '../../../src/db/database';
import { loadConfig } from '../../../src/config';
import { FixedClock } from '../../../src/core/clock';
import { EventBus } from '../../../src/core/event-bus';
import type { RequestContext } from '../../../src/core/context';
import { createLogger } from '../../../src/logger';
import { EventStore } from '../../../src/modules/events/event.store';
import { EventService } from '../../../src/modules/events/event.service';
import { DeliveryLoop, WebhookDeliveryService, createWebhookServices, type WebhookServices } from '../../../src/modules/webhooks';
import { closeDeliveryAgents } from '../../../src/modules/webhooks/http-delivery';
import { signPayload } from '../../../src/modules/webhooks/signature';
import { DIALECT, type TestDatabase } from '../../helpers/db';
import { ReceiverHarness, makeCertificate, waitFor, type Respond, type Route } from './receiver-harness';
import { databaseNow, waitForDatabaseTime } from '../../helpers/wait';
import { readTime } from '../../../src/db/database';
import { WebhookStore, type ClaimedDelivery } from '../../../src/modules/webhooks/webhook.store';
import type { WriteBatcher } from '../../../src/db/batcher';
import { testIdempotency } from '../../helpers/idempotency';
import { migratedDatabase } from '../../helpers/migrated-db';

const BASE_MS = 1_000;
const WINDOW_MS = 60_000;
const LEASE_MS = 15_000;
const GONE_WINDOW_MS = 30_000;
const POLL_MS = 200;

let database: TestDatabase;
let db: Database;
let rx: ReceiverHarness;
let clock: FixedClock;
let events: EventService;
let webhooks: WebhookServices;
let statements: string[] = [];
let accountSeq = 0;

beforeAll(async () => {
  const tls = await makeCertificate();
  rx = new ReceiverHarness(tls);
  await rx.start();
  ({ database, db } = await migratedDatabase((sql) => statements.push(sql)));
  clock = new FixedClock(new Date());
  const bus = new EventBus();
  events = new EventService(new EventStore(db), bus);
  const config = loadConfig({ DATABASE_URL: database.url, DATA_DIR: database.dataDir, WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CA_FILE: tls.caFile });
  webhooks = createWebhookServices({
    db,
    events,
    bus,
    clock,
    encryptionKey: Buffer.alloc(32, 7),
    logger: createLogger('silent'),
    config,
    idempotency: testIdempotency(db, clock),
    options: {
      retry: { baseMs: BASE_MS, maxMs: 10_000, windowMs: WINDOW_MS }, timeoutMs: 2_000, leaseMs: LEASE_MS, goneWindowMs: GONE_WINDOW_MS, perEndpointConcurrency: 4, pollMs: POLL_MS,
      resolveHost: async () => ['93.184.216.34'],
    },
  });
});

// Deliveries left pending by an earlier test must not be claimed by the next one.
beforeEach(() => db.execute("UPDATE webhook_deliveries SET status = 'abandoned' WHERE status = 'pending'"));

afterAll(async () => {
  closeDeliveryAgents();
  await rx?.stop();
  await db?.close();
  await database?.drop();
});

/** A fresh account per test keeps the outbox of one test out of the others. */
function context(mode: 'test' | 'live' = 'test', accountId = `acct_unit_${++accountSeq}`): RequestContext {
  return { accountId, mode, permissions: ['*'], requestId: 'req_unit', clock };
}

async function endpoint(ctx: RequestContext, name: string, events: string[] = ['*'], respond?: Respond): Promise<{ id: string; route: Route }> {
  const route = rx.route(`${name}-${accountSeq}`, [], respond);
  const created = await webhooks.endpoints.create(ctx, { url: route.url, events });
  route.setSecret(created.secret as string);
  return { id: created.id, route };
}

async function record(ctx: RequestContext, type: 'customer.created' | 'customer.updated' | 'payment.succeeded' = 'customer.created') {
  return db.transaction((t) => events.record(ctx, t, type, { id: `cus_${Math.random().toString(36).slice(2)}`, object: 'customer' } as never));
}

async function deliveries(ctx: RequestContext) {
  return db.select<{ id: string; endpoint_id: string; status: string; attempts: number; payload: string; next_attempt_at: unknown }>(
    'SELECT id, endpoint_id, status, attempts, payload, next_attempt_at FROM webhook_deliveries WHERE account_id = $1 ORDER BY created_at, id',
    [ctx.accountId],
  );
}

async function deliverDue() {
  return webhooks.deliveries.deliverDue(100);
}

/** Every lease runs out, as it does on the database's clock when its worker died (business time has nothing to do with it). */
async function expireLeases() {
  await db.execute("UPDATE webhook_deliveries SET locked_until = $1 WHERE status = 'pending' AND locked_until IS NOT NULL", [new Date(Date.now() - 1_000)]);
}

/** Another instance on the same database, with its own clock and options. */
function otherInstance(instanceClock: FixedClock, options: Partial<WebhookDeliveryService['options']> = {}) {
  return new WebhookDeliveryService(db, webhooks.endpoints, instanceClock, createLogger('silent'), { ...webhooks.deliveries.options, ...options }, testIdempotency(db, instanceClock));
}

/** `count` deliveries queued for an endpoint by one statement (no wake-up), due since `at`. */
async function queueBacklog(ctx: RequestContext, endpointId: string, prefix: string, count: number, at: Date) {
  const time = db.dialect === 'postgres' ? '$5::timestamptz' : '$5';
  await db.execute(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1)
     INSERT INTO webhook_deliveries (id, account_id, mode, endpoint_id, event_id, event_type, payload, status, attempts, next_attempt_at, created_at, updated_at)
     SELECT $2 || i, $3, 'test', $4, 'evt_' || $2 || i, 'customer.created', '{}', 'pending', 0, ${time}, ${time}, ${time} FROM n`,
    [count, prefix, ctx.accountId, endpointId, at],
  );
}

describe('the webhook outbox', () => {
  it('should write deliveries in the event transaction, so a rollback leaves none', async () => {
    const ctx = context();
    await endpoint(ctx, 'rollback');
    await expect(
      db.transaction(async (t) => {
        await events.record(ctx, t, 'customer.created', { id: 'cus_rolled_back', object: 'customer' } as never);
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    expect(await deliveries(ctx)).toHaveLength(0);

    const event = await record(ctx);
    const rows = await deliveries(ctx);
    expect(rows).toHaveLength(1);
    expect(rows[0].id).toMatch(/^whd_[0-9A-Za-z]{44}$/);
    expect(rows[0].status).toBe('pending');
    expect(JSON.parse(rows[0].payload)).toEqual(event);
  });

  it('should queue one delivery per enabled subscribed endpoint of the same account and mode', async () => {
    const ctx = context();
    const subscribed = await endpoint(ctx, 'sub', ['customer.created']);
    const wildcard = await endpoint(ctx, 'wild', ['*']);
    await endpoint(ctx, 'other-type', ['payment.succeeded', 'customer.updated']);
    const disabled = await endpoint(ctx, 'disabled', ['*']);
    await webhooks.endpoints.update(ctx, disabled.id, { status: 'disabled' });
    const deleted = await endpoint(ctx, 'deleted', ['*']);
    await webhooks.endpoints.remove(ctx, deleted.id);
    // Live mode never reaches the local receiver (WEBHOOK_ALLOW_PRIVATE is test mode only): a public name.
    await webhooks.endpoints.create(context('live', ctx.accountId), { url: 'https://hooks.example.com/live', events: ['*'] });
    await endpoint(context('test'), 'other-account', ['*']);

    await record(ctx, 'customer.created');
    const rows = await deliveries(ctx);
    expect(rows.map((r) => r.endpoint_id).sort()).toEqual([subscribed.id, wildcard.id].sort());
    expect(new Set(rows.map((r) => r.id)).size).toBe(2);
  });

  it('should see endpoint changes at once for the next event', async () => {
    const ctx = context();
    await record(ctx); // no endpoint yet (and, on SQLite, an index that says so)
    const ep = await endpoint(ctx, 'late', ['customer.updated']);
    await record(ctx, 'customer.created');
    expect(await deliveries(ctx)).toHaveLength(0);
    await record(ctx, 'customer.updated');
    expect(await deliveries(ctx)).toHaveLength(1);
    await webhooks.endpoints.update(ctx, ep.id, { events: ['payment_link.created'] });
    await record(ctx, 'customer.updated');
    expect(await deliveries(ctx)).toHaveLength(1);
    await db.transaction((t) => events.record(ctx, t, 'payment_link.created', { id: 'plink_1', object: 'payment_link' } as never));
    await db.transaction((t) => events.record(ctx, t, 'payment_link.updated', { id: 'plink_1', object: 'payment_link' } as never));
    expect(await deliveries(ctx)).toHaveLength(2);
  });

  it('should cost the event at most one extra statement', async () => {
    const quiet = context();
    await record(quiet);
    statements = [];
    await record(quiet);
    const withoutEndpoints = statements.filter((s) => /webhook/.test(s));
    // One INSERT … SELECT on both databases (an in-process cache was unsafe with two processes on one SQLite file).
    expect(withoutEndpoints.length).toBeLessThanOrEqual(1);

    const busy = context();
    await endpoint(busy, 'cost-a');
    await endpoint(busy, 'cost-b');
    await record(busy);
    statements = [];
    await record(busy);
    expect(statements.filter((s) => /webhook/.test(s))).toHaveLength(1);
    expect(await deliveries(busy)).toHaveLength(4);
  });
});

describe('claiming and delivering', () => {
  it('should claim at most the room of each endpoint and keep a claim until its lease runs out', async () => {
    const ctx = context();
    const a = await endpoint(ctx, 'room-a');
    for (let i = 0; i < 6; i += 1) await record(ctx);
    const b = await endpoint(ctx, 'room-b');
    await record(ctx); // a and b
    await record(ctx); // a and b

    const first = await webhooks.deliveries.claim(100);
    const ours = (list: { endpointId: string }[], id: string) => list.filter((c) => c.endpointId === id).length;
    expect(ours(first, a.id)).toBe(4);
    expect(ours(first, b.id)).toBe(2);
    expect(first.every((c) => c.attempt === 1)).toBe(true);
    const second = await webhooks.deliveries.claim(100);
    expect(ours(second, a.id)).toBe(4);
    expect(ours(second, b.id)).toBe(0);
    expect(await webhooks.deliveries.claim(100)).toHaveLength(0);

    // Nobody settled them (a crashed worker): after the lease they are claimed again, as attempt 2.
    await expireLeases();
    const again = [...(await webhooks.deliveries.claim(100)), ...(await webhooks.deliveries.claim(100))];
    expect(again).toHaveLength(10);
    expect(again.every((c) => c.attempt === 2)).toBe(true);
    await Promise.all(again.map((c) => webhooks.deliveries.deliver(c)));
    expect((await deliveries(ctx)).every((d) => d.status === 'delivered')).toBe(true);
    expect(a.route.verified.every((v) => v.attempt === 2)).toBe(true);
  });

  it('should schedule retries with backoff, honour Retry-After and give up after the window', async () => {
    const ctx = context();
    const { route } = await endpoint(ctx, 'retry', ['*'], (n) => (n === 2 ? { status: 503, headers: { 'retry-after': '7' } } : 500));
    await record(ctx);

    const started = clock.now().getTime();
    const [first] = await deliverDue();
    expect(first).toMatchObject({ attempt: 1, status: 'pending' });
    const wait1 = (first.nextAttemptAt as Date).getTime() - started;
    expect(wait1).toBeGreaterThanOrEqual(BASE_MS / 2);
    expect(wait1).toBeLessThan(BASE_MS);
    expect(await deliverDue()).toHaveLength(0); // not due yet

    clock.set(first.nextAttemptAt as Date);
    const [second] = await deliverDue();
    expect(second).toMatchObject({ attempt: 2, status: 'pending' });
    expect((second.nextAttemptAt as Date).getTime() - clock.now().getTime()).toBe(7_000);

    let last = second;
    while (last.status === 'pending') {
      clock.set(last.nextAttemptAt as Date);
      [last] = await deliverDue();
    }
    expect(last.status).toBe('failed');
    expect(clock.now().getTime() - started).toBeLessThan(WINDOW_MS);
    expect(last.nextAttemptAt).toBeNull();
    const [row] = await deliveries(ctx);
    expect(row).toMatchObject({ status: 'failed', attempts: route.requests.length });
    expect(route.requests.map((r) => r.attempt)).toEqual(route.requests.map((_, i) => i + 1));
  });

  it('should hold, without sending, a delivery whose endpoint was disabled after it was queued, and send it once enabled', async () => {
    const ctx = context();
    const { id, route } = await endpoint(ctx, 'late-disable');
    await record(ctx);
    // Disabled behind the service's back (another instance, mid-claim): the worker still checks.
    await db.execute("UPDATE webhook_endpoints SET status = 'disabled' WHERE id = $1", [id]);
    const [result] = await deliverDue();
    expect(result).toMatchObject({ status: 'held', outcome: null });
    expect(route.requests).toHaveLength(0);
    expect(await deliveries(ctx)).toEqual([expect.objectContaining({ status: 'held', attempts: 0 })]);

    await webhooks.endpoints.update(ctx, id, { status: 'enabled' });
    expect(await deliverDue()).toEqual([expect.objectContaining({ status: 'delivered', attempt: 1 })]);
    expect(route.verified).toHaveLength(1);
  });

  it('should abandon, without sending, a delivery of a type its endpoint stopped subscribing to after it was queued', async () => {
    const ctx = context();
    const { id, route } = await endpoint(ctx, 'late-narrow', ['customer.created', 'customer.updated']);
    await record(ctx, 'customer.created');
    // Narrowed while the event's transaction was still open (it read the old list): the worker still checks.
    await db.execute('UPDATE webhook_endpoints SET events = $1 WHERE id = $2', [JSON.stringify(['customer.updated']), id]);
    expect(await deliverDue()).toEqual([expect.objectContaining({ status: 'abandoned', outcome: null })]);
    expect(route.requests).toHaveLength(0);
  });

  it('should hold queued deliveries when the endpoint is disabled and abandon them when it is deleted', async () => {
    const ctx = context();
    const one = await endpoint(ctx, 'disable-queued');
    const two = await endpoint(ctx, 'delete-queued');
    await record(ctx);
    await webhooks.endpoints.update(ctx, one.id, { status: 'disabled' });
    await webhooks.endpoints.remove(ctx, two.id);
    const rows = await deliveries(ctx);
    expect(Object.fromEntries(rows.map((d) => [d.endpoint_id, d.status]))).toEqual({ [one.id]: 'held', [two.id]: 'abandoned' });
    expect(await deliverDue()).toHaveLength(0);
  });

  it('should show no nextRetryAt in the attempt log while the endpoint is disabled, and the held delivery due at once when enabled again', async () => {
    const ctx = context();
    const { id } = await endpoint(ctx, 'retry-display', ['*'], () => 500);
    await record(ctx);
    const [first] = await deliverDue();
    clock.set(first.nextAttemptAt as Date);
    const [second] = await deliverDue();
    expect(second).toMatchObject({ attempt: 2, status: 'pending' });
    const log = async () => (await webhooks.deliveries.attempts(ctx, id, {})).data.map((a) => [a.attempt, a.nextRetryAt]);
    const retries = [[2, (second.nextAttemptAt as Date).toISOString()], [1, (first.nextAttemptAt as Date).toISOString()]];
    expect(await log()).toEqual(retries);

    await webhooks.endpoints.update(ctx, id, { status: 'disabled' });
    clock.advance(4 * 60_000); // the held retry's old time is now in the past
    expect(await log()).toEqual([[2, null], [1, null]]);

    clock.advance(60_000);
    await webhooks.endpoints.update(ctx, id, { status: 'enabled' });
    // Held deliveries are due at once on enable; the earlier attempt keeps when its retry was due.
    expect(await log()).toEqual([[2, clock.now().toISOString()], retries[1]]);
    const [third] = await deliverDue();
    expect(third).toMatchObject({ attempt: 3, status: 'pending' });
    expect((await log())[0]).toEqual([3, (third.nextAttemptAt as Date).toISOString()]);
  });

  it('should cancel the queued deliveries of event types a PATCH drops, and send the others', async () => {
    const ctx = context();
    const { id, route } = await endpoint(ctx, 'narrowed', ['customer.created', 'customer.updated']);
    await record(ctx, 'customer.created');
    await record(ctx, 'customer.updated');
    await webhooks.endpoints.update(ctx, id, { events: ['customer.updated'] });
    const results = await deliverDue();
    expect(results.map((r) => r.status)).toEqual(['delivered']);
    expect(route.verified.map((v) => v.event.type)).toEqual(['customer.updated']);
    expect((await deliveries(ctx)).map((d) => d.status).sort()).toEqual(['abandoned', 'delivered']);
  });

  it('should record a 2xx that arrives after the lease ran out instead of sending the event again', async () => {
    const ctx = context();
    const { route } = await endpoint(ctx, 'lease-lost', ['*'], (n) => (n === 1 ? 500 : 'pass'));
    await record(ctx);
    const [stale] = await webhooks.deliveries.claim(100);
    await expireLeases();
    const [owner] = await webhooks.deliveries.claim(100);
    expect(owner.attempt).toBe(stale.attempt + 1);
    await webhooks.deliveries.deliver(owner); // 500: back to pending with a retry time
    const settled = await webhooks.deliveries.deliver(stale); // 200, but no longer the owner
    expect(settled.outcome?.delivered).toBe(true);
    const [row] = await deliveries(ctx);
    expect(row).toMatchObject({ status: 'delivered', attempts: 2 });
    clock.advance(60_000);
    expect(await deliverDue()).toHaveLength(0);
    expect(route.requests).toHaveLength(2);
  });

  it('should keep a late failure from overwriting the 2xx the new owner recorded', async () => {
    const ctx = context();
    await endpoint(ctx, 'lease-lost-late-failure', ['*'], (n) => (n === 1 ? 500 : 'pass'));
    await record(ctx);
    const [stale] = await webhooks.deliveries.claim(100);
    await expireLeases();
    const [owner] = await webhooks.deliveries.claim(100);
    const late = webhooks.deliveries.deliver(stale); // the receiver's 1st request: 500
    await late;
    await webhooks.deliveries.deliver(owner); // 200
    expect((await deliveries(ctx))[0]).toMatchObject({ status: 'delivered', attempts: 2 });
  });

  it('should measure leases on the database clock, so an instance whose clock runs ahead takes no live lease', async () => {
    const ctx = context();
    const { route } = await endpoint(ctx, 'skewed');
    await record(ctx);
    const [claimed] = await webhooks.deliveries.claim(100);
    expect(claimed).toBeDefined();
    const ahead = otherInstance(new FixedClock(new Date(clock.now().getTime() + LEASE_MS + 60_000)));
    expect(await ahead.claim(100)).toHaveLength(0);
    // An instance whose clock runs far behind still sees a lease that ran out on the database's clock.
    await expireLeases();
    const behind = otherInstance(new FixedClock(new Date(clock.now().getTime() - 3_600_000)));
    await db.execute('UPDATE webhook_deliveries SET next_attempt_at = $1 WHERE id = $2', [new Date(clock.now().getTime() - 7_200_000), claimed.id]);
    const [taken] = await behind.claim(100);
    expect(taken).toMatchObject({ id: claimed.id, attempt: 2 });
    const [row] = await db.select<{ locked_until: unknown }>('SELECT locked_until FROM webhook_deliveries WHERE id = $1', [claimed.id]);
    const leaseEnd = (readTime(row.locked_until) as Date).getTime();
    expect(Math.abs(leaseEnd - (Date.now() + LEASE_MS))).toBeLessThan(5_000);
    await behind.deliver(taken);
    expect(route.verified).toHaveLength(1);
  });

  it('should extend the leases of the claims it names', async () => {
    const ctx = context();
    await endpoint(ctx, 'renewed');
    await record(ctx);
    const short = otherInstance(clock, { leaseMs: 1_000 });
    const [claimed] = await short.claim(100);
    const leaseEnd = async () => (readTime((await db.select<{ locked_until: unknown }>('SELECT locked_until FROM webhook_deliveries WHERE id = $1', [claimed.id]))[0].locked_until) as Date).getTime();
    const first = await leaseEnd();
    // Renewed at a later moment of the database's clock than the claim (its clock has ms steps on SQLite).
    const claimedAt = await databaseNow(db);
    await waitForDatabaseTime(db, claimedAt);
    expect(await short.renewLeases([claimed.lockToken, 'tok_unknown'])).toBe(1);
    expect(await leaseEnd()).toBeGreaterThan(first);
    expect(await leaseEnd()).toBeLessThan(Date.now() + 1_500);
  });

  it('should retry a 410, disable the endpoint only once 410s persist for the gone window, and requeue on enable', async () => {
    const ctx = context();
    let gone = true;
    const { id, route } = await endpoint(ctx, 'gone-window', ['*'], () => (gone ? 410 : 'pass'));
    await record(ctx);
    const [first] = await deliverDue();
    expect(first).toMatchObject({ status: 'pending', attempt: 1 });
    expect((await webhooks.endpoints.retrieve(ctx, id)).status).toBe('enabled');

    // Retries inside the gone window keep the endpoint enabled.
    clock.set(first.nextAttemptAt as Date);
    const [second] = await deliverDue();
    expect(second).toMatchObject({ status: 'pending', attempt: 2 });
    expect((await webhooks.endpoints.retrieve(ctx, id)).status).toBe('enabled');

    // A 410 once the window has passed since the first one disables it and holds what is queued.
    clock.advance(GONE_WINDOW_MS);
    await record(ctx);
    const third = await deliverDue();
    expect(third.map((r) => r.status).sort()).toEqual(['held', 'held']);
    expect(await webhooks.endpoints.retrieve(ctx, id)).toMatchObject({ status: 'disabled', disabledReason: 'gone' });
    expect((await deliveries(ctx)).map((d) => d.status)).toEqual(['held', 'held']);
    const sent = route.requests.length;
    clock.advance(60_000);
    expect(await deliverDue()).toHaveLength(0);
    expect(route.requests).toHaveLength(sent);

    // The receiver is back: enabling the endpoint sends both.
    gone = false;
    await webhooks.endpoints.update(ctx, id, { status: 'enabled' });
    expect((await deliverDue()).map((r) => r.status)).toEqual(['delivered', 'delivered']);
    expect(route.verified).toHaveLength(2);
  });

  it('should start the 410 run over after any other HTTP answer', async () => {
    const ctx = context();
    const { id } = await endpoint(ctx, 'gone-then-500', ['*'], (n) => (n === 2 ? 500 : 410));
    await record(ctx);
    const [first] = await deliverDue(); // 410: the run begins
    expect((await webhooks.endpoints.row(ctx, id)).goneSince).not.toBeNull();
    clock.set(first.nextAttemptAt as Date);
    const [second] = await deliverDue(); // 500: the run is over
    expect((await webhooks.endpoints.row(ctx, id)).goneSince).toBeNull();
    clock.set(new Date((second.nextAttemptAt as Date).getTime() + GONE_WINDOW_MS));
    await deliverDue(); // 410 again, long after the first one: a new run, not a disable
    expect((await webhooks.endpoints.retrieve(ctx, id)).status).toBe('enabled');
  });
});

/**
 * Watches the batches of outcomes: the rows each carried, in order. The first batch is held before
 * it reaches the database until `release()`, so the outcomes that arrive meanwhile queue and go
 * together in the next one; `refuse(n)` makes the database refuse the nth batch (counting from 1).
 */
function watchSettleBatches(opts: { refuse?: number } = {}) {
  const rows: number[] = [];
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  const settleBatch = WebhookStore.prototype.settleBatch;
  const spy = jest.spyOn(WebhookStore.prototype, 'settleBatch').mockImplementation(async function watched(this: WebhookStore, items) {
    rows.push(items.length);
    const n = rows.length;
    if (n === 1) await held;
    if (n === opts.refuse) throw new pg.DatabaseError('refused for the test', 0, 'error');
    return settleBatch.call(this, items);
  });
  // Outcomes handed to the service's batcher (a private field).
  const submitted = jest.spyOn((webhooks.deliveries as unknown as { settling: WriteBatcher<unknown, unknown> }).settling, 'submit');
  return {
    rows,
    release,
    submitted: () => submitted.mock.calls.length,
    restore: () => {
      spy.mockRestore();
      submitted.mockRestore();
    },
  };
}

describe('outcomes written in batches', () => {
  it('should settle a batch of deliveries and log their attempts with one statement per kind, leaving a row whose claim was lost alone', async () => {
    const ctx = context();
    const { route } = await endpoint(ctx, 'store-batch', ['*'], (n) => (n === 1 ? 500 : 'pass'));
    await record(ctx);
    const [lost] = await webhooks.deliveries.claim(100);
    await expireLeases();
    const [owner] = await webhooks.deliveries.claim(100);
    await record(ctx);
    await record(ctx);
    const claimed = await webhooks.deliveries.claim(100);
    expect(claimed).toHaveLength(2);
    const now = clock.now();
    const retryAt = new Date(now.getTime() + 5_000);
    const items = [
      { c: claimed[0], succeeded: true, w: { status: 'delivered' as const, nextAttemptAt: null, statusCode: 200, error: null, latencyMs: 3, deliveredAt: now, now } },
      { c: lost, succeeded: false, w: { status: 'pending' as const, nextAttemptAt: retryAt, statusCode: 500, error: 'HTTP 500', latencyMs: 4, deliveredAt: null, now } },
      { c: claimed[1], succeeded: false, w: { status: 'pending' as const, nextAttemptAt: retryAt, statusCode: 503, error: 'HTTP 503', latencyMs: 5, deliveredAt: null, now } },
    ];
    statements = [];
    const settled = await new WebhookStore(db).settleBatch(items);
    expect(settled).toEqual(['delivered', null, 'pending']);
    const written = statements.filter((s) => /webhook_/.test(s));
    // One statement for both kinds on PostgreSQL; SQLite (no writes in CTEs) one per kind in one transaction.
    expect(written).toHaveLength(db.dialect === 'postgres' ? 1 : 2);
    if (db.dialect === 'sqlite') expect(statements.filter((s) => /BEGIN|COMMIT/i.test(s))).toHaveLength(2);

    const row = async (id: string) => (await db.select<{ status: string; lock_token: string | null; attempts: number; last_error: string | null; next_attempt_at: unknown }>(
      'SELECT status, lock_token, attempts, last_error, next_attempt_at FROM webhook_deliveries WHERE id = $1', [id]))[0];
    expect(await row(claimed[0].id)).toMatchObject({ status: 'delivered', lock_token: null });
    expect(await row(claimed[1].id)).toMatchObject({ status: 'pending', lock_token: null, last_error: 'HTTP 503' });
    expect(readTime((await row(claimed[1].id)).next_attempt_at)?.getTime()).toBe(retryAt.getTime());
    // The lost claim's row is the new owner's, untouched; no attempt row was written for it here.
    expect(await row(lost.id)).toMatchObject({ status: 'pending', lock_token: owner.lockToken, attempts: 2, last_error: null });
    const attempts = await db.select<{ delivery_id: string; attempt: number; succeeded: unknown; status_code: number; next_retry_at: unknown }>(
      'SELECT delivery_id, attempt, succeeded, status_code, next_retry_at FROM webhook_attempts WHERE account_id = $1 ORDER BY status_code', [ctx.accountId]);
    expect(attempts.map((a) => [a.delivery_id, Number(a.attempt), Boolean(a.succeeded), Number(a.status_code)])).toEqual([
      [claimed[0].id, 1, true, 200],
      [claimed[1].id, 1, false, 503],
    ]);
    expect(readTime(attempts[1].next_retry_at)?.getTime()).toBe(retryAt.getTime());
    expect(route.requests).toHaveLength(0);
  });

  it('should write the outcomes that arrive while a batch is written in the next one, and settle a claim lost there alone as before', async () => {
    const ctx = context();
    const a = await endpoint(ctx, 'batched', ['customer.created']);
    const b = await endpoint(ctx, 'batched-lost', ['customer.updated'], () => 500);
    await record(ctx, 'customer.updated');
    const [stale] = await webhooks.deliveries.claim(100);
    await expireLeases();
    const [owner] = await webhooks.deliveries.claim(100);
    for (let i = 0; i < 4; i += 1) await record(ctx);
    const claimed: ClaimedDelivery[] = await webhooks.deliveries.claim(100);
    expect(claimed).toHaveLength(4);

    const batches = watchSettleBatches();
    try {
      const first = webhooks.deliveries.deliver(claimed[0]);
      await waitFor(() => batches.rows.length === 1, 5_000, 'the first outcome to be written');
      const rest = [...claimed.slice(1), stale].map((c) => webhooks.deliveries.deliver(c));
      await waitFor(() => batches.submitted() === 5, 5_000, 'the other outcomes to wait for the next batch');
      statements = [];
      batches.release();
      const results = await Promise.all([first, ...rest]);
      expect(batches.rows).toEqual([1, 4]);
      expect(results.map((r) => r.status)).toEqual(['delivered', 'delivered', 'delivered', 'delivered', 'pending']);
    } finally {
      batches.restore();
    }
    expect((await deliveries(ctx)).filter((d) => d.endpoint_id === a.id).map((d) => d.status)).toEqual(['delivered', 'delivered', 'delivered', 'delivered']);
    // The lost claim: its attempt is logged, the row stays the new owner's.
    const [row] = await db.select<{ status: string; lock_token: string; attempts: number; last_status_code: number | null }>(
      'SELECT status, lock_token, attempts, last_status_code FROM webhook_deliveries WHERE id = $1', [stale.id]);
    expect(row).toMatchObject({ status: 'pending', lock_token: owner.lockToken, attempts: 2, last_status_code: null });
    const logged = await db.select<{ delivery_id: string; attempt: number; status_code: number }>(
      'SELECT delivery_id, attempt, status_code FROM webhook_attempts WHERE endpoint_id = $1', [b.id]);
    expect(logged.map((l) => [l.delivery_id, Number(l.attempt), Number(l.status_code)])).toEqual([[stale.id, 1, 500]]);
    expect(await db.select('SELECT id FROM webhook_attempts WHERE endpoint_id = $1', [a.id])).toHaveLength(4);
  });

  it('should write each outcome of a batch the database refuses alone', async () => {
    const ctx = context();
    await endpoint(ctx, 'refused-batch');
    for (let i = 0; i < 4; i += 1) await record(ctx);
    const claimed = await webhooks.deliveries.claim(100);
    expect(claimed).toHaveLength(4);
    const batches = watchSettleBatches({ refuse: 2 });
    try {
      const first = webhooks.deliveries.deliver(claimed[0]);
      await waitFor(() => batches.rows.length === 1, 5_000, 'the first outcome to be written');
      const rest = claimed.slice(1).map((c) => webhooks.deliveries.deliver(c));
      await waitFor(() => batches.submitted() === 4, 5_000, 'the other outcomes to wait for the next batch');
      batches.release();
      const results = await Promise.all([first, ...rest]);
      expect(batches.rows).toEqual([1, 3, 1, 1, 1]);
      expect(results.map((r) => r.status)).toEqual(['delivered', 'delivered', 'delivered', 'delivered']);
    } finally {
      batches.restore();
    }
    expect((await deliveries(ctx)).map((d) => d.status)).toEqual(['delivered', 'delivered', 'delivered', 'delivered']);
    expect(await db.select('SELECT id FROM webhook_attempts WHERE account_id = $1', [ctx.accountId])).toHaveLength(4);
  });

  // Row locks are PostgreSQL's; SQLite has one writer at a time.
  if (DIALECT === 'postgres') {
    it('should skip, not wait for, a delivery another transaction holds, and settle it alone once free', async () => {
      const ctx = context();
      const { route } = await endpoint(ctx, 'locked-row');
      await record(ctx);
      await record(ctx);
      const [x, y] = await webhooks.deliveries.claim(100);
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      // Another transaction holds x, as disabling its endpoint would.
      const holder = db.transaction(async (t) => {
        await db.select('SELECT id FROM webhook_deliveries WHERE id = $1 FOR UPDATE', [x.id], t);
        locked();
        await released;
      });
      try {
        await isLocked;
        const now = clock.now();
        const outcome = { status: 'delivered' as const, nextAttemptAt: null, statusCode: 200, error: null, latencyMs: 1, deliveredAt: now, now };
        expect(await new WebhookStore(db).settleBatch([{ c: x, w: outcome, succeeded: true }, { c: y, w: outcome, succeeded: true }])).toEqual([null, 'delivered']);
        // Through the service x goes from its batch to a transaction of its own, which waits for the lock.
        let done = false;
        const delivering = webhooks.deliveries.deliver(x).then((r) => {
          done = true;
          return r;
        });
        await waitFor(() => route.requests.length === 1, 5_000, 'x to be sent');
        const waiting = 'SELECT l.pid FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE NOT l.granted AND a.datname = current_database()';
        await waitFor(async () => (await db.select(waiting)).length > 0, 5_000, 'x to wait for the lock');
        expect(done).toBe(false);
        release();
        expect(await delivering).toMatchObject({ status: 'delivered' });
      } finally {
        release();
        await holder;
      }
      expect((await deliveries(ctx)).map((d) => d.status)).toEqual(['delivered', 'delivered']);
      expect(await db.select('SELECT id FROM webhook_attempts WHERE delivery_id = $1', [x.id])).toHaveLength(1);
    });
  }

  it("should free an endpoint's slot once its request is answered, while the outcome is still being written", async () => {
    const ctx = context();
    const { route } = await endpoint(ctx, 'slot-freed');
    for (let i = 0; i < 8; i += 1) await record(ctx);
    const batches = watchSettleBatches();
    const loop = webhooks.startDeliveryLoop();
    try {
      // perEndpointConcurrency is 4: the first outcome's write is held, yet all 8 are sent.
      await waitFor(() => route.verified.length === 8, 5_000, 'every delivery to be sent while the first write is held');
      expect(batches.rows).toHaveLength(1);
      batches.release();
      await waitFor(async () => (await deliveries(ctx)).every((d) => d.status === 'delivered'), 5_000, 'every outcome to be written');
    } finally {
      batches.release();
      await loop.stop();
      batches.restore();
    }
    expect(await db.select('SELECT id FROM webhook_attempts WHERE account_id = $1', [ctx.accountId])).toHaveLength(8);
  });
});

describe('configuration', () => {
  it('should take the gone window from WEBHOOK_GONE_WINDOW_MS, 24 h by default, and refuse a bad value', () => {
    // Read by loadConfig like every other variable (no module reads process.env itself).
    const build = (env: Record<string, string>) => {
      const config = loadConfig({ DATABASE_URL: database.url, DATA_DIR: database.dataDir, ...env });
      return createWebhookServices({
        db, events: new EventService(new EventStore(db), new EventBus()), bus: new EventBus(), clock, logger: createLogger('silent'), config,
        encryptionKey: Buffer.alloc(32, 7), idempotency: testIdempotency(db, clock),
      }).deliveries.options.goneWindowMs;
    };
    expect(build({})).toBe(24 * 60 * 60 * 1000);
    expect(build({ WEBHOOK_GONE_WINDOW_MS: '600000' })).toBe(600_000);
    expect(() => build({ WEBHOOK_GONE_WINDOW_MS: 'soon' })).toThrow(/WEBHOOK_GONE_WINDOW_MS/);
  });
});

describe('the delivery loop', () => {
  it('should deliver when woken and wait for deliveries in flight when stopped', async () => {
    const ctx = context();
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const { route } = await endpoint(ctx, 'loop', ['*'], () => ({ until: answered, then: 200 }));
    const loop = webhooks.startDeliveryLoop();
    try {
      await record(ctx);
      webhooks.deliveries.wake();
      await waitFor(() => route.requests.length === 1, 5_000, 'the delivery to start');
      expect(loop.inFlight).toBe(1);
    } finally {
      // The receiver answers only once the loop is stopping: stop must wait for it.
      const stopping = loop.stop();
      answer();
      await stopping;
    }
    expect(loop.inFlight).toBe(0);
    expect((await deliveries(ctx))[0].status).toBe('delivered');
  });

  it('should keep delivering to other endpoints while a slow one has all its slots busy', async () => {
    const ctx = context();
    // The slow receiver answers nothing until the fast endpoint has had everything.
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const slow = await endpoint(ctx, 'slow', ['*'], () => ({ until: answered, then: 200 }));
    const fast = await endpoint(ctx, 'fast', ['*']);
    for (let i = 0; i < 12; i += 1) await record(ctx);
    const loop = webhooks.startDeliveryLoop();
    try {
      await waitFor(() => fast.route.verified.length === 12, 5_000, 'the fast endpoint to get everything');
      expect(slow.route.requests.length).toBe(4);
    } finally {
      answer();
      await loop.stop();
    }
  });

  it("should not let one endpoint's backlog of 10,000 delay another endpoint's first delivery beyond one poll interval plus its latency", async () => {
    const ctx = context();
    const backlogged = await endpoint(ctx, 'backlogged', ['*'], () => ({ holdMs: 50, then: 200 }));
    const other = await endpoint(ctx, 'first-delivery', ['*'], () => 200);
    await queueBacklog(ctx, backlogged.id, 'whd_backlog_', 10_000, new Date(clock.now().getTime() - 60_000));
    // The backlogged endpoint may fill every slot of the instance: the next free one must go to the other endpoint.
    const loop = new DeliveryLoop(webhooks.deliveries, new EventBus(), createLogger('silent'), { pollMs: POLL_MS, concurrency: 4, perEndpointConcurrency: 4 });
    try {
      await waitFor(() => backlogged.route.requests.length >= 8, 10_000, 'the backlog to be under way');
      // Queued with no wake-up (a retry falling due, another instance's event): polling or
      // finished deliveries must find it, however many older rows the backlog has.
      const queuedAt = Date.now();
      await queueBacklog(ctx, other.id, 'whd_first_', 1, clock.now());
      await waitFor(() => other.route.requests.length === 1, 10_000, "the other endpoint's first delivery");
      const waited = other.route.requests[0].at - queuedAt;
      const attempt = await waitFor(async () => (await db.select<{ latency_ms: number }>('SELECT latency_ms FROM webhook_attempts WHERE endpoint_id = $1', [other.id]))[0], 5_000, 'its attempt');
      expect(waited).toBeLessThanOrEqual(POLL_MS + Number(attempt.latency_ms));
    } finally {
      await loop.stop();
    }
  });

  it('should renew the leases of deliveries in flight, so a slow one is not sent again by another instance', async () => {
    const ctx = context();
    // The receiver answers only once the test has checked the lease (well within the 5 s timeout).
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const { route } = await endpoint(ctx, 'renew-in-flight', ['*'], () => ({ until: answered, then: 200 }));
    await record(ctx);
    const shortLease = otherInstance(clock, { leaseMs: 1_000, timeoutMs: 5_000 });
    const loop = new DeliveryLoop(shortLease, new EventBus(), createLogger('silent'), { pollMs: 50, concurrency: 4, perEndpointConcurrency: 4, renewLeasesMs: 200 });
    try {
      await waitFor(() => route.requests.length === 1, 5_000, 'the delivery to start');
      // Past the lease as it stood when the delivery started: leases run on the database's clock.
      const [{ locked_until: leasedUntil }] = await db.select<{ locked_until: unknown }>("SELECT locked_until FROM webhook_deliveries WHERE account_id = $1 AND status = 'pending'", [ctx.accountId]);
      await waitForDatabaseTime(db, readTime(leasedUntil) as Date, { timeoutMs: 5_000 });
      clock.advance(1_500);
      expect(await webhooks.deliveries.claim(100)).toHaveLength(0);
    } finally {
      answer();
      await loop.stop();
    }
    expect(route.requests).toHaveLength(1);
    expect((await deliveries(ctx))[0]).toMatchObject({ status: 'delivered', attempts: 1 });
  });

  it('should slow its polling down and log sparingly while claims fail', async () => {
    const claim = jest.fn().mockRejectedValue(new Error('database unreachable'));
    const service = { claim, onWake: () => () => undefined } as unknown as WebhookDeliveryService;
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const bus = new EventBus();
    // 400 ms of the loop's timers, run on jest's fake clock: the same rounds whatever the load.
    jest.useFakeTimers();
    const loop = new DeliveryLoop(service, bus, createLogger('info', sink), { pollMs: 10, concurrency: 4, perEndpointConcurrency: 2 });
    try {
      // Wake-ups from events do not bypass the back-off.
      const spam = setInterval(() => bus.publish({ id: 'evt_x', object: 'event', type: 'customer.created', createdAt: '', livemode: false, accountId: 'a', data: { object: {} } }), 5);
      await jest.advanceTimersByTimeAsync(400);
      clearInterval(spam);
    } finally {
      await loop.stop();
      jest.useRealTimers();
    }
    // 10, 20, 40, 80, 160 ms apart instead of every 10 ms.
    expect(claim.mock.calls.length).toBeGreaterThanOrEqual(3);
    expect(claim.mock.calls.length).toBeLessThanOrEqual(7);
    expect(lines.filter((l) => l.includes('webhook claim failed'))).toHaveLength(1);
  });
});

describe('signing after a secret rotation', () => {
  async function rotatedEndpoint(ctx: RequestContext, name: string, overlapSeconds: number) {
    const route = rx.route(`${name}-${accountSeq}`);
    const created = await webhooks.endpoints.create(ctx, { url: route.url, events: ['customer.created'] });
    const rotated = await webhooks.endpoints.rotateSecret(ctx, created.id, { overlapSeconds });
    return { route, oldSecret: created.secret as string, newSecret: rotated.secret as string };
  }

  it('should sign with the old secret and add the new one in X-Service-Signature-Next until the overlap ends, then with the new one only', async () => {
    const ctx = context();
    const { route, oldSecret, newSecret } = await rotatedEndpoint(ctx, 'overlap', 3600);
    // A receiver already switched to the new secret accepts through X-Service-Signature-Next.
    route.setSecret(newSecret);
    await record(ctx);
    await deliverDue();
    const [during] = route.requests;
    expect(during.signature).toBe(signPayload(oldSecret, during.body));
    expect(during.signatureNext).toBe(signPayload(newSecret, during.body));
    await waitFor(() => route.verified.length === 1, 5_000, 'the receiver to accept the overlap delivery');

    clock.advance(3600 * 1000 - 1);
    await record(ctx);
    await deliverDue();
    expect(route.requests[1].signature).toBe(signPayload(oldSecret, route.requests[1].body));

    clock.advance(1); // the overlap has ended
    await record(ctx);
    await deliverDue();
    const after = route.requests[2];
    expect(after.signature).toBe(signPayload(newSecret, after.body));
    expect(after.signatureNext).toBe('');
  });

  it('should sign from what the claim read: sending reads no endpoint row', async () => {
    const ctx = context();
    const { route, oldSecret, newSecret } = await rotatedEndpoint(ctx, 'claimed-secrets', 3600);
    await record(ctx);
    const [claimed] = await webhooks.deliveries.claim(10);
    statements = [];
    await webhooks.deliveries.deliver(claimed);
    expect(statements.filter((s) => /SELECT[\s\S]*FROM "?webhook_endpoints/i.test(s))).toEqual([]);
    const [sent] = route.requests;
    expect([sent.signature, sent.signatureNext]).toEqual([signPayload(oldSecret, sent.body), signPayload(newSecret, sent.body)]);
  });

  it('should open a secret once for many deliveries, and sign with the new one as soon as it is rotated', async () => {
    const ctx = context();
    const route = rx.route(`cached-secret-${accountSeq}`);
    const created = await webhooks.endpoints.create(ctx, { url: route.url, events: ['customer.created'] });
    const opened = jest.spyOn(webhooks.endpoints, 'openSecret');
    try {
      await record(ctx);
      await record(ctx);
      await deliverDue();
      await deliverDue();
      expect(route.requests.map((r) => r.signature)).toEqual(route.requests.map((r) => signPayload(created.secret as string, r.body)));
      expect(opened).toHaveBeenCalledTimes(1);
      const rotated = await webhooks.endpoints.rotateSecret(ctx, created.id, { overlapSeconds: 0 });
      await record(ctx);
      await deliverDue();
      const after = route.requests[2];
      expect(after.signature).toBe(signPayload(rotated.secret as string, after.body));
      expect(after.signatureNext).toBe('');
    } finally {
      opened.mockRestore();
    }
  });

  it('should sign with the new secret only, at once, after a rotation without overlap', async () => {
    const ctx = context();
    const { route, newSecret } = await rotatedEndpoint(ctx, 'no-overlap', 0);
    await record(ctx);
    await deliverDue();
    const [sent] = route.requests;
    expect(sent.signature).toBe(signPayload(newSecret, sent.body));
    expect(sent.signatureNext).toBe('');
  });
});
