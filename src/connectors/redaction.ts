import { redactCardNumbers, summarizeCard } from './card';
import type { CancelRequest, CaptureRequest, ChargeRequest, RefundRequest, SaveCardRequest, StatusRequest } from './connector';

/*
 * Request summaries are built field by field from our own request types, never by copying a
 * wire body: that is what keeps card numbers and CVCs out of `GatewayResult.request`.
 */

export function summarizeChargeRequest(r: ChargeRequest): Record<string, unknown> {
  return {
    operation: 'charge',
    idempotencyKey: r.idempotencyKey,
    paymentId: r.paymentId,
    amount: r.amount,
    currency: r.currency,
    source: r.source.kind === 'card' ? { kind: 'card', ...summarizeCard(r.source.card) } : { kind: 'token', token: r.source.token },
    description: r.description ?? null,
    metadata: r.metadata ?? {},
    // Only when set, so a plain charge's summary stays as it was.
    ...(r.capture !== undefined ? { capture: r.capture } : {}),
    ...(r.returnUrl ? { returnUrl: r.returnUrl } : {}),
  };
}

export function summarizeCaptureRequest(r: CaptureRequest): Record<string, unknown> {
  return {
    operation: 'capture',
    idempotencyKey: r.idempotencyKey,
    paymentId: r.paymentId,
    chargeReference: r.chargeReference,
    amount: r.amount,
    currency: r.currency,
  };
}

export function summarizeCancelRequest(r: CancelRequest): Record<string, unknown> {
  return { operation: 'cancel', idempotencyKey: r.idempotencyKey, paymentId: r.paymentId, chargeReference: r.chargeReference };
}

export function summarizeRefundRequest(r: RefundRequest): Record<string, unknown> {
  return {
    operation: 'refund',
    idempotencyKey: r.idempotencyKey,
    refundId: r.refundId,
    chargeReference: r.chargeReference,
    amount: r.amount,
    currency: r.currency,
    reason: r.reason ?? null,
  };
}

export function summarizeStatusRequest(r: StatusRequest): Record<string, unknown> {
  return {
    operation: 'status',
    idempotencyKey: r.idempotencyKey,
    kind: r.kind,
    objectId: r.objectId,
    chargeReference: r.chargeReference ?? null,
  };
}

export function summarizeSaveCardRequest(r: SaveCardRequest): Record<string, unknown> {
  return { operation: 'save_card', idempotencyKey: r.idempotencyKey, card: summarizeCard(r.card) };
}

/** Gateway messages are stored and may be shown; strip anything that looks like a card number. */
export function safeMessage(message: unknown): string | null {
  if (typeof message !== 'string' || message.length === 0) return null;
  return redactCardNumbers(message).slice(0, 500);
}

/** Milliseconds since `startedAt` (a `performance.now()` reading), rounded. */
export function elapsedMs(startedAt: number): number {
  return Math.max(0, Math.round(performance.now() - startedAt));
}
