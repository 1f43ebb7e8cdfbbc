import crypto from 'node:crypto';
import {
  WEBHOOK_HEADERS,
  buildDeliveryHeaders,
  generateWebhookSecret,
  signPayload,
  verifySignature,
} from '../../../src/modules/webhooks/signature';

// Vectors computed independently with `printf '%s' BODY | openssl dgst -sha256 -hmac SECRET`.
const UTF8_BODY = '{"id":"evt_1","type":"customer.created","data":{"object":{"name":"Zoë"}}}';
const UTF8_SIGNATURE = '50a40c36d1b70c5fa8b9b83471d984bdb5cd65fc247e5bbe4223a59f6a0ba29e';

describe('signPayload', () => {
  it('should match the RFC 4231 HMAC-SHA256 test case 2', () => {
    expect(signPayload('Jefe', 'what do ya want for nothing?')).toBe(
      '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    );
  });

  it('should sign a string body as its UTF-8 bytes', () => {
    expect(signPayload('whsec_test', UTF8_BODY)).toBe(UTF8_SIGNATURE);
    expect(signPayload('whsec_test', Buffer.from(UTF8_BODY, 'utf8'))).toBe(UTF8_SIGNATURE);
  });

  it('should sign an empty body', () => {
    expect(signPayload('whsec_test', '')).toBe('43c0f4d23c8e8841358fad4624b1a592799222b29f25bb59baea43cdcb522ed1');
  });

  it('should produce 64 lower-case hex characters', () => {
    expect(signPayload('s', '{}')).toMatch(/^[0-9a-f]{64}$/);
  });

  it('should sign the exact bytes, so re-serialised JSON gets a different signature', () => {
    const raw = '{"a":1, "b":2}';
    expect(signPayload('s', raw)).not.toBe(signPayload('s', JSON.stringify(JSON.parse(raw))));
  });
});

describe('verifySignature', () => {
  const secret = 'whsec_test';

  it('should accept the correct signature of a string or Buffer body', () => {
    expect(verifySignature(secret, UTF8_BODY, UTF8_SIGNATURE)).toBe(true);
    expect(verifySignature(secret, Buffer.from(UTF8_BODY), UTF8_SIGNATURE)).toBe(true);
  });

  it('should reject a tampered body', () => {
    expect(verifySignature(secret, UTF8_BODY.replace('Zoë', 'Zoe'), UTF8_SIGNATURE)).toBe(false);
  });

  it('should reject a signature made with another secret', () => {
    expect(verifySignature('whsec_other', UTF8_BODY, UTF8_SIGNATURE)).toBe(false);
  });

  it('should reject a missing or empty header', () => {
    expect(verifySignature(secret, UTF8_BODY, undefined)).toBe(false);
    expect(verifySignature(secret, UTF8_BODY, '')).toBe(false);
  });

  it('should reject when the secret is missing or empty', () => {
    expect(verifySignature(undefined, UTF8_BODY, UTF8_SIGNATURE)).toBe(false);
    expect(verifySignature('', UTF8_BODY, signPayload('', UTF8_BODY))).toBe(false);
  });

  it('should reject a header of a different length without calling timingSafeEqual', () => {
    const spy = jest.spyOn(crypto, 'timingSafeEqual');
    try {
      expect(verifySignature(secret, UTF8_BODY, UTF8_SIGNATURE.slice(0, -1))).toBe(false);
      expect(verifySignature(secret, UTF8_BODY, `${UTF8_SIGNATURE}0`)).toBe(false);
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });

  it('should compare equal-length headers with timingSafeEqual', () => {
    const spy = jest.spyOn(crypto, 'timingSafeEqual');
    try {
      expect(verifySignature(secret, UTF8_BODY, UTF8_SIGNATURE)).toBe(true);
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
  });

  it('should reject, not throw, on a header with the right character count but more bytes', () => {
    const multiByte = `é${UTF8_SIGNATURE.slice(1)}`;
    expect(multiByte).toHaveLength(64);
    expect(() => verifySignature(secret, UTF8_BODY, multiByte)).not.toThrow();
    expect(verifySignature(secret, UTF8_BODY, multiByte)).toBe(false);
  });

  it('should reject an upper-case rendering of the signature', () => {
    expect(verifySignature(secret, UTF8_BODY, UTF8_SIGNATURE.toUpperCase())).toBe(false);
  });

  it('should reject a signature differing in its last character', () => {
    const last = UTF8_SIGNATURE.at(-1) === '0' ? '1' : '0';
    expect(verifySignature(secret, UTF8_BODY, UTF8_SIGNATURE.slice(0, -1) + last)).toBe(false);
  });
});

describe('generateWebhookSecret', () => {
  it('should be whsec_ followed by 32 random bytes in standard base64', () => {
    const secret = generateWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
  });

  it('should differ on every call', () => {
    const secrets = new Set(Array.from({ length: 50 }, () => generateWebhookSecret()));
    expect(secrets.size).toBe(50);
  });
});

describe('buildDeliveryHeaders', () => {
  it('should carry the signature, event id and attempt number', () => {
    const headers = buildDeliveryHeaders('whsec_test', UTF8_BODY, 'evt_1', 3, 1_800_000_000);
    expect(headers).toEqual({
      [WEBHOOK_HEADERS.signature]: UTF8_SIGNATURE,
      [WEBHOOK_HEADERS.eventId]: 'evt_1',
      [WEBHOOK_HEADERS.attempt]: '3',
      [WEBHOOK_HEADERS.webhookId]: 'evt_1',
      [WEBHOOK_HEADERS.webhookTimestamp]: '1800000000',
      // printf '%s' "evt_1.1800000000.$BODY" | openssl dgst -sha256 -mac HMAC -macopt hexkey:b5eb2d -binary | base64
      // (b5eb2d: "test", the part after whsec_, read as base64).
      [WEBHOOK_HEADERS.webhookSignature]: 'v1,WIWlu+nVkAebCB658KjoL3ON6h74DGUHRM62KcV1SwI=',
    });
    expect(Object.keys(headers)).toEqual([
      'X-Service-Signature', 'X-Service-Event-Id', 'X-Service-Delivery-Attempt', 'webhook-id', 'webhook-timestamp', 'webhook-signature',
    ]);
  });
});

describe('buildDeliveryHeaders during a secret rotation', () => {
  const oldSecret = 'whsec_old';
  const newSecret = 'whsec_new';

  it('should sign X-Service-Signature with the old secret and X-Service-Signature-Next with the new one during the overlap', () => {
    const headers = buildDeliveryHeaders({ current: newSecret, previous: oldSecret }, UTF8_BODY, 'evt_1', 1);
    expect(headers[WEBHOOK_HEADERS.signature]).toBe(signPayload(oldSecret, UTF8_BODY));
    expect(headers[WEBHOOK_HEADERS.signatureNext]).toBe(signPayload(newSecret, UTF8_BODY));
    // The header's format never changes: exactly one lower-case hex digest.
    expect(headers[WEBHOOK_HEADERS.signature]).toMatch(/^[0-9a-f]{64}$/);
    expect(Object.keys(headers)).toEqual([
      'X-Service-Signature', 'X-Service-Signature-Next', 'X-Service-Event-Id', 'X-Service-Delivery-Attempt', 'webhook-id', 'webhook-timestamp', 'webhook-signature',
    ]);
  });

  it('should sign with the new secret only when no old secret is in its overlap', () => {
    const headers = buildDeliveryHeaders({ current: newSecret, previous: null }, UTF8_BODY, 'evt_1', 1, 1_800_000_000);
    expect(headers).toEqual(buildDeliveryHeaders(newSecret, UTF8_BODY, 'evt_1', 1, 1_800_000_000));
    expect(headers[WEBHOOK_HEADERS.signature]).toBe(signPayload(newSecret, UTF8_BODY));
    expect(headers).not.toHaveProperty(WEBHOOK_HEADERS.signatureNext);
  });
});
