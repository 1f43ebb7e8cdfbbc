import 'reflect-metadata';
import { Writable } from 'node:stream';
import { Database } from '../../../src/db/database';
import { MODELS } from '../../../src/db/models';
import { migrateUp } from '../../../src/db/migrator';
import { loadConfig } from '../../../src/config';
import { FixedClock } from '../../../src/core/clock';
import { EventBus } from '../../../src/core/event-bus';
import type { RequestContext } from '../../../src/core/context';
import { createLogger } from '../../../src/logger';
import { EventService } from '../../../src/modules/events/event.service';
import { DeliveryLoop, createWebhookServices, type WebhookDeliveryService, type WebhookServices } from '../../../src/modules/webhooks';
import { closeDeliveryAgents } from '../../../src/webhooks/http-delivery';
import { freshDatabase, type TestDatabase } from '../../helpers/db';
import { ReceiverHarness, makeCertificate, waitFor, type Respond, type Route } from './receiver-harness';

const BASE_MS = 1_000;
const WINDOW_MS = 60_000;
const LEASE_MS = 15_000;

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
  database = await freshDatabase();
  db = new Database({ url: database.url, models: MODELS, logging: (sql) => statements.push(sql) });
  await db.init();
  await migrateUp(db);
  clock = new FixedClock(new Date());
  const bus = new EventBus();
  events = new EventService(db, bus);
  const config = loadConfig({ DATABASE_URL: database.url, DATA_DIR: database.dataDir, WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CA_FILE: tls.caFile });
  webhooks = createWebhookServices({
    db,
    events,
    bus,
    clock,
    logger: createLogger('silent'),
    config,
    options: { retry: { baseMs: BASE_MS, maxMs: 10_000, windowMs: WINDOW_MS }, timeoutMs: 2_000, leaseMs: LEASE_MS, perEndpointConcurrency: 4 },
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
  return db.transaction((t) => events.record(ctx, t, type, { id: `cus_${Math.random().toString(36).slice(2)}`, object: 'customer' }));
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

describe('the webhook outbox', () => {
  it('should write deliveries in the event transaction, so a rollback leaves none', async () => {
    const ctx = context();
    await endpoint(ctx, 'rollback');
    await expect(
      db.transaction(async (t) => {
        await events.record(ctx, t, 'customer.created', { id: 'cus_rolled_back', object: 'customer' });
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
    await endpoint(context('live', ctx.accountId), 'live', ['*']);
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
    await db.transaction((t) => events.record(ctx, t, 'payment_link.created', { id: 'plink_1', object: 'payment_link' }));
    await db.transaction((t) => events.record(ctx, t, 'payment_link.updated', { id: 'plink_1', object: 'payment_link' }));
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
    clock.advance(LEASE_MS + 1);
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

  it('should abandon, without sending, a delivery whose endpoint was disabled after it was queued', async () => {
    const ctx = context();
    const { id, route } = await endpoint(ctx, 'late-disable');
    await record(ctx);
    // Disabled behind the service's back (another instance, mid-claim): the worker still checks.
    await db.execute("UPDATE webhook_endpoints SET status = 'disabled' WHERE id = $1", [id]);
    const [result] = await deliverDue();
    expect(result).toMatchObject({ status: 'abandoned', outcome: null });
    expect(route.requests).toHaveLength(0);
    expect(await deliveries(ctx)).toEqual([expect.objectContaining({ status: 'abandoned', attempts: 0 })]);
  });

  it('should abandon queued deliveries when the endpoint is disabled or deleted', async () => {
    const ctx = context();
    const one = await endpoint(ctx, 'disable-queued');
    const two = await endpoint(ctx, 'delete-queued');
    await record(ctx);
    await webhooks.endpoints.update(ctx, one.id, { status: 'disabled' });
    await webhooks.endpoints.remove(ctx, two.id);
    expect((await deliveries(ctx)).map((d) => d.status)).toEqual(['abandoned', 'abandoned']);
    expect(await deliverDue()).toHaveLength(0);
  });

  it('should keep a worker whose lease ran out from overwriting the new owner', async () => {
    const ctx = context();
    await endpoint(ctx, 'lease-lost', ['*'], (n) => (n === 1 ? 500 : 'pass'));
    await record(ctx);
    const [stale] = await webhooks.deliveries.claim(100);
    clock.advance(LEASE_MS + 1);
    const [owner] = await webhooks.deliveries.claim(100);
    expect(owner.attempt).toBe(stale.attempt + 1);
    await webhooks.deliveries.deliver(owner); // 500: back to pending with a retry time
    const settled = await webhooks.deliveries.deliver(stale); // 200, but no longer the owner
    expect(settled.outcome?.delivered).toBe(true);
    const [row] = await deliveries(ctx);
    expect(row).toMatchObject({ status: 'pending', attempts: 2 });
  });
});

describe('the delivery loop', () => {
  it('should deliver when woken and wait for deliveries in flight when stopped', async () => {
    const ctx = context();
    const { route } = await endpoint(ctx, 'loop', ['*'], () => ({ holdMs: 300, then: 200 }));
    const loop = webhooks.startDeliveryLoop();
    try {
      await record(ctx);
      webhooks.deliveries.wake();
      await waitFor(() => route.requests.length === 1, 5_000, 'the delivery to start');
      expect(loop.inFlight).toBe(1);
    } finally {
      await loop.stop();
    }
    expect(loop.inFlight).toBe(0);
    expect((await deliveries(ctx))[0].status).toBe('delivered');
  });

  it('should keep delivering to other endpoints while a slow one has all its slots busy', async () => {
    const ctx = context();
    const slow = await endpoint(ctx, 'slow', ['*'], () => ({ holdMs: 1_500, then: 200 }));
    const fast = await endpoint(ctx, 'fast', ['*']);
    for (let i = 0; i < 12; i += 1) await record(ctx);
    const loop = webhooks.startDeliveryLoop();
    try {
      await waitFor(() => fast.route.verified.length === 12, 5_000, 'the fast endpoint to get everything');
      expect(slow.route.requests.length).toBe(4);
    } finally {
      await loop.stop();
    }
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
    const loop = new DeliveryLoop(service, bus, createLogger('info', sink), { pollMs: 10, concurrency: 4, perEndpointConcurrency: 2 });
    try {
      // Wake-ups from events do not bypass the back-off.
      const spam = setInterval(() => bus.publish({ id: 'evt_x', object: 'event', type: 'customer.created', createdAt: '', livemode: false, accountId: 'a', data: { object: {} } }), 5);
      await new Promise((r) => setTimeout(r, 400));
      clearInterval(spam);
    } finally {
      await loop.stop();
    }
    // 10, 20, 40, 80, 160 ms apart instead of every 10 ms.
    expect(claim.mock.calls.length).toBeGreaterThanOrEqual(3);
    expect(claim.mock.calls.length).toBeLessThanOrEqual(7);
    expect(lines.filter((l) => l.includes('webhook claim failed'))).toHaveLength(1);
  });
});
