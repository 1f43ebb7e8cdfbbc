import crypto from 'node:crypto';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import {
  WEBHOOK_HEADERS,
  buildDeliveryHeaders,
  generateWebhookSecret,
  signStandard,
  standardSigningKey,
  unixSeconds,
} from '../../../src/modules/webhooks/signature';

/*
 * The Standard Webhooks headers checked with the maintainers' own JavaScript library
 * (standardwebhooks), not with code of this project.
 */

const BODY = '{"id":"evt_1","object":"event","type":"customer.created","data":{"object":{"name":"Zoë"}}}';

/** What a receiver holding `secret` builds: the library as documented, or its raw-key form for a secret it refuses (docs/webhooks.md). */
function libraryFor(secret: string): Webhook {
  try {
    return new Webhook(secret);
  } catch {
    return new Webhook(secret.slice('whsec_'.length), { format: 'raw' });
  }
}

describe('generateWebhookSecret', () => {
  it('should be whsec_ and 32 random bytes in standard base64, which the library takes as is', () => {
    const secret = generateWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(standardSigningKey(secret)).toEqual(Buffer.from(secret.slice(6), 'base64'));
    expect(() => new Webhook(secret)).not.toThrow();
  });
});

describe('buildDeliveryHeaders: Standard Webhooks', () => {
  it('should carry webhook-id, webhook-timestamp and a v1 signature the library verifies', () => {
    const secret = generateWebhookSecret();
    const now = unixSeconds();
    const headers = buildDeliveryHeaders(secret, BODY, 'evt_1', 2, now);
    expect(headers[WEBHOOK_HEADERS.webhookId]).toBe('evt_1');
    expect(headers[WEBHOOK_HEADERS.webhookTimestamp]).toBe(String(now));
    expect(headers[WEBHOOK_HEADERS.webhookSignature]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secret).verify(BODY, headers)).toEqual(JSON.parse(BODY));
    // The existing headers are unchanged.
    expect(headers[WEBHOOK_HEADERS.eventId]).toBe('evt_1');
    expect(headers[WEBHOOK_HEADERS.attempt]).toBe('2');
  });

  it('should match the library\'s own signature byte for byte', () => {
    const secret = generateWebhookSecret();
    const at = new Date('2026-11-01T10:00:00.000Z');
    expect(buildDeliveryHeaders(secret, BODY, 'evt_x', 1, unixSeconds(at))[WEBHOOK_HEADERS.webhookSignature]).toBe(new Webhook(secret).sign('evt_x', at, BODY));
  });

  it('should be refused by the library for a tampered body, another secret, another webhook-id or another timestamp', () => {
    const secret = generateWebhookSecret();
    const headers = buildDeliveryHeaders(secret, BODY, 'evt_1', 1);
    const lib = new Webhook(secret);
    expect(() => lib.verify(BODY.replace('Zoë', 'Eve'), headers)).toThrow(WebhookVerificationError);
    expect(() => new Webhook(generateWebhookSecret()).verify(BODY, headers)).toThrow(WebhookVerificationError);
    expect(() => lib.verify(BODY, { ...headers, 'webhook-id': 'evt_2' })).toThrow('No matching signature found');
    expect(() => lib.verify(BODY, { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) })).toThrow('No matching signature found');
  });

  it('should be refused by the library when the timestamp is more than 5 minutes old or ahead', () => {
    const secret = generateWebhookSecret();
    const lib = new Webhook(secret);
    const now = unixSeconds();
    expect(() => lib.verify(BODY, buildDeliveryHeaders(secret, BODY, 'evt_1', 1, now - 301))).toThrow('Message timestamp too old');
    expect(() => lib.verify(BODY, buildDeliveryHeaders(secret, BODY, 'evt_1', 1, now + 301))).toThrow('Message timestamp too new');
    expect(lib.verify(BODY, buildDeliveryHeaders(secret, BODY, 'evt_1', 1, now - 240))).toEqual(JSON.parse(BODY));
  });

  it('should sign with the old and then the new secret during a rotation overlap, so either verifies', () => {
    const [oldSecret, newSecret] = [generateWebhookSecret(), generateWebhookSecret()];
    const headers = buildDeliveryHeaders({ current: newSecret, previous: oldSecret }, BODY, 'evt_1', 1);
    const parts = headers[WEBHOOK_HEADERS.webhookSignature].split(' ');
    expect(parts).toHaveLength(2);
    const ts = Number(headers[WEBHOOK_HEADERS.webhookTimestamp]);
    expect(parts).toEqual([signStandard(standardSigningKey(oldSecret), 'evt_1', ts, BODY), signStandard(standardSigningKey(newSecret), 'evt_1', ts, BODY)]);
    expect(new Webhook(oldSecret).verify(BODY, headers)).toEqual(JSON.parse(BODY));
    expect(new Webhook(newSecret).verify(BODY, headers)).toEqual(JSON.parse(BODY));
    expect(() => new Webhook(generateWebhookSecret()).verify(BODY, headers)).toThrow(WebhookVerificationError);
    // After the overlap: the new secret only.
    const after = buildDeliveryHeaders({ current: newSecret, previous: null }, BODY, 'evt_1', 2);
    expect(after[WEBHOOK_HEADERS.webhookSignature].split(' ')).toHaveLength(1);
    expect(() => new Webhook(oldSecret).verify(BODY, after)).toThrow(WebhookVerificationError);
    expect(new Webhook(newSecret).verify(BODY, after)).toEqual(JSON.parse(BODY));
  });

  it('should sign a Buffer body as its bytes', () => {
    const secret = generateWebhookSecret();
    expect(buildDeliveryHeaders(secret, Buffer.from(BODY), 'evt_1', 1, 1_800_000_000)).toEqual(buildDeliveryHeaders(secret, BODY, 'evt_1', 1, 1_800_000_000));
  });
});

describe('secrets made before Standard Webhooks (whsec_ + base64url)', () => {
  const legacy = (bytes: Buffer) => `whsec_${bytes.toString('base64url')}`;

  it('should key a legacy secret holding - or _ with its own bytes: the library refuses it as is and verifies it in its raw-key form', () => {
    let secret: string;
    do secret = legacy(crypto.randomBytes(32));
    while (!/[-_]/.test(secret.slice(6)));
    expect(() => new Webhook(secret)).toThrow();
    expect(standardSigningKey(secret)).toEqual(Buffer.from(secret.slice(6), 'utf8'));
    const headers = buildDeliveryHeaders(secret, BODY, 'evt_legacy', 1);
    expect(new Webhook(secret.slice(6), { format: 'raw' }).verify(BODY, headers)).toEqual(JSON.parse(BODY));
  });

  it('should key a legacy secret that happens to be standard base64 with the bytes it encodes, as the library does', () => {
    let bytes: Buffer;
    do bytes = crypto.randomBytes(32);
    while (/[-_]/.test(bytes.toString('base64url')));
    const secret = legacy(bytes);
    expect(standardSigningKey(secret)).toEqual(bytes);
    expect(new Webhook(secret).verify(BODY, buildDeliveryHeaders(secret, BODY, 'evt_legacy', 1))).toEqual(JSON.parse(BODY));
  });

  it('should read any secret text as the library does: its base64 reading when it takes the text, else the raw bytes', () => {
    // Short, padded, oddly long and foreign-alphabet texts, where base64 readers disagree most.
    const alphabet = 'ABCab01+/=-_ ';
    const texts = ['test', 'delivery_test', 'abc', 'abcde', 'AB==', 'A===', '====', 'QUJDRA', 'QUJDRA=', 'QUJDRA==', 'ab-c', 'ab cd'];
    for (let i = 0; i < 3000; i++) {
      const n = 1 + (i % 11);
      texts.push(Array.from({ length: n }, () => alphabet[crypto.randomInt(alphabet.length)]).join(''));
    }
    const at = new Date('2026-11-01T10:00:00.000Z');
    for (const text of texts) {
      const secret = `whsec_${text}`;
      const ours = signStandard(standardSigningKey(secret), 'evt_1', unixSeconds(at), BODY);
      expect({ text, signature: ours }).toEqual({ text, signature: libraryFor(secret).sign('evt_1', at, BODY) });
    }
  });
});
