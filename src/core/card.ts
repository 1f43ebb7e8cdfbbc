import { createHmac } from 'node:crypto';
import { z } from 'zod';

/**
 * The edge where card numbers become safe data. A raw card (`number`, `cvc`) lives only in
 * memory for the duration of one charge; anything kept or returned is `CardDetails`
 * (brand, last4, expiry, keyed fingerprint). The CVC is never copied into any result.
 */

export type CardBrand = 'visa' | 'mastercard' | 'amex' | 'discover' | 'diners' | 'jcb' | 'unionpay' | 'unknown';

export const CARD_BRANDS: readonly CardBrand[] = [
  'visa', 'mastercard', 'amex', 'discover', 'diners', 'jcb', 'unionpay', 'unknown',
];

export interface CardDetails {
  type: 'card';
  brand: CardBrand;
  last4: string;
  expMonth: number;
  expYear: number;
  fingerprint: string;
}

const INVALID_NUMBER = 'card number is invalid';

/** Removes the spaces and dashes people type between digit groups. */
export function normalizeCardNumber(number: string): string {
  return number.replace(/[\s-]/g, '');
}

/** Luhn (mod 10) check over a string of digits; false for anything that is not all digits. */
export function luhnValid(digits: string): boolean {
  if (!/^\d+$/.test(digits)) return false;
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let d = digits.charCodeAt(i) - 48;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return sum % 10 === 0;
}

/** 12–19 digits (after removing spaces/dashes) and Luhn-valid. */
export function isValidCardNumber(number: string): boolean {
  const digits = normalizeCardNumber(number);
  return /^\d{12,19}$/.test(digits) && luhnValid(digits);
}

/** Two-digit years mean 20xx. */
export function normalizeExpYear(expYear: number): number {
  return expYear >= 0 && expYear < 100 ? expYear + 2000 : expYear;
}

/**
 * `{number, expMonth, expYear, cvc}`, strict. Output: `number` as bare digits, `expYear`
 * with four digits. Every problem with the number reads "card number is invalid" on `number`.
 */
export const cardInputSchema = z
  .object({
    number: z
      .string({ error: INVALID_NUMBER })
      .max(64, { error: INVALID_NUMBER })
      .transform(normalizeCardNumber)
      .refine((n) => /^\d{12,19}$/.test(n) && luhnValid(n), { error: INVALID_NUMBER }),
    expMonth: z
      .number({ error: 'must be a month from 1 to 12' })
      .int({ error: 'must be a month from 1 to 12' })
      .min(1, { error: 'must be a month from 1 to 12' })
      .max(12, { error: 'must be a month from 1 to 12' }),
    expYear: z
      .number({ error: 'must be a four-digit year' })
      .int({ error: 'must be a four-digit year' })
      .refine((y) => (y >= 0 && y <= 99) || (y >= 1000 && y <= 9999), { error: 'must be a four-digit year' })
      .transform(normalizeExpYear),
    cvc: z.string({ error: 'must be 3 or 4 digits' }).regex(/^\d{3,4}$/, { error: 'must be 3 or 4 digits' }),
  })
  .strict();

export type CardInput = z.output<typeof cardInputSchema>;

/** Inclusive range test on the first `len` digits. */
function prefixIn(digits: string, len: number, lo: number, hi: number): boolean {
  if (digits.length < len) return false;
  const p = Number(digits.slice(0, len));
  return p >= lo && p <= hi;
}

/**
 * Brand from the IIN (issuer identification number) ranges:
 * Visa 4 · Mastercard 51–55, 2221–2720 · Amex 34, 37 · Diners 300–305, 3095, 36, 38–39 ·
 * JCB 3528–3589 · Discover 6011, 644–649, 65 · UnionPay 62, 8100–8171.
 */
export function cardBrand(number: string): CardBrand {
  const d = normalizeCardNumber(number);
  if (!/^\d+$/.test(d)) return 'unknown';
  if (d[0] === '4') return 'visa';
  if (prefixIn(d, 2, 51, 55) || prefixIn(d, 4, 2221, 2720)) return 'mastercard';
  if (prefixIn(d, 2, 34, 34) || prefixIn(d, 2, 37, 37)) return 'amex';
  if (prefixIn(d, 4, 3528, 3589)) return 'jcb';
  if (prefixIn(d, 3, 300, 305) || prefixIn(d, 4, 3095, 3095) || prefixIn(d, 2, 36, 36) || prefixIn(d, 2, 38, 39)) {
    return 'diners';
  }
  if (prefixIn(d, 4, 6011, 6011) || prefixIn(d, 3, 644, 649) || prefixIn(d, 2, 65, 65)) return 'discover';
  if (prefixIn(d, 2, 62, 62) || prefixIn(d, 4, 8100, 8171)) return 'unionpay';
  return 'unknown';
}

/** A card is good through the last day of its expiry month (UTC); expired from the 1st of the next. */
export function isExpired(expMonth: number, expYear: number, now: Date): boolean {
  const year = normalizeExpYear(expYear);
  // Date.UTC months are 0-based, so `expMonth` is already "the month after"; 12 rolls over.
  const firstInvalid = Date.UTC(year, expMonth, 1);
  return now.getTime() >= firstInvalid;
}

/** hex HMAC-SHA256(key, digits), first 32 hex chars: same card + same key → same value. */
export function cardFingerprint(number: string, fingerprintKey: Buffer): string {
  if (!Buffer.isBuffer(fingerprintKey) || fingerprintKey.length === 0) {
    throw new Error('cardFingerprint needs a non-empty key');
  }
  return createHmac('sha256', fingerprintKey).update(normalizeCardNumber(number), 'utf8').digest('hex').slice(0, 32);
}

/** The only card shape that may be stored, returned or logged. Never includes number or CVC. */
export function describeCard(
  card: { number: string; expMonth: number; expYear: number; cvc?: string },
  fingerprintKey: Buffer,
): CardDetails {
  const digits = normalizeCardNumber(card.number);
  return {
    type: 'card',
    brand: cardBrand(digits),
    last4: digits.slice(-4),
    expMonth: card.expMonth,
    expYear: normalizeExpYear(card.expYear),
    fingerprint: cardFingerprint(digits, fingerprintKey),
  };
}

export const REDACTED_CARD = '[redacted-card]';

/** Runs of digits joined by single spaces or dashes ("4242 4242-4242 4242", "12 34"). */
const DIGIT_RUN = /\d+(?:[ -]\d+)*/g;

/**
 * Last line of defence for logs: every 13–19 digit sequence (digit groups optionally separated
 * by single spaces/dashes) that passes Luhn becomes `[redacted-card]`. Within a longer run of
 * groups every window of whole consecutive groups is checked, so a PAN next to another number
 * ("order 12 4242 4242 4242 4242") is still caught. False positives (10% of random 13–19 digit
 * numbers pass Luhn) are accepted: over-redacting a log line is harmless.
 */
export function redactPan(text: string): string {
  if (typeof text !== 'string' || text.length < 13) return text;
  return text.replace(DIGIT_RUN, redactRun);
}

/**
 * redactPan for text of any length whose tail may be dropped (an error message quoting what the
 * caller sent, a logged path): at most `max` characters are kept, so the masking's cost stays
 * bounded. A digit run cut at the end is dropped with the rest, so no partial card number is
 * left behind.
 */
export function redactPanBounded(text: string, max: number): string {
  if (typeof text !== 'string' || text.length <= max) return redactPan(text);
  return `${redactPan(text.slice(0, max).replace(/[\d -]+$/, ''))}…`;
}

/** The most of a caller's text an error answer quotes (message or param, REST or GraphQL). */
export const MAX_QUOTED_TEXT = 1000;

/** An error answer's message or param: card numbers masked, at most MAX_QUOTED_TEXT characters. */
export function redactQuoted(text: string): string {
  return redactPanBounded(text, MAX_QUOTED_TEXT);
}

function redactRun(run: string): string {
  const groups: { start: number; end: number; digits: string }[] = [];
  let total = 0;
  for (const m of run.matchAll(/\d+/g)) {
    groups.push({ start: m.index, end: m.index + m[0].length, digits: m[0] });
    total += m[0].length;
  }
  if (total < 13) return run;

  const mask = new Uint8Array(run.length);
  let any = false;
  for (let i = 0; i < groups.length; i++) {
    let digits = '';
    for (let j = i; j < groups.length; j++) {
      digits += groups[j].digits;
      if (digits.length > 19) break;
      if (digits.length >= 13 && luhnValid(digits)) {
        mask.fill(1, groups[i].start, groups[j].end);
        any = true;
      }
    }
  }
  if (!any) return run;

  let out = '';
  let i = 0;
  while (i < run.length) {
    if (mask[i]) {
      while (i < run.length && mask[i]) i++;
      out += REDACTED_CARD;
    } else {
      out += run[i++];
    }
  }
  return out;
}
