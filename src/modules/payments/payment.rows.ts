import type { RequestContext } from '../../core/context';
import { isoTime, readJson } from '../../db/database';
import type { Metadata } from '../../core/validation';
import type { Payment, PaymentAttempt, PaymentMethodDetails } from './payment.types';
import { PAYMENT_MOVES } from './payment-states';

/**
 * The two writes of a payment as rows keyed by column, shared by the SQLite statements and the
 * batched PostgreSQL ones, so both dialects write the same values. Each column carries its
 * PostgreSQL type for `json_to_recordset` definitions; times are Dates (the database layer
 * encodes them per dialect, JSON carries them as ISO text).
 */
type Columns = ReadonlyArray<readonly [column: string, pgType: string]>;

/**
 * The pending row written before any gateway is called (its `lease_until` and `pending_since`
 * come from the database's clock, in the statement: see LeaseStore).
 */
export const PENDING_COLUMNS: Columns = [
  ['id', 'text'], ['account_id', 'text'], ['mode', 'text'], ['customer_id', 'text'], ['amount', 'bigint'], ['currency', 'text'],
  ['original_currency', 'text'], ['original_amount', 'bigint'], ['exchange_rate', 'text'], ['payment_method', 'text'],
  ['payment_method_details', 'text'], ['description', 'text'], ['receipt_email', 'text'], ['metadata', 'text'], ['status', 'text'], ['amount_refunded', 'bigint'],
  ['routing_plan', 'text'], ['attempts', 'text'], ['invoice_id', 'text'], ['subscription_id', 'text'], ['checkout_session_id', 'text'],
  ['payment_link_id', 'text'], ['created_at', 'timestamptz'], ['updated_at', 'timestamptz'], ['search_text', 'text'],
  ['idempotency_key', 'text'], ['capture_method', 'text'], ['return_url', 'text'],
];

/**
 * `idempotencyKey`: the key claimed in the same write (see ObjectClaim), if any; `returnUrl`: where
 * the customer goes once a 3-D Secure challenge is answered.
 */
export function pendingRow(
  ctx: RequestContext, payment: Payment, plan: string, searchText: string, idempotencyKey: string | null, returnUrl: string | null = null,
): Record<string, unknown> {
  const created = new Date(payment.createdAt);
  return {
    id: payment.id, account_id: ctx.accountId, mode: ctx.mode, customer_id: payment.customerId, amount: payment.amount,
    currency: payment.currency, original_currency: payment.originalCurrency, original_amount: payment.originalAmount,
    exchange_rate: payment.exchangeRate, payment_method: payment.paymentMethod,
    payment_method_details: JSON.stringify(payment.paymentMethodDetails), description: payment.description, receipt_email: payment.receiptEmail,
    metadata: JSON.stringify(payment.metadata), status: PAYMENT_MOVES.rule('create').to, amount_refunded: 0, routing_plan: plan, attempts: '[]',
    invoice_id: payment.invoiceId, subscription_id: payment.subscriptionId, checkout_session_id: payment.checkoutSessionId,
    payment_link_id: payment.paymentLinkId, created_at: created, updated_at: created, search_text: searchText,
    idempotency_key: idempotencyKey, capture_method: payment.captureMethod, return_url: returnUrl,
  };
}

/** What the settling write changes on a pending payment (only while it is still pending). */
export const SETTLING_COLUMNS: Columns = [
  ['status', 'text'], ['failure_code', 'text'], ['failure_message', 'text'], ['gateway_id', 'text'], ['gateway_reference', 'text'],
  ['attempts', 'text'], ['updated_at', 'timestamptz'], ['amount_capturable', 'bigint'], ['amount_captured', 'bigint'], ['next_action', 'text'],
  ['action_expires_at', 'timestamptz'], ['capture_before', 'timestamptz'],
];

/** How long a 3-D Secure challenge waits for the customer before the payment fails (`authentication_expired`). */
export const ACTION_LIFETIME_MS = 30 * 60_000;
/** How long an authorisation waits for its capture when the gateway sets no `captureWindowDays`. */
export const DEFAULT_CAPTURE_WINDOW_DAYS = 7;

/**
 * The statuses whose charge object exists at the gateway: its reference is kept (refunds,
 * captures, voids, look-ups; a voided authorisation's, to reconcile it with the gateway).
 */
const KEEPS_REFERENCE = new Set<Payment['status']>(['succeeded', 'requires_capture', 'requires_action', 'canceled']);

/**
 * The settling write's values. `captureWindowDays`: the authorising gateway's, for the deadline
 * of an uncaptured authorisation (the expiry job voids it then).
 */
export function settlingRow(done: Payment, reference: string | null, captureWindowDays = DEFAULT_CAPTURE_WINDOW_DAYS): Record<string, unknown> {
  const at = new Date(done.updatedAt);
  return {
    status: done.status, failure_code: done.failureCode, failure_message: done.failureMessage, gateway_id: done.gatewayId,
    // The gateway's reference is kept only for a charge that took, holds or may take the money.
    gateway_reference: KEEPS_REFERENCE.has(done.status) ? reference : null,
    attempts: JSON.stringify(done.attempts), updated_at: at,
    amount_capturable: done.amountCapturable, amount_captured: done.amountCaptured,
    next_action: done.nextAction ? JSON.stringify(done.nextAction) : null,
    action_expires_at: done.status === 'requires_action' ? new Date(at.getTime() + ACTION_LIFETIME_MS) : null,
    capture_before: done.status === 'requires_capture' ? new Date(at.getTime() + captureWindowDays * 86_400_000) : null,
  };
}

export function columnList(columns: Columns, prefix = ''): string {
  return columns.map(([c]) => `${prefix}${c}`).join(', ');
}

/** `a text, b bigint, …` for `json_to_recordset(…) AS x(…)`. */
export function recordsetDefinition(columns: Columns): string {
  return columns.map(([c, t]) => `${c} ${t}`).join(', ');
}

/** The columns a payment is read from. */
export const PAYMENT_COLUMNS =
  'id, mode, customer_id, amount, currency, original_currency, original_amount, exchange_rate, payment_method, payment_method_details, description, receipt_email, metadata, status, failure_code, failure_message, amount_refunded, gateway_id, attempts, invoice_id, subscription_id, checkout_session_id, payment_link_id, created_at, updated_at, capture_method, amount_capturable, amount_captured, next_action';

/** Attempts as stored; older rows named the fields `gatewayId`/`latencyMs`. */
function readAttempts(raw: unknown): PaymentAttempt[] {
  const stored = readJson<Array<Partial<PaymentAttempt> & { gatewayId?: string; latencyMs?: number }>>(raw, []);
  return stored.map((a) => ({ gateway: a.gateway ?? a.gatewayId ?? '', outcome: a.outcome ?? '', code: a.code ?? null, latency: a.latency ?? a.latencyMs ?? 0 }));
}

/** What `search` matches besides the id and the customer's e-mail: description, receipt e-mail and metadata values. */
export function searchText(p: Pick<Payment, 'description' | 'receiptEmail' | 'metadata'>): string {
  return [p.description ?? '', p.receiptEmail ?? '', ...Object.values(p.metadata)].join('\n').toLowerCase();
}

export function toApiPayment(row: Record<string, unknown>): Payment {
  const amount = Number(row.amount);
  const refundedAmount = Number(row.amount_refunded ?? 0);
  return {
    id: row.id as string,
    object: 'payment',
    livemode: row.mode === 'live',
    customerId: (row.customer_id as string | null) ?? null,
    amount,
    currency: row.currency as string,
    originalCurrency: row.original_currency as string,
    originalAmount: row.original_amount == null ? null : Number(row.original_amount),
    exchangeRate: (row.exchange_rate as string | null) ?? null,
    paymentMethod: row.payment_method as string,
    paymentMethodDetails: readJson<PaymentMethodDetails>(row.payment_method_details, { type: 'card', brand: 'unknown', last4: '', expMonth: null, expYear: null, fingerprint: null }),
    description: (row.description as string | null) ?? null,
    receiptEmail: (row.receipt_email as string | null) ?? null,
    metadata: readJson<Metadata>(row.metadata, {}),
    status: row.status as Payment['status'],
    failureCode: (row.failure_code as string | null) ?? null,
    failureMessage: (row.failure_message as string | null) ?? null,
    captureMethod: (row.capture_method as Payment['captureMethod'] | undefined) ?? 'automatic',
    amountCapturable: Number(row.amount_capturable ?? 0),
    amountCaptured: Number(row.amount_captured ?? 0),
    nextAction: readJson<Payment['nextAction']>(row.next_action, null),
    amountRefunded: refundedAmount,
    // Refunds apply to what was captured: a partial capture is wholly refunded at its amount.
    refunded: refundedAmount > 0 && refundedAmount >= Number(row.amount_captured ?? amount),
    gatewayId: (row.gateway_id as string | null) ?? null,
    attempts: readAttempts(row.attempts),
    invoiceId: (row.invoice_id as string | null) ?? null,
    subscriptionId: (row.subscription_id as string | null) ?? null,
    checkoutSessionId: (row.checkout_session_id as string | null) ?? null,
    paymentLinkId: (row.payment_link_id as string | null) ?? null,
    createdAt: isoTime(row.created_at) as string,
    updatedAt: isoTime(row.updated_at) as string,
  };
}
