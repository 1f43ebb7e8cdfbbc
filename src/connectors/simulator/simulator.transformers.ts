import { randomBase62 } from '../../core/ids';
import { isCardExpired, isLuhnValid, normalizeCardNumber, summarizeCard, testTokenCard } from '../card';
import type { CardData, ChargeRequest, GatewayOutcome } from '../connector';

/** What a simulated card or token does; saved-card tokens carry it so any process can replay it. */
export type SimulatorBehaviour =
  | 'success'
  | 'declined'
  | 'insufficient_funds'
  | 'expired_card'
  | 'gateway_error'
  | 'charge_declined'
  /** 3-D Secure on a payment with the card; once saved (authenticated when set up), charges go through. */
  | 'challenge'
  /** 3-D Secure on every charge, saved or not. */
  | 'challenge_always'
  /** 3-D Secure, then declined once the challenge is completed. */
  | 'challenge_decline';

const BEHAVIOURS: readonly SimulatorBehaviour[] = [
  'success', 'declined', 'insufficient_funds', 'expired_card', 'gateway_error', 'charge_declined', 'challenge', 'challenge_always', 'challenge_decline',
];

/** API.md §8 test cards; any other Luhn-valid number succeeds. */
const TEST_CARDS: Readonly<Record<string, SimulatorBehaviour>> = {
  '4242424242424242': 'success',
  '5555555555554444': 'success',
  '4000000000000002': 'declined',
  '4000000000009995': 'insufficient_funds',
  '4000000000000069': 'expired_card',
  '4000000000000119': 'gateway_error',
  '4000000000000341': 'charge_declined',
  '4000002500003155': 'challenge',
  '4000000000003220': 'challenge_always',
  '4000008400001629': 'challenge_decline',
};

const TEST_TOKENS: Readonly<Record<string, SimulatorBehaviour>> = {
  pm_card_visa: 'success',
  pm_card_mastercard: 'success',
  pm_card_declined: 'declined',
  pm_card_insufficient_funds: 'insufficient_funds',
  pm_card_gateway_error: 'gateway_error',
  pm_card_authenticationRequired: 'challenge_always',
  pm_card_authenticationRequiredChallengeDecline: 'challenge_decline',
};

export const SIM_TOKEN_PREFIX = 'simtok_';
export const SIM_CHARGE_PREFIX = 'simch_';
export const SIM_REFUND_PREFIX = 'simre_';
export const SIM_CHALLENGE_PREFIX = 'simchl_';
const REFERENCE_RANDOM = 24;

export const newChargeReference = (): string => `${SIM_CHARGE_PREFIX}${randomBase62(REFERENCE_RANDOM)}`;
export const newRefundReference = (): string => `${SIM_REFUND_PREFIX}${randomBase62(REFERENCE_RANDOM)}`;
export const newChallengeId = (): string => `${SIM_CHALLENGE_PREFIX}${randomBase62(REFERENCE_RANDOM)}`;

/** Shape check for charge references minted by any simulator process (state is per process). */
export function isSimulatorChargeReference(reference: string): boolean {
  return new RegExp(`^${SIM_CHARGE_PREFIX}[0-9A-Za-z]{${REFERENCE_RANDOM}}$`).test(reference);
}

/** `simtok_<behaviour>_<random>`: the behaviour, never the PAN. */
export function encodeSavedToken(behaviour: SimulatorBehaviour): string {
  return `${SIM_TOKEN_PREFIX}${behaviour}_${randomBase62(20)}`;
}

export function decodeSavedToken(token: string): SimulatorBehaviour | null {
  if (!token.startsWith(SIM_TOKEN_PREFIX)) return null;
  const body = token.slice(SIM_TOKEN_PREFIX.length);
  const cut = body.lastIndexOf('_');
  if (cut <= 0 || !/^[0-9A-Za-z]{8,}$/.test(body.slice(cut + 1))) return null;
  const behaviour = body.slice(0, cut) as SimulatorBehaviour;
  return BEHAVIOURS.includes(behaviour) ? behaviour : null;
}

export interface SimulatorDecision {
  outcome: GatewayOutcome;
  declineCode: string | null;
  message: string | null;
  /** Of `requires_action`: how the charge ends once the customer completes the challenge. */
  afterChallenge?: SimulatorDecision;
}

const decline = (declineCode: string, message: string): SimulatorDecision => ({ outcome: 'declined', declineCode, message });
export const SUCCESS: SimulatorDecision = { outcome: 'succeeded', declineCode: null, message: null };
/** A charge failed by the gateway's `failureRate` setting, whatever the card. */
export const SIMULATED_FAILURE: SimulatorDecision = { outcome: 'retryable_error', declineCode: 'gateway_error', message: 'Simulated gateway failure; try again.' };

/** Checks every real gateway does before looking at the card's behaviour. */
function checkCard(card: CardData, now: Date): SimulatorDecision | null {
  const digits = normalizeCardNumber(card.number);
  if (!isLuhnValid(digits)) return decline('incorrect_number', 'The card number is incorrect.');
  if (!Number.isInteger(card.expMonth) || card.expMonth < 1 || card.expMonth > 12 || !Number.isInteger(card.expYear)) {
    return decline('invalid_expiry', 'The card expiry date is invalid.');
  }
  if (isCardExpired(card.expMonth, card.expYear, now)) return decline('expired_card', 'The card has expired.');
  if (card.cvc !== undefined && !/^\d{3,4}$/.test(card.cvc)) return decline('incorrect_cvc', 'The card security code is incorrect.');
  return null;
}

export function cardBehaviour(card: CardData): SimulatorBehaviour {
  return TEST_CARDS[normalizeCardNumber(card.number)] ?? 'success';
}

/** Outcome of charging something with the given behaviour. */
function chargeDecision(behaviour: SimulatorBehaviour): SimulatorDecision {
  switch (behaviour) {
    case 'success':
      return SUCCESS;
    case 'declined':
    case 'charge_declined':
      return decline('card_declined', 'The card was declined.');
    case 'insufficient_funds':
      return decline('insufficient_funds', 'The card has insufficient funds.');
    case 'expired_card':
      return decline('expired_card', 'The card has expired.');
    case 'gateway_error':
      return { outcome: 'retryable_error', declineCode: 'gateway_error', message: 'The gateway had a processing error; try again.' };
    case 'challenge':
    case 'challenge_always':
      return { ...AUTHENTICATION_REQUIRED, afterChallenge: SUCCESS };
    case 'challenge_decline':
      return { ...AUTHENTICATION_REQUIRED, afterChallenge: decline('card_declined', 'The card was declined.') };
  }
}

const AUTHENTICATION_REQUIRED: SimulatorDecision = {
  outcome: 'requires_action', declineCode: 'authentication_required', message: 'The card issuer asks the customer to authenticate (3-D Secure).',
};

/** The customer failed (or refused) the challenge. */
export const AUTHENTICATION_FAILED: SimulatorDecision = {
  outcome: 'declined', declineCode: 'authentication_failed', message: 'The customer did not authenticate the payment.',
};

export function decideCharge(source: ChargeRequest['source'], now: Date): SimulatorDecision {
  if (source.kind === 'card') return checkCard(source.card, now) ?? chargeDecision(cardBehaviour(source.card));
  const behaviour = TEST_TOKENS[source.token] ?? decodeSavedToken(source.token);
  if (!behaviour) return decline('invalid_token', 'The payment method token is not known to this gateway.');
  return chargeDecision(behaviour);
}

/**
 * Saving a card runs a zero-amount check: hard declines and expired cards fail it, while cards
 * that only fail on a real charge (0341, insufficient funds) are saved and fail later.
 */
export function decideSaveCard(card: CardData, now: Date): SimulatorDecision & { behaviour: SimulatorBehaviour | null } {
  const invalid = checkCard(card, now);
  if (invalid) return { ...invalid, behaviour: null };
  const behaviour = cardBehaviour(card);
  if (behaviour === 'declined' || behaviour === 'expired_card' || behaviour === 'gateway_error') {
    return { ...chargeDecision(behaviour), behaviour: null };
  }
  // Saving authenticates the card once (as a SetupIntent would): a `challenge` card then charges without one.
  return { ...SUCCESS, behaviour: behaviour === 'challenge' ? 'success' : behaviour };
}

/** Brand and last4 for the response summary, when the source reveals them. */
export function sourceCard(source: ChargeRequest['source']): { brand: string; last4: string } | null {
  if (source.kind === 'card') {
    const { brand, last4 } = summarizeCard(source.card);
    return { brand, last4 };
  }
  return testTokenCard(source.token);
}
