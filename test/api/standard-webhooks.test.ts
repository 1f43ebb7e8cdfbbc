import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { startTestApp, type TestApp } from '../helpers/app';
import { postgresPlans } from '../helpers/plans';
import { makeCertificate } from '../unit/webhooks/receiver-harness';
import { waitFor } from '../helpers/wait';
import { verifySignature } from '../../src/modules/webhooks/signature';

/*
 * Issue 35, items 5 and 6, over real HTTPS: every delivery verifies with the Standard Webhooks
 * maintainers' own library (standardwebhooks), a rotated secret's overlap verifies with either
 * secret, a stale timestamp is refused by that library; the endpoint test ping; the events list's
 * created range.
 */

interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** What `new Webhook(secret).verify` made of it with the route's secrets: 'ok' or the library's error. */
  verdicts: string[];
}

/** A receiver that checks each delivery with the library, one route per test, and answers as the route says. */
class LibraryReceiver {
  private server?: https.Server;
  base = '';
  readonly received: Received[] = [];
  private readonly routes = new Map<string, { secrets: string[]; status: (n: number) => number }>();

  async start(tls: { cert: string; key: string }): Promise<void> {
    this.server = https.createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = (req.url ?? '').slice(1);
        const route = this.routes.get(path);
        const body = Buffer.concat(chunks).toString('utf8');
        const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
        const verdicts = (route?.secrets ?? []).map((secret) => {
          try {
            new Webhook(secret).verify(body, headers);
            return 'ok';
          } catch (err) {
            return err instanceof WebhookVerificationError ? err.message : `error: ${(err as Error).message}`;
          }
        });
        this.received.push({ path, headers, body, verdicts });
        const n = this.received.filter((r) => r.path === path).length;
        const status = !route ? 404 : !verdicts.includes('ok') ? 400 : route.status(n);
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.base = `https://localhost:${(this.server.address() as AddressInfo).port}`;
  }

  route(name: string, status: (n: number) => number = () => 204): { url: string; setSecrets(secrets: string[]): void; requests(): Received[] } {
    const entry = { secrets: [] as string[], status };
    this.routes.set(name, entry);
    return {
      url: `${this.base}/${name}`,
      setSecrets: (secrets) => (entry.secrets = secrets),
      requests: () => this.received.filter((r) => r.path === name),
    };
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server!.close(resolve));
  }
}

let app: TestApp;
let rx: LibraryReceiver;
/** How far the signing clock (webhook-timestamp) is moved from the real one. */
let skewMs = 0;

beforeAll(async () => {
  const tls = await makeCertificate();
  rx = new LibraryReceiver();
  await rx.start(tls);
  app = await startTestApp({
    env: { WEBHOOK_CA_FILE: tls.caFile },
    runWorkers: true,
    serviceOptions: {
      webhooks: { retry: { baseMs: 50, maxMs: 200 }, pollMs: 50, timeoutMs: 2000, signingClock: { now: () => new Date(Date.now() + skewMs) } },
    },
  });
});

afterAll(async () => {
  await app?.stop();
  await rx?.stop();
});

afterEach(() => {
  skewMs = 0;
});

async function freshKey(): Promise<string> {
  return (await app.createAccount()).testKey;
}

async function register(key: string, url: string, events: string[] = ['*']): Promise<{ id: string; secret: string }> {
  const res = await app.request('POST', '/v1/webhook-endpoints', { key, body: { url, events } });
  expect(res.status).toBe(201);
  return res.body.data;
}

async function createCustomer(key: string): Promise<{ id: string }> {
  const res = await app.request('POST', '/v1/customers', { key, body: { email: `c_${randomBytes(6).toString('hex')}@example.com` } });
  expect(res.status).toBe(201);
  return res.body.data;
}

async function attempts(key: string, endpointId: string, query = ''): Promise<Array<{ attempt: number; status: string; statusCode: number; eventId: string; eventType: string }>> {
  const res = await app.request('GET', `/v1/webhook-endpoints/${endpointId}/deliveries?${query}`, { key });
  expect(res.status).toBe(200);
  return res.body.data;
}

describe('Standard Webhooks headers on real deliveries', () => {
  it('should verify with the standardwebhooks library on every attempt, webhook-id the event id throughout, X-Service-Signature unchanged', async () => {
    const key = await freshKey();
    const route = rx.route('verify', (n) => (n === 1 ? 500 : 204));
    const endpoint = await register(key, route.url, ['customer.created']);
    route.setSecrets([endpoint.secret]);
    await createCustomer(key);
    const [first, second] = await waitFor(() => (route.requests().length >= 2 ? route.requests() : null), { what: 'two attempts' });
    const event = JSON.parse(first.body);
    for (const [i, req] of [first, second].entries()) {
      expect(req.verdicts).toEqual(['ok']);
      expect(req.headers['webhook-id']).toBe(event.id);
      expect(req.headers['x-service-event-id']).toBe(event.id);
      expect(req.headers['x-service-delivery-attempt']).toBe(String(i + 1));
      expect(req.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
      // Unix seconds of this attempt, on the wall clock.
      expect(Math.abs(Number(req.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30);
      expect(verifySignature(endpoint.secret, req.body, req.headers['x-service-signature'])).toBe(true);
      expect(req.headers['x-service-signature-next']).toBeUndefined();
    }
    expect(second.body).toBe(first.body);
    await waitFor(async () => (await attempts(key, endpoint.id)).some((a) => a.status === 'succeeded'), { what: 'the retry to succeed' });
  });

  it('should carry both secrets\' signatures during a rotation overlap, so a receiver with either verifies, and only the new one after it', async () => {
    const key = await freshKey();
    const route = rx.route('rotate');
    const endpoint = await register(key, route.url, ['customer.created']);
    const rotated = await app.request('POST', `/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, { key, body: { overlapSeconds: 3600 } });
    expect(rotated.status).toBe(200);
    const newSecret = rotated.body.data.secret as string;
    const stranger = `whsec_${randomBytes(32).toString('base64')}`;
    route.setSecrets([endpoint.secret, newSecret, stranger]);
    await createCustomer(key);
    const [during] = await waitFor(() => (route.requests().length >= 1 ? route.requests() : null), { what: 'the delivery' });
    expect(during.headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(during.verdicts).toEqual(['ok', 'ok', 'No matching signature found']);
    expect(verifySignature(endpoint.secret, during.body, during.headers['x-service-signature'])).toBe(true);
    expect(verifySignature(newSecret, during.body, during.headers['x-service-signature-next'])).toBe(true);

    // Overlap 0: the old secret stops signing at once.
    const again = await app.request('POST', `/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, { key, body: { overlapSeconds: 0 } });
    const newest = again.body.data.secret as string;
    route.setSecrets([newSecret, newest]);
    await createCustomer(key);
    const after = await waitFor(() => route.requests()[1], { what: 'the second delivery' });
    expect(after.headers['webhook-signature'].split(' ')).toHaveLength(1);
    expect(after.verdicts).toEqual(['No matching signature found', 'ok']);
  });

  it('should be refused by the library when the timestamp is more than 5 minutes old, and verify again once the clock is right', async () => {
    const key = await freshKey();
    const route = rx.route('stale', () => 204);
    const endpoint = await register(key, route.url, ['customer.created']);
    route.setSecrets([endpoint.secret]);
    skewMs = -6 * 60_000;
    await createCustomer(key);
    const stale = await waitFor(() => route.requests()[0], { what: 'the stale delivery' });
    expect(stale.verdicts).toEqual(['Message timestamp too old']);
    expect(Date.now() / 1000 - Number(stale.headers['webhook-timestamp'])).toBeGreaterThan(300);
    skewMs = 0;
    // The receiver's 400 is a failure, retried; the retry is signed at its own time.
    const retried = await waitFor(() => route.requests().find((r) => r.verdicts[0] === 'ok'), { what: 'a fresh retry' });
    expect(retried.headers['webhook-id']).toBe(stale.headers['webhook-id']);
    expect(Number(retried.headers['x-service-delivery-attempt'])).toBeGreaterThan(1);
  });

  it('should sign with an endpoint\'s secret from before Standard Webhooks (base64url) as the library reads it in its raw form', async () => {
    const key = await freshKey();
    const route = rx.route('legacy');
    const endpoint = await register(key, route.url, ['customer.created']);
    // A secret as endpoints created before got it: whsec_ + base64url, here with a '-' in it.
    let legacy: string;
    do legacy = `whsec_${randomBytes(32).toString('base64url')}`;
    while (!/[-_]/.test(legacy.slice(6)));
    const box = (app.server.services.webhooks.endpoints as unknown as { box: { seal(v: string): string } }).box;
    await app.server.services.db.execute('UPDATE webhook_endpoints SET secret_sealed = $1 WHERE id = $2', [box.seal(legacy), endpoint.id]);
    route.setSecrets([]);
    await createCustomer(key);
    const req = await waitFor(() => route.requests()[0], { what: 'the delivery' });
    expect(() => new Webhook(legacy)).toThrow();
    expect(new Webhook(legacy.slice(6), { format: 'raw' }).verify(req.body, req.headers)).toMatchObject({ type: 'customer.created' });
    expect(verifySignature(legacy, req.body, req.headers['x-service-signature'])).toBe(true);
  });
});

describe('POST /v1/webhook-endpoints/{id}/test', () => {
  it('should send the endpoint a signed ping, whatever it subscribes to, that is no event', async () => {
    const key = await freshKey();
    const route = rx.route('ping');
    const endpoint = await register(key, route.url, ['invoice.paid']);
    route.setSecrets([endpoint.secret]);
    const res = await app.request('POST', `/v1/webhook-endpoints/${endpoint.id}/test`, { key, body: {} });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      object: 'webhook_endpoint_test', endpointId: endpoint.id, eventId: expect.stringMatching(/^evt_/), eventType: 'ping',
      deliveryId: expect.stringMatching(/^whd_/), status: 'pending',
    });
    const { eventId } = res.body.data;
    const req = await waitFor(() => route.requests()[0], { what: 'the ping' });
    expect(req.verdicts).toEqual(['ok']);
    expect(req.headers['webhook-id']).toBe(eventId);
    expect(JSON.parse(req.body)).toEqual({
      id: eventId, object: 'event', type: 'ping', createdAt: expect.any(String), livemode: false,
      data: { object: expect.objectContaining({ id: endpoint.id, object: 'webhook_endpoint', url: route.url }) },
    });
    expect(JSON.parse(req.body).data.object).not.toHaveProperty('secret');
    // Its attempt is in the log; it is no event.
    const log = await waitFor(async () => (await attempts(key, endpoint.id, `eventId=${eventId}`)).find((a) => a.status === 'succeeded'), { what: 'the attempt' });
    expect(log).toMatchObject({ eventType: 'ping', attempt: 1, statusCode: 204 });
    expect((await app.request('GET', `/v1/events/${eventId}`, { key })).status).toBe(404);
    const events = await app.request('GET', '/v1/events?pageSize=100', { key });
    expect(events.body.data.map((e: { type: string }) => e.type)).not.toContain('ping');
    expect((await app.request('POST', `/v1/events/${eventId}/resend`, { key })).status).toBe(404);
    // GraphQL's mutation and the attempt log's type.
    const gql = await app.request('POST', '/graphql', {
      key, body: { query: `mutation { testWebhookEndpoint(id: "${endpoint.id}") { eventId eventType status } }` },
    });
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.testWebhookEndpoint).toMatchObject({ eventType: 'ping', status: 'pending' });
    await waitFor(() => route.requests().length >= 2, { what: 'the second ping' });
    const listed = await app.request('POST', '/graphql', {
      key, body: { query: `{ webhookEndpoint(id: "${endpoint.id}") { deliveries { nodes { eventType } } } }` },
    });
    expect(listed.body.errors).toBeUndefined();
  });

  it('should try a ping once, replay it under its Idempotency-Key, and refuse a disabled, deleted or unknown endpoint', async () => {
    const key = await freshKey();
    const route = rx.route('ping-fails', () => 503);
    const endpoint = await register(key, route.url, ['*']);
    route.setSecrets([endpoint.secret]);
    const idem = `ping-${randomBytes(4).toString('hex')}`;
    const first = await app.request('POST', `/v1/webhook-endpoints/${endpoint.id}/test`, { key, body: {}, headers: { 'Idempotency-Key': idem } });
    const replay = await app.request('POST', `/v1/webhook-endpoints/${endpoint.id}/test`, { key, body: {}, headers: { 'Idempotency-Key': idem } });
    expect(first.status).toBe(200);
    expect(replay.body.data).toEqual(first.body.data);
    const failed = await waitFor(async () => (await attempts(key, endpoint.id)).find((a) => a.status === 'failed'), { what: 'the failed attempt' });
    expect(failed).toMatchObject({ eventType: 'ping', statusCode: 503, attempt: 1 });
    const [delivery] = await waitFor(async () => {
      const rows = await app.server.services.db.select<{ status: string; attempts: number }>('SELECT status, attempts FROM webhook_deliveries WHERE id = $1', [first.body.data.deliveryId]);
      return rows[0]?.status === 'failed' ? rows : null;
    }, { what: 'the ping to end failed' });
    expect(Number(delivery.attempts)).toBe(1);
    expect(route.requests()).toHaveLength(1);

    await app.request('PATCH', `/v1/webhook-endpoints/${endpoint.id}`, { key, body: { status: 'disabled' } });
    const disabled = await app.request('POST', `/v1/webhook-endpoints/${endpoint.id}/test`, { key, body: {} });
    expect(disabled.status).toBe(422);
    expect(disabled.body.error.code).toBe('invalid_state');
    await app.request('DELETE', `/v1/webhook-endpoints/${endpoint.id}`, { key });
    expect((await app.request('POST', `/v1/webhook-endpoints/${endpoint.id}/test`, { key, body: {} })).status).toBe(404);
    expect((await app.request('POST', '/v1/webhook-endpoints/we_missing/test', { key, body: {} })).status).toBe(404);
    expect((await app.request('POST', `/v1/webhook-endpoints/${endpoint.id}/test`, { key, body: { url: 'x' } })).status).toBe(400);
  });
});

describe('GET /v1/events createdAfter / createdBefore', () => {
  it('should list only the events strictly inside the range, in REST and GraphQL', async () => {
    const key = await freshKey();
    for (let i = 0; i < 5; i++) await createCustomer(key);
    const all = (await app.request('GET', '/v1/events?type=customer.created&sortDirection=asc', { key })).body.data as Array<{ id: string; createdAt: string }>;
    expect(all).toHaveLength(5);
    // Events a few milliseconds apart at least: distinct instants.
    expect(new Set(all.map((e) => e.createdAt)).size).toBe(5);
    const ids = (q: string) => app.request('GET', `/v1/events?type=customer.created&sortDirection=asc&${q}`, { key }).then((r) => {
      expect(r.status).toBe(200);
      return (r.body.data as Array<{ id: string }>).map((e) => e.id);
    });
    expect(await ids(`createdAfter=${all[1].createdAt}`)).toEqual(all.slice(2).map((e) => e.id));
    expect(await ids(`createdBefore=${all[3].createdAt}`)).toEqual(all.slice(0, 3).map((e) => e.id));
    expect(await ids(`createdAfter=${all[0].createdAt}&createdBefore=${all[4].createdAt}`)).toEqual(all.slice(1, 4).map((e) => e.id));
    const total = await app.request('GET', `/v1/events?createdAfter=${all[2].createdAt}&type=customer.created`, { key });
    expect(total.body.meta.total).toBe(2);
    // A date is its UTC midnight; an offset counts.
    expect(await ids('createdAfter=2000-01-01')).toHaveLength(5);
    expect(await ids('createdBefore=2000-01-01')).toEqual([]);
    const shifted = new Date(Date.parse(all[1].createdAt)).toISOString().replace('Z', '+00:00');
    expect(await ids(`createdAfter=${encodeURIComponent(shifted)}`)).toEqual(all.slice(2).map((e) => e.id));

    const gql = await app.request('POST', '/graphql', {
      key,
      body: {
        query: 'query($a: DateTime, $b: DateTime) { events(type: "customer.created", createdAfter: $a, createdBefore: $b, sortDirection: asc) { total nodes { id } } }',
        variables: { a: all[0].createdAt, b: all[4].createdAt },
      },
    });
    expect(gql.body.errors).toBeUndefined();
    expect(gql.body.data.events).toEqual({ total: 3, nodes: all.slice(1, 4).map((e) => ({ id: e.id })) });
  });

  it('should refuse anything but an ISO 8601 date or instant with 400 invalid_parameter naming the parameter', async () => {
    const key = app.account.testKey;
    for (const [param, value] of [
      ['createdAfter', 'yesterday'], ['createdAfter', '2026-02-31'], ['createdBefore', '2026-13-01T00:00:00Z'], ['createdBefore', '1700000000'],
      ['createdAfter', '2026-01-31T10:00:00'], ['createdBefore', ''],
    ]) {
      const res = await app.request('GET', `/v1/events?${param}=${encodeURIComponent(value)}`, { key });
      expect({ value, status: res.status, code: res.body.error?.code, param: res.body.error?.param }).toEqual({ value, status: 400, code: 'invalid_parameter', param });
    }
  });

  it('should read the range from the events indexes, not a scan of the account\'s events', async () => {
    const key = app.account.testKey;
    const before = app.sql.length;
    await app.request('GET', '/v1/events?createdAfter=2026-01-01T00:00:00Z&createdBefore=2027-01-01', { key });
    const statements = app.sql.slice(before).map((q) => q.replace(/^Executing \([^)]*\): /, '')).filter((q) => /FROM events WHERE .*created_at >/s.test(q));
    expect(statements).toHaveLength(2); // the page and its total
    const db = app.server.services.db;
    const args = (sql: string) => [app.account.accountId, 'test', '2026-01-01 00:00:00.000 +00:00', '2027-01-01 00:00:00.000 +00:00', 20, 0].slice(0, /COUNT/.test(sql) ? 4 : 6);
    if (db.dialect === 'sqlite') {
      for (const sql of statements) {
        const plan = JSON.stringify(await db.select(`EXPLAIN QUERY PLAN ${sql}`, args(sql)));
        expect(plan).toMatch(/SEARCH events USING (COVERING )?INDEX events_list_idx \(account_id=\? AND mode=\? AND created_at>\? AND created_at<\?\)/);
      }
      return;
    }
    // PostgreSQL: 30,000 events of one account and mode over 80 years, a year of them asked for (rolled back).
    const plans = await postgresPlans(db, [`INSERT INTO events (id, account_id, mode, type, object_id, data, created_at)
        SELECT 'evt_range_' || g, 'acct_range', 'test', 'customer.created', NULL, '{"object":{}}', TIMESTAMPTZ '2026-06-01' - g * interval '1 day'
          FROM generate_series(1, 30000) g`], statements.map((sql) => ({ sql, args: ['acct_range', ...args(sql).slice(1)] })));
    for (const plan of plans) {
      expect(plan).toMatch(/Index (Only )?Scan (Backward )?using events_list_idx on events/);
      expect(plan).not.toMatch(/Seq Scan on events/);
    }
  });
});
