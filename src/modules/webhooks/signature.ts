import crypto from 'node:crypto';

/** Header names of a delivery, as the receiver sees them. */
export const WEBHOOK_HEADERS = {
  signature: 'X-Service-Signature',
  /** Only while a rotated-out secret still signs: the new secret's digest. */
  signatureNext: 'X-Service-Signature-Next',
  eventId: 'X-Service-Event-Id',
  attempt: 'X-Service-Delivery-Attempt',
  /** Standard Webhooks (https://www.standardwebhooks.com): the event id, the same on every attempt. */
  webhookId: 'webhook-id',
  /** Standard Webhooks: Unix seconds of this attempt. */
  webhookTimestamp: 'webhook-timestamp',
  /** Standard Webhooks: `v1,<base64>` per secret in use, space-separated. */
  webhookSignature: 'webhook-signature',
} as const;

export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** Lower-case hex HMAC-SHA256 of the exact bytes sent; a string is signed as UTF-8. */
export function signPayload(secret: string, rawBody: string | Buffer): string {
  return crypto.createHmac('sha256', secret).update(rawBody).digest('hex');
}

/**
 * Constant-time check of `header` against the signature of `rawBody`.
 * False when the secret or header is absent or empty, or the lengths differ.
 */
export function verifySignature(secret: string | undefined, rawBody: string | Buffer, header: string | undefined): boolean {
  if (typeof secret !== 'string' || secret.length === 0) return false;
  if (typeof header !== 'string' || header.length === 0) return false;
  const expected = Buffer.from(signPayload(secret, rawBody), 'utf8');
  // Compare bytes, not characters: a non-ASCII header of the right character count would make timingSafeEqual throw.
  const received = Buffer.from(header, 'utf8');
  if (received.length !== expected.length) return false;
  return crypto.timingSafeEqual(received, expected);
}

/** Random bytes in a new secret: 256 bits. */
const SECRET_BYTES = 32;

/**
 * `whsec_` + 32 random bytes in standard base64 (44 characters, padding included): the form
 * Standard Webhooks libraries take as is (`new Webhook(secret)`). Secrets made before were
 * base64url; see standardSigningKey for how those sign.
 */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + crypto.randomBytes(SECRET_BYTES).toString('base64');
}

/** The standard base64 alphabet, without padding. */
const BASE64_DIGITS = /^[A-Za-z0-9+/]*$/;

/**
 * The bytes `part` encodes in standard base64 as the reference library reads it (standardwebhooks,
 * through @stablelib/base64): at least 4 characters, at most 2 trailing '=', only the standard
 * alphabet before them, and a lone final character (length 1 modulo 4) ignored. Null when it
 * refuses the text or it encodes nothing.
 */
function decodeStandardBase64(part: string): Buffer | null {
  const padding = part.length - part.replace(/=+$/, '').length;
  if (part.length < 4 || padding > 2) return null;
  let digits = part.slice(0, part.length - padding);
  if (digits.length % 4 === 1) digits = digits.slice(0, -1);
  if (!BASE64_DIGITS.test(digits)) return null;
  const bytes = Buffer.from(digits, 'base64');
  return bytes.length > 0 ? bytes : null;
}

/**
 * The HMAC key of the Standard Webhooks signature for a `whsec_` secret: the bytes the part after
 * `whsec_` encodes in standard base64, as Standard Webhooks libraries read a secret. A part that
 * is not standard base64 (secrets made before Standard Webhooks were base64url, so most hold `-`
 * or `_`, which the reference library refuses) keys with its own bytes instead: what the
 * libraries' raw-key form uses (`new Webhook(part, { format: 'raw' })`).
 */
export function standardSigningKey(secret: string): Buffer {
  const part = secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : secret;
  return decodeStandardBase64(part) ?? Buffer.from(part, 'utf8');
}

/** `v1,` + base64 HMAC-SHA256 of `<id>.<timestamp>.<body>` under `key` (the body is not copied into a new string). */
export function signStandard(key: Buffer, webhookId: string, timestamp: number, rawBody: string | Buffer): string {
  return `v1,${crypto.createHmac('sha256', key).update(`${webhookId}.${timestamp}.`).update(rawBody).digest('base64')}`;
}

/** The secrets an endpoint signs with at one moment. */
export interface SigningSecrets {
  current: string;
  /** The secret a rotation replaced, while its overlap lasts; null after it (or with no overlap). */
  previous: string | null;
}

/** Unix seconds now: a delivery's `webhook-timestamp`. */
export function unixSeconds(at: Date = new Date()): number {
  return Math.floor(at.getTime() / 1000);
}

/**
 * The signed headers of one delivery attempt (1 = first attempt) sent at `timestamp` (Unix
 * seconds). During a rotation's overlap X-Service-Signature stays one digest made with the
 * previous secret, so receivers not yet updated keep working (its format never changes), and
 * X-Service-Signature-Next carries the new secret's digest. Otherwise there is only
 * X-Service-Signature, made with the current secret. The Standard Webhooks headers come too:
 * `webhook-signature` holds the previous secret's signature and, space-separated after it, the
 * current one's during an overlap, else the current one's. Two HMACs per secret in use, each
 * computed once.
 */
export function buildDeliveryHeaders(
  secrets: string | SigningSecrets, rawBody: string | Buffer, eventId: string, attempt: number, timestamp: number = unixSeconds(),
): Record<string, string> {
  const { current, previous } = typeof secrets === 'string' ? { current: secrets, previous: null } : secrets;
  const standard = (secret: string) => signStandard(standardSigningKey(secret), eventId, timestamp, rawBody);
  const signatures: Record<string, string> =
    previous === null
      ? { [WEBHOOK_HEADERS.signature]: signPayload(current, rawBody) }
      : { [WEBHOOK_HEADERS.signature]: signPayload(previous, rawBody), [WEBHOOK_HEADERS.signatureNext]: signPayload(current, rawBody) };
  return {
    ...signatures,
    [WEBHOOK_HEADERS.eventId]: eventId,
    [WEBHOOK_HEADERS.attempt]: String(attempt),
    [WEBHOOK_HEADERS.webhookId]: eventId,
    [WEBHOOK_HEADERS.webhookTimestamp]: String(timestamp),
    [WEBHOOK_HEADERS.webhookSignature]: previous === null ? standard(current) : `${standard(previous)} ${standard(current)}`,
  };
}
