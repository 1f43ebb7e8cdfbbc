/** Every failure a caller can act on is a DomainError; both transports map it once. */
export type ErrorCode =
  | 'https_required'
  | 'malformed_json'
  | 'invalid_parameter'
  | 'missing_parameter'
  | 'unknown_parameter'
  | 'missing_api_key'
  | 'invalid_api_key'
  | 'permission_denied'
  | 'mode_mismatch'
  | 'resource_not_found'
  | 'route_not_found'
  | 'method_not_allowed'
  | 'idempotency_key_reused'
  | 'idempotency_key_in_use'
  | 'duplicate_email'
  | 'payment_link_inactive'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'payment_not_refundable'
  | 'refund_exceeds_remaining'
  | 'invalid_state'
  | 'proration_unavailable'
  | 'invalid_proration_date'
  | 'no_gateway_available'
  | 'fx_rate_unavailable'
  | 'card_declined'
  | 'gateway_unavailable'
  | 'gateway_in_use'
  | 'checkout_session_in_use'
  | 'invoice_payment_in_progress'
  | 'payment_in_progress'
  | 'capture_exceeds_authorized'
  | 'capture_failed'
  | 'limit_exceeded'
  | 'rate_limited'
  | 'too_many_attempts'
  | 'customer_exists'
  | 'insufficient_credit'
  | 'query_too_complex'
  | 'export_not_ready'
  | 'export_expired'
  | 'internal_error'
  | 'service_unavailable';

const STATUS_BY_CODE: Record<ErrorCode, number> = {
  https_required: 301,
  malformed_json: 400,
  invalid_parameter: 400,
  missing_parameter: 400,
  unknown_parameter: 400,
  query_too_complex: 400,
  missing_api_key: 401,
  invalid_api_key: 401,
  permission_denied: 403,
  mode_mismatch: 403,
  resource_not_found: 404,
  route_not_found: 404,
  method_not_allowed: 405,
  idempotency_key_reused: 409,
  idempotency_key_in_use: 409,
  duplicate_email: 409,
  gateway_in_use: 409,
  // Another pay of the same checkout session is being processed: try again in a moment.
  checkout_session_in_use: 409,
  // A card charge of the invoice is being processed: pay, mark-paid and void wait for its result.
  invoice_payment_in_progress: 409,
  // A capture or cancel of the payment is being processed (or its 3-D Secure answer read): try again in a moment.
  payment_in_progress: 409,
  // An export's file asked for while the export is still queued or running.
  export_not_ready: 409,
  payment_link_inactive: 410,
  // An export's file past its expiresAt (24 h): deleted, create the export again.
  export_expired: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  payment_not_refundable: 422,
  refund_exceeds_remaining: 422,
  invalid_state: 422,
  // A capture larger than what the authorisation holds (amountCapturable).
  capture_exceeds_authorized: 422,
  // The gateway refused the capture (the authorisation expired or was voided there).
  capture_failed: 422,
  // A plan change whose currency or billing interval differs from the subscription's.
  proration_unavailable: 422,
  // A prorationDate outside the current period, after the subscription clock's now, or before an earlier change in the period.
  invalid_proration_date: 422,
  no_gateway_available: 422,
  fx_rate_unavailable: 422,
  card_declined: 422,
  limit_exceeded: 422,
  // An anonymous payer on a hosted page gave the e-mail of an existing customer (API.md §11).
  customer_exists: 422,
  // A debit of a customer's credit balance larger than the balance (API.md §7): a balance never goes below 0.
  insufficient_credit: 422,
  rate_limited: 429,
  // Public pays past their caps of failed attempts (API.md §11): never sent to a gateway.
  too_many_attempts: 429,
  internal_error: 500,
  service_unavailable: 503,
  // A gateway that could not do what was asked (outage, timeout): try again; the key is freed.
  gateway_unavailable: 503,
};

export class DomainError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly param?: string,
    // The driver's own error behind a translated one: logged, never shown to the caller.
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DomainError';
    this.status = STATUS_BY_CODE[code];
  }
}

export const invalidParameter = (param: string, message: string) =>
  new DomainError('invalid_parameter', message, param);

export const notFound = (resource: string, id: string, param = 'id') =>
  new DomainError('resource_not_found', `No such ${resource}: '${id}'`, param);

export const invalidState = (message: string) => new DomainError('invalid_state', message);

export function isDomainError(err: unknown): err is DomainError {
  return err instanceof DomainError;
}
