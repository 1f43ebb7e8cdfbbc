import http from 'node:http';
import { startTestApp, type TestApp } from '../helpers/app';
import { httpsRequest } from '../helpers/http';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.stop());

function plainGet(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text) }));
    }).on('error', reject);
  });
}

describe('transport and envelope', () => {
  it('should wrap a success in {data, error: null} with an X-Request-Id header', async () => {
    const res = await app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'env@example.com' } });
    expect(res.status).toBe(201);
    expect(res.body.error).toBeNull();
    expect(res.body.data).toMatchObject({ object: 'customer', email: 'env@example.com', livemode: false });
    expect(res.body.data.id).toMatch(/^cus_[0-9A-Za-z]{20,}$/);
    expect(res.headers['x-request-id']).toMatch(/^req_/);
  });

  it('should wrap an error in {data: null, error: {code, message, requestId}} matching the header', async () => {
    const res = await app.request('GET', '/v1/customers/cus_missing', { key: app.account.testKey });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({
      data: null,
      error: { code: 'resource_not_found', message: expect.any(String), requestId: res.headers['x-request-id'], param: 'id' },
    });
  });

  it('should answer plain HTTP with 301 to the same path and query over HTTPS', async () => {
    const res = await plainGet(`${app.httpUrl}/v1/customers?page=2&pageSize=5`);
    expect(res.status).toBe(301);
    const httpsPort = new URL(app.baseUrl).port;
    expect(res.headers.location).toBe(`https://127.0.0.1:${httpsPort}/v1/customers?page=2&pageSize=5`);
    expect(res.body.error.code).toBe('https_required');
    expect(res.body.error.requestId).toBe(res.headers['x-request-id']);
  });

  it('should serve the same handlers under /v1 and /api/v1', async () => {
    const created = await app.request('POST', '/api/v1/customers', { key: app.account.testKey, body: { email: 'alias@example.com' } });
    expect(created.status).toBe(201);
    const viaCanonical = await app.request('GET', `/v1/customers/${created.body.data.id}`, { key: app.account.testKey });
    expect(viaCanonical.body.data).toEqual(created.body.data);
    const viaAlias = await app.request('GET', `/api/v1/customers/${created.body.data.id}`, { key: app.account.testKey });
    expect(viaAlias.body.data).toEqual(created.body.data);
  });

  it('should answer 404 route_not_found for an unknown route and 405 with Allow for a wrong method', async () => {
    const unknown = await app.request('GET', '/v1/nothing-here', { key: app.account.testKey });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('route_not_found');
    const wrong = await app.request('DELETE', '/v1/customers', { key: app.account.testKey });
    expect(wrong.status).toBe(405);
    expect(wrong.body.error.code).toBe('method_not_allowed');
    expect(wrong.headers.allow).toContain('POST');
    expect(wrong.headers.allow).toContain('GET');
    // Outside the API's namespace a path belongs to the pages: the same 404, as an HTML page.
    const outside = await app.request('GET', '/elsewhere');
    expect(outside.status).toBe(404);
    expect(outside.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(outside.text).toContain('<code>route_not_found</code>');
  });

  it('should refuse malformed JSON with 400 malformed_json', async () => {
    const res = await app.request('POST', '/v1/customers', { key: app.account.testKey, rawBody: '{"email": "x@y.z",' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('malformed_json');
  });

  it('should refuse a non-object JSON body with 400', async () => {
    const res = await app.request('POST', '/v1/customers', { key: app.account.testKey, rawBody: '[1,2]' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_parameter', param: 'body' });
  });

  it('should refuse a body above 1 MiB with 413 payload_too_large', async () => {
    const big = JSON.stringify({ email: 'big@example.com', name: 'x'.repeat(1024 * 1024 + 10) });
    const res = await app.request('POST', '/v1/customers', { key: app.account.testKey, rawBody: big });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
  });

  it('should refuse unknown query parameters with 400 unknown_parameter', async () => {
    const list = await app.request('GET', '/v1/customers?colour=blue', { key: app.account.testKey });
    expect(list.status).toBe(400);
    expect(list.body.error).toMatchObject({ code: 'unknown_parameter', param: 'colour' });
    const one = await app.request('GET', '/v1/customers/cus_x?expand=all', { key: app.account.testKey });
    expect(one.status).toBe(400);
    expect(one.body.error).toMatchObject({ code: 'unknown_parameter', param: 'expand' });
  });

  it('should refuse bad list parameters with 400 and the param', async () => {
    for (const [query, param] of [
      ['pageSize=0', 'pageSize'],
      ['pageSize=101', 'pageSize'],
      ['page=0', 'page'],
      ['page=abc', 'page'],
      ['sortField=email', 'sortField'],
      ['sortDirection=sideways', 'sortDirection'],
    ]) {
      const res = await app.request('GET', `/v1/customers?${query}`, { key: app.account.testKey });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_parameter');
      expect(res.body.error.param).toBe(param);
    }
  });

  it('should answer /health and /ready without a key', async () => {
    const health = await app.request('GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body.data.status).toBe('ok');
    const ready = await app.request('GET', '/ready');
    expect(ready.status).toBe(200);
    // Without REDIS_URL there is no Redis to report on.
    expect(ready.body.data).toEqual({ status: 'ready' });
  });

  it('should answer /ready with 503 service_unavailable when the database does not answer', async () => {
    const { db } = app.server.services;
    const original = db.select.bind(db);
    db.select = async () => {
      const err = new Error('connect ECONNREFUSED 127.0.0.1:5432');
      err.name = 'SequelizeConnectionRefusedError';
      throw err;
    };
    try {
      const ready = await app.request('GET', '/ready');
      expect(ready.status).toBe(503);
      expect(ready.body.error.code).toBe('service_unavailable');
      const health = await app.request('GET', '/health');
      expect(health.status).toBe(200);
    } finally {
      db.select = original;
    }
  });

  it('should never put a stack trace in a 500 response', async () => {
    const original = app.server.services.customers.list;
    app.server.services.customers.list = async () => {
      throw new Error('boom at /secret/path.ts:12');
    };
    try {
      const res = await app.request('GET', '/v1/customers', { key: app.account.testKey });
      expect(res.status).toBe(500);
      expect(res.body.error.code).toBe('internal_error');
      expect(res.text).not.toContain('boom');
      expect(res.text).not.toContain('.ts');
      expect(app.logs.join('')).toContain(res.body.error.requestId);
    } finally {
      app.server.services.customers.list = original;
    }
  });

  it('should log one JSON line per request with request id, method, path, status and latency and never the key', async () => {
    const res = await app.request('GET', '/v1/customers', { key: app.account.testKey });
    const requestId = res.headers['x-request-id'] as string;
    const line = app.logs.map((l) => JSON.parse(l)).find((l) => l.requestId === requestId && l.msg === 'request');
    expect(line).toMatchObject({ method: 'GET', path: '/v1/customers', status: 200 });
    expect(typeof line.latencyMs).toBe('number');
    expect(app.logs.join('')).not.toContain(app.account.testKey);
  });
});

describe('behind a TLS-terminating proxy', () => {
  let proxied: TestApp;
  beforeAll(async () => {
    await app.stop();
    app = undefined as unknown as TestApp;
    proxied = await startTestApp({ env: { TRUST_PROXY: 'true', PUBLIC_URL: 'https://pay.example.com' } });
  });
  afterAll(() => proxied.stop());

  it('should redirect a request whose X-Forwarded-Proto is http', async () => {
    const res = await httpsRequest(proxied.baseUrl, proxied.server.cert, 'GET', '/v1/customers?page=1', {
      key: proxied.account.testKey,
      headers: { 'x-forwarded-proto': 'http', host: 'pay.example.com' },
    });
    expect(res.status).toBe(301);
    expect(res.headers.location).toBe('https://pay.example.com/v1/customers?page=1');
    expect(res.body.error.code).toBe('https_required');
  });

  it('should redirect to PUBLIC_URL whatever Host or X-Forwarded-Host the client wrote', async () => {
    const res = await httpsRequest(proxied.baseUrl, proxied.server.cert, 'GET', '/v1/customers', {
      key: proxied.account.testKey,
      headers: { 'x-forwarded-proto': 'http', host: 'evil.example', 'x-forwarded-host': 'evil.example' },
    });
    expect(res.status).toBe(301);
    expect(res.headers.location).toBe('https://pay.example.com/v1/customers');
  });

  it('should serve a request whose X-Forwarded-Proto is https', async () => {
    const res = await httpsRequest(proxied.baseUrl, proxied.server.cert, 'GET', '/v1/customers', {
      key: proxied.account.testKey,
      headers: { 'x-forwarded-proto': 'https' },
    });
    expect(res.status).toBe(200);
  });
});
