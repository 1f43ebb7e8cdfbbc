import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import type https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { generate } from 'selfsigned';
import { Webhook } from 'standardwebhooks';
import {
  createReceiver, signPayload as exampleSign, standardSignature, verifySignature as exampleVerify, verifyStandardWebhook, type ReceivedEventInfo,
} from '../../../examples/webhook-receiver';
import { closeDeliveryAgents, deliverWebhook } from '../../../src/modules/webhooks/http-delivery';
import { buildDeliveryHeaders, generateWebhookSecret, signPayload, unixSeconds } from '../../../src/modules/webhooks/signature';
import { httpsRequest } from '../../helpers/http';
import { waitFor as waitUntil } from '../../helpers/wait';

const EXAMPLE = path.resolve(__dirname, '../../../examples/webhook-receiver.js');
const SECRET = generateWebhookSecret();

function eventBody(id: string): string {
  return JSON.stringify({
    id,
    object: 'event',
    type: 'customer.created',
    createdAt: '2024-01-01T00:00:00.000Z',
    livemode: false,
    data: { object: { id: 'cus_1', object: 'customer', name: 'Zoë' } },
  });
}

let cert: string;
let key: string;

beforeAll(async () => {
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] }],
  } as never);
  cert = pems.cert;
  key = pems.private;
});

afterAll(() => closeDeliveryAgents());

describe('example verifySignature', () => {
  it('should agree with the service signer', () => {
    const body = eventBody('evt_1');
    expect(exampleSign(SECRET, body)).toBe(signPayload(SECRET, body));
    expect(exampleVerify(SECRET, Buffer.from(body), signPayload(SECRET, body))).toBe(true);
  });

  it('should reject a missing header or secret and a length mismatch', () => {
    const body = eventBody('evt_1');
    const signature = signPayload(SECRET, body);
    expect(exampleVerify(SECRET, body, undefined)).toBe(false);
    expect(exampleVerify(undefined, body, signature)).toBe(false);
    expect(exampleVerify('', body, signature)).toBe(false);
    expect(exampleVerify(SECRET, body, signature.slice(2))).toBe(false);
    expect(exampleVerify(SECRET, body, `é${signature.slice(1)}`)).toBe(false);
  });
});

describe('example verifyStandardWebhook', () => {
  const body = eventBody('evt_std');
  const now = unixSeconds();

  it('should agree with the standardwebhooks library on what the service signs', () => {
    const headers = buildDeliveryHeaders(SECRET, body, 'evt_std', 1, now);
    expect(verifyStandardWebhook(SECRET, body, headers, now)).toBeNull();
    expect(new Webhook(SECRET).verify(body, headers)).toEqual(JSON.parse(body));
    expect(standardSignature(SECRET, 'evt_std', now, body)).toBe(new Webhook(SECRET).sign('evt_std', new Date(now * 1000), body));
  });

  it('should read a secret made before Standard Webhooks (base64url) as the service signs with it', () => {
    let legacy: string;
    do legacy = `whsec_${randomBytes(32).toString('base64url')}`;
    while (!/[-_]/.test(legacy.slice(6)));
    expect(verifyStandardWebhook(legacy, body, buildDeliveryHeaders(legacy, body, 'evt_std', 1, now), now)).toBeNull();
  });

  it('should refuse a timestamp more than 5 minutes off either way, and missing or malformed headers', () => {
    expect(verifyStandardWebhook(SECRET, body, buildDeliveryHeaders(SECRET, body, 'evt_std', 1, now - 301), now)).toBe('timestamp_too_old');
    expect(verifyStandardWebhook(SECRET, body, buildDeliveryHeaders(SECRET, body, 'evt_std', 1, now + 301), now)).toBe('timestamp_too_new');
    expect(verifyStandardWebhook(SECRET, body, buildDeliveryHeaders(SECRET, body, 'evt_std', 1, now - 300), now)).toBeNull();
    const headers = buildDeliveryHeaders(SECRET, body, 'evt_std', 1, now);
    expect(verifyStandardWebhook(SECRET, body, { ...headers, 'webhook-id': undefined }, now)).toBe('missing_headers');
    expect(verifyStandardWebhook(SECRET, body, { ...headers, 'webhook-timestamp': '1.5e9' }, now)).toBe('invalid_timestamp');
    expect(verifyStandardWebhook(SECRET, body, { ...headers, 'webhook-id': 'evt_other' }, now)).toBe('invalid_signature');
    expect(verifyStandardWebhook([], body, headers, now)).toBe('no_secret');
  });
});

describe('createReceiver', () => {
  let server: https.Server;
  let base: string;
  let events: Array<{ event: { id: string; type: string }; info: ReceivedEventInfo }>;

  async function start(secret: string | string[] | undefined): Promise<void> {
    events = [];
    server = createReceiver({ secret, cert, key, onEvent: (event, info) => events.push({ event, info }) });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `https://localhost:${(server.address() as AddressInfo).port}`;
  }

  function post(body: string, headers: Record<string, string>) {
    return httpsRequest(base, cert, 'POST', '/webhooks', { rawBody: body, headers: { 'content-type': 'application/json', ...headers } });
  }

  // onEvent runs on setImmediate, after the response.
  const settle = () => new Promise((resolve) => setImmediate(resolve));

  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('should accept a correctly signed delivery and hand the event over', async () => {
    await start(SECRET);
    const body = eventBody('evt_ok');
    const res = await post(body, buildDeliveryHeaders(SECRET, body, 'evt_ok', 2));
    await settle();
    expect(res.status).toBe(200);
    expect(events).toEqual([{ event: JSON.parse(body), info: { eventId: 'evt_ok', attempt: 2, duplicate: false } }]);
  });

  it('should reject a tampered body with 401', async () => {
    await start(SECRET);
    const body = eventBody('evt_tampered');
    const headers = buildDeliveryHeaders(SECRET, body, 'evt_tampered', 1);
    const res = await post(body.replace('Zoë', 'Eve'), headers);
    await settle();
    expect(res.status).toBe(401);
    expect(events).toHaveLength(0);
  });

  it('should reject a body that differs only in whitespace', async () => {
    await start(SECRET);
    const body = eventBody('evt_ws');
    const res = await post(`${body} `, buildDeliveryHeaders(SECRET, body, 'evt_ws', 1));
    expect(res.status).toBe(401);
  });

  it('should reject a delivery without the Standard Webhooks headers with 400, X-Service-Signature or not', async () => {
    await start(SECRET);
    const body = eventBody('evt_nosig');
    const full = buildDeliveryHeaders(SECRET, body, 'evt_nosig', 1);
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const res = await post(body, Object.fromEntries(Object.entries(full).filter(([n]) => n !== name)));
      expect(res.status).toBe(400);
    }
    expect((await post(body, { 'x-service-signature': signPayload(SECRET, body), 'x-service-event-id': 'evt_nosig' })).status).toBe(400);
    await settle();
    expect(events).toHaveLength(0);
  });

  it('should reject a signature of the wrong length with 401', async () => {
    await start(SECRET);
    const body = eventBody('evt_short');
    const headers = buildDeliveryHeaders(SECRET, body, 'evt_short', 1);
    const res = await post(body, { ...headers, 'webhook-signature': headers['webhook-signature'].slice(0, 32) });
    expect(res.status).toBe(401);
  });

  it('should reject every delivery when no secret is configured', async () => {
    await start(undefined);
    const body = eventBody('evt_nosecret');
    const res = await post(body, buildDeliveryHeaders('whsec_', body, 'evt_nosecret', 1));
    await settle();
    expect(res.status).toBe(401);
    expect(events).toHaveLength(0);
  });

  it('should reject a signed body that is not JSON with 400', async () => {
    await start(SECRET);
    const res = await post('not json', buildDeliveryHeaders(SECRET, 'not json', 'evt_notjson', 1));
    expect(res.status).toBe(400);
  });

  it('should refuse a correctly signed delivery whose timestamp is more than 5 minutes old or ahead with 401', async () => {
    await start(SECRET);
    const body = eventBody('evt_stale');
    const now = unixSeconds();
    for (const timestamp of [now - 6 * 60, now + 6 * 60]) {
      const res = await post(body, buildDeliveryHeaders(SECRET, body, 'evt_stale', 1, timestamp));
      expect(res.status).toBe(401);
      expect(res.body.error).toMatch(/^timestamp_too_(old|new)$/);
    }
    await settle();
    expect(events).toHaveLength(0);
    // The same event signed now is taken: it was never processed.
    expect((await post(body, buildDeliveryHeaders(SECRET, body, 'evt_stale', 2, now))).status).toBe(200);
    await settle();
    expect(events.map((e) => e.info)).toEqual([{ eventId: 'evt_stale', attempt: 2, duplicate: false }]);
  });

  it('should answer anything but POST with 405', async () => {
    await start(SECRET);
    const res = await httpsRequest(base, cert, 'GET', '/webhooks');
    expect(res.status).toBe(405);
  });

  it('should acknowledge a redelivered event but mark it as a duplicate', async () => {
    await start(SECRET);
    const body = eventBody('evt_dup');
    await post(body, buildDeliveryHeaders(SECRET, body, 'evt_dup', 1));
    const again = await post(body, buildDeliveryHeaders(SECRET, body, 'evt_dup', 2));
    await settle();
    expect(again.status).toBe(200);
    expect(events.map((e) => e.info)).toEqual([
      { eventId: 'evt_dup', attempt: 1, duplicate: false },
      { eventId: 'evt_dup', attempt: 2, duplicate: true },
    ]);
  });

  it('should refuse a replay: the same webhook-id again is acknowledged but not processed, and a changed webhook-id fails the signature', async () => {
    await start(SECRET);
    const body = eventBody('evt_replayed');
    const original = buildDeliveryHeaders(SECRET, body, 'evt_replayed', 1);
    expect((await post(body, original)).status).toBe(200);
    // A captured delivery sent again as it was (within the 5 minutes) or re-signed by no one.
    const replayed = await post(body, original);
    const renamed = await post(body, { ...original, 'webhook-id': 'evt_other', 'X-Service-Event-Id': 'evt_other' });
    await settle();
    expect([replayed.status, renamed.status]).toEqual([200, 401]);
    expect(events.map((e) => e.info)).toEqual([
      { eventId: 'evt_replayed', attempt: 1, duplicate: false },
      { eventId: 'evt_replayed', attempt: 1, duplicate: true },
    ]);
  });

  it('should refuse a signed JSON body that carries no event id with 400', async () => {
    await start(SECRET);
    for (const body of ['{"type":"customer.created"}', '[]', 'null', '{"id":42}']) {
      const res = await post(body, buildDeliveryHeaders(SECRET, body, 'evt_noid', 1));
      expect(res.status).toBe(400);
    }
    await settle();
    expect(events).toHaveLength(0);
  });

  it('should accept the old and the new secret while rotating', async () => {
    const next = generateWebhookSecret();
    await start([SECRET, next]);
    const body = eventBody('evt_rotate');
    expect((await post(body, buildDeliveryHeaders(SECRET, body, 'evt_rotate', 1))).status).toBe(200);
    expect((await post(body, buildDeliveryHeaders(next, body, 'evt_rotate', 2))).status).toBe(200);
    expect((await post(body, buildDeliveryHeaders(generateWebhookSecret(), body, 'evt_rotate', 3))).status).toBe(401);
  });

  it('should accept a delivery during a rotation overlap with the old secret or with the new one', async () => {
    const next = generateWebhookSecret();
    const body = eventBody('evt_overlap');
    const overlap = buildDeliveryHeaders({ current: next, previous: SECRET }, body, 'evt_overlap', 1);
    await start(SECRET); // not yet updated: X-Service-Signature
    expect((await post(body, overlap)).status).toBe(200);
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await start(next); // already switched: X-Service-Signature-Next
    expect((await post(body, overlap)).status).toBe(200);
    // Neither header made with a secret it holds.
    expect((await post(body, buildDeliveryHeaders({ current: generateWebhookSecret(), previous: generateWebhookSecret() }, body, 'evt_overlap', 2))).status).toBe(401);
    // webhook-signature carries both: the old secret's first, then the new one's.
    expect(overlap['webhook-signature'].split(' ')).toHaveLength(2);
  });

  it('should be delivered to by deliverWebhook end to end', async () => {
    await start(SECRET);
    const body = eventBody('evt_e2e');
    const outcome = await deliverWebhook({ url: `${base}/webhooks`, body, headers: buildDeliveryHeaders(SECRET, body, 'evt_e2e', 1), livemode: false, allowPrivate: true, ca: cert });
    await settle();
    expect(outcome).toMatchObject({ delivered: true, statusCode: 200 });
    expect(events[0]?.info).toEqual({ eventId: 'evt_e2e', attempt: 1, duplicate: false });

    const forged = await deliverWebhook({ url: `${base}/webhooks`, body, headers: buildDeliveryHeaders('whsec_wrong', body, 'evt_e2e', 1), livemode: false, allowPrivate: true, ca: cert });
    expect(forged).toMatchObject({ delivered: false, statusCode: 401, error: 'HTTP 401' });
  });
});

describe('node examples/webhook-receiver.js', () => {
  let child: ChildProcess | undefined;
  let dir: string;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-receiver-'));
    fs.writeFileSync(path.join(dir, 'cert.pem'), cert);
    fs.writeFileSync(path.join(dir, 'key.pem'), key);
  });

  afterEach(() => {
    if (child && child.exitCode === null) child.kill('SIGTERM');
    child = undefined;
  });

  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  function run(env: Record<string, string>): { proc: ChildProcess; output: () => string; exited: Promise<number | null> } {
    let output = '';
    const proc = spawn(process.execPath, [EXAMPLE], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stdout?.on('data', (c: Buffer) => (output += c.toString()));
    proc.stderr?.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
    child = proc;
    return { proc, output: () => output, exited };
  }

  /** The first match of `pattern` in what the example printed, as soon as it prints it. */
  async function waitFor(read: () => string, pattern: RegExp): Promise<RegExpMatchArray> {
    return waitUntil(() => read().match(pattern), { timeoutMs: 5_000, what: `${pattern} in the output` }).catch((err: Error) => {
      throw new Error(`${err.message}; output: ${read()}`);
    });
  }

  it('should refuse to start without WEBHOOK_SECRET', async () => {
    const { output, exited } = run({ TLS_CERT_FILE: path.join(dir, 'cert.pem'), TLS_KEY_FILE: path.join(dir, 'key.pem') });
    expect(await exited).toBe(1);
    expect(output()).toContain('WEBHOOK_SECRET is required');
  });

  it('should refuse to start without a TLS certificate and key', async () => {
    const { output, exited } = run({ WEBHOOK_SECRET: SECRET });
    expect(await exited).toBe(1);
    expect(output()).toContain('TLS_CERT_FILE and TLS_KEY_FILE are required');
  });

  it('should serve HTTPS, verify a delivery and print the event', async () => {
    const { output } = run({
      WEBHOOK_SECRET: SECRET,
      PORT: '0',
      TLS_CERT_FILE: path.join(dir, 'cert.pem'),
      TLS_KEY_FILE: path.join(dir, 'key.pem'),
    });
    const [, port] = await waitFor(output, /listening on https:\/\/localhost:(\d+)\//);
    const body = eventBody('evt_cli');
    const outcome = await deliverWebhook({ url: `https://localhost:${port}/`, body, headers: buildDeliveryHeaders(SECRET, body, 'evt_cli', 1), livemode: false, allowPrivate: true, ca: cert });
    expect(outcome).toMatchObject({ delivered: true, statusCode: 200 });
    await waitFor(output, /received customer\.created evt_cli \(attempt 1, livemode false\)/);

    const tampered = await deliverWebhook({ url: `https://localhost:${port}/`, body: body.replace('Zoë', 'Eve'), headers: buildDeliveryHeaders(SECRET, body, 'evt_cli', 2), livemode: false, allowPrivate: true, ca: cert });
    expect(tampered).toMatchObject({ delivered: false, statusCode: 401 });
    closeDeliveryAgents();
  });
});
