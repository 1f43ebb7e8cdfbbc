import { randomBytes } from 'node:crypto';
import { startTestApp, type TestApp } from '../helpers/app';
import { ReceiverHarness, makeCertificate, waitFor, type Route } from '../unit/webhooks/receiver-harness';
import { assertStaysTrue } from '../helpers/wait';

const GONE_WINDOW_MS = 400;

let app: TestApp;
let rx: ReceiverHarness;

beforeAll(async () => {
  const tls = await makeCertificate();
  rx = new ReceiverHarness(tls);
  await rx.start();
  app = await startTestApp({
    env: { WEBHOOK_CA_FILE: tls.caFile },
    runWorkers: true,
    serviceOptions: { webhooks: { retry: { baseMs: 50, maxMs: 500 }, pollMs: 50, timeoutMs: 2000, goneWindowMs: GONE_WINDOW_MS } },
  });
});

afterAll(async () => {
  await app?.stop();
  await rx?.stop();
});

/** Each test works in its own account, so endpoints of other tests never see its events. */
async function freshKey(): Promise<string> {
  return (await app.createAccount()).testKey;
}

async function register(key: string, route: Route, events: string[] = ['*'], extra: Record<string, unknown> = {}) {
  const res = await app.request('POST', '/v1/webhook-endpoints', { key, body: { url: route.url, events, ...extra } });
  expect(res.status).toBe(201);
  route.setSecret(res.body.data.secret);
  return res.body.data as { id: string; secret: string; [k: string]: unknown };
}

async function createCustomer(key: string): Promise<{ id: string }> {
  const res = await app.request('POST', '/v1/customers', { key, body: { email: `c_${randomBytes(6).toString('hex')}@example.com` } });
  expect(res.status).toBe(201);
  return res.body.data;
}

/**
 * Waits until none of the endpoints' deliveries is due or in flight: each one delivered, failed,
 * held or abandoned, and none leased (an attempt in flight keeps its lease until it settles).
 * Deliveries are queued in the transaction of their event, so from then on nothing more goes out
 * to these endpoints unless a new event (or a resend) queues it.
 */
async function deliveriesSettled(endpointIds: string[]): Promise<void> {
  const db = app.server.services.db;
  await waitFor(async () => {
    const [{ n }] = await db.select<{ n: number | string }>(
      `SELECT COUNT(*) AS n FROM webhook_deliveries WHERE endpoint_id IN (${db.jsonTextList('$1')}) AND (status = 'pending' OR lock_token IS NOT NULL)`,
      [JSON.stringify(endpointIds)],
    );
    return Number(n) === 0;
  }, 10_000, 'every delivery to settle');
}

/** The event types queued for an endpoint (one delivery each), sorted. */
async function queuedTypes(endpointId: string): Promise<string[]> {
  const rows = await app.server.services.db.select<{ event_type: string }>('SELECT event_type FROM webhook_deliveries WHERE endpoint_id = $1', [endpointId]);
  return rows.map((r) => r.event_type).sort();
}

async function lastEvent(key: string, type: string) {
  const res = await app.request('GET', `/v1/events?type=${type}&pageSize=1`, { key });
  return res.body.data[0];
}

describe('webhook endpoints', () => {
  it('should show the secret only in the create response and keep it sealed at rest', async () => {
    const key = await freshKey();
    const route = rx.route('secret-once');
    const created = await app.request('POST', '/v1/webhook-endpoints', {
      key,
      body: { url: route.url, events: ['customer.created', 'payment.succeeded'], description: 'orders' },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({
      object: 'webhook_endpoint',
      livemode: false,
      url: route.url,
      events: ['customer.created', 'payment.succeeded'],
      description: 'orders',
      status: 'enabled',
      disabledReason: null,
    });
    expect(created.body.data.id).toMatch(/^we_[0-9A-Za-z]{20,}$/);
    expect(created.body.data.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created.body.data.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

    const retrieved = await app.request('GET', `/v1/webhook-endpoints/${created.body.data.id}`, { key });
    expect(retrieved.status).toBe(200);
    expect(retrieved.body.data).not.toHaveProperty('secret');
    expect(retrieved.text).not.toContain(created.body.data.secret);
    const listed = await app.request('GET', '/v1/webhook-endpoints', { key });
    expect(listed.body.data).toHaveLength(1);
    expect(listed.body.data[0]).not.toHaveProperty('secret');
    expect(listed.text).not.toContain(created.body.data.secret);

    const rows = await app.server.services.db.select<Record<string, unknown>>('SELECT * FROM webhook_endpoints WHERE id = $1', [created.body.data.id]);
    expect(JSON.stringify(rows)).not.toContain(created.body.data.secret);
    expect(String(rows[0].secret_sealed)).toMatch(/^v1\./);
  });

  it('should refuse a URL that is not https with 400 naming url', async () => {
    const key = await freshKey();
    for (const url of ['http://localhost/hook', 'ftp://example.com/', 'not a url', 'https://user:pw@example.com/']) {
      const res = await app.request('POST', '/v1/webhook-endpoints', { key, body: { url, events: ['*'] } });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_parameter', param: 'url' });
    }
    const listed = await app.request('GET', '/v1/webhook-endpoints', { key });
    expect(listed.body.meta.total).toBe(0);
  });

  it('should refuse unknown event types naming the entry, and missing or extra fields', async () => {
    const key = await freshKey();
    const url = rx.route('validation').url;
    const unknownType = await app.request('POST', '/v1/webhook-endpoints', { key, body: { url, events: ['customer.created', 'customer.exploded'] } });
    expect(unknownType.status).toBe(400);
    expect(unknownType.body.error).toMatchObject({ code: 'invalid_parameter', param: 'events[1]' });
    const missing = await app.request('POST', '/v1/webhook-endpoints', { key, body: { url } });
    expect(missing.body.error).toMatchObject({ code: 'missing_parameter', param: 'events' });
    const empty = await app.request('POST', '/v1/webhook-endpoints', { key, body: { url, events: [] } });
    expect(empty.body.error).toMatchObject({ code: 'invalid_parameter', param: 'events' });
    const extra = await app.request('POST', '/v1/webhook-endpoints', { key, body: { url, events: ['*'], secret: 'whsec_mine' } });
    expect(extra.body.error).toMatchObject({ code: 'unknown_parameter', param: 'secret' });
  });

  it('should list newest first with paging and a status filter, update with PATCH and soft-delete', async () => {
    const key = await freshKey();
    const a = await register(key, rx.route('crud-a'));
    const b = await register(key, rx.route('crud-b'), ['customer.created']);
    const c = await register(key, rx.route('crud-c'));

    const page1 = await app.request('GET', '/v1/webhook-endpoints?pageSize=2', { key });
    expect(page1.body.meta).toEqual({ total: 3, page: 1, pageSize: 2, hasMore: true });
    expect(page1.body.data.map((e: { id: string }) => e.id)).toEqual([c.id, b.id]);
    const page2 = await app.request('GET', '/v1/webhook-endpoints?pageSize=2&page=2', { key });
    expect(page2.body.data.map((e: { id: string }) => e.id)).toEqual([a.id]);
    const badQuery = await app.request('GET', '/v1/webhook-endpoints?colour=red', { key });
    expect(badQuery.body.error).toMatchObject({ code: 'unknown_parameter', param: 'colour' });

    const disabled = await app.request('PATCH', `/v1/webhook-endpoints/${b.id}`, { key, body: { status: 'disabled' } });
    expect(disabled.body.data).toMatchObject({ status: 'disabled', disabledReason: 'manual' });
    const onlyDisabled = await app.request('GET', '/v1/webhook-endpoints?status=disabled', { key });
    expect(onlyDisabled.body.data.map((e: { id: string }) => e.id)).toEqual([b.id]);

    const newUrl = rx.route('crud-b2').url;
    const updated = await app.request('PATCH', `/v1/webhook-endpoints/${b.id}`, {
      key,
      body: { status: 'enabled', events: ['customer.updated', 'customer.updated'], description: 'renamed', url: newUrl },
    });
    expect(updated.status).toBe(200);
    expect(updated.body.data).toMatchObject({ status: 'enabled', disabledReason: null, events: ['customer.updated'], description: 'renamed', url: newUrl });
    expect(updated.body.data).not.toHaveProperty('secret');
    const badPatch = await app.request('PATCH', `/v1/webhook-endpoints/${b.id}`, { key, body: { url: 'http://example.com/' } });
    expect(badPatch.body.error).toMatchObject({ code: 'invalid_parameter', param: 'url' });
    const notWritable = await app.request('PATCH', `/v1/webhook-endpoints/${b.id}`, { key, body: { secret: 'x' } });
    expect(notWritable.body.error).toMatchObject({ code: 'unknown_parameter', param: 'secret' });

    const deleted = await app.request('DELETE', `/v1/webhook-endpoints/${a.id}`, { key });
    expect(deleted.status).toBe(200);
    expect(deleted.body.data).toMatchObject({ id: a.id, deleted: true });
    expect((await app.request('GET', `/v1/webhook-endpoints/${a.id}`, { key })).status).toBe(404);
    expect((await app.request('DELETE', `/v1/webhook-endpoints/${a.id}`, { key })).status).toBe(404);
    const after = await app.request('GET', '/v1/webhook-endpoints', { key });
    expect(after.body.meta.total).toBe(2);
    // The alias serves the same routes.
    expect((await app.request('GET', `/api/v1/webhook-endpoints/${c.id}`, { key })).body.data.id).toBe(c.id);
  });

  it('should keep endpoints to their account and mode', async () => {
    const account = await app.createAccount();
    const ep = await register(account.testKey, rx.route('scoped'));
    expect((await app.request('GET', `/v1/webhook-endpoints/${ep.id}`, { key: account.liveKey })).status).toBe(404);
    expect((await app.request('GET', `/v1/webhook-endpoints/${ep.id}`, { key: app.account.testKey })).status).toBe(404);
    expect((await app.request('POST', `/v1/webhook-endpoints/${ep.id}/rotate-secret`, { key: app.account.testKey })).status).toBe(404);
    const live = await app.request('GET', '/v1/webhook-endpoints', { key: account.liveKey });
    expect(live.body.meta.total).toBe(0);
  });

  it('should require the webhook_endpoints permission', async () => {
    const key = await freshKey();
    const readOnly = (await app.request('POST', '/v1/api-keys', { key, body: { permissions: ['webhook_endpoints:read'] } })).body.data.secret;
    const other = (await app.request('POST', '/v1/api-keys', { key, body: { permissions: ['customers:write'] } })).body.data.secret;
    const url = rx.route('perm').url;
    expect((await app.request('GET', '/v1/webhook-endpoints', { key: readOnly })).status).toBe(200);
    const denied = await app.request('POST', '/v1/webhook-endpoints', { key: readOnly, body: { url, events: ['*'] } });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('permission_denied');
    expect((await app.request('GET', '/v1/webhook-endpoints', { key: other })).status).toBe(403);
  });
});

describe('webhook deliveries', () => {
  it('should deliver signed events that the example receiver verifies', async () => {
    const key = await freshKey();
    const route = rx.route('signed');
    const ep = await register(key, route);
    const customer = await createCustomer(key);
    await waitFor(() => route.verified.length >= 1, 10_000, 'a verified delivery');
    const event = await lastEvent(key, 'customer.created');
    const [delivery] = route.verified;
    expect(delivery).toMatchObject({ eventId: event.id, attempt: 1, duplicate: false });
    // The body is the event exactly as the API returns it.
    expect(delivery.event).toEqual(event);
    expect(delivery.event.data.object.id).toBe(customer.id);
    const [request] = route.requests;
    expect(request.signature).toMatch(/^[0-9a-f]{64}$/);
    expect(ReceiverHarness.signedWith(request, ep.secret)).toBe(true);
    expect(request.n).toBe(1);
    expect(JSON.parse(request.body)).toEqual(event);
  });

  it('should deliver only the subscribed event types', async () => {
    const key = await freshKey();
    const updatesOnly = rx.route('updates-only');
    const everything = rx.route('everything');
    const updatesOnlyEp = await register(key, updatesOnly, ['customer.updated']);
    const everythingEp = await register(key, everything, ['*']);
    const customer = await createCustomer(key);
    await app.request('PATCH', `/v1/customers/${customer.id}`, { key, body: { name: 'Renamed' } });
    await waitFor(() => everything.verified.length >= 2 && updatesOnly.verified.length >= 1, 10_000, 'deliveries');
    // Nothing else was queued for either, and nothing queued is still on its way.
    await deliveriesSettled([updatesOnlyEp.id, everythingEp.id]);
    expect(await queuedTypes(updatesOnlyEp.id)).toEqual(['customer.updated']);
    expect(await queuedTypes(everythingEp.id)).toEqual(['customer.created', 'customer.updated']);
    expect(everything.verified.map((v) => v.event.type).sort()).toEqual(['customer.created', 'customer.updated']);
    expect(updatesOnly.verified.map((v) => v.event.type)).toEqual(['customer.updated']);
    expect(updatesOnly.requests).toHaveLength(1);
  });

  it('should retry after 500 responses with growing delays until delivered, and log every attempt', async () => {
    const key = await freshKey();
    const route = rx.route('flaky', [], (n) => (n <= 3 ? 500 : 'pass'));
    const ep = await register(key, route, ['customer.created']);
    await createCustomer(key);
    await waitFor(() => route.verified.length >= 1, 10_000, 'the fourth attempt');
    const event = await lastEvent(key, 'customer.created');
    expect(route.requests.map((r) => [r.eventId, r.attempt])).toEqual([1, 2, 3, 4].map((n) => [event.id, n]));

    const log = await waitFor(async () => {
      const res = await app.request('GET', `/v1/webhook-endpoints/${ep.id}/deliveries`, { key });
      // The page and its total are read by two statements: wait until both show every attempt.
      return res.body.meta.total === 4 && res.body.data.length === 4 ? res.body : null;
    }, 5_000, 'the attempt log');
    expect(log.data.map((a: { attempt: number }) => a.attempt)).toEqual([4, 3, 2, 1]);
    expect(log.data.map((a: { statusCode: number }) => a.statusCode)).toEqual([200, 500, 500, 500]);
    expect(log.data[0]).toMatchObject({ object: 'webhook_delivery_attempt', status: 'succeeded', error: null, nextRetryAt: null, eventId: event.id, eventType: 'customer.created', endpointId: ep.id });
    expect(log.data[1]).toMatchObject({ status: 'failed', error: 'HTTP 500' });
    expect(log.data[0].deliveryId).toMatch(/^whd_/);
    expect(new Set(log.data.map((a: { deliveryId: string }) => a.deliveryId)).size).toBe(1);

    // Scheduled waits grow (equal jitter: [25, 50), [50, 100), [100, 200) ms with a 50 ms base) …
    const failed = [...log.data].reverse().slice(0, 3);
    const waits = failed.map((a: { createdAt: string; nextRetryAt: string }) => Date.parse(a.nextRetryAt) - Date.parse(a.createdAt));
    expect(waits[0]).toBeGreaterThanOrEqual(25);
    expect(waits[1]).toBeGreaterThan(waits[0]);
    expect(waits[2]).toBeGreaterThan(waits[1]);
    // … and no retry arrives before its time.
    for (let i = 1; i < 4; i += 1) expect(route.requests[i].at - route.requests[i - 1].at).toBeGreaterThanOrEqual(waits[i - 1] - 5);

    const onlyFailed = await app.request('GET', `/v1/webhook-endpoints/${ep.id}/deliveries?status=failed&pageSize=2`, { key });
    expect(onlyFailed.body.meta).toEqual({ total: 3, page: 1, pageSize: 2, hasMore: true });
    const rows = await app.server.services.db.select<{ status: string; attempts: number }>('SELECT status, attempts FROM webhook_deliveries WHERE endpoint_id = $1', [ep.id]);
    expect(rows).toEqual([{ status: 'delivered', attempts: 4 }]);
  });

  it('should retry a delivery that timed out', async () => {
    const key = await freshKey();
    const route = rx.route('slow', [], (n) => (n === 1 ? { holdMs: 5_000 } : 'pass'));
    const ep = await register(key, route, ['customer.created']);
    await createCustomer(key);
    await waitFor(() => route.verified.length >= 1, 10_000, 'the retry');
    expect(route.verified[0].attempt).toBe(2);
    const log = await waitFor(async () => {
      const res = await app.request('GET', `/v1/webhook-endpoints/${ep.id}/deliveries`, { key });
      // The page and its total are read by two statements: wait until both show both attempts.
      return res.body.meta.total === 2 && res.body.data.length === 2 ? res.body : null;
    }, 5_000, 'the attempt log');
    expect(log.data[1]).toMatchObject({ attempt: 1, status: 'failed', statusCode: null, error: 'timeout' });
    expect(log.data[1].latencyMs).toBeGreaterThanOrEqual(1_900);
    expect(log.data[0]).toMatchObject({ attempt: 2, status: 'succeeded', statusCode: 200 });
  });

  it('should disable an endpoint only after its 410s persist for the gone window, and deliver what it held once enabled again', async () => {
    const key = await freshKey();
    let gone = true;
    const route = rx.route('gone', [], () => (gone ? 410 : 'pass'));
    const ep = await register(key, route, ['customer.created']);
    await createCustomer(key);
    const disabled = await waitFor(async () => {
      const res = await app.request('GET', `/v1/webhook-endpoints/${ep.id}`, { key });
      return res.body.data.status === 'disabled' ? res.body.data : null;
    }, 10_000, 'the endpoint to be disabled');
    expect(disabled.disabledReason).toBe('gone');
    // Retried, not given up at the first 410, and disabled only once the 410s spanned the window.
    expect(route.requests.length).toBeGreaterThanOrEqual(2);
    expect(route.requests[route.requests.length - 1].at - route.requests[0].at).toBeGreaterThanOrEqual(GONE_WINDOW_MS - 50);
    const rows = await app.server.services.db.select<{ status: string }>('SELECT status FROM webhook_deliveries WHERE endpoint_id = $1', [ep.id]);
    expect(rows).toEqual([{ status: 'held' }]);

    const sent = route.requests.length;
    await createCustomer(key); // not queued for a disabled endpoint (deliveries are queued with their event)
    expect(await app.server.services.db.select('SELECT status FROM webhook_deliveries WHERE endpoint_id = $1', [ep.id])).toEqual([{ status: 'held' }]);
    expect(route.requests).toHaveLength(sent);
    const log = await app.request('GET', `/v1/webhook-endpoints/${ep.id}/deliveries`, { key });
    expect(log.body.data[0]).toMatchObject({ attempt: sent, statusCode: 410, status: 'failed', nextRetryAt: null });

    gone = false;
    const reenabled = await app.request('PATCH', `/v1/webhook-endpoints/${ep.id}`, { key, body: { status: 'enabled' } });
    expect(reenabled.body.data).toMatchObject({ status: 'enabled', disabledReason: null });
    await waitFor(() => route.verified.length === 1, 10_000, 'the held delivery');
    expect(route.verified[0]).toMatchObject({ attempt: sent + 1, duplicate: false });
    await deliveriesSettled([ep.id]);
    expect(await queuedTypes(ep.id)).toEqual(['customer.created']); // the event of the disabled time was never queued
    // Delivered, the held delivery is not sent again: the loop (50 ms polls) would have within this.
    await assertStaysTrue(() => route.verified.length === 1, 300, 'one delivery at the endpoint');
  });

  it('should cancel queued deliveries of the event types a PATCH drops', async () => {
    const key = await freshKey();
    const route = rx.route('narrowed', [], () => 500);
    const ep = await register(key, route, ['customer.created', 'customer.updated']);
    await createCustomer(key);
    await waitFor(() => route.requests.length >= 2, 10_000, 'a retry of the failing delivery');
    const patched = await app.request('PATCH', `/v1/webhook-endpoints/${ep.id}`, { key, body: { events: ['customer.updated'] } });
    expect(patched.status).toBe(200);
    const rows = await app.server.services.db.select<{ status: string; last_error: string }>('SELECT status, last_error FROM webhook_deliveries WHERE endpoint_id = $1', [ep.id]);
    // An attempt in flight at that moment still settles (its 5xx does not requeue a cancelled delivery).
    expect(rows).toEqual([{ status: 'abandoned', last_error: expect.any(String) }]);
    await deliveriesSettled([ep.id]); // the attempt in flight at the PATCH, if any, has settled
    const sent = route.requests.length;
    // 50 ms retry steps: a delivery still queued would be tried again within this.
    await assertStaysTrue(() => route.requests.length === sent, 300, 'no further attempt of the cancelled delivery');
  });

  it('should sign deliveries made after a rotation without overlap with the new secret only', async () => {
    const key = await freshKey();
    const route = rx.route('rotating');
    const ep = await register(key, route, ['customer.created']);
    const oldSecret = ep.secret;
    await createCustomer(key);
    await waitFor(() => route.verified.length >= 1, 10_000, 'the first delivery');

    const rotated = await app.request('POST', `/v1/webhook-endpoints/${ep.id}/rotate-secret`, { key, body: { overlapSeconds: 0 } });
    expect(rotated.status).toBe(200);
    const newSecret = rotated.body.data.secret;
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);
    expect((await app.request('GET', `/v1/webhook-endpoints/${ep.id}`, { key })).body.data).not.toHaveProperty('secret');
    const extra = await app.request('POST', `/v1/webhook-endpoints/${ep.id}/rotate-secret`, { key, body: { secret: 'mine' } });
    expect(extra.body.error).toMatchObject({ code: 'unknown_parameter', param: 'secret' });

    route.setSecret(newSecret);
    await createCustomer(key);
    await waitFor(() => route.verified.length >= 2, 10_000, 'a delivery after the rotation');
    const [before, after] = route.requests;
    expect(ReceiverHarness.signedWith(before, oldSecret)).toBe(true);
    expect(ReceiverHarness.signedWith(after, newSecret)).toBe(true);
    expect(ReceiverHarness.signedWith(after, oldSecret)).toBe(false);
    expect(after.signatureNext).toBe('');
  });

  it('should keep signing with the old secret for 24 hours by default, the new secret in X-Service-Signature-Next', async () => {
    const key = await freshKey();
    const route = rx.route('rotating-overlap');
    const ep = await register(key, route, ['customer.created']);
    const rotated = await app.request('POST', `/v1/webhook-endpoints/${ep.id}/rotate-secret`, { key });
    expect(rotated.status).toBe(200);
    const newSecret = rotated.body.data.secret;
    // The receiver is not updated yet: it still holds only the old secret, and keeps working.
    await createCustomer(key);
    await waitFor(() => route.verified.length >= 1, 10_000, 'a delivery during the overlap');
    const [during] = route.requests;
    expect(ReceiverHarness.signedWith(during, ep.secret)).toBe(true);
    expect(during.signature).toMatch(/^[0-9a-f]{64}$/);
    expect(ReceiverHarness.signedWith({ ...during, signature: during.signatureNext }, newSecret)).toBe(true);

    const bad = await app.request('POST', `/v1/webhook-endpoints/${ep.id}/rotate-secret`, { key, body: { overlapSeconds: -5 } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_parameter', param: 'overlapSeconds' });
  });

  it('should refuse a loopback URL or another port in live mode although WEBHOOK_ALLOW_PRIVATE is on', async () => {
    const { liveKey, testKey } = await app.createAccount();
    const route = rx.route('live-refused');
    const loopback = await app.request('POST', '/v1/webhook-endpoints', { key: liveKey, body: { url: route.url, events: ['*'] } });
    expect(loopback.status).toBe(400);
    expect(loopback.body.error).toMatchObject({ code: 'invalid_parameter', param: 'url' });
    const port = await app.request('POST', '/v1/webhook-endpoints', { key: liveKey, body: { url: 'https://93.184.216.34:8080/hook', events: ['*'] } });
    expect(port.status).toBe(400);
    expect(port.body.error).toMatchObject({ code: 'invalid_parameter', param: 'url', message: "Invalid 'url': URL port must be 443 or 8443 in live mode" });
    // Test mode keeps the development switch.
    expect((await app.request('POST', '/v1/webhook-endpoints', { key: testKey, body: { url: route.url, events: ['*'] } })).status).toBe(201);
  });

  it('should queue a fresh delivery of an event on resend', async () => {
    const key = await freshKey();
    const route = rx.route('resend');
    const other = rx.route('resend-other');
    await register(key, route, ['customer.created']);
    await register(key, other, ['payment.succeeded']);
    await createCustomer(key);
    await waitFor(() => route.verified.length >= 1, 10_000, 'the first delivery');
    const event = await lastEvent(key, 'customer.created');

    const resent = await app.request('POST', `/v1/events/${event.id}/resend`, { key });
    expect(resent.status).toBe(200);
    expect(resent.body.data).toMatchObject({ eventId: event.id, deliveriesQueued: 1 });
    await waitFor(() => route.verified.length >= 2, 10_000, 'the resent delivery');
    expect(route.verified[1]).toMatchObject({ eventId: event.id, attempt: 1, duplicate: true });
    expect(route.requests[1].body).toBe(route.requests[0].body);
    expect(other.requests).toHaveLength(0);

    expect((await app.request('POST', '/v1/events/evt_missing/resend', { key })).status).toBe(404);
    const otherAccount = await app.request('POST', `/v1/events/${event.id}/resend`, { key: app.account.testKey });
    expect(otherAccount.status).toBe(404);
  });

  it("should deliver a payment's event as the bytes of the event the API returns, to endpoints of its type only", async () => {
    const key = await freshKey();
    const succeeded = rx.route('pay-succeeded');
    const failed = rx.route('pay-failed');
    const all = rx.route('pay-all');
    const succeededEp = await register(key, succeeded, ['payment.succeeded']);
    const failedEp = await register(key, failed, ['payment.failed']);
    const allEp = await register(key, all, ['*']);
    const pay = await app.request('POST', '/v1/payments', { key, body: { amount: 2500, currency: 'usd', paymentMethod: 'pm_card_visa' } });
    expect(pay.status).toBe(201);
    await waitFor(() => succeeded.verified.length >= 1 && all.verified.length >= 1, 10_000, 'the payment deliveries');
    const event = await lastEvent(key, 'payment.succeeded');
    expect(event.data.object.id).toBe(pay.body.data.id);
    // The payload is the event exactly as the API serialises it (built in the statement on PostgreSQL).
    expect(succeeded.requests[0].body).toBe(JSON.stringify(event));
    expect(all.requests[0].body).toBe(JSON.stringify(event));
    await deliveriesSettled([succeededEp.id, failedEp.id, allEp.id]);
    expect(await queuedTypes(failedEp.id)).toEqual([]);
    expect(failed.requests).toHaveLength(0);
  });

  it('should answer 404 for the attempt log of an unknown endpoint', async () => {
    const key = await freshKey();
    const res = await app.request('GET', '/v1/webhook-endpoints/we_missing/deliveries', { key });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('resource_not_found');
  });

  it('should log no failed claims or settlements along the way', () => {
    const problems = app.logs.filter((line) => /webhook claim failed|failed to settle|claim was lost/.test(line));
    expect(problems).toEqual([]);
  });
});
