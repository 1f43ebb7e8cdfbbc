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
    const created = await gql('mutation { createWebhookEndpoint(input: { url: "https://127.0.0.1:9/hook", events: [customer_created] }) { id secret status events } }');
    expect(created.body.errors).toBeUndefined();
    const endpoint = created.body.data.createWebhookEndpoint;
    expect(endpoint.secret).toMatch(/^whsec_/);
    expect(endpoint).toMatchObject({ status: 'enabled', events: ['customer_created'] });
    const listed = await gql('{ webhookEndpoints { total nodes { id secret } } }');
    expect(listed.body.data.webhookEndpoints.nodes).toEqual([{ id: endpoint.id, secret: null }]);
    // status is the WebhookEndpointStatus enum: written bare in a document, REST's string in variables and answers.
    const updated = await gql('mutation($id: ID!) { updateWebhookEndpoint(id: $id, input: { description: "ops", status: disabled }) { description status } }', { id: endpoint.id });
    expect(updated.body.data.updateWebhookEndpoint).toEqual({ description: 'ops', status: 'disabled' });
    const rotated = await gql('mutation($id: ID!) { rotateWebhookSecret(id: $id) { secret } }', { id: endpoint.id });
    expect(rotated.body.data.rotateWebhookSecret.secret).toMatch(/^whsec_/);
    expect(rotated.body.data.rotateWebhookSecret.secret).not.toBe(endpoint.secret);
    const bad = await gql('mutation { createWebhookEndpoint(input: { url: "http://example.com", events: [all] }) { id } }');
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
    const created = await gql('mutation { createWebhookEndpoint(input: { url: "https://127.0.0.1:9/overlap", events: [all] }) { id secret } }');
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
