import type { CardData } from './connector';
import { cardBrand, normalizeCardNumber, type CardBrand } from '../core/card';

// The card rules live in core/card.ts; connectors use them under these names.
export { CARD_BRANDS, normalizeCardNumber, type CardBrand } from '../core/card';
export {
  isValidCardNumber as isLuhnValid,
  cardBrand as detectCardBrand,
  normalizeExpYear as fullExpiryYear,
  isExpired as isCardExpired,
} from '../core/card';

export interface CardSummary {
  brand: CardBrand;
  last4: string;
  expMonth: number;
  expYear: number;
}

/** The only card facts allowed out of memory: brand, last4 and expiry. */
export function summarizeCard(card: CardData): CardSummary {
  const digits = normalizeCardNumber(card.number);
  return { brand: cardBrand(digits), last4: digits.slice(-4), expMonth: card.expMonth, expYear: card.expYear };
}

/** Any run of 12–19 digits (spaces/dashes allowed) looks like a PAN: never let one into a stored message. */
export function redactCardNumbers(text: string): string {
  return text.replace(/\d(?:[ -]?\d){11,18}/g, '[redacted]');
}

/** Test tokens shared by the simulator and Stripe test mode, with the card each stands for. */
export const TEST_TOKEN_CARDS = {
  pm_card_visa: { brand: 'visa', last4: '4242' },
  pm_card_mastercard: { brand: 'mastercard', last4: '4444' },
  pm_card_declined: { brand: 'visa', last4: '0002' },
  pm_card_insufficient_funds: { brand: 'visa', last4: '9995' },
  pm_card_gateway_error: { brand: 'visa', last4: '0119' },
} as const satisfies Readonly<Record<string, { brand: CardBrand; last4: string }>>;

/** One of our documented test tokens; each connector maps every one of them (the compiler checks). */
export type TestToken = keyof typeof TEST_TOKEN_CARDS;

export function isTestToken(token: string): token is TestToken {
  return Object.prototype.hasOwnProperty.call(TEST_TOKEN_CARDS, token);
}

/** Brand and last4 of a test token, or null for anything else (saved-card tokens included). */
export function testTokenCard(token: string): { brand: CardBrand; last4: string } | null {
  return isTestToken(token) ? TEST_TOKEN_CARDS[token] : null;
}
