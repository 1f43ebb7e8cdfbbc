import crypto from 'node:crypto';

/** Header names of a delivery, as the receiver sees them. */
export const WEBHOOK_HEADERS = {
  signature: 'X-Service-Signature',
  /** Only while a rotated-out secret still signs: the new secret's digest. */
  signatureNext: 'X-Service-Signature-Next',
  eventId: 'X-Service-Event-Id',
  attempt: 'X-Service-Delivery-Attempt',
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

/** `whsec_` + 32 random bytes as base64url (43 characters, 256 bits). */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + crypto.randomBytes(32).toString('base64url');
}

/** The secrets an endpoint signs with at one moment. */
export interface SigningSecrets {
  current: string;
  /** The secret a rotation replaced, while its overlap lasts; null after it (or with no overlap). */
  previous: string | null;
}

/**
 * The signed headers of one delivery attempt (1 = first attempt). During a rotation's overlap
 * X-Service-Signature stays one digest made with the previous secret, so receivers not yet
 * updated keep working (its format never changes), and X-Service-Signature-Next carries the new
 * secret's digest. Otherwise there is only X-Service-Signature, made with the current secret.
 */
export function buildDeliveryHeaders(secrets: string | SigningSecrets, rawBody: string | Buffer, eventId: string, attempt: number): Record<string, string> {
  const { current, previous } = typeof secrets === 'string' ? { current: secrets, previous: null } : secrets;
  const signatures: Record<string, string> =
    previous === null
      ? { [WEBHOOK_HEADERS.signature]: signPayload(current, rawBody) }
      : { [WEBHOOK_HEADERS.signature]: signPayload(previous, rawBody), [WEBHOOK_HEADERS.signatureNext]: signPayload(current, rawBody) };
  return {
    ...signatures,
    [WEBHOOK_HEADERS.eventId]: eventId,
    [WEBHOOK_HEADERS.attempt]: String(attempt),
  };
}
