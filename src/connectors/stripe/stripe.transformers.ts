import { currencyExponent } from '../../core/money';
import { isTestToken, normalizeCardNumber, type TestToken } from '../card';
import type { CardData, ChargeRequest, GatewayOutcome, RefundRequest, SaveCardRequest } from '../connector';
import { safeMessage } from '../redaction';

/*
 * Stripe wire format lives here and nowhere else: request bodies as form fields, responses
 * narrowed from `unknown` and mapped to our outcomes and codes.
 */

/** Pinned so response shapes do not change with the account's default API version. */
export const STRIPE_API_VERSION = '2024-06-20';

export type FormFields = Array<[string, string]>;

/** Stripe's form encoding: brackets stay literal (`metadata[k]=v`), everything else percent-encoded. */
export function encodeForm(fields: FormFields): string {
  const encodeKey = (k: string) => encodeURIComponent(k).replace(/%5B/gi, '[').replace(/%5D/gi, ']');
  return fields.map(([k, v]) => `${encodeKey(k)}=${encodeURIComponent(v)}`).join('&');
}

export const PAYORCH_PAYMENT_ID = 'payorch_payment_id';
export const PAYORCH_REFUND_ID = 'payorch_refund_id';
export const PAYORCH_IDEMPOTENCY_KEY = 'payorch_idempotency_key';
const STRIPE_MAX_METADATA_KEYS = 50;

/** A token from saveCard: a payment method attached to its own Stripe customer (needed to reuse it). */
const SAVED_TOKEN = /^(cus_[0-9A-Za-z]+):(pm_[0-9A-Za-z]+)$/;

/**
 * Our documented test tokens as Stripe's own test PaymentMethods (docs.stripe.com/testing):
 * Stripe knows `pm_card_visa` and `pm_card_mastercard` but not our decline tokens, which it
 * would answer "No such PaymentMethod". Each stands for the same test card as ours.
 */
export const STRIPE_TEST_PAYMENT_METHODS: Readonly<Record<TestToken, string>> = {
  pm_card_visa: 'pm_card_visa',
  pm_card_mastercard: 'pm_card_mastercard',
  pm_card_declined: 'pm_card_visa_chargeDeclined',
  pm_card_insufficient_funds: 'pm_card_visa_chargeDeclinedInsufficientFunds',
  pm_card_gateway_error: 'pm_card_chargeDeclinedProcessingError',
};

/** Stripe's test PaymentMethod for one of our test tokens, or null for any other token. */
export function stripeTestPaymentMethod(token: string): string | null {
  return isTestToken(token) ? STRIPE_TEST_PAYMENT_METHODS[token] : null;
}

/** Stripe's test PaymentMethods exist only for test-mode keys (`sk_test_…`, `rk_test_…`). */
export function isStripeTestKey(secretKey: string): boolean {
  return /^(sk|rk)_test_/.test(secretKey);
}

export function encodeSavedToken(customerId: string, paymentMethodId: string): string {
  return `${customerId}:${paymentMethodId}`;
}

function cardFields(prefix: string, card: CardData): FormFields {
  const fields: FormFields = [
    [`${prefix}[number]`, normalizeCardNumber(card.number)],
    [`${prefix}[exp_month]`, String(card.expMonth)],
    [`${prefix}[exp_year]`, String(card.expYear)],
  ];
  if (card.cvc !== undefined) fields.push([`${prefix}[cvc]`, card.cvc]);
  return fields;
}

/**
 * Caller metadata rides along as `metadata[k]`, after our two keys: keys Stripe cannot take
 * (brackets, ours, beyond its 50-key limit) are dropped and reported, never sent half-way.
 */
function metadataFields(own: Record<string, string>, extra: Record<string, string> | undefined): { fields: FormFields; dropped: string[] } {
  const fields: FormFields = Object.entries(own).map(([k, v]) => [`metadata[${k}]`, v]);
  const dropped: string[] = [];
  for (const [k, v] of Object.entries(extra ?? {})) {
    if (k in own || /[[\]]/.test(k) || fields.length >= STRIPE_MAX_METADATA_KEYS) dropped.push(k);
    else fields.push([`metadata[${k}]`, v]);
  }
  return { fields, dropped };
}

/** Currencies Stripe takes in whole units, whatever ISO 4217 says (MGA has two decimals there). */
const STRIPE_ZERO_DECIMAL = new Set(['BIF', 'CLP', 'DJF', 'GNF', 'JPY', 'KMF', 'KRW', 'MGA', 'PYG', 'RWF', 'UGX', 'VND', 'VUV', 'XAF', 'XOF', 'XPF']);
/** Three-decimal currencies: Stripe's partners need the last digit to be 0. */
const STRIPE_THREE_DECIMAL = new Set(['BHD', 'JOD', 'KWD', 'OMR', 'TND']);
/**
 * How many decimals Stripe's `amount` has for `currency`: two unless listed above. ISK is
 * zero-decimal in ISO 4217 but two-decimal at Stripe (whole krónur, so always ending in 00).
 */
export function stripeExponent(currency: string): number {
  const c = currency.toUpperCase();
  if (STRIPE_ZERO_DECIMAL.has(c)) return 0;
  if (STRIPE_THREE_DECIMAL.has(c)) return 3;
  return 2;
}

/**
 * Our amount (ISO 4217 minor units) as Stripe's `amount`, or an explanation when Stripe cannot
 * take it exactly: ISK 5000 (kr 5,000) is 500000 at Stripe, MGA 150000 (Ar 1,500.00) is 1500,
 * and KWD 1005 (1.005 KD) cannot be sent, as Stripe needs three-decimal amounts to end in 0.
 */
export function toStripeAmount(amount: number, currency: string): { amount: number } | { refused: string } {
  const c = currency.toUpperCase();
  const shift = stripeExponent(c) - currencyExponent(c);
  const factor = 10 ** Math.abs(shift);
  if (shift < 0 && amount % factor !== 0) {
    return { refused: `Stripe takes ${c} in whole units only; ${amount} is not a multiple of ${factor}.` };
  }
  const converted = shift >= 0 ? amount * factor : amount / factor;
  if (STRIPE_THREE_DECIMAL.has(c) && converted % 10 !== 0) {
    return { refused: `Stripe takes ${c} amounts whose last digit is 0; ${amount} is not a multiple of 10.` };
  }
  return { amount: converted };
}

/**
 * The PaymentIntent, created and confirmed in one request. `capture: false` asks for
 * `capture_method=manual` (Stripe authorises, `requires_capture`, and `capture()` takes the money).
 * A `returnUrl` goes as `return_url`: a card that needs 3-D Secure then answers `requires_action`
 * with a `redirect_to_url` page that sends the customer back there. Without one:
 * - a saved card (`cus_…:pm_…`) is charged `off_session=true`: the customer is not there, Stripe
 *   asks the issuer for an exemption, and a card that insists on authentication is declined
 *   `authentication_required` at once;
 * - a raw card or a test token is confirmed as before, without `off_session` (the card was just
 *   given to us, so the charge is not merchant-initiated; claiming so would misrepresent it to the
 *   issuer). Stripe then answers a card that needs 3-D Secure with a `use_stripe_sdk` next action,
 *   which only Stripe's client SDKs can run: mapped to `declined`/`authentication_required`.
 */
export function chargeForm(r: ChargeRequest, stripeAmount: number): { fields: FormFields; droppedMetadataKeys: string[] } {
  const fields: FormFields = [
    ['amount', String(stripeAmount)],
    ['currency', r.currency.toLowerCase()],
    ['confirm', 'true'],
    ['payment_method_types[]', 'card'],
  ];
  if (r.capture === false) fields.push(['capture_method', 'manual']);
  if (r.source.kind === 'card') {
    fields.push(['payment_method_data[type]', 'card'], ...cardFields('payment_method_data[card]', r.source.card));
  } else {
    const saved = SAVED_TOKEN.exec(r.source.token);
    if (saved) {
      fields.push(['customer', saved[1]], ['payment_method', saved[2]]);
      // Without a page to come back to, a saved card is charged without the customer present.
      if (!r.returnUrl) fields.push(['off_session', 'true']);
    } else {
      fields.push(['payment_method', stripeTestPaymentMethod(r.source.token) ?? r.source.token]);
    }
  }
  if (r.returnUrl) fields.push(['return_url', r.returnUrl]);
  if (r.description) fields.push(['description', r.description]);
  const metadata = metadataFields({ [PAYORCH_PAYMENT_ID]: r.paymentId, [PAYORCH_IDEMPOTENCY_KEY]: r.idempotencyKey }, r.metadata);
  fields.push(...metadata.fields);
  return { fields, droppedMetadataKeys: metadata.dropped };
}

export function refundForm(r: RefundRequest, stripeAmount: number): FormFields {
  const fields: FormFields = [
    ['payment_intent', r.chargeReference],
    ['amount', String(stripeAmount)],
    [`metadata[${PAYORCH_REFUND_ID}]`, r.refundId],
    [`metadata[${PAYORCH_IDEMPOTENCY_KEY}]`, r.idempotencyKey],
  ];
  // Stripe's `reason` is an enum; our free-text reason goes to metadata.
  if (r.reason) fields.push(['metadata[payorch_reason]', r.reason.slice(0, 500)]);
  return fields;
}

export function paymentMethodForm(r: SaveCardRequest): FormFields {
  return [['type', 'card'], ...cardFields('card', r.card)];
}

export function customerForm(paymentMethodId: string, idempotencyKey: string): FormFields {
  return [
    ['payment_method', paymentMethodId],
    ['description', 'Payorch saved card'],
    [`metadata[${PAYORCH_IDEMPOTENCY_KEY}]`, idempotencyKey],
  ];
}

/** Stripe search syntax: single-quoted string with `'` and `\` escaped. */
export function chargeSearchPath(idempotencyKey: string): string {
  const literal = idempotencyKey.replace(/\\/g, '\\\\').replace(/'/g, "\\'");
  const query = `metadata['${PAYORCH_IDEMPOTENCY_KEY}']:'${literal}'`;
  return `/v1/payment_intents/search?query=${encodeURIComponent(query)}`;
}

/**
 * Stripe ids are letters, digits and underscores. Anything else is not sent: it could never name
 * a PaymentIntent, and `..` or `/` would change the path the request goes to.
 */
export function isStripeId(reference: string): boolean {
  return /^[A-Za-z0-9_]{1,255}$/.test(reference);
}

/** `/v1/payment_intents/{id}`, or one of its actions (`capture`, `cancel`); the id is checked with isStripeId first. */
export function paymentIntentPath(reference: string, action?: 'capture' | 'cancel'): string {
  return `/v1/payment_intents/${encodeURIComponent(reference)}${action ? `/${action}` : ''}`;
}

/** Takes `amount_to_capture` (Stripe's units); the rest of the authorisation is released. */
export function captureForm(stripeAmount: number): FormFields {
  return [['amount_to_capture', String(stripeAmount)]];
}

export function refundListPath(chargeReference: string, startingAfter: string | null): string {
  const params = new URLSearchParams({ limit: '100', payment_intent: chargeReference });
  if (startingAfter) params.set('starting_after', startingAfter);
  return `/v1/refunds?${params.toString()}`;
}

// ---- responses ---------------------------------------------------------------------------

/** One HTTP exchange with Stripe, as the connector saw it. */
export interface StripeAnswer {
  status: number;
  body: unknown;
  requestId: string | null;
  idempotentReplayed: boolean;
}

export interface Mapped {
  outcome: GatewayOutcome;
  reference: string | null;
  declineCode: string | null;
  message: string | null;
  response: Record<string, unknown>;
  /** Set (false) only for an authorisation not captured yet (`requires_capture`). */
  captured?: boolean;
  nextAction?: { type: 'redirect_to_url'; url: string } | null;
}

interface StripeError {
  type: string | null;
  code: string | null;
  declineCode: string | null;
  message: string | null;
  paymentIntentId: string | null;
  /** The status of the PaymentIntent an error names (a capture or cancel refused because of it). */
  paymentIntentStatus: string | null;
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' && v.length > 0 ? v : null);

function readError(v: unknown): StripeError | null {
  if (!isObject(v)) return null;
  const intent = v.payment_intent;
  return {
    type: str(v.type),
    code: str(v.code),
    declineCode: str(v.decline_code),
    message: str(v.message),
    paymentIntentId: isObject(intent) ? str(intent.id) : null,
    paymentIntentStatus: isObject(intent) ? str(intent.status) : null,
  };
}

/** Stripe decline/error codes → ours. Anything unknown is a generic `card_declined`. */
const DECLINE_CODES: Readonly<Record<string, string>> = {
  insufficient_funds: 'insufficient_funds',
  expired_card: 'expired_card',
  invalid_expiry_year: 'expired_card',
  invalid_expiry_month: 'invalid_expiry',
  incorrect_cvc: 'incorrect_cvc',
  invalid_cvc: 'incorrect_cvc',
  incorrect_number: 'incorrect_number',
  invalid_number: 'incorrect_number',
  authentication_required: 'authentication_required',
  // The customer failed (or abandoned) the 3-D Secure challenge.
  payment_intent_authentication_failure: 'authentication_failed',
  lost_card: 'lost_card',
  stolen_card: 'stolen_card',
  fraudulent: 'fraudulent',
};

/** Card errors Stripe itself says to retry: nothing was charged. */
const RETRYABLE_CARD_CODES = new Set(['processing_error', 'try_again_later', 'issuer_not_available', 'reenter_transaction']);

const NO_ERROR_DETAILS: StripeError = { type: null, code: null, declineCode: null, message: null, paymentIntentId: null, paymentIntentStatus: null };

function mapCardError(error: StripeError): Pick<Mapped, 'outcome' | 'declineCode'> {
  const code = error.declineCode ?? error.code ?? '';
  if (RETRYABLE_CARD_CODES.has(code) || RETRYABLE_CARD_CODES.has(error.code ?? '')) return { outcome: 'retryable_error', declineCode: 'gateway_error' };
  return { outcome: 'declined', declineCode: DECLINE_CODES[code] ?? DECLINE_CODES[error.code ?? ''] ?? 'card_declined' };
}

/** Stripe's error types (docs.stripe.com/api/errors), the older ones included. */
const STRIPE_ERROR_TYPES = new Set([
  'api_error', 'card_error', 'idempotency_error', 'invalid_request_error', 'authentication_error', 'rate_limit_error', 'api_connection_error',
]);

/**
 * An error in Stripe's own shape. Only such an answer's text is recorded: whatever else answers at
 * the base URL (a proxy, or an internal service it was pointed at) keeps its body to itself.
 */
function isStripeError(error: StripeError | null): error is StripeError {
  return error !== null && error.type !== null && STRIPE_ERROR_TYPES.has(error.type);
}

/** Stripe's request ids are `req_…`; anything else in the header is not recorded. */
const requestIdOf = (a: StripeAnswer): string | null => (a.requestId !== null && /^req_[A-Za-z0-9_]{1,100}$/.test(a.requestId) ? a.requestId : null);

function baseResponse(a: StripeAnswer): Record<string, unknown> {
  return { httpStatus: a.status, requestId: requestIdOf(a), idempotentReplayed: a.idempotentReplayed };
}

function errorResponse(a: StripeAnswer, error: StripeError | null): Record<string, unknown> {
  const stripe = isStripeError(error);
  return {
    ...baseResponse(a),
    errorType: stripe ? error.type : null,
    errorCode: stripe ? error.code : null,
    stripeDeclineCode: stripe ? error.declineCode : null,
  };
}

/**
 * Non-2xx answers. Card errors are declines; 429 means nothing happened and another try may
 * work, and so does 401/403: Stripe refused our key (revoked, rotated, restricted) before doing
 * anything, and another gateway can still take the payment. Stripe calls a 5xx (api_error)
 * indeterminate, a 409 means our first request with the same key is still running, and an
 * `idempotency_error` means Stripe already holds a request under this key: any of them may have
 * charged, so they are timeouts (ask, never fail over). A request Stripe refused without
 * creating anything may succeed elsewhere (retryable); anything else is a final decline.
 */
function mapError(a: StripeAnswer): Mapped {
  const error = readError(isObject(a.body) ? a.body.error : null);
  const response = errorResponse(a, error);
  const message = (isStripeError(error) ? safeMessage(error.message) : null) ?? `Stripe answered HTTP ${a.status}.`;
  if (a.status === 429) return { outcome: 'retryable_error', reference: null, declineCode: 'rate_limited', message, response };
  // 402 is Stripe's card error status: a decline whatever `type` says (an emulator or a proxy may
  // send none, or another), so it never moves on to another gateway. Only codes Stripe itself
  // calls retryable (processing_error, try_again_later…) stay retryable, as for a card_error.
  if (a.status === 402) {
    return { ...mapCardError(error ?? NO_ERROR_DETAILS), reference: error?.paymentIntentId ?? null, message, response };
  }
  if (a.status >= 500 || a.status === 409 || error?.type === 'api_error' || error?.type === 'idempotency_error') {
    return { outcome: 'timeout', reference: null, declineCode: 'gateway_error', message, response };
  }
  if (a.status === 401 || a.status === 403) {
    return { outcome: 'retryable_error', reference: null, declineCode: 'gateway_unavailable', message, response };
  }
  if (error?.type === 'card_error') {
    return { ...mapCardError(error), reference: error.paymentIntentId, message, response };
  }
  // Stripe refused the request itself (an amount below its minimum, a currency this Stripe
  // account does not take): nothing was created, and another gateway may well take it.
  if (error?.type === 'invalid_request_error' && !error.paymentIntentId) {
    return { outcome: 'retryable_error', reference: null, declineCode: 'processing_error', message, response };
  }
  return { outcome: 'declined', reference: null, declineCode: 'processing_error', message, response };
}

/** A 2xx we cannot read: the operation may well have happened, so it is not a decline. */
function unreadable(a: StripeAnswer, what: string): Mapped {
  return {
    outcome: 'timeout', reference: null, declineCode: 'gateway_error',
    message: `Stripe returned an unrecognised ${what}; check its status before retrying elsewhere.`,
    response: baseResponse(a),
  };
}

/** Where Stripe wants the customer sent, if it named a page: only an http(s) URL is passed on. */
function redirectUrlOf(nextAction: unknown): string | null {
  if (!isObject(nextAction) || nextAction.type !== 'redirect_to_url' || !isObject(nextAction.redirect_to_url)) return null;
  const url = str(nextAction.redirect_to_url.url);
  if (!url) return null;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed.toString() : null;
  } catch {
    return null;
  }
}

/** The PaymentIntent's fields worth keeping: never the client secret, nor the redirect URL (it carries it). */
function intentResponse(a: StripeAnswer, intent: Json): Record<string, unknown> {
  const lastError = readError(intent.last_payment_error);
  const number = (v: unknown) => (typeof v === 'number' ? v : null);
  return {
    ...baseResponse(a),
    object: 'payment_intent', id: str(intent.id), status: str(intent.status),
    amount: number(intent.amount),
    currency: str(intent.currency)?.toUpperCase() ?? null,
    stripeDeclineCode: lastError?.declineCode ?? lastError?.code ?? null,
    captureMethod: str(intent.capture_method),
    amountCapturable: number(intent.amount_capturable),
    amountReceived: number(intent.amount_received),
    nextActionType: isObject(intent.next_action) ? str(intent.next_action.type) : null,
    cancellationReason: str(intent.cancellation_reason),
  };
}

/**
 * A PaymentIntent as a charge's outcome:
 * - `succeeded` → `succeeded` (captured); `requires_capture` → `succeeded` with `captured: false`
 *   (authorised, to be captured or canceled);
 * - `requires_action` with a `redirect_to_url` next action → `requires_action`, `nextAction` its
 *   URL, reference the PaymentIntent. Any other next action (`use_stripe_sdk`, which Stripe gives
 *   without a `return_url`, and only its client SDKs can run) has no page to send the customer
 *   to → `declined`/`authentication_required`; nothing was charged, and the PaymentIntent stays
 *   at Stripe waiting, holding no money;
 * - `requires_payment_method` → `declined` with its `last_payment_error`: a failed or abandoned
 *   3-D Secure challenge (`payment_intent_authentication_failure`) is `authentication_failed`, an
 *   off-session charge the issuer wants authenticated is `authentication_required`, a card
 *   decline after authentication is that decline;
 * - `canceled` → `declined`: `capture_failed` for a manual-capture PaymentIntent (an
 *   authorisation voided, by `cancel()` or by Stripe itself once left uncaptured past its
 *   validity, `cancellation_reason: automatic`); `processing_error` for any other (canceled
 *   before it was authorised, e.g. while waiting for 3-D Secure);
 * - `processing` → `timeout` (Stripe has not decided yet).
 */
function mapPaymentIntent(a: StripeAnswer, intent: Json): Mapped {
  const id = str(intent.id);
  const status = str(intent.status);
  const lastError = readError(intent.last_payment_error);
  const response = intentResponse(a, intent);
  const result = (outcome: GatewayOutcome, declineCode: string | null, message: string | null): Mapped => ({ outcome, reference: id, declineCode, message, response });
  switch (status) {
    case 'succeeded':
      return result('succeeded', null, null);
    case 'requires_capture':
      return { ...result('succeeded', null, null), captured: false };
    case 'requires_payment_method': {
      if (!lastError) return result('declined', 'card_declined', 'The card was declined.');
      const mapped = mapCardError(lastError);
      return result(mapped.outcome, mapped.declineCode, safeMessage(lastError.message));
    }
    case 'requires_action': {
      const url = redirectUrlOf(intent.next_action);
      if (url && id) {
        return {
          ...result('requires_action', 'authentication_required', 'The card requires 3-D Secure authentication: send the customer to nextAction.'),
          nextAction: { type: 'redirect_to_url', url },
        };
      }
      return result('declined', 'authentication_required', 'The card requires authentication, and Stripe gave no page to send the customer to (a charge without a return URL).');
    }
    case 'canceled': {
      const message = `The PaymentIntent was canceled${response.cancellationReason ? ` (${String(response.cancellationReason)})` : ''}.`;
      // Only a manual-capture PaymentIntent was ever an authorisation waiting to be captured.
      return result('declined', intent.capture_method === 'manual' ? 'capture_failed' : 'processing_error', message);
    }
    case 'processing':
      // Stripe has not decided yet: like a timeout, the outcome is still unknown.
      return result('timeout', 'timeout', 'Stripe is still processing the payment.');
    case null:
      // No status at all: an answer this connector cannot read, so the outcome is unknown, as
      // for any unreadable answer. Not a decline, which would let the payment go on to another
      // gateway while Stripe may have charged the card.
      return { ...unreadable(a, 'payment intent'), reference: id, response };
    default:
      return result('declined', 'processing_error', `Unexpected PaymentIntent status: ${status ?? 'none'}.`);
  }
}

export function mapChargeAnswer(a: StripeAnswer): Mapped {
  if (a.status < 200 || a.status >= 300) return mapError(a);
  if (!isObject(a.body) || a.body.object !== 'payment_intent') return unreadable(a, 'payment intent');
  return mapPaymentIntent(a, a.body);
}

/**
 * A refused capture or cancel. Uncertain answers (5xx, 409, an idempotency_error) stay `timeout`,
 * and "nothing happened, try again later" (429, our key refused, a card code Stripe calls
 * retryable) stays `retryable_error`. Anything else Stripe refused about this PaymentIntent, in an
 * error of its own shape, is final, as no other gateway can capture or cancel it: `charge_not_found` for an id Stripe does
 * not know, `failedCode` otherwise (`payment_intent_unexpected_state`: already captured, canceled,
 * or its authorisation expired; an amount above what is capturable).
 */
function mapIntentActionError(a: StripeAnswer, failedCode: string): Mapped {
  const mapped = mapError(a);
  if (mapped.outcome === 'timeout') return mapped;
  if (mapped.outcome === 'retryable_error' && mapped.declineCode !== 'processing_error') return mapped;
  const error = readError(isObject(a.body) ? a.body.error : null);
  const stripe = isStripeError(error);
  const response = { ...mapped.response, intentStatus: stripe ? error.paymentIntentStatus : null };
  // Not Stripe's own error (a proxy's page): mapError's final `processing_error`, nothing more read into it.
  if (!stripe) return { ...mapped, response };
  if (error.code === 'resource_missing') return { ...mapped, outcome: 'declined', reference: null, declineCode: 'charge_not_found', response };
  return { ...mapped, outcome: 'declined', reference: error.paymentIntentId, declineCode: failedCode, response };
}

/**
 * `POST /v1/payment_intents/{id}/capture`: `succeeded` once the PaymentIntent is `succeeded`.
 * `processing` (or a PaymentIntent still `requires_capture`, which a capture never answers) is
 * `timeout`: ask `status()`. An already captured, canceled or expired authorisation is
 * `declined`/`capture_failed`.
 */
export function mapCaptureAnswer(a: StripeAnswer): Mapped {
  if (a.status < 200 || a.status >= 300) return mapIntentActionError(a, 'capture_failed');
  if (!isObject(a.body) || a.body.object !== 'payment_intent') return unreadable(a, 'payment intent');
  const intent = a.body;
  const id = str(intent.id);
  const response = intentResponse(a, intent);
  switch (str(intent.status)) {
    case 'succeeded':
      return { outcome: 'succeeded', reference: id, declineCode: null, message: null, response };
    case null:
      return { ...unreadable(a, 'payment intent'), reference: id, response };
    case 'processing':
    case 'requires_capture':
      return { outcome: 'timeout', reference: id, declineCode: 'timeout', message: `Stripe has not finished the capture (${String(intent.status)}).`, response };
    default:
      return { outcome: 'declined', reference: id, declineCode: 'capture_failed', message: `The PaymentIntent is ${String(intent.status)}; it was not captured.`, response };
  }
}

/**
 * `POST /v1/payment_intents/{id}/cancel`: `succeeded` once the PaymentIntent is `canceled`, and
 * also when Stripe refuses because it is canceled already (by an earlier cancel under another
 * key, or by Stripe when the authorisation expired): either way the authorisation is void. A
 * PaymentIntent that has `succeeded` cannot be canceled (refund it instead):
 * `declined`/`processing_error`.
 */
export function mapCancelAnswer(a: StripeAnswer): Mapped {
  if (a.status < 200 || a.status >= 300) {
    const mapped = mapIntentActionError(a, 'processing_error');
    if (mapped.outcome === 'declined' && mapped.response.intentStatus === 'canceled') {
      return { ...mapped, outcome: 'succeeded', declineCode: null, message: null };
    }
    return mapped;
  }
  if (!isObject(a.body) || a.body.object !== 'payment_intent') return unreadable(a, 'payment intent');
  const intent = a.body;
  const id = str(intent.id);
  const response = intentResponse(a, intent);
  if (intent.status === 'canceled') return { outcome: 'succeeded', reference: id, declineCode: null, message: null, response };
  if (str(intent.status) === null) return { ...unreadable(a, 'payment intent'), reference: id, response };
  // A 2xx that is not canceled: Stripe never answers a cancel so; do not guess, ask status().
  return { outcome: 'timeout', reference: id, declineCode: 'gateway_error', message: `Stripe answered the cancel with a PaymentIntent that is ${String(intent.status)}.`, response };
}

const REFUND_ERROR_CODES: Readonly<Record<string, string>> = {
  charge_already_refunded: 'already_refunded',
  amount_too_large: 'refund_exceeds_charge',
  resource_missing: 'charge_not_found',
  charge_disputed: 'charge_not_refundable',
};

function mapRefund(a: StripeAnswer, refund: Json): Mapped {
  const id = str(refund.id);
  const status = str(refund.status);
  const response = {
    ...baseResponse(a),
    object: 'refund', id, status,
    amount: typeof refund.amount === 'number' ? refund.amount : null,
    currency: str(refund.currency)?.toUpperCase() ?? null,
    failureReason: str(refund.failure_reason),
  };
  if (status === 'succeeded') return { outcome: 'succeeded', reference: id, declineCode: null, message: null, response };
  // Accepted but not settled: Stripe may still fail or cancel it (an expired card, no bank
  // details given). Unknown until it settles, so ours stays pending, its amount reserved, and
  // recovery asks again.
  if (status === 'pending' || status === 'requires_action') {
    return { outcome: 'timeout', reference: id, declineCode: 'refund_pending', message: `Stripe has not settled the refund yet (${status}).`, response };
  }
  if (status === 'failed' || status === 'canceled') {
    return { outcome: 'declined', reference: id, declineCode: 'refund_failed', message: `The refund ${status}.`, response };
  }
  // A status this connector does not know: the refund exists, so it is not a failure to act on.
  return { outcome: 'timeout', reference: id, declineCode: 'refund_pending', message: `Unexpected refund status: ${status ?? 'none'}.`, response };
}

export function mapRefundAnswer(a: StripeAnswer): Mapped {
  if (a.status < 200 || a.status >= 300) {
    const mapped = mapError(a);
    const code = readError(isObject(a.body) ? a.body.error : null)?.code;
    // Refusals about this charge's refunds are final, whichever gateway is asked.
    if (mapped.outcome !== 'timeout' && code && REFUND_ERROR_CODES[code]) return { ...mapped, outcome: 'declined', declineCode: REFUND_ERROR_CODES[code] };
    return mapped;
  }
  if (!isObject(a.body) || a.body.object !== 'refund') return unreadable(a, 'refund');
  return mapRefund(a, a.body);
}

/** A PaymentMethod answer: its id, and only brand/last4/expiry of the card. */
export function mapPaymentMethodAnswer(a: StripeAnswer): Mapped {
  if (a.status < 200 || a.status >= 300) return mapError(a);
  if (!isObject(a.body) || a.body.object !== 'payment_method' || !str(a.body.id)) return unreadable(a, 'payment method');
  const card = isObject(a.body.card) ? a.body.card : {};
  return {
    outcome: 'succeeded', reference: str(a.body.id), declineCode: null, message: null,
    response: {
      ...baseResponse(a), object: 'payment_method', id: str(a.body.id),
      card: { brand: str(card.brand), last4: str(card.last4), expMonth: card.exp_month ?? null, expYear: card.exp_year ?? null },
    },
  };
}

export function mapCustomerAnswer(a: StripeAnswer): Mapped {
  if (a.status < 200 || a.status >= 300) return mapError(a);
  if (!isObject(a.body) || a.body.object !== 'customer' || !str(a.body.id)) return unreadable(a, 'customer');
  return { outcome: 'succeeded', reference: str(a.body.id), declineCode: null, message: null, response: { ...baseResponse(a), object: 'customer', id: str(a.body.id) } };
}

export type Lookup = { found: true; mapped: Mapped } | { found: false; mapped: Mapped | null };

/** The newest PaymentIntent carrying our key, or found=false when the search came back empty. */
export function mapChargeSearchAnswer(a: StripeAnswer): Lookup {
  if (a.status < 200 || a.status >= 300) return { found: false, mapped: mapError(a) };
  if (!isObject(a.body) || !Array.isArray(a.body.data)) return { found: false, mapped: unreadable(a, 'search result') };
  const intents = a.body.data.filter(isObject);
  if (intents.length === 0) return { found: false, mapped: null };
  const newest = intents.reduce((x, y) => (Number(y.created ?? 0) > Number(x.created ?? 0) ? y : x));
  return { found: true, mapped: mapPaymentIntent(a, newest) };
}

/**
 * `GET /v1/payment_intents/{id}` read for `status()`. `found`: the operation asked about is there
 * (for `charge`, the PaymentIntent itself, mapped as a charge). `absent`: it visibly did not
 * happen; `definitive` when it no longer can (see mapIntentLookup). `unknown`: Stripe could not
 * tell (an error, an answer this connector cannot read, `processing`).
 */
export type IntentLookup =
  | { state: 'found'; mapped: Mapped }
  | { state: 'absent'; mapped: Mapped; definitive: boolean }
  | { state: 'unknown'; mapped: Mapped };

/**
 * What a PaymentIntent says about an operation on it:
 * - `charge`: the PaymentIntent as a charge (see mapPaymentIntent). Stripe has no such id: absent,
 *   definitive (a retrieval by id does not lag as search does).
 * - `capture`: captured when `succeeded` (unless `amount_received` says 0). Still `requires_capture`:
 *   absent, not definitive (a capture still in flight may land). `canceled`, or never authorised
 *   (`requires_payment_method`, `requires_action`, `requires_confirmation`): absent, definitive,
 *   as no capture can succeed from there.
 * - `cancel`: canceled when `canceled` (by us or, for an expired authorisation, by Stripe: void
 *   either way). `succeeded`: absent, definitive (captured, it can no longer be canceled).
 *   Anything before that: absent, not definitive (a cancel in flight may land).
 * `processing` and statuses this connector does not know are unknown.
 */
export function mapIntentLookup(a: StripeAnswer, kind: 'charge' | 'capture' | 'cancel'): IntentLookup {
  if (a.status < 200 || a.status >= 300) {
    const error = readError(isObject(a.body) ? a.body.error : null);
    if (isStripeError(error) && error.code === 'resource_missing') {
      return {
        state: 'absent', definitive: true,
        mapped: { outcome: 'declined', reference: null, declineCode: 'not_found', message: 'Stripe has no such PaymentIntent.', response: errorResponse(a, error) },
      };
    }
    return { state: 'unknown', mapped: mapError(a) };
  }
  if (!isObject(a.body) || a.body.object !== 'payment_intent' || !str(a.body.status)) return { state: 'unknown', mapped: unreadable(a, 'payment intent') };
  const intent = a.body;
  if (kind === 'charge') return { state: 'found', mapped: mapPaymentIntent(a, intent) };
  const id = str(intent.id);
  const status = str(intent.status);
  const response = intentResponse(a, intent);
  const found = (): IntentLookup => ({ state: 'found', mapped: { outcome: 'succeeded', reference: id, declineCode: null, message: null, response } });
  const absent = (definitive: boolean): IntentLookup => ({
    state: 'absent', definitive,
    mapped: { outcome: 'declined', reference: id, declineCode: 'not_found', message: `The PaymentIntent is ${String(status)}: it was not ${kind === 'capture' ? 'captured' : 'canceled'}.`, response },
  });
  const unknown = (): IntentLookup => ({
    state: 'unknown',
    mapped: { outcome: 'timeout', reference: id, declineCode: 'status_unavailable', message: `The PaymentIntent is ${String(status)}: Stripe cannot tell yet.`, response },
  });
  if (kind === 'capture') {
    switch (status) {
      case 'succeeded':
        // Stripe says `succeeded` once the funds are captured; `amount_received` only checks it
        // (an emulator may leave it out; zero, Stripe would not have taken anything).
        return intent.amount_received === 0 ? unknown() : found();
      case 'requires_capture':
        return absent(false);
      case 'canceled':
      case 'requires_payment_method':
      case 'requires_action':
      case 'requires_confirmation':
        return absent(true);
      case null:
      default:
        return unknown();
    }
  }
  switch (status) {
    case 'canceled':
      return found();
    case 'succeeded':
      return absent(true);
    case 'requires_capture':
    case 'requires_payment_method':
    case 'requires_action':
    case 'requires_confirmation':
      return absent(false);
    case null:
    default:
      return unknown();
  }
}

/** One page of a charge's refunds: the one carrying our key, or where to continue. */
export function mapRefundListAnswer(a: StripeAnswer, idempotencyKey: string): Lookup & { nextCursor: string | null } {
  if (a.status < 200 || a.status >= 300) return { found: false, mapped: mapError(a), nextCursor: null };
  if (!isObject(a.body) || !Array.isArray(a.body.data)) return { found: false, mapped: unreadable(a, 'refund list'), nextCursor: null };
  const refunds = a.body.data.filter(isObject);
  const match = refunds.find((r) => isObject(r.metadata) && r.metadata[PAYORCH_IDEMPOTENCY_KEY] === idempotencyKey);
  if (match) return { found: true, mapped: mapRefund(a, match), nextCursor: null };
  const last = refunds[refunds.length - 1];
  const nextCursor = a.body.has_more === true && last ? str(last.id) : null;
  return { found: false, mapped: null, nextCursor };
}
