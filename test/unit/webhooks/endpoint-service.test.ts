import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { Database } from '../../../src/db/database';
import { readTime } from '../../../src/db/database';
import { FixedClock } from '../../../src/core/clock';
import { SecretBox } from '../../../src/core/crypto';
import type { RequestContext } from '../../../src/core/context';
import { MAX_ENDPOINTS, OPENED_SECRET_MS, WebhookEndpointService } from '../../../src/modules/webhooks/endpoint.service';
import { DIALECT, type TestDatabase } from '../../helpers/db';
import { testIdempotency } from '../../helpers/idempotency';
import { migratedDatabase } from '../../helpers/migrated-db';

let database: TestDatabase;
let db: Database;
let clock: FixedClock;
let endpoints: WebhookEndpointService;
let accountSeq = 0;
let deliverySeq = 0;

beforeAll(async () => {
  ({ database, db } = await migratedDatabase());
  clock = new FixedClock(new Date('2024-05-06T07:08:09.123Z'));
  endpoints = new WebhookEndpointService(db, new SecretBox(randomBytes(32)), { allowPrivate: true }, testIdempotency(db, clock));
});

afterAll(async () => {
  await db?.close();
  await database?.drop();
});

function context(): RequestContext {
  return { accountId: `acct_we_${++accountSeq}`, mode: 'test', permissions: ['*'], requestId: 'req_unit', clock };
}

/** A queued delivery written by a raw statement, as the outbox writes them; `lockedUntil` as a claim leaves it. */
async function queued(ctx: RequestContext, endpointId: string, lockedUntil: Date | null): Promise<string> {
  const id = `wd_unit_${++deliverySeq}`;
  const now = clock.now();
  await db.execute(
    `INSERT INTO webhook_deliveries (id, account_id, mode, endpoint_id, event_id, event_type, payload, status, attempts, next_attempt_at, locked_until, created_at, updated_at)
     VALUES ($1, $2, $3, $4, 'evt_unit', 'customer.created', '{}', 'pending', 0, $5, $6, $5, $5)`,
    [id, ctx.accountId, ctx.mode, endpointId, now, lockedUntil],
  );
  return id;
}

async function statuses(endpointId: string): Promise<Record<string, string>> {
  const rows = await db.select<{ id: string; status: string }>('SELECT id, status FROM webhook_deliveries WHERE endpoint_id = $1', [endpointId]);
  return Object.fromEntries(rows.map((r) => [r.id, r.status]));
}

describe(`webhook endpoints through the model on ${DIALECT}`, () => {
  it('should answer the same endpoint from create, retrieve, update, rotate, the list page and delete', async () => {
    const ctx = context();
    const created = await endpoints.create(ctx, { url: 'https://example.com/a', events: ['customer.created', 'customer.created'], description: 'A' });
    expect(created).toEqual({
      id: created.id, object: 'webhook_endpoint', livemode: false, url: 'https://example.com/a', events: ['customer.created'], description: 'A',
      status: 'enabled', disabledReason: null, createdAt: '2024-05-06T07:08:09.123Z', updatedAt: '2024-05-06T07:08:09.123Z',
      secret: expect.stringMatching(/^whsec_/),
    });
    const { secret, ...view } = created;
    expect(await endpoints.retrieve(ctx, created.id)).toEqual(view);
    expect(endpoints.openSecret((await endpoints.row(ctx, created.id)).secretSealed)).toBe(secret);
    clock.advance(1);
    const other = await endpoints.create(ctx, { url: 'https://example.com/b', events: ['*'] });
    // The list page still reads raw rows: model writes must sort and decode the same way.
    expect((await endpoints.list(ctx, {})).data).toEqual([await endpoints.retrieve(ctx, other.id), view]);

    clock.advance(1);
    expect(await endpoints.update(ctx, created.id, { status: 'enabled' })).toEqual(view); // nothing changes
    const updated = await endpoints.update(ctx, created.id, { url: 'https://example.com/a2', events: ['*'], description: null, status: 'disabled' });
    expect(updated).toEqual({
      ...view, url: 'https://example.com/a2', events: ['*'], description: null, status: 'disabled', disabledReason: 'manual', updatedAt: clock.now().toISOString(),
    });
    expect((await endpoints.list(ctx, { status: 'disabled' })).data).toEqual([updated]);
    const enabled = await endpoints.update(ctx, created.id, { status: 'enabled' });
    expect(enabled).toMatchObject({ status: 'enabled', disabledReason: null });

    clock.advance(1);
    const rotated = await endpoints.rotateSecret(ctx, created.id, {});
    expect(rotated.secret).not.toBe(secret);
    expect(rotated).toEqual({ ...enabled, updatedAt: clock.now().toISOString(), secret: rotated.secret });
    expect(endpoints.openSecret((await endpoints.row(ctx, created.id)).secretSealed)).toBe(rotated.secret);

    clock.advance(1);
    const removed = await endpoints.remove(ctx, created.id);
    expect(removed).toEqual({ ...enabled, status: 'disabled', disabledReason: 'deleted', updatedAt: clock.now().toISOString(), deleted: true });
    for (const call of [
      () => endpoints.retrieve(ctx, created.id),
      () => endpoints.update(ctx, created.id, { description: 'x' }),
      () => endpoints.rotateSecret(ctx, created.id, {}),
      () => endpoints.remove(ctx, created.id),
      () => endpoints.retrieve(context(), other.id), // another account's
    ]) await expect(call()).rejects.toMatchObject({ code: 'resource_not_found', param: 'id' });
    expect((await endpoints.row(ctx, created.id, { includeDeleted: true })).id).toBe(created.id);
    expect((await endpoints.list(ctx, {})).data.map((e) => e.id)).toEqual([other.id]);
  });

  it('should refuse more than the endpoint cap, counting only endpoints not deleted', async () => {
    const ctx = context();
    const ids: string[] = [];
    for (let i = 0; i < MAX_ENDPOINTS; i++) ids.push((await endpoints.create(ctx, { url: `https://example.com/${i}`, events: ['*'] })).id);
    await expect(endpoints.create(ctx, { url: 'https://example.com/over', events: ['*'] })).rejects.toMatchObject({ code: 'limit_exceeded' });
    await endpoints.remove(ctx, ids[0]);
    expect((await endpoints.create(ctx, { url: 'https://example.com/again', events: ['*'] })).status).toBe('enabled');
  });

  it('should hold the queued deliveries of a disabled or gone endpoint, in flight or not, and abandon a deleted one\'s', async () => {
    const ctx = context();
    const now = () => clock.now();
    for (const stop of ['disable', 'gone', 'delete'] as const) {
      const { id } = await endpoints.create(ctx, { url: `https://example.com/${stop}`, events: ['*'] });
      const free = await queued(ctx, id, null);
      const expired = await queued(ctx, id, new Date(now().getTime() - 1));
      // In flight: its attempt still settles it (a 2xx as delivered; a failure leaves it held).
      const inFlight = await queued(ctx, id, new Date(now().getTime() + 60_000));
      if (stop === 'disable') await endpoints.update(ctx, id, { status: 'disabled' });
      if (stop === 'gone') await db.transaction((t) => endpoints.disableGone(t, ctx, id, now(), 0));
      if (stop === 'delete') await endpoints.remove(ctx, id);
      const end = stop === 'delete' ? 'abandoned' : 'held';
      expect({ stop, deliveries: await statuses(id) }).toEqual({ stop, deliveries: { [free]: end, [expired]: end, [inFlight]: end } });
      const [reason] = await db.select<{ last_error: string }>('SELECT last_error FROM webhook_deliveries WHERE id = $1', [free]);
      expect(reason.last_error).toBe({ disable: 'endpoint disabled', gone: 'endpoint gone (HTTP 410 for the gone window)', delete: 'endpoint deleted' }[stop]);
    }
    const gone = await endpoints.list(ctx, { status: 'disabled' });
    expect(gone.data.map((e) => e.disabledReason).sort()).toEqual(['gone', 'manual']);
  });

  it('should leave a disabled endpoint alone when it answers 410 again', async () => {
    const ctx = context();
    const { id } = await endpoints.create(ctx, { url: 'https://example.com/off', events: ['*'] });
    await endpoints.update(ctx, id, { status: 'disabled' });
    const pending = await queued(ctx, id, null);
    expect(await db.transaction((t) => endpoints.disableGone(t, ctx, id, clock.now(), 0))).toBe(false);
    expect(await statuses(id)).toEqual({ [pending]: 'pending' });
    expect((await endpoints.retrieve(ctx, id)).disabledReason).toBe('manual');
  });

  it('should disable an endpoint only once its 410s have persisted for the window, any other answer starting over', async () => {
    const ctx = context();
    const WINDOW = 60_000;
    const { id } = await endpoints.create(ctx, { url: 'https://example.com/gone-window', events: ['*'] });
    const pending = await queued(ctx, id, null);
    const gone = () => db.transaction((t) => endpoints.disableGone(t, ctx, id, clock.now(), WINDOW));
    const goneSince = async () => (await endpoints.row(ctx, id)).goneSince?.toISOString() ?? null;

    const first = clock.now().toISOString();
    expect(await gone()).toBe(false);
    expect(await goneSince()).toBe(first);
    clock.advance(WINDOW - 1);
    expect(await gone()).toBe(false); // still inside the window; the run still began at the first 410
    expect(await goneSince()).toBe(first);
    await db.transaction((t) => endpoints.clearGone(t, ctx, id)); // a 500, a 200…: the run is over
    expect(await goneSince()).toBeNull();
    clock.advance(2);
    expect(await gone()).toBe(false); // a new run
    expect((await endpoints.retrieve(ctx, id)).status).toBe('enabled');
    expect(await statuses(id)).toEqual({ [pending]: 'pending' });

    clock.advance(WINDOW);
    expect(await gone()).toBe(true);
    expect(await endpoints.retrieve(ctx, id)).toMatchObject({ status: 'disabled', disabledReason: 'gone' });
    expect(await statuses(id)).toEqual({ [pending]: 'held' });
  });

  it("should not count the old URL's 410s against a new URL", async () => {
    const ctx = context();
    const WINDOW = 60_000;
    const { id } = await endpoints.create(ctx, { url: 'https://example.com/moved-from', events: ['*'] });
    const gone = () => db.transaction((t) => endpoints.disableGone(t, ctx, id, clock.now(), WINDOW));
    expect(await gone()).toBe(false); // the old URL starts a run of 410s
    clock.advance(WINDOW + 1);
    await endpoints.update(ctx, id, { url: 'https://example.com/moved-to' });
    expect((await endpoints.row(ctx, id)).goneSince).toBeNull();
    // The new URL's first 410 begins its own run: the endpoint stays enabled.
    expect(await gone()).toBe(false);
    expect((await endpoints.retrieve(ctx, id)).status).toBe('enabled');
  });

  it('should requeue held deliveries, due at once with a fresh retry window, when the endpoint is enabled again', async () => {
    const ctx = context();
    const { id } = await endpoints.create(ctx, { url: 'https://example.com/reenable', events: ['*'] });
    const waiting = await queued(ctx, id, null);
    await db.execute('UPDATE webhook_deliveries SET first_attempt_at = $1, attempts = 3, next_attempt_at = $2 WHERE id = $3', [
      new Date(clock.now().getTime() - 3_600_000), new Date(clock.now().getTime() + 3_600_000), waiting,
    ]);
    const inFlight = await queued(ctx, id, new Date(clock.now().getTime() + 60_000));
    await db.execute("UPDATE webhook_deliveries SET lock_token = 'tok_in_flight' WHERE id = $1", [inFlight]);
    const done = await queued(ctx, id, null);
    await db.execute("UPDATE webhook_deliveries SET status = 'delivered' WHERE id = $1", [done]);
    await db.transaction((t) => endpoints.disableGone(t, ctx, id, clock.now(), 0));
    expect(await statuses(id)).toEqual({ [waiting]: 'held', [inFlight]: 'held', [done]: 'delivered' });

    clock.advance(5_000);
    expect(await endpoints.update(ctx, id, { status: 'enabled' })).toMatchObject({ status: 'enabled', disabledReason: null });
    expect(await statuses(id)).toEqual({ [waiting]: 'pending', [inFlight]: 'pending', [done]: 'delivered' });
    const rows = await db.select<Record<string, unknown>>('SELECT id, attempts, next_attempt_at, first_attempt_at, lock_token FROM webhook_deliveries WHERE endpoint_id = $1', [id]);
    const row = (rowId: string) => rows.find((r) => r.id === rowId) as Record<string, unknown>;
    expect(readTime(row(waiting).next_attempt_at)?.toISOString()).toBe(clock.now().toISOString());
    expect(row(waiting).first_attempt_at).toBeNull();
    expect(Number(row(waiting).attempts)).toBe(3);
    // The attempt under way keeps its claim, so it settles the row as usual and it is not sent twice.
    expect(row(inFlight).lock_token).toBe('tok_in_flight');
    expect((await endpoints.row(ctx, id)).goneSince).toBeNull();
  });

  it('should cancel queued and held deliveries of the event types a PATCH drops', async () => {
    const ctx = context();
    const { id } = await endpoints.create(ctx, { url: 'https://example.com/narrow', events: ['*'] });
    const typed = async (type: string, status = 'pending') => {
      const rowId = await queued(ctx, id, null);
      await db.execute('UPDATE webhook_deliveries SET event_type = $1, status = $2 WHERE id = $3', [type, status, rowId]);
      return rowId;
    };
    const kept = await typed('customer.created');
    const dropped = await typed('payment.succeeded');
    const droppedHeld = await typed('payment.failed', 'held');
    const delivered = await typed('payment.succeeded', 'delivered');
    await endpoints.update(ctx, id, { description: 'no change of events' });
    await endpoints.update(ctx, id, { events: ['customer.created', 'customer.updated'] });
    expect(await statuses(id)).toEqual({ [kept]: 'pending', [dropped]: 'abandoned', [droppedHeld]: 'abandoned', [delivered]: 'delivered' });
    const [reason] = await db.select<{ last_error: string }>('SELECT last_error FROM webhook_deliveries WHERE id = $1', [dropped]);
    expect(reason.last_error).toBe('endpoint no longer subscribed to this event type');

    // Widening to every type cancels nothing.
    const later = await typed('invoice.paid');
    await endpoints.update(ctx, id, { events: ['*'] });
    expect((await statuses(id))[later]).toBe('pending');
  });
});

describe(`secret rotation with an overlap on ${DIALECT}`, () => {
  it('should keep the replaced secret signing for 24 hours by default, then only the new one', async () => {
    const ctx = context();
    const created = await endpoints.create(ctx, { url: 'https://example.com/rotate-default', events: ['*'] });
    expect(await endpoints.signingSecrets(created.id, clock.now())).toEqual({ current: created.secret, previous: null });
    const rotated = await endpoints.rotateSecret(ctx, created.id, {});
    expect(await endpoints.signingSecrets(created.id, clock.now())).toEqual({ current: rotated.secret, previous: created.secret });
    const overlapEnds = new Date(clock.now().getTime() + 24 * 3600 * 1000);
    expect(await endpoints.signingSecrets(created.id, new Date(overlapEnds.getTime() - 1))).toEqual({ current: rotated.secret, previous: created.secret });
    expect(await endpoints.signingSecrets(created.id, overlapEnds)).toEqual({ current: rotated.secret, previous: null });
    // Stored sealed, never in clear.
    const [row] = await db.select<{ previous_secret_sealed: string }>('SELECT previous_secret_sealed FROM webhook_endpoints WHERE id = $1', [created.id]);
    expect(row.previous_secret_sealed).toMatch(/^v1\./);
    expect(row.previous_secret_sealed).not.toContain(created.secret as string);
  });

  it('should take the overlap the caller chooses, 0 retiring the old secret at once', async () => {
    const ctx = context();
    const created = await endpoints.create(ctx, { url: 'https://example.com/rotate-chosen', events: ['*'] });
    const short = await endpoints.rotateSecret(ctx, created.id, { overlapSeconds: 60 });
    expect(await endpoints.signingSecrets(created.id, new Date(clock.now().getTime() + 59_999))).toEqual({ current: short.secret, previous: created.secret });
    expect(await endpoints.signingSecrets(created.id, new Date(clock.now().getTime() + 60_000))).toEqual({ current: short.secret, previous: null });

    // A second rotation: the secret it replaces is the one that was new.
    const second = await endpoints.rotateSecret(ctx, created.id, { overlapSeconds: 60 });
    expect(await endpoints.signingSecrets(created.id, clock.now())).toEqual({ current: second.secret, previous: short.secret });

    const atOnce = await endpoints.rotateSecret(ctx, created.id, { overlapSeconds: 0 });
    expect(await endpoints.signingSecrets(created.id, clock.now())).toEqual({ current: atOnce.secret, previous: null });
  });

  it.each([
    [-1, 'overlapSeconds must not be negative'],
    [1.5, 'overlapSeconds must be a whole number of seconds'],
    ['3600', 'overlapSeconds must be a number of seconds'],
    [null, 'overlapSeconds must be a number of seconds'],
    [7 * 24 * 3600 + 1, 'overlapSeconds may be at most 604800 (7 days)'],
  ])('should refuse overlapSeconds %p with invalid_parameter', async (overlapSeconds, message) => {
    const ctx = context();
    const created = await endpoints.create(ctx, { url: 'https://example.com/rotate-bad', events: ['*'] });
    await expect(endpoints.rotateSecret(ctx, created.id, { overlapSeconds })).rejects.toMatchObject({ code: 'invalid_parameter', param: 'overlapSeconds', message: `Invalid 'overlapSeconds': ${message}` });
    expect(await endpoints.signingSecrets(created.id, clock.now())).toEqual({ current: created.secret, previous: null });
  });
});

describe(`endpoint URLs in live mode on ${DIALECT}`, () => {
  // WEBHOOK_ALLOW_PRIVATE on, as in development: it must not reach live mode.
  let permissive: WebhookEndpointService;
  const live = (): RequestContext => ({ ...context(), mode: 'live' });

  beforeAll(() => {
    permissive = new WebhookEndpointService(db, new SecretBox(randomBytes(32)), { allowPrivate: true, resolveHost: async (host) => (host === 'internal.example.com' ? ['10.0.0.5'] : ['93.184.216.34']) }, testIdempotency(db, clock));
  });

  it('should refuse private and loopback URLs in live mode although WEBHOOK_ALLOW_PRIVATE is set', async () => {
    const ctx = live();
    for (const [url, reason] of [
      ['https://127.0.0.1/hooks', 'URL host is a loopback address'],
      ['https://localhost/hooks', 'URL host is a loopback address'],
      ['https://internal.example.com/hooks', 'URL host resolves to a private address'],
    ]) {
      await expect(permissive.create(ctx, { url, events: ['*'] })).rejects.toMatchObject({ code: 'invalid_parameter', param: 'url', message: `Invalid 'url': ${reason}` });
    }
    // The same URLs stay allowed in test mode.
    expect((await permissive.create(context(), { url: 'https://127.0.0.1:49152/hooks', events: ['*'] })).livemode).toBe(false);
  });

  it('should refuse ports other than 443 and 8443 in live mode, on create and on update', async () => {
    const ctx = live();
    await expect(permissive.create(ctx, { url: 'https://hooks.example.com:8080/', events: ['*'] })).rejects.toMatchObject({
      code: 'invalid_parameter', param: 'url', message: "Invalid 'url': URL port must be 443 or 8443 in live mode",
    });
    const created = await permissive.create(ctx, { url: 'https://hooks.example.com:8443/', events: ['*'] });
    expect(created).toMatchObject({ livemode: true, url: 'https://hooks.example.com:8443/' });
    await expect(permissive.update(ctx, created.id, { url: 'https://hooks.example.com:9000/' })).rejects.toMatchObject({ code: 'invalid_parameter', param: 'url' });
    expect((await permissive.update(ctx, created.id, { url: 'https://hooks.example.com/' })).url).toBe('https://hooks.example.com/');
  });
});

describe('opened signing secrets', () => {
  it('should open a sealed secret once and keep it for OPENED_SECRET_MS from when it was opened, then let it go', () => {
    let monotonic = 1_000;
    const box = new SecretBox(randomBytes(32));
    const service = new WebhookEndpointService(db, box, { allowPrivate: true, monotonicMs: () => monotonic }, testIdempotency(db, clock));
    const opened = jest.spyOn(service, 'openSecret');
    const rotatedAway = { current: box.seal('whsec_old'), previous: null, previousExpiresAt: null };
    const current = { current: box.seal('whsec_new'), previous: null, previousExpiresAt: null };
    expect(service.claimedSigningSecrets(rotatedAway, clock.now()).current).toBe('whsec_old');
    expect(service.claimedSigningSecrets(rotatedAway, clock.now()).current).toBe('whsec_old');
    expect(opened).toHaveBeenCalledTimes(1);
    // After the rotation only the new secret is asked for; the old one's plain text goes once its time is up.
    monotonic += OPENED_SECRET_MS - 1;
    expect(service.claimedSigningSecrets(current, clock.now()).current).toBe('whsec_new');
    const cache = (service as unknown as { opened: Map<string, unknown> }).opened;
    expect(cache.has(rotatedAway.current)).toBe(true);
    monotonic += 1;
    expect(service.claimedSigningSecrets(current, clock.now()).current).toBe('whsec_new');
    expect(cache.has(rotatedAway.current)).toBe(false);
    expect(cache.has(current.current)).toBe(true);
    expect(opened).toHaveBeenCalledTimes(2);
    // Asked for again after its time is up, it is opened again.
    monotonic += OPENED_SECRET_MS;
    expect(service.claimedSigningSecrets(current, clock.now()).current).toBe('whsec_new');
    expect(opened).toHaveBeenCalledTimes(3);
  });
});
