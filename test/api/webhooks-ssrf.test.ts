import type { LookupAddress, LookupOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { startTestApp, type TestApp } from '../helpers/app';
import { ReceiverHarness, makeCertificate, waitFor } from '../unit/webhooks/receiver-harness';

// Names the registration check resolves (no real DNS in tests).
const DNS: Record<string, string[]> = {
  'public.example': ['93.184.216.34'],
  'rebind.example': ['93.184.216.34'],
  'internal.example': ['10.1.2.3'],
  'metadata.example': ['169.254.169.254'],
  'mixed.example': ['93.184.216.34', '192.168.0.10'],
  'v6loop.example': ['::1'],
};
const resolveHost = async (host: string): Promise<string[]> => {
  const found = DNS[host];
  if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return found;
};
// At connect time rebind.example points at the loopback receiver (DNS rebinding).
const lookup = ((host: string, opts: LookupOptions, cb: (err: Error | null, address: string | LookupAddress[], family?: number) => void) => {
  const address = host === 'rebind.example' ? '127.0.0.1' : (DNS[host]?.[0] ?? '127.0.0.1');
  if (opts.all) cb(null, [{ address, family: 4 }]);
  else cb(null, address, 4);
}) as unknown as LookupFunction;

let app: TestApp;
let rx: ReceiverHarness;

beforeAll(async () => {
  const tls = await makeCertificate();
  rx = new ReceiverHarness(tls);
  await rx.start();
  app = await startTestApp({
    env: { WEBHOOK_ALLOW_PRIVATE: 'false', WEBHOOK_CA_FILE: tls.caFile },
    runWorkers: true,
    serviceOptions: { webhooks: { retry: { baseMs: 50, maxMs: 200 }, pollMs: 50, resolveHost, lookup } },
  });
});

afterAll(async () => {
  await app?.stop();
  await rx?.stop();
});

const register = (key: string, url: string) => app.request('POST', '/v1/webhook-endpoints', { key, body: { url, events: ['*'] } });

describe('webhook URL policy with WEBHOOK_ALLOW_PRIVATE off', () => {
  it.each([
    ['loopback', 'https://127.0.0.1/hook'],
    ['loopback name', 'https://localhost:8443/hook'],
    ['unspecified', 'https://0.0.0.0/hook'],
    ['private 10/8', 'https://10.0.0.1/hook'],
    ['private 172.16/12', 'https://172.16.5.4/hook'],
    ['private 192.168/16', 'https://192.168.1.10/hook'],
    ['link-local (cloud metadata)', 'https://169.254.169.254/latest/meta-data'],
    ['carrier-grade NAT', 'https://100.64.0.1/hook'],
    ['IPv6 loopback', 'https://[::1]/hook'],
    ['IPv4-mapped IPv6 loopback', 'https://[::ffff:127.0.0.1]/hook'],
    ['IPv4-mapped IPv6 private', 'https://[::ffff:a00:1]/hook'],
    ['IPv6 link-local', 'https://[fe80::1]/hook'],
    ['IPv6 unique local', 'https://[fd00::1]/hook'],
    ['decimal IPv4', 'https://2130706433/'],
    ['hex IPv4', 'https://0x7f000001/'],
    ['a name resolving to a private address', 'https://internal.example/hook'],
    ['a name resolving to the metadata address', 'https://metadata.example/hook'],
    ['a name with one private address among public ones', 'https://mixed.example/hook'],
    ['a name resolving to IPv6 loopback', 'https://v6loop.example/hook'],
    ['a name that does not resolve', 'https://nowhere.example/hook'],
    ['a port other than 443 and 8443', 'https://public.example:8080/hook'],
  ])('should refuse %s at registration in live mode', async (_label, url) => {
    const res = await register(app.account.liveKey, url);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_parameter', param: 'url' });
  });

  it('should accept a name that resolves to public addresses only', async () => {
    const res = await register(app.account.liveKey, 'https://public.example/hook');
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ livemode: true, url: 'https://public.example/hook' });
  });

  it('should apply the same rule in test mode and to PATCH', async () => {
    const refused = await register(app.account.testKey, 'https://127.0.0.1/hook');
    expect(refused.body.error).toMatchObject({ code: 'invalid_parameter', param: 'url' });
    const ok = await register(app.account.testKey, 'https://public.example/ok');
    expect(ok.status).toBe(201);
    const patched = await app.request('PATCH', `/v1/webhook-endpoints/${ok.body.data.id}`, { key: app.account.testKey, body: { url: 'https://[::1]/' } });
    expect(patched.body.error).toMatchObject({ code: 'invalid_parameter', param: 'url' });
  });

  it('should refuse at connect time a delivery whose host now resolves to a forbidden address', async () => {
    // Test mode, where the receiver's own port is allowed; the private-address rule is the same.
    const { testKey: key } = await app.createAccount();
    const route = rx.route('rebind');
    const created = await register(key, `https://rebind.example:${rx.port}/hooks/rebind`);
    expect(created.status).toBe(201);
    await app.request('POST', '/v1/customers', { key, body: { email: 'rebind@example.com' } });
    const log = await waitFor(async () => {
      const res = await app.request('GET', `/v1/webhook-endpoints/${created.body.data.id}/deliveries`, { key });
      return res.body.data.length > 0 ? res.body.data : null;
    }, 10_000, 'a refused attempt');
    // Newest first, and a retry may already have followed: the first attempt, and every one since, was refused.
    const first = log.find((a: { attempt: number }) => a.attempt === 1);
    expect(first).toMatchObject({ attempt: 1, status: 'failed', statusCode: null });
    expect(first.nextRetryAt).not.toBeNull();
    for (const attempt of log) {
      expect(attempt).toMatchObject({ status: 'failed', statusCode: null });
      expect(attempt.error).toContain('destination address not allowed');
      expect(attempt.error).toContain('loopback');
    }
    expect(route.requests).toHaveLength(0);
  });
});
