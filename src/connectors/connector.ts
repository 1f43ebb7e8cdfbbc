/**
 * The one interface every payment gateway connector implements.
 *
 * Callers (the payment and refund services) only ever see these normalised types; each
 * connector keeps its wire format inside its own folder (`simulator/`, `stripe/`).
 */

/**
 * What happened at the gateway, from the orchestrator's point of view.
 *
 * - `succeeded`: the gateway accepted the operation (money moved or a refund was accepted).
 * - `declined`: a final answer; retrying elsewhere would not help (card declines, invalid
 *   requests). `declineCode` says why.
 * - `retryable_error`: nothing happened (gateway error, rate limit, unreachable); the next
 *   candidate gateway may be tried.
 * - `timeout`: no answer in time; the operation MAY have happened. Repeat the same call with the
 *   same idempotency key on the same gateway, or call `status()`, to learn the outcome.
 * - `requires_action` (charges only): the card's issuer wants the customer to authenticate
 *   (3-D Secure) before it answers. `nextAction` says where to send the customer; once they
 *   come back, `status()` of the same charge tells how it ended. Nothing was charged yet, and the
 *   charge must never be tried at another gateway (the customer is authenticating at this one).
 */
export type GatewayOutcome = 'succeeded' | 'declined' | 'retryable_error' | 'timeout' | 'requires_action';

/**
 * Our snake_case codes carried in `GatewayResult.declineCode`. Declines: `card_declined`,
 * `insufficient_funds`, `expired_card`, `incorrect_cvc`, `incorrect_number`, `invalid_expiry`,
 * `authentication_required`, `lost_card`, `stolen_card`, `fraudulent`, `processing_error`
 * (the gateway refused the request itself: bad credentials, invalid parameters),
 * `invalid_token`, `charge_not_found`, `charge_not_refundable`, `refund_exceeds_charge`,
 * `already_refunded`, `refund_failed`, `authentication_failed` (the customer failed or abandoned a
 * 3-D Secure challenge), `capture_failed` (the authorisation could not be captured: expired or
 * voided), `invalid_amount` (an amount the gateway cannot represent
 * exactly; nothing was sent), `not_found` (status lookups).
 * Retryable: `gateway_error`, `gateway_unavailable`, `rate_limited`. Timeouts: `timeout`, and
 * `refund_pending` (a refund the gateway accepted but has not settled).
 * The field stays a plain string so a new connector can add a code without a type change.
 */
export type GatewayCode =
  | 'card_declined'
  | 'insufficient_funds'
  | 'expired_card'
  | 'incorrect_cvc'
  | 'incorrect_number'
  | 'invalid_expiry'
  | 'authentication_required'
  | 'authentication_failed'
  | 'capture_failed'
  | 'lost_card'
  | 'stolen_card'
  | 'fraudulent'
  | 'processing_error'
  | 'invalid_token'
  | 'charge_not_found'
  | 'charge_not_refundable'
  | 'refund_exceeds_charge'
  | 'already_refunded'
  | 'refund_failed'
  | 'invalid_amount'
  | 'refund_pending'
  | 'not_found'
  | 'status_unavailable'
  | 'gateway_error'
  | 'gateway_unavailable'
  | 'rate_limited'
  | 'timeout';

/** Raw card data. Lives in memory for the duration of one call only: never logged, never stored. */
export interface CardData {
  number: string;
  expMonth: number;
  expYear: number;
  cvc?: string;
}

export interface ChargeRequest {
  /** OUR idempotency key (derived from our ids); a repeat with the same key never charges twice. */
  idempotencyKey: string;
  /** Our `pay_` id, sent along so the gateway side can be reconciled with ours. */
  paymentId: string;
  /** Minor units. */
  amount: number;
  /** Upper-case ISO 4217. */
  currency: string;
  /**
   * A raw card, or a token: a test token such as `pm_card_visa`, or a gateway token returned by
   * `saveCard` on the same gateway.
   */
  source: { kind: 'card'; card: CardData } | { kind: 'token'; token: string };
  description?: string | null;
  metadata?: Record<string, string>;
  /**
   * `false`: authorise only (manual capture); a success then answers `captured: false` and the
   * money is taken later with `capture()`. Absent or true: authorise and capture at once.
   */
  capture?: boolean;
  /**
   * Where the gateway sends the customer back after a 3-D Secure challenge (an https URL of
   * ours). Without one the charge is off-session (the customer is not there to authenticate):
   * a gateway that can, answers `requires_action` all the same, with its own page as `nextAction`.
   */
  returnUrl?: string | null;
}

/** Takes (part of) an authorised charge; the rest of the authorisation is released. */
export interface CaptureRequest {
  idempotencyKey: string;
  /** Our `pay_` id. */
  paymentId: string;
  /** `GatewayResult.reference` of the authorised charge. */
  chargeReference: string;
  /** Minor units, at most the authorised amount. */
  amount: number;
  currency: string;
}

/** Voids an authorisation not captured (or a charge still waiting for 3-D Secure). */
export interface CancelRequest {
  idempotencyKey: string;
  /** Our `pay_` id. */
  paymentId: string;
  chargeReference: string;
}

export interface RefundRequest {
  idempotencyKey: string;
  /** Our `re_` id. */
  refundId: string;
  /** `GatewayResult.reference` of the succeeded charge. */
  chargeReference: string;
  amount: number;
  currency: string;
  reason?: string | null;
}

export interface StatusRequest {
  /** The idempotency key the original charge or refund was sent with. */
  idempotencyKey: string;
  /**
   * `charge`: the charge as it stands now (authorised, captured, waiting for or past 3-D
   * Secure); `capture`/`cancel`: whether that operation happened.
   */
  kind: 'charge' | 'refund' | 'capture' | 'cancel';
  /** Our `pay_` or `re_` id. */
  objectId: string;
  /**
   * For refunds: the charge reference the refund was made against. Optional; some connectors
   * (Stripe) can only look refunds up through their charge.
   */
  chargeReference?: string | null;
}

export interface SaveCardRequest {
  idempotencyKey: string;
  card: CardData;
}

export interface GatewayResult {
  outcome: GatewayOutcome;
  /** The gateway's id for the object (charge, refund); null when nothing was created. */
  reference: string | null;
  /** A `GatewayCode` for anything but `succeeded`; null on success. */
  declineCode: string | null;
  /** A short human-readable explanation, safe to show and store (never contains card data). */
  message: string | null;
  latencyMs: number;
  /** Redacted summary of what was sent, safe to store: never the card number (only last4/brand) nor the CVC. */
  request: Record<string, unknown>;
  /** Redacted summary of what came back. */
  response: Record<string, unknown>;
  /**
   * Of a charge that succeeded: false when it is only authorised (`capture: false`), the money
   * still to be captured; absent means captured.
   */
  captured?: boolean;
  /** Of a charge answering `requires_action`: where the customer authenticates. */
  nextAction?: { type: 'redirect_to_url'; url: string } | null;
}

/**
 * `found: false` with outcome `declined`/`not_found` means the gateway has no such object, so it
 * is safe to treat the operation as not having happened. `found: false` with outcome
 * `retryable_error` or `timeout` means the gateway could not tell right now.
 */
export interface StatusResult extends GatewayResult {
  found: boolean;
  /**
   * `found: false` is final at once: the gateway records an operation before answering it, so a
   * lookup never trails the operation, and has forgotten none (the built-in simulator, until it
   * forgets its oldest past SIMULATOR_MEMORY). Otherwise "not found" is trusted only for old
   * operations, since search indexes (Stripe's) lag behind.
   */
  definitive?: boolean;
}

export interface SaveCardResult extends GatewayResult {
  /** Opaque gateway token to charge later with `source: { kind: 'token', token }` on the same gateway. */
  token: string | null;
}

/**
 * A payment gateway connector. Implementations never throw for gateway-side problems: every
 * failure (declines, HTTP errors, timeouts, unreachable hosts) comes back as a `GatewayResult`.
 */
export interface Gateway {
  /** The registry key (`simulator`, `stripe`, …). */
  readonly type: string;
  /**
   * How long after a charge the same request repeated under its idempotency key is answered with
   * the first call's stored result instead of being run anew (Stripe keeps keys 24 h). Recovery
   * repeats a charge whose outcome is unknown only within this window, and only when it can
   * rebuild the request exactly; absent, it only asks `status()`.
   */
  readonly chargeReplayWindowMs?: number;
  charge(request: ChargeRequest): Promise<GatewayResult>;
  /** Captures an authorised charge (`charge` with `capture: false`); `succeeded` when the money was taken. */
  capture(request: CaptureRequest): Promise<GatewayResult>;
  /** Voids an uncaptured authorisation or a charge waiting for authentication; `succeeded` when voided. */
  cancel(request: CancelRequest): Promise<GatewayResult>;
  refund(request: RefundRequest): Promise<GatewayResult>;
  /** Looks an earlier charge or refund up by the idempotency key it was sent with. */
  status(request: StatusRequest): Promise<StatusResult>;
  saveCard(request: SaveCardRequest): Promise<SaveCardResult>;
}
