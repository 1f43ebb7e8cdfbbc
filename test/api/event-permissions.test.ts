import WebSocket from 'ws';
import { createClient, type Client } from 'graphql-ws';
import { startTestApp, type TestApp } from '../helpers/app';
import { waitFor } from '../helpers/wait';

/**
 * An event carries its object in full (a customer's e-mail and phone, a payment's card brand,
 * last4 and expiry): reading it, or subscribing an endpoint to it, needs the read permission of
 * that object's resource besides events:read or webhook_endpoints:write. REST, GraphQL and the
 * live subscriptions apply the same rule.
 */
let app: TestApp;
let full: string;
let fullAccountId: string;
/** Events in this account: two customer.created, three payment.succeeded, one product.created. */
let allEvents: Array<{ id: string; type: string }>;

beforeAll(async () => {
  app = await startTestApp();
  ({ testKey: full, accountId: fullAccountId } = await app.createAccount());
  for (const email of ['ada@example.com', 'bob@example.com']) {
    expect((await app.request('POST', '/v1/customers', { key: full, body: { email, phone: '+4915112345678' } })).status).toBe(201);
  }
  for (const amount of [100, 200, 300]) {
    expect((await app.request('POST', '/v1/payments', { key: full, body: { amount, currency: 'usd', paymentMethod: 'pm_card_visa' } })).status).toBe(201);
  }
  expect((await app.request('POST', '/v1/products', { key: full, body: { name: 'Plan' } })).status).toBe(201);
  allEvents = (await app.request('GET', '/v1/events?pageSize=100', { key: full })).body.data;
});
afterAll(() => app?.stop());

async function keyWith(permissions: string[]): Promise<string> {
  const created = await app.request('POST', '/v1/api-keys', { key: full, body: { permissions } });
  expect(created.status).toBe(201);
  return created.body.data.secret;
}

const ofType = (prefix: string) => allEvents.filter((e) => e.type.startsWith(prefix));
const gql = (key: string, query: string, variables: Record<string, unknown> = {}) => app.request('POST', '/graphql', { key, body: { query, variables } });

describe('reading events', () => {
  it('should list only the events whose object the key may read, with pages and total counting only those', async () => {
    const payments = ofType('payment.');
    expect(payments.length).toBe(3);
    expect(allEvents.length).toBeGreaterThan(payments.length);
    const key = await keyWith(['events:read', 'payments:read']);

    const first = await app.request('GET', '/v1/events?pageSize=2', { key });
    expect(first.status).toBe(200);
    expect(first.body.meta).toEqual({ total: 3, page: 1, pageSize: 2, hasMore: true });
    const second = await app.request('GET', '/v1/events?pageSize=2&page=2', { key });
    expect(second.body.meta).toEqual({ total: 3, page: 2, pageSize: 2, hasMore: false });
    expect([...first.body.data, ...second.body.data].map((e: { id: string }) => e.id)).toEqual(payments.map((e) => e.id));
    expect(first.text + second.text).not.toContain('ada@example.com');

    const eventsOnly = await app.request('GET', '/v1/events', { key: await keyWith(['events:read']) });
    expect(eventsOnly.status).toBe(200);
    expect(eventsOnly.body).toMatchObject({ data: [], meta: { total: 0 } });

    const everyResource = await keyWith(['events:read', 'customers:read', 'products:read', 'prices:read', 'payments:read', 'refunds:read',
      'checkout_sessions:read', 'subscriptions:read', 'invoices:read', 'payment_links:read']);
    expect((await app.request('GET', '/v1/events?pageSize=100', { key: everyResource })).body.meta.total).toBe(allEvents.length);
  });

  it('should refuse a type filter and a single event of a resource the key may not read, naming the permission', async () => {
    const key = await keyWith(['events:read', 'payments:write']);
    const filtered = await app.request('GET', '/v1/events?type=customer.created', { key });
    expect(filtered.status).toBe(403);
    expect(filtered.body.error).toMatchObject({ code: 'permission_denied', param: 'type', message: expect.stringContaining("'customers:read'") });
    expect((await app.request('GET', '/v1/events?type=payment.succeeded', { key })).body.meta.total).toBe(3);

    const customerEvent = ofType('customer.')[0];
    const one = await app.request('GET', `/v1/events/${customerEvent.id}`, { key });
    expect(one.status).toBe(403);
    expect(one.body.error).toMatchObject({ code: 'permission_denied', message: expect.stringContaining("'customers:read'") });
    expect(one.text).not.toContain('@example.com');
    expect((await app.request('GET', `/v1/events/${ofType('payment.')[0].id}`, { key })).status).toBe(200);
    expect((await app.request('GET', '/v1/events/evt_missing', { key })).status).toBe(404);
  });

  it('should apply the same rule to the GraphQL events and event queries', async () => {
    const key = await keyWith(['events:read', 'customers:read']);
    const listed = await gql(key, '{ events(pageSize: 1) { total nodes { type } } }');
    expect(listed.body.data.events).toEqual({ total: 2, nodes: [{ type: 'customer.created' }] });

    const paymentEvent = ofType('payment.')[0];
    const one = await gql(key, 'query($id: ID!) { event(id: $id) { id data } }', { id: paymentEvent.id });
    expect(one.body.errors[0].extensions).toMatchObject({ code: 'permission_denied' });
    expect(JSON.stringify(one.body)).not.toContain('last4');
    const allowed = await gql(key, 'query($id: ID!) { event(id: $id) { id } }', { id: ofType('customer.')[0].id });
    expect(allowed.body.data.event.id).toBe(ofType('customer.')[0].id);
  });
});

describe('webhook endpoints and resends', () => {
  const url = 'https://127.0.0.1:9/hooks';

  it('should refuse to subscribe an endpoint to types, or to "*", whose objects the key may not read', async () => {
    const writeOnly = await keyWith(['webhook_endpoints:write']);
    for (const events of [['*'], ['customer.created'], ['payment.succeeded']]) {
      const res = await app.request('POST', '/v1/webhook-endpoints', { key: writeOnly, body: { url, events } });
      expect(res.status).toBe(403);
      expect(res.body.error).toMatchObject({ code: 'permission_denied', param: 'events[0]' });
    }

    const payments = await keyWith(['webhook_endpoints:write', 'payments:read']);
    const mixed = await app.request('POST', '/v1/webhook-endpoints', { key: payments, body: { url, events: ['payment.succeeded', 'customer.created'] } });
    expect(mixed.status).toBe(403);
    expect(mixed.body.error).toMatchObject({ code: 'permission_denied', param: 'events[1]', message: expect.stringContaining("'customers:read'") });
    const wildcard = await app.request('POST', '/v1/webhook-endpoints', { key: payments, body: { url, events: ['*'] } });
    expect(wildcard.status).toBe(403);
    expect(wildcard.body.error.message).toMatch(/"\*"/);
    const allowed = await app.request('POST', '/v1/webhook-endpoints', { key: payments, body: { url, events: ['payment.succeeded', 'payment.failed'] } });
    expect(allowed.status).toBe(201);

    const widened = await app.request('PATCH', `/v1/webhook-endpoints/${allowed.body.data.id}`, { key: payments, body: { events: ['*'] } });
    expect(widened.status).toBe(403);
    expect(widened.body.error).toMatchObject({ code: 'permission_denied', param: 'events[0]' });
    const viaGraphql = await gql(payments, 'mutation { createWebhookEndpoint(input: { url: "https://127.0.0.1:9/gql", events: ["customer.updated"] }) { id } }');
    expect(viaGraphql.body.errors[0].extensions).toMatchObject({ code: 'permission_denied', param: 'events[0]' });

    // "*" is every type, the account's own (account.public_declines_exceeded, account:read) included.
    const allButAccount = ['webhook_endpoints:write', 'customers:read', 'products:read', 'prices:read', 'payments:read', 'refunds:read',
      'checkout_sessions:read', 'subscriptions:read', 'invoices:read', 'payment_links:read', 'tax_rates:read'];
    expect((await app.request('POST', '/v1/webhook-endpoints', { key: await keyWith(allButAccount), body: { url, events: ['*'] } })).status).toBe(403);
    const everyResource = await keyWith([...allButAccount, 'account:read']);
    expect((await app.request('POST', '/v1/webhook-endpoints', { key: everyResource, body: { url, events: ['*'] } })).status).toBe(201);
  });

  it('should let an endpoint a full key made keep its events, and refuse a narrower key moving it to another url', async () => {
    const made = await app.request('POST', '/v1/webhook-endpoints', { key: full, body: { url, events: ['*'] } });
    expect(made.status).toBe(201);
    const id = made.body.data.id;
    const narrow = await keyWith(['webhook_endpoints:write', 'payments:read']);

    const moved = await app.request('PATCH', `/v1/webhook-endpoints/${id}`, { key: narrow, body: { url: 'https://127.0.0.1:9/attacker' } });
    expect(moved.status).toBe(403);
    expect(moved.body.error).toMatchObject({ code: 'permission_denied', param: 'url' });
    const described = await app.request('PATCH', `/v1/webhook-endpoints/${id}`, { key: narrow, body: { description: 'orders' } });
    expect(described.status).toBe(200);
    expect(described.body.data).toMatchObject({ url, events: ['*'], description: 'orders' });

    // Still subscribed to everything: a customer created now is queued for it.
    const customer = await app.request('POST', '/v1/customers', { key: full, body: { email: 'kept@example.com' } });
    const queued = await app.server.services.db.select<{ event_type: string }>('SELECT event_type FROM webhook_deliveries WHERE endpoint_id = $1', [id]);
    expect(customer.status).toBe(201);
    expect(queued.map((d) => d.event_type)).toEqual(['customer.created']);
    await app.request('DELETE', `/v1/webhook-endpoints/${id}`, { key: full });
  });

  it('should refuse to resend an event whose object the key may not read', async () => {
    const key = await keyWith(['webhook_endpoints:write', 'payments:read']);
    const refused = await app.request('POST', `/v1/events/${ofType('customer.')[0].id}/resend`, { key });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'permission_denied', message: expect.stringContaining("'customers:read'") });
    const resent = await app.request('POST', `/v1/events/${ofType('payment.')[0].id}/resend`, { key });
    expect(resent.status).toBe(200);
  });
});

describe('live GraphQL subscriptions', () => {
  function wsClient(key: string): Client {
    const ca = app.server.cert;
    class TrustingWebSocket extends WebSocket {
      constructor(address: string, protocols?: string | string[]) {
        super(address, protocols, { ca, servername: 'localhost' } as WebSocket.ClientOptions);
      }
    }
    return createClient({
      url: `${app.baseUrl.replace('https:', 'wss:')}/graphql`,
      webSocketImpl: TrustingWebSocket,
      connectionParams: { authorization: `Bearer ${key}` },
      retryAttempts: 0,
      lazy: true,
    });
  }

  it('should stream only the events whose object the key may read', async () => {
    const client = wsClient(await keyWith(['events:read', 'payments:read']));
    const seen: string[] = [];
    const iterator = client.iterate<{ events: { type: string } }>({ query: 'subscription { events { type data } }' });
    const collected = (async () => {
      for await (const r of iterator) {
        if (r.errors) throw new Error(JSON.stringify(r.errors));
        seen.push(r.data!.events.type);
        if (seen.length >= 1) break;
      }
    })();
    // The subscription is registered once its stream listens to the account's events (the
    // events subscription's, read in write order by the instance's tail).
    const tail = app.server.services.events.tail!;
    await waitFor(() => tail.listens({ accountId: fullAccountId, livemode: false }), { what: 'the subscription to register' });
    // A customer first: were it streamed, it would be the first (and only) event collected.
    await app.request('POST', '/v1/customers', { key: full, body: { email: 'streamed@example.com' } });
    await app.request('POST', '/v1/payments', { key: full, body: { amount: 700, currency: 'usd', paymentMethod: 'pm_card_visa' } });
    let deadline: NodeJS.Timeout | undefined;
    try {
      await Promise.race([collected, new Promise((_, reject) => { deadline = setTimeout(() => reject(new Error('no event streamed')), 8000); })]);
    } finally {
      clearTimeout(deadline);
    }
    expect(seen).toEqual(['payment.succeeded']);
    await iterator.return?.();
    await client.dispose();
  });
});
