import https from 'node:https';
import { createHash } from 'node:crypto';
import { DomainError } from '../../src/core/errors';
import { homePage } from '../../rest/pages/home.page';
import { startTestApp, type TestApp } from '../helpers/app';
import type { HttpResponse } from '../helpers/http';

let app: TestApp;

function expectPageHeaders(res: HttpResponse): void {
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  expect(res.headers['referrer-policy']).toBe('no-referrer');
  const csp = String(res.headers['content-security-policy']);
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).not.toContain('unsafe-inline');
}

/** The page's request id shown on it is the X-Request-Id header's. */
function shownRequestId(res: HttpResponse): string | undefined {
  return /Request id <code>([^<]+)<\/code>/.exec(res.text)?.[1];
}

/** A GET whose path goes on the wire as written (the URL class would percent-encode it). */
function rawGet(path: string): Promise<HttpResponse> {
  const url = new URL(app.baseUrl);
  return new Promise((resolve, reject) => {
    https
      .get({ host: url.hostname, port: url.port, path, ca: app.server.cert, servername: 'localhost', agent: false }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text, buffer: Buffer.from(text), body: null }));
      })
      .on('error', reject);
  });
}

describe('pages', () => {
  beforeAll(async () => {
    app = await startTestApp({ env: { PUBLIC_URL: 'https://pay.example.com/<b>' } });
  });
  afterAll(() => app.stop());
  afterEach(() => jest.restoreAllMocks());

  it('should render the root page as HTML with the page headers and no API key', async () => {
    const res = await app.request('GET', '/');
    expect(res.status).toBe(200);
    expectPageHeaders(res);
    expect(res.headers['x-request-id']).toMatch(/^req_/);
    expect(res.text).toContain('Payorch is running');
    expect(res.text).toContain('<a href="/health">');
    // The configured address is text on the page, not markup.
    expect(res.text).toContain('https://pay.example.com/&lt;b&gt;/v1');
    expect(res.text).not.toContain('/<b>');
  });

  it('should allow exactly the inline style the pages carry', async () => {
    const res = await app.request('GET', '/');
    const style = /<style>([\s\S]*?)<\/style>/.exec(res.text)![1];
    const hash = createHash('sha256').update(style).digest('base64');
    expect(res.headers['content-security-policy']).toContain(`style-src 'sha256-${hash}'`);
  });

  it('should answer an unknown page with a 404 HTML page showing the request id', async () => {
    const res = await app.request('GET', '/no-such-page', { headers: { accept: 'application/json' } });
    expect(res.status).toBe(404);
    expectPageHeaders(res);
    expect(res.text).toContain('Page not found');
    expect(res.text).toContain('<code>route_not_found</code>');
    expect(shownRequestId(res)).toBe(res.headers['x-request-id']);
  });

  it('should escape what the caller wrote into the error page', async () => {
    const res = await rawGet('/<script>alert(1)</script>');
    expect(res.status).toBe(404);
    expect(res.text).not.toContain('<script>');
    expect(res.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });

  it('should answer a wrong method on a page with a 405 HTML page and Allow', async () => {
    const res = await app.request('POST', '/', { body: {} });
    expect(res.status).toBe(405);
    expectPageHeaders(res);
    expect(res.headers.allow).toBe('GET');
    expect(res.text).toContain('<code>method_not_allowed</code>');
  });

  it('should keep the API namespace in JSON, unknown routes included', async () => {
    for (const path of ['/v1/nothing-here', '/api/v1/nothing-here', '/graphql/extra', '/v2/customers']) {
      const res = await app.request('GET', path, { key: app.account.testKey, headers: { accept: 'text/html' } });
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers['content-security-policy']).toBeUndefined();
      expect(res.body).toEqual({
        data: null,
        error: { code: 'route_not_found', message: expect.any(String), requestId: res.headers['x-request-id'] },
      });
    }
  });

  it("should render a DomainError thrown by a page with the error's status", async () => {
    jest.spyOn(homePage, 'render').mockImplementation(() => {
      throw new DomainError('service_unavailable', 'The database is unavailable; try again shortly');
    });
    const res = await app.request('GET', '/');
    expect(res.status).toBe(503);
    expectPageHeaders(res);
    expect(res.text).toContain('<code>service_unavailable</code>');
    expect(res.text).toContain('The database is unavailable; try again shortly');
    expect(shownRequestId(res)).toBe(res.headers['x-request-id']);
  });

  it('should render an internal error in a page as a 500 HTML page without its internals', async () => {
    jest.spyOn(homePage, 'render').mockImplementation(async () => {
      throw new Error('boom at /secret/path.ts:12 password=hunter2');
    });
    const res = await app.request('GET', '/');
    expect(res.status).toBe(500);
    expectPageHeaders(res);
    expect(res.text).toContain('<code>internal_error</code>');
    expect(res.text).not.toMatch(/boom|hunter2|\.ts/);
    const requestId = res.headers['x-request-id'] as string;
    expect(shownRequestId(res)).toBe(requestId);
    // The cause is in the log line of that request, for support.
    expect(app.logs.find((l) => l.includes(requestId) && l.includes('request failed'))).toContain('boom');
  });
});

describe('pages under the per-IP rate limit', () => {
  beforeAll(async () => {
    app = await startTestApp({ rateLimitPerMinute: 2 });
  });
  afterAll(() => app.stop());

  it('should answer 429 as an HTML page with Retry-After once the client IP is over its limit', async () => {
    expect((await app.request('GET', '/')).status).toBe(200);
    expect((await app.request('GET', '/')).status).toBe(200);
    const res = await app.request('GET', '/');
    expect(res.status).toBe(429);
    expectPageHeaders(res);
    expect(res.headers['retry-after']).toMatch(/^\d+$/);
    expect(res.text).toContain('<code>rate_limited</code>');
  });
});
