import type { CardData } from './gateway';

/** Brands as our API names them (lower-case); routing rules match on these. */
export const CARD_BRANDS = ['visa', 'mastercard', 'amex', 'discover', 'diners', 'jcb', 'unionpay', 'unknown'] as const;
export type CardBrand = (typeof CARD_BRANDS)[number];

/** Spaces and dashes are how people type numbers; nothing else is accepted as part of one. */
export function normalizeCardNumber(number: string): string {
  return number.replace(/[\s-]/g, '');
}

export function isLuhnValid(number: string): boolean {
  const digits = normalizeCardNumber(number);
  if (!/^\d{12,19}$/.test(digits)) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/** IIN ranges, most specific first (Discover's 65 before UnionPay's 62 does not overlap). */
export function detectCardBrand(number: string): CardBrand {
  const n = normalizeCardNumber(number);
  if (/^4/.test(n)) return 'visa';
  if (/^(5[1-5]|222[1-9]|22[3-9]\d|2[3-6]\d\d|27[01]\d|2720)/.test(n)) return 'mastercard';
  if (/^3[47]/.test(n)) return 'amex';
  if (/^(6011|65|64[4-9])/.test(n)) return 'discover';
  if (/^3(0[0-5]|[689])/.test(n)) return 'diners';
  if (/^35(2[89]|[3-8])/.test(n)) return 'jcb';
  if (/^62/.test(n)) return 'unionpay';
  return 'unknown';
}

/** Two-digit years are read as 20xx, as printed on cards. */
export function fullExpiryYear(expYear: number): number {
  return expYear < 100 ? 2000 + expYear : expYear;
}

/** A card is valid through the last day of its expiry month (UTC). */
export function isCardExpired(expMonth: number, expYear: number, now: Date): boolean {
  const year = fullExpiryYear(expYear);
  const currentYear = now.getUTCFullYear();
  const currentMonth = now.getUTCMonth() + 1;
  return year < currentYear || (year === currentYear && expMonth < currentMonth);
}

export interface CardSummary {
  brand: CardBrand;
  last4: string;
  expMonth: number;
  expYear: number;
}

/** The only card facts allowed out of memory: brand, last4 and expiry. */
export function summarizeCard(card: CardData): CardSummary {
  const digits = normalizeCardNumber(card.number);
  return { brand: detectCardBrand(digits), last4: digits.slice(-4), expMonth: card.expMonth, expYear: card.expYear };
}

/** Any run of 12–19 digits (spaces/dashes allowed) looks like a PAN: never let one into a stored message. */
export function redactCardNumbers(text: string): string {
  return text.replace(/\d(?:[ -]?\d){11,18}/g, '[redacted]');
}

/** Test tokens shared by the simulator and Stripe test mode, with the card each stands for. */
export const TEST_TOKEN_CARDS: Readonly<Record<string, { brand: CardBrand; last4: string }>> = {
  pm_card_visa: { brand: 'visa', last4: '4242' },
  pm_card_mastercard: { brand: 'mastercard', last4: '4444' },
  pm_card_declined: { brand: 'visa', last4: '0002' },
  pm_card_insufficient_funds: { brand: 'visa', last4: '9995' },
  pm_card_gateway_error: { brand: 'visa', last4: '0119' },
};

/** Brand and last4 of a test token, or null for anything else (saved-card tokens included). */
export function testTokenCard(token: string): { brand: CardBrand; last4: string } | null {
  return Object.prototype.hasOwnProperty.call(TEST_TOKEN_CARDS, token) ? TEST_TOKEN_CARDS[token] : null;
}
