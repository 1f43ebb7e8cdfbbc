import http from 'node:http';
import { startTestApp, type TestApp } from '../helpers/app';

let app: TestApp;
let httpsPort: string;
beforeAll(async () => {
  app = await startTestApp({ rateLimitPerMinute: 3 });
  httpsPort = new URL(app.baseUrl).port;
});
afterAll(() => app.stop());

interface PlainResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

/** A plain-HTTP request to the redirect listener, with whatever Host header the client writes. */
function plain(method: string, path: string, host?: string): Promise<PlainResponse> {
  const { port } = new URL(app.httpUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: Number(port), method, path, agent: false, headers: host === undefined ? {} : { host } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the plain-HTTP redirect', () => {
  it('should answer an API path 301 with the JSON envelope', async () => {
    const res = await plain('GET', '/v1/customers?page=2');
    expect(res.status).toBe(301);
    expect(res.headers.location).toBe(`https://127.0.0.1:${httpsPort}/v1/customers?page=2`);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(res.text)).toEqual({
      data: null,
      error: { code: 'https_required', message: expect.any(String), requestId: res.headers['x-request-id'] },
    });
  });

  it.each(['/', '/pay/plink_123?ref=mail', '/no-such-page'])('should answer the page path %s 301 with an HTML page', async (path) => {
    const res = await plain('GET', path, `localhost:${new URL(app.httpUrl).port}`);
    expect(res.status).toBe(301);
    const location = `https://localhost:${httpsPort}${path}`;
    expect(res.headers.location).toBe(location);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.text).toMatch(/^<!doctype html>/);
    expect(res.text).toContain(`<a href="${location.replace(/&/g, '&amp;')}">`);
    expect(res.text).toContain('<code>https_required</code>');
    expect(res.text).toContain(`<code>${res.headers['x-request-id']}</code>`);
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['strict-transport-security']).toBeUndefined();
  });

  it('should escape the path it quotes in the HTML page', async () => {
    const res = await plain('GET', '/"><script>x</script>');
    expect(res.status).toBe(301);
    expect(res.text).not.toContain('<script>');
    expect(res.text).toContain('&quot;&gt;&lt;script&gt;');
  });

  it.each([
    ['evil.example', '127.0.0.1'],
    ['evil.example:8080', '127.0.0.1'],
    ['127.0.0.1.evil.example', '127.0.0.1'],
    ['[2001:db8::1]:8080', '127.0.0.1'],
    ['203.0.113.9', '127.0.0.1'],
    ['localhost@evil.example', '127.0.0.1'],
    ['', '127.0.0.1'],
  ])('should not redirect to a forged Host %j but to the address the connection reached', async (host, expected) => {
    for (const path of ['/v1/customers', '/']) {
      const res = await plain('GET', path, host);
      expect(res.status).toBe(301);
      expect(res.headers.location).toBe(`https://${expected}:${httpsPort}${path}`);
    }
  });

  it.each([
    ['localhost', 'localhost'],
    ['LOCALHOST:8080', 'localhost'],
    ['127.0.0.1:8080', '127.0.0.1'],
    ['[::1]:8080', '[::1]'], // a name the certificate is valid for
  ])('should keep the Host %j when it names this server', async (host, expected) => {
    const res = await plain('GET', '/v1/customers', host);
    expect(res.headers.location).toBe(`https://${expected}:${httpsPort}/v1/customers`);
  });
});

describe('answers outside the rate limit', () => {
  it('should not count /health, /ready or the redirect, nor send RateLimit headers on them', async () => {
    for (let i = 0; i < 5; i++) {
      for (const res of [await app.request('GET', '/health'), await app.request('GET', '/ready'), await plain('GET', '/v1/customers')]) {
        expect(res.status).toBeLessThan(400);
        expect(Object.keys(res.headers).filter((h) => h.startsWith('ratelimit'))).toEqual([]);
      }
    }
    // Refused before any key is read: not counted either.
    for (const [method, path, status] of [['GET', '/api/v2/customers', 404], ['GET', '/graphql/x', 404], ['GET', '/graphql', 405], ['GET', '/v1/customers%00', 400]] as const) {
      const res = await app.request(method, path);
      expect([path, res.status]).toEqual([path, status]);
      expect(Object.keys(res.headers).filter((h) => h.startsWith('ratelimit'))).toEqual([]);
    }
    // The client address's budget (3 a minute) is whole: the first counted request is its first.
    const page = await app.request('GET', '/');
    expect(page.status).toBe(200);
    expect(page.headers['ratelimit-limit']).toBe('3');
    expect(page.headers['ratelimit-remaining']).toBe('2');
    const refused = await app.request('GET', '/v1/customers');
    expect(refused.status).toBe(401);
    expect(refused.headers['ratelimit-remaining']).toBe('1');
  });
});
