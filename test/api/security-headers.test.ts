import { startTestApp, type TestApp } from '../helpers/app';
import { httpsRequest, type HttpResponse } from '../helpers/http';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

function expectApiHeaders(res: HttpResponse): void {
  expect(res.headers['strict-transport-security']).toBe('max-age=31536000');
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  expect(res.headers['cache-control']).toBe('no-store');
}

describe('security headers', () => {
  it('should send HSTS, nosniff and no-store on API answers over HTTPS, errors included', async () => {
    const key = app.account.testKey;
    const created = await app.request('POST', '/v1/api-keys', { key, body: { name: 'one-time secret' } });
    expect(created.status).toBe(201);
    expectApiHeaders(created);
    expectApiHeaders(await app.request('GET', '/v1/customers', { key }));
    const refused = await app.request('GET', '/v1/customers');
    expect(refused.status).toBe(401);
    expectApiHeaders(refused);
    const graphql = await app.request('POST', '/graphql', { key, body: { query: '{ customers { nodes { id } } }' } });
    expect(graphql.status).toBe(200);
    expectApiHeaders(graphql);
    expectApiHeaders(await app.request('GET', '/health'));
  });

  it('should add Referrer-Policy: no-referrer on pages, error pages included', async () => {
    for (const path of ['/', '/no-such-page']) {
      const res = await app.request('GET', path);
      expectApiHeaders(res);
      expect(res.headers['referrer-policy']).toBe('no-referrer');
    }
  });

  it('should not send HSTS from the plain-HTTP listener, which only redirects', async () => {
    const res = await httpsRequest(app.httpUrl, app.server.cert, 'GET', '/v1/customers');
    expect(res.status).toBe(301);
    expect(res.headers['strict-transport-security']).toBeUndefined();
  });
});
