import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { LookupAddress, LookupOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import tls from 'node:tls';
import { generate } from 'selfsigned';
import {
  DEFAULT_DELIVERY_TIMEOUT_MS,
  MAX_RESPONSE_BYTES,
  WEBHOOK_USER_AGENT,
  closeDeliveryAgents,
  deliverWebhook,
  parseRetryAfter,
  trustedCas,
} from '../../../src/modules/webhooks/http-delivery';
import { buildDeliveryHeaders, verifySignature } from '../../../src/modules/webhooks/signature';
import { checkWebhookUrl } from '../../../src/core/network/address-policy';

interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

const SECRET = 'whsec_delivery_test';
const RECEIVER_BODY = 'RECEIVER-PRIVATE-BODY';
const EVENT = JSON.stringify({ id: 'evt_1', object: 'event', type: 'customer.created', createdAt: '2024-01-01T00:00:00.000Z', livemode: false, data: { object: { id: 'cus_1', name: 'Zoë' } } });

let cert: string;
let server: https.Server;
let base: string;
let port: number;
let received: ReceivedRequest[] = [];
let connections = 0;
const held: Array<() => void> = [];

function lookupReturning(...answers: string[]): LookupFunction & { calls: number } {
  const fn = ((_host: string, opts: LookupOptions, cb: (err: null, address: string | LookupAddress[], family?: number) => void) => {
    const address = answers[Math.min(fn.calls, answers.length - 1)];
    fn.calls += 1;
    if (opts.all) cb(null, [{ address, family: 4 }]);
    else cb(null, address, 4);
  }) as unknown as LookupFunction & { calls: number };
  fn.calls = 0;
  return fn;
}

function deliver(path: string, extra: Partial<Parameters<typeof deliverWebhook>[0]> = {}) {
  return deliverWebhook({
    url: `${base}${path}`,
    body: EVENT,
    headers: buildDeliveryHeaders(SECRET, EVENT, 'evt_1', 1),
    livemode: false,
    allowPrivate: true,
    ca: cert,
    ...extra,
  });
}

beforeAll(async () => {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] }],
  } as never);
  cert = pems.cert;
  server = https.createServer({ cert: pems.cert, key: pems.private }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({ method: req.method ?? '', path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      switch (path) {
        case '/ok':
          res.writeHead(200, { 'content-type': 'text/plain', 'retry-after': '30' }).end('ok');
          return;
        case '/ok-slowly':
          setTimeout(() => res.writeHead(200).end('ok'), 150);
          return;
        case '/accepted':
          res.writeHead(204).end();
          return;
        case '/fail':
          res.writeHead(500, { 'content-type': 'text/plain' }).end(RECEIVER_BODY);
          return;
        case '/gone':
          res.writeHead(410).end(RECEIVER_BODY);
          return;
        case '/redirect':
          res.writeHead(302, { location: `${base}/ok` }).end();
          return;
        case '/retry-seconds':
          res.writeHead(503, { 'retry-after': '120' }).end();
          return;
        case '/retry-date':
          res.writeHead(429, { 'retry-after': new Date(Date.now() + 90_000).toUTCString() }).end();
          return;
        case '/big':
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.end(Buffer.alloc(4 * MAX_RESPONSE_BYTES, 'x'));
          return;
        case '/endless': {
          // Streams until the client hangs up: only a client that stops reading can finish.
          res.writeHead(503, { 'content-type': 'text/plain' });
          const chunk = Buffer.alloc(16 * 1024, 'y');
          const pump = (): void => {
            while (!res.destroyed && res.write(chunk));
            if (!res.destroyed) res.once('drain', pump);
          };
          res.on('close', () => res.removeAllListeners('drain'));
          pump();
          return;
        }
        case '/slow-body':
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.write('partial');
          held.push(() => res.end());
          return;
        case '/slow':
          held.push(() => res.writeHead(200).end());
          return;
        default:
          res.writeHead(404).end();
      }
    });
  });
  server.on('secureConnection', () => {
    connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  base = `https://localhost:${port}`;
});

beforeEach(() => {
  received = [];
});

afterAll(async () => {
  closeDeliveryAgents();
  for (const release of held) release();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('deliverWebhook against a local HTTPS receiver', () => {
  it('should POST the exact body with the JSON content type, user agent and signed headers', async () => {
    await deliver('/ok');
    expect(received).toHaveLength(1);
    const [req] = received;
    expect(req.method).toBe('POST');
    expect(req.body).toBe(EVENT);
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['user-agent']).toBe(WEBHOOK_USER_AGENT);
    expect(req.headers['content-length']).toBe(String(Buffer.byteLength(EVENT)));
    expect(req.headers['x-service-event-id']).toBe('evt_1');
    expect(req.headers['x-service-delivery-attempt']).toBe('1');
    expect(verifySignature(SECRET, req.body, req.headers['x-service-signature'] as string)).toBe(true);
  });

  it('should keep the JSON content type and user agent even when the caller sends others', async () => {
    await deliver('/ok', { headers: { 'Content-Type': 'text/plain', 'User-Agent': 'spoof', 'X-Extra': 'yes' } });
    expect(received[0].headers['content-type']).toBe('application/json');
    expect(received[0].headers['user-agent']).toBe(WEBHOOK_USER_AGENT);
    expect(received[0].headers['x-extra']).toBe('yes');
  });

  it('should count a 200 as delivered', async () => {
    const outcome = await deliver('/ok');
    expect(outcome).toEqual({ delivered: true, statusCode: 200, latencyMs: expect.any(Number), error: null, retryAfterMs: null, gone: false });
  });

  it('should report as latency the time the receiver took to answer', async () => {
    const started = performance.now();
    const outcome = await deliver('/ok-slowly');
    const elapsed = performance.now() - started;
    expect(outcome).toMatchObject({ delivered: true, statusCode: 200 });
    expect(outcome.latencyMs).toBeGreaterThanOrEqual(140);
    expect(outcome.latencyMs).toBeLessThanOrEqual(Math.ceil(elapsed));
  });

  it('should count any 2xx, such as 204, as delivered', async () => {
    await expect(deliver('/accepted')).resolves.toMatchObject({ delivered: true, statusCode: 204 });
  });

  it('should count a 500 as not delivered without quoting the receiver body', async () => {
    const outcome = await deliver('/fail');
    expect(outcome).toMatchObject({ delivered: false, statusCode: 500, error: 'HTTP 500', gone: false, retryAfterMs: null });
    expect(JSON.stringify(outcome)).not.toContain(RECEIVER_BODY);
  });

  it('should report 410 as gone', async () => {
    const outcome = await deliver('/gone');
    expect(outcome).toMatchObject({ delivered: false, statusCode: 410, gone: true });
    expect(JSON.stringify(outcome)).not.toContain(RECEIVER_BODY);
  });

  it('should not follow a redirect and count it as a failure', async () => {
    const outcome = await deliver('/redirect');
    expect(outcome).toMatchObject({ delivered: false, statusCode: 302, error: 'redirect not followed', gone: false });
    expect(received.map((r) => r.path)).toEqual(['/redirect']);
  });

  it('should parse Retry-After given in seconds', async () => {
    await expect(deliver('/retry-seconds')).resolves.toMatchObject({ delivered: false, statusCode: 503, retryAfterMs: 120_000 });
  });

  it('should parse Retry-After given as an HTTP date', async () => {
    const outcome = await deliver('/retry-date');
    expect(outcome).toMatchObject({ delivered: false, statusCode: 429 });
    // The date has one-second resolution and some time passes in between.
    expect(outcome.retryAfterMs).toBeGreaterThan(85_000);
    expect(outcome.retryAfterMs).toBeLessThanOrEqual(90_000);
  });

  it('should time out on a receiver that never answers', async () => {
    const outcome = await deliver('/slow', { timeoutMs: 250 });
    expect(outcome).toEqual({ delivered: false, statusCode: null, latencyMs: expect.any(Number), error: 'timeout', retryAfterMs: null, gone: false });
    expect(outcome.latencyMs).toBeGreaterThanOrEqual(200);
    expect(outcome.latencyMs).toBeLessThan(2_000);
  });

  it('should let the status decide when the body stalls after a 2xx', async () => {
    const started = Date.now();
    const outcome = await deliver('/slow-body', { timeoutMs: 250 });
    expect(outcome).toMatchObject({ delivered: true, statusCode: 200, error: null });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('should stop reading a large response after 64 KiB', async () => {
    const outcome = await deliver('/big');
    expect(outcome).toMatchObject({ delivered: true, statusCode: 200 });
  });

  it('should stop reading after 64 KiB of a response that never ends', async () => {
    const started = Date.now();
    const outcome = await deliver('/endless', { timeoutMs: 5_000 });
    expect(outcome).toMatchObject({ delivered: false, statusCode: 503, error: 'HTTP 503' });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('should reuse a keep-alive connection for consecutive deliveries', async () => {
    closeDeliveryAgents();
    const before = connections;
    for (let i = 0; i < 5; i += 1) await expect(deliver('/ok')).resolves.toMatchObject({ delivered: true });
    expect(connections - before).toBe(1);
  });

  it('should fail TLS verification when the receiver certificate is not trusted', async () => {
    const outcome = await deliver('/ok', { ca: undefined });
    expect(outcome.delivered).toBe(false);
    expect(outcome.statusCode).toBeNull();
    expect(outcome.error).toMatch(/^TLS error: /);
    expect(received).toHaveLength(0);
  });

  it('should report a refused connection', async () => {
    const closed = https.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const outcome = await deliverWebhook({ url: `https://127.0.0.1:${closedPort}/`, body: EVENT, headers: {}, livemode: false, allowPrivate: true, ca: cert });
    expect(outcome).toMatchObject({ delivered: false, statusCode: null, error: 'connection refused' });
  });

  it('should refuse a non-https URL without connecting', async () => {
    const outcome = await deliver('/ok', { url: `http://localhost:${port}/ok` });
    expect(outcome).toMatchObject({ delivered: false, statusCode: null });
    expect(outcome.error).toContain('https');
    expect(received).toHaveLength(0);
  });

  it('should keep every error message at 200 characters or fewer', async () => {
    const outcomes = await Promise.all([
      deliver('/slow', { timeoutMs: 50 }),
      deliver('/ok', { ca: undefined }),
      deliver('/ok', { url: `https://${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.example:${port}/`, allowPrivate: false, lookup: lookupReturning('10.0.0.1') }),
      deliver('/ok', { headers: { 'x-bad': 'line\r\nbreak' } }),
    ]);
    for (const outcome of outcomes) {
      expect(outcome.delivered).toBe(false);
      expect(outcome.error).not.toBeNull();
      expect((outcome.error as string).length).toBeLessThanOrEqual(200);
    }
  });
});

describe('deliverWebhook address policy', () => {
  it('should refuse a loopback IP literal before connecting when private addresses are not allowed', async () => {
    for (const url of [`https://127.0.0.1:${port}/ok`, `https://2130706433:${port}/ok`, `https://[::ffff:127.0.0.1]:${port}/ok`]) {
      const outcome = await deliver('/ok', { url, allowPrivate: false });
      expect(outcome).toMatchObject({ delivered: false, statusCode: null });
      expect(outcome.error).toContain('not allowed');
    }
    expect(received).toHaveLength(0);
  });

  it('should refuse private destinations in live mode even when private addresses are allowed', async () => {
    const lookup = lookupReturning('127.0.0.1');
    for (const url of [`https://localhost:8443/ok`, `https://127.0.0.1:443/ok`]) {
      const outcome = await deliver('/ok', { url, livemode: true, allowPrivate: true });
      expect(outcome).toMatchObject({ delivered: false, statusCode: null });
      expect(outcome.error).toContain('loopback');
    }
    // A name resolving to loopback is refused at connect time in live mode too.
    const byName = await deliver('/ok', { url: 'https://hooks.example:8443/ok', livemode: true, allowPrivate: true, lookup });
    expect(byName.error).toContain('destination address not allowed');
    expect(received).toHaveLength(0);
  });

  it('should refuse ports other than 443 and 8443 in live mode, and allow them in test mode', async () => {
    const live = await deliver('/ok', { livemode: true, allowPrivate: true });
    expect(live).toMatchObject({ delivered: false, statusCode: null, error: 'destination not allowed: URL port must be 443 or 8443 in live mode' });
    expect(received).toHaveLength(0);
    const test = await deliver('/ok', { livemode: false, allowPrivate: true });
    expect(test).toMatchObject({ delivered: true, statusCode: 200 });
  });

  it('should refuse localhost when private addresses are not allowed', async () => {
    const outcome = await deliver('/ok', { allowPrivate: false });
    expect(outcome.error).toContain('loopback');
    expect(received).toHaveLength(0);
  });

  it('should refuse a name that resolves to loopback at connect time (DNS rebinding)', async () => {
    // Public when the URL was registered, loopback when the delivery connects.
    const rebinding = lookupReturning('93.184.216.34', '127.0.0.1');
    const resolve = (host: string) =>
      new Promise<string[]>((ok) => rebinding(host, { all: true }, (_e, a) => ok((a as LookupAddress[]).map((x) => x.address))));
    await expect(checkWebhookUrl(`https://rebind.example:${port}/ok`, { livemode: false, allowPrivate: false, resolve })).resolves.toEqual({ ok: true });

    const outcome = await deliver('/ok', { url: `https://rebind.example:${port}/ok`, allowPrivate: false, lookup: rebinding });
    expect(rebinding.calls).toBe(2);
    expect(outcome).toMatchObject({ delivered: false, statusCode: null });
    expect(outcome.error).toContain('destination address not allowed');
    expect(outcome.error).toContain('loopback');
    expect(received).toHaveLength(0);
  });

  it('should connect through the injected lookup when private addresses are allowed', async () => {
    const lookup = lookupReturning('127.0.0.1');
    const outcome = await deliver('/ok', { allowPrivate: true, lookup });
    expect(outcome).toMatchObject({ delivered: true, statusCode: 200 });
    expect(lookup.calls).toBeGreaterThanOrEqual(1);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2024-05-01T12:00:00Z');

  it('should read delay-seconds', () => {
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter(' 5 ', now)).toBe(5_000);
  });

  it('should read an HTTP date relative to now', () => {
    expect(parseRetryAfter('Wed, 01 May 2024 12:01:30 GMT', now)).toBe(90_000);
  });

  it('should clamp a date in the past to zero', () => {
    expect(parseRetryAfter('Wed, 01 May 2024 11:00:00 GMT', now)).toBe(0);
  });

  it('should ignore absent or malformed values', () => {
    for (const value of [undefined, '', '-5', '1.5', 'soon', '12abc', '9'.repeat(40)]) {
      expect(parseRetryAfter(value, now)).toBeNull();
    }
  });

  it('should take the first of repeated values', () => {
    expect(parseRetryAfter(['10', '20'], now)).toBe(10_000);
  });
});

describe('trustedCas', () => {
  it('should add the configured CA to Node roots instead of replacing them', () => {
    const cas = trustedCas('PEM');
    expect(cas).toHaveLength(tls.rootCertificates.length + 1);
    expect(cas.slice(0, -1)).toEqual([...tls.rootCertificates]);
    expect(cas.at(-1)).toBe('PEM');
  });

  it('should default the timeout to ten seconds', () => {
    expect(DEFAULT_DELIVERY_TIMEOUT_MS).toBe(10_000);
  });
});
