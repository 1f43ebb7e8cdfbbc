import crypto from 'node:crypto';

/** Header names of a delivery, as the receiver sees them. */
export const WEBHOOK_HEADERS = {
  signature: 'X-Service-Signature',
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

/** The signed headers of one delivery attempt (1 = first attempt). */
export function buildDeliveryHeaders(secret: string, rawBody: string | Buffer, eventId: string, attempt: number): Record<string, string> {
  return {
    [WEBHOOK_HEADERS.signature]: signPayload(secret, rawBody),
    [WEBHOOK_HEADERS.eventId]: eventId,
    [WEBHOOK_HEADERS.attempt]: String(attempt),
  };
}
