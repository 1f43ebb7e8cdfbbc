import { startTestApp, type TestApp } from '../helpers/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const gql = (query: string, variables: Record<string, unknown> = {}) =>
  app.request('POST', '/graphql', { key: app.account.testKey, body: { query, variables } });

describe('GraphQL webhook endpoints', () => {
  it('should create (secret shown once), list, update, rotate, resend and delete through the same services', async () => {
    const created = await gql('mutation { createWebhookEndpoint(input: { url: "https://127.0.0.1:9/hook", events: ["customer.created"] }) { id secret status events } }');
    expect(created.body.errors).toBeUndefined();
    const endpoint = created.body.data.createWebhookEndpoint;
    expect(endpoint.secret).toMatch(/^whsec_/);
    expect(endpoint).toMatchObject({ status: 'enabled', events: ['customer.created'] });
    const listed = await gql('{ webhookEndpoints { total nodes { id secret } } }');
    expect(listed.body.data.webhookEndpoints.nodes).toEqual([{ id: endpoint.id, secret: null }]);
    // status is the WebhookEndpointStatus enum: written bare in a document, REST's string in variables and answers.
    const updated = await gql('mutation($id: ID!) { updateWebhookEndpoint(id: $id, input: { description: "ops", status: disabled }) { description status } }', { id: endpoint.id });
    expect(updated.body.data.updateWebhookEndpoint).toEqual({ description: 'ops', status: 'disabled' });
    const rotated = await gql('mutation($id: ID!) { rotateWebhookSecret(id: $id) { secret } }', { id: endpoint.id });
    expect(rotated.body.data.rotateWebhookSecret.secret).toMatch(/^whsec_/);
    expect(rotated.body.data.rotateWebhookSecret.secret).not.toBe(endpoint.secret);
    const bad = await gql('mutation { createWebhookEndpoint(input: { url: "http://example.com", events: ["*"] }) { id } }');
    expect(bad.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'url' });
    const enabled = await gql('mutation($id: ID!, $s: WebhookEndpointStatus) { updateWebhookEndpoint(id: $id, input: { status: $s }) { status } }', { id: endpoint.id, s: 'enabled' });
    expect(enabled.body.data.updateWebhookEndpoint.status).toBe('enabled');
    const customer = await app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'gql-hook@example.com' } });
    const events = await app.request('GET', '/v1/events?type=customer.created', { key: app.account.testKey });
    const event = events.body.data.find((e: { data: { object: { id: string } } }) => e.data.object.id === customer.body.data.id);
    const resent = await gql('mutation($id: ID!) { resendEvent(id: $id) { eventId deliveriesQueued } }', { id: event.id });
    expect(resent.body.data.resendEvent).toEqual({ eventId: event.id, deliveriesQueued: 1 });
    const deleted = await gql('mutation($id: ID!) { deleteWebhookEndpoint(id: $id) { id } }', { id: endpoint.id });
    expect(deleted.body.data.deleteWebhookEndpoint.id).toBe(endpoint.id);
    const gone = await gql('query($id: ID!) { webhookEndpoint(id: $id) { id } }', { id: endpoint.id });
    expect(gone.body.errors[0].extensions.code).toBe('resource_not_found');
  });
});

describe('GraphQL WebhookEndpoint.deliveries', () => {
  it('should batch the attempt logs of a list of endpoints: the statements do not grow with the endpoints, the pages match REST', async () => {
    const account = await app.createAccount();
    const key = account.testKey;
    /** `n` endpoints (to a closed port), each with two failed attempts. */
    const endpointsWithAttempts = async (n: number) => {
      for (let i = 0; i < n; i++) {
        await app.request('POST', '/v1/webhook-endpoints', { key, body: { url: `https://127.0.0.1:9/batch${i}`, events: ['customer.created'] } });
      }
      await app.request('POST', '/v1/customers', { key, body: { email: `batch${Math.random()}@example.com` } });
      await app.request('POST', '/v1/customers', { key, body: { email: `batch${Math.random()}@example.com` } });
      await app.server.services.webhooks.deliveries.deliverDue(100);
    };
    const query = '{ webhookEndpoints(pageSize: 100) { nodes { id deliveries(pageSize: 1, page: 2) { total page nodes { id endpointId eventId status } } failed: deliveries(status: failed) { nodes { id } } } } }';
    const read = async () => {
      const before = app.sql.length;
      const res = await app.request('POST', '/graphql', { key, body: { query } });
      expect(res.body.errors).toBeUndefined();
      const statements = app.sql.slice(before).filter((q) => /\bwebhook_(attempts|endpoints)\b/.test(q));
      return { statements, endpoints: res.body.data.webhookEndpoints.nodes as Array<{ id: string; deliveries: { total: number; page: number; nodes: Array<{ id: string; endpointId: string }> }; failed: { nodes: Array<{ id: string }> } }> };
    };
    await endpointsWithAttempts(2);
    const small = await read();
    await endpointsWithAttempts(4);
    const large = await read();
    expect(small.endpoints).toHaveLength(2);
    expect(large.endpoints).toHaveLength(6);
    // The endpoint list, its count, then one statement for the pages and one for the totals of
    // each `deliveries` asked (the second asks no total): however many endpoints.
    expect(large.statements).toHaveLength(small.statements.length);
    expect(large.statements.filter((q) => /\bwebhook_attempts\b/.test(q))).toHaveLength(3);
    expect(large.statements.filter((q) => /\bCOUNT\(\*\)/.test(q) && /\bwebhook_attempts\b/.test(q))).toHaveLength(1);
    // Each endpoint's page is REST's page of its log.
    for (const endpoint of large.endpoints) {
      const rest = await app.request('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries?pageSize=1&page=2`, { key });
      expect(endpoint.deliveries.total).toBe(rest.body.meta.total);
      expect(endpoint.deliveries.page).toBe(2);
      expect(endpoint.deliveries.nodes.map((a) => a.id)).toEqual(rest.body.data.map((a: { id: string }) => a.id));
      expect(endpoint.deliveries.nodes.every((a) => a.endpointId === endpoint.id)).toBe(true);
      const failed = await app.request('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries?status=failed`, { key });
      expect(endpoint.failed.nodes.map((a) => a.id)).toEqual(failed.body.data.map((a: { id: string }) => a.id));
    }
    expect(large.endpoints.filter((e) => e.deliveries.total >= 2)).toHaveLength(6);
    // Invalid paging is refused per field, as REST refuses it.
    const bad = await app.request('POST', '/graphql', { key, body: { query: '{ webhookEndpoints { nodes { id deliveries(pageSize: 500) { total } } } }' } });
    expect(bad.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'pageSize' });
    expect(bad.body.data.webhookEndpoints.nodes[0]).toEqual({ id: expect.any(String), deliveries: null });
  });

  it("should page an endpoint's nested log by cursor, forwards and backwards, as REST's startingAfter and endingBefore do", async () => {
    const account = await app.createAccount();
    const key = account.testKey;
    const endpoint = (await app.request('POST', '/v1/webhook-endpoints', { key, body: { url: 'https://127.0.0.1:9/cursor', events: ['customer.created'] } })).body.data;
    for (let i = 0; i < 3; i++) await app.request('POST', '/v1/customers', { key, body: { email: `cursor${i}${Math.random()}@example.com` } });
    await app.server.services.webhooks.deliveries.deliverDue(100);
    const log = (await app.request('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries?pageSize=100`, { key })).body.data.map((a: { id: string }) => a.id) as string[];
    expect(log).toHaveLength(3);
    const page = async (args: string, variables: Record<string, unknown>) => {
      const res = await app.request('POST', '/graphql', {
        key,
        body: {
          query: `query($id: ID!${args.includes('$cursor') ? ', $cursor: ID' : ''}) { webhookEndpoint(id: $id) { deliveries(${args}) { page edges { cursor node { id endpointId } } pageInfo { hasNextPage hasPreviousPage endCursor startCursor } } } }`,
          variables: { id: endpoint.id, ...variables },
        },
      });
      expect(res.body.errors).toBeUndefined();
      return res.body.data.webhookEndpoint.deliveries as { page: number | null; edges: Array<{ cursor: string; node: { id: string; endpointId: string } }>; pageInfo: { hasNextPage: boolean; hasPreviousPage: boolean; endCursor: string; startCursor: string } };
    };
    const first = await page('first: 2', {});
    expect(first.edges.map((e) => e.node.id)).toEqual(log.slice(0, 2));
    expect(first.pageInfo.hasNextPage).toBe(true);
    const next = await page('first: 2, after: $cursor', { cursor: first.pageInfo.endCursor });
    expect(next.page).toBeNull();
    expect(next.edges.map((e) => e.node.id)).toEqual(log.slice(2));
    expect(next.pageInfo.hasNextPage).toBe(false);
    const back = await page('last: 2, before: $cursor', { cursor: next.edges[0].cursor });
    expect(back.edges.map((e) => e.node.id)).toEqual(log.slice(0, 2));
    expect(back.edges.every((e) => e.node.endpointId === endpoint.id)).toBe(true);
    // A cursor from another list is refused with the GraphQL argument's name.
    const other = await app.request('POST', '/graphql', {
      key,
      body: { query: 'query($id: ID!) { webhookEndpoint(id: $id) { deliveries(first: 1, after: "whatt_nope") { edges { cursor } } } }', variables: { id: endpoint.id } },
    });
    expect(other.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter' });
    // Under a list of endpoints a cursor (one endpoint's) is refused, each endpoint's field null.
    await app.request('POST', '/v1/webhook-endpoints', { key, body: { url: 'https://127.0.0.1:9/cursor2', events: ['customer.created'] } });
    const listed = await app.request('POST', '/graphql', {
      key,
      body: { query: 'query($cursor: ID) { webhookEndpoints { nodes { id deliveries(first: 1, after: $cursor) { edges { cursor } } } } }', variables: { cursor: log[0] } },
    });
    expect(listed.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'after' });
    expect(listed.body.data.webhookEndpoints.nodes.map((n: { deliveries: unknown }) => n.deliveries)).toEqual([null, null]);
  });
});

describe('webhook log retention', () => {
  it('should purge finished deliveries and attempts older than 30 days and keep pending ones', async () => {
    const { db } = app.server.services;
    const old = new Date(Date.now() - 40 * 86_400_000);
    const recent = new Date();
    const ep = await app.request('POST', '/v1/webhook-endpoints', { key: app.account.testKey, body: { url: 'https://127.0.0.1:9/old', events: ['*'] } });
    const row = (id: string, status: string, at: Date) =>
      db.execute(
        `INSERT INTO webhook_deliveries (id, account_id, mode, endpoint_id, event_id, event_type, payload, status, attempts, next_attempt_at, created_at, updated_at)
         VALUES ($1, $2, 'test', $3, 'evt_x', 'customer.created', '{}', $4, 1, $5, $5, $5)`,
        [id, app.account.accountId, ep.body.data.id, status, at],
      );
    await row('whd_old_delivered', 'delivered', old);
    await row('whd_old_pending', 'pending', old);
    await row('whd_new_delivered', 'delivered', recent);
    const purged = await app.server.services.webhooks.deliveries.purgeOld();
    expect(purged.deliveries).toBe(1);
    const left = await db.select<{ id: string }>("SELECT id FROM webhook_deliveries WHERE id LIKE 'whd_old%' OR id LIKE 'whd_new%' ORDER BY id");
    expect(left.map((r) => r.id)).toEqual(['whd_new_delivered', 'whd_old_pending']);
  });

  it('should rotate with the overlap the caller chooses, as REST does', async () => {
    const created = await gql('mutation { createWebhookEndpoint(input: { url: "https://127.0.0.1:9/overlap", events: ["*"] }) { id secret } }');
    const { id, secret } = created.body.data.createWebhookEndpoint;
    const endpoints = app.server.services.webhooks.endpoints;
    const kept = await gql('mutation($id: ID!) { rotateWebhookSecret(id: $id, overlapSeconds: 600) { secret } }', { id });
    const next = kept.body.data.rotateWebhookSecret.secret;
    expect(await endpoints.signingSecrets(id, new Date())).toEqual({ current: next, previous: secret });
    const atOnce = await gql('mutation($id: ID!) { rotateWebhookSecret(id: $id, overlapSeconds: 0) { secret } }', { id });
    expect(await endpoints.signingSecrets(id, new Date())).toEqual({ current: atOnce.body.data.rotateWebhookSecret.secret, previous: null });
    const bad = await gql('mutation($id: ID!) { rotateWebhookSecret(id: $id, overlapSeconds: -1) { secret } }', { id });
    expect(bad.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'overlapSeconds' });
    // An explicit null is refused as over REST, not read as the default overlap.
    const nulled = await gql('mutation($id: ID!) { rotateWebhookSecret(id: $id, overlapSeconds: null) { secret } }', { id });
    expect(nulled.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'overlapSeconds' });
  });
});
