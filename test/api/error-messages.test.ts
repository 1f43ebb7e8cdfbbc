import { startTestApp, type TestApp } from '../helpers/app';
import { EVENT_TYPES } from '../../src/modules/events/event.service';

// Messages a new user meets first: each says what to do instead.
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'false' } });
});
afterAll(() => app.stop());

const registerEndpoint = (key: string, body: unknown) => app.request('POST', '/v1/webhook-endpoints', { key, body });

describe('error messages that say what to do', () => {
  it('should point a loopback webhook URL in test mode at WEBHOOK_ALLOW_PRIVATE, and not in live mode', async () => {
    const test = await registerEndpoint(app.account.testKey, { url: 'https://localhost:9443/', events: ['*'] });
    expect(test.status).toBe(400);
    expect(test.body.error).toMatchObject({ code: 'invalid_parameter', param: 'url' });
    expect(test.body.error.message).toContain('loopback');
    expect(test.body.error.message).toContain('WEBHOOK_ALLOW_PRIVATE=true');
    const live = await registerEndpoint(app.account.liveKey, { url: 'https://127.0.0.1/', events: ['*'] });
    expect(live.status).toBe(400);
    expect(live.body.error.message).not.toContain('WEBHOOK_ALLOW_PRIVATE');
  });

  it('should list the event types when one is unknown', async () => {
    const res = await registerEndpoint(app.account.testKey, { url: 'https://hooks.example.com/', events: ['payment.succeeded', 'payment.completed'] });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_parameter', param: 'events[1]' });
    expect(res.body.error.message).toContain("unknown event type 'payment.completed'");
    for (const type of EVENT_TYPES) expect(res.body.error.message).toContain(type);
  });

  it('should list the valid resources when a permission names an unknown one', async () => {
    const res = await app.request('POST', '/v1/api-keys', { key: app.account.testKey, body: { permissions: ['customers:read', 'webhooks:write'] } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_parameter', param: 'permissions[1]' });
    expect(res.body.error.message).toContain("unknown resource 'webhooks'");
    expect(res.body.error.message).toContain('webhook_endpoints');
    const access = await app.request('POST', '/v1/api-keys', { key: app.account.testKey, body: { permissions: ['customers:admin'] } });
    expect(access.body.error.message).toContain("use 'customers:read' or 'customers:write'");
  });

  it('should say a form-encoded body needs Content-Type: application/json', async () => {
    const res = await app.request('POST', '/v1/customers', {
      key: app.account.testKey,
      rawBody: 'email=form%40example.com',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('malformed_json');
    expect(res.body.error.message).toBe('Request body must be JSON sent with Content-Type: application/json (this one is application/x-www-form-urlencoded)');
    const badJson = await app.request('POST', '/v1/customers', { key: app.account.testKey, rawBody: '{"email":' });
    expect(badJson.body.error).toMatchObject({ code: 'malformed_json', message: 'Request body is not valid JSON' });
  });
});
