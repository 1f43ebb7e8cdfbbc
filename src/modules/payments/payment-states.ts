import { defineMoves } from '../../core/state-machine';
import type { EventType } from '../events/event.service';
import type { Payment } from './payment.types';

export type PaymentStatus = Payment['status'];

/**
 * What moves a payment. `create` writes the pending row before any gateway is asked; the
 * settling write then makes one of `succeed`, `fail`, `review` (recovery gave up asking) or
 * `leave_pending` (the outcome is still unknown: the attempts and gateway calls are written, the
 * status stays); `review_late_success` is a gateway's success reported for a payment already
 * recorded as not charged.
 */
export type PaymentMove =
  | 'create' | 'succeed' | 'authorize' | 'require_action' | 'fail' | 'review' | 'leave_pending' | 'review_late_success'
  | 'complete_action' | 'authorize_after_action' | 'fail_action' | 'capture' | 'cancel' | 'expire_authorization';

/** The moves of the settling write: one statement for many payments on PostgreSQL, guarded by their common `from`. */
export const SETTLING_MOVES = ['succeed', 'authorize', 'require_action', 'fail', 'review', 'leave_pending'] as const;
export type SettlingMove = (typeof SETTLING_MOVES)[number];

/** How a payment waiting for the customer's 3-D Secure answer ends (PaymentService.resolveAction). */
export const ACTION_MOVES = ['complete_action', 'authorize_after_action', 'fail_action'] as const;
export type ActionMove = (typeof ACTION_MOVES)[number];

/** The moves of an authorisation after it was made, or of a challenge the merchant gives up on. */
export type AuthorizationMove = 'capture' | 'cancel' | 'expire_authorization';

/**
 * Every write of a payment's status. No move stamps a time of its own (the row's `updated_at`
 * is written with every write); `canceled` is reached by a merchant's cancel or the expiry of an uncaptured authorisation.
 */
export const PAYMENT_MOVES = defineMoves<PaymentStatus, PaymentMove, Extract<EventType, `payment.${string}`>>({
  // POST /v1/payments, a hosted page's pay, the billing run's charge.
  create: { from: [], to: 'pending', by: ['merchant', 'customer', 'system'], event: null, stamps: null },
  succeed: { from: ['pending'], to: 'succeeded', by: ['system'], event: 'payment.succeeded', stamps: null },
  // captureMethod manual: the gateway authorised the amount; the merchant captures it later.
  authorize: { from: ['pending'], to: 'requires_capture', by: ['system'], event: 'payment.authorized', stamps: null },
  // The card's issuer asks the customer to authenticate (3-D Secure) first.
  require_action: { from: ['pending'], to: 'requires_action', by: ['system'], event: 'payment.requires_action', stamps: null },
  fail: { from: ['pending'], to: 'failed', by: ['system'], event: 'payment.failed', stamps: null },
  review: { from: ['pending'], to: 'requires_review', by: ['system'], event: 'payment.requires_review', stamps: null },
  leave_pending: { from: ['pending'], to: 'pending', by: ['system'], event: null, stamps: null },
  review_late_success: { from: ['failed', 'canceled'], to: 'requires_review', by: ['system'], event: 'payment.requires_review', stamps: null },
  // The customer answered the challenge (the gateway tells how it ended), or it expired unanswered.
  complete_action: { from: ['requires_action'], to: 'succeeded', by: ['customer', 'system'], event: 'payment.succeeded', stamps: null },
  authorize_after_action: { from: ['requires_action'], to: 'requires_capture', by: ['customer', 'system'], event: 'payment.authorized', stamps: null },
  fail_action: { from: ['requires_action'], to: 'failed', by: ['customer', 'system'], event: 'payment.failed', stamps: null },
  // POST /v1/payments/{id}/capture and /cancel; the expiry job voids what was not captured in time.
  capture: { from: ['requires_capture'], to: 'succeeded', by: ['merchant'], event: 'payment.succeeded', stamps: null },
  cancel: { from: ['requires_capture', 'requires_action'], to: 'canceled', by: ['merchant'], event: 'payment.canceled', stamps: null },
  expire_authorization: { from: ['requires_capture'], to: 'canceled', by: ['system'], event: 'payment.canceled', stamps: null },
}, {
  object: 'payment',
  words: {
    create: 'created', succeed: 'succeeded', authorize: 'authorized', require_action: 'sent to authentication', fail: 'failed', review: 'put under review',
    leave_pending: 'left pending', review_late_success: 'put under review', complete_action: 'completed', authorize_after_action: 'authorized',
    fail_action: 'failed', capture: 'captured', cancel: 'canceled', expire_authorization: 'voided',
  },
});

/** The payment as `move` leaves it at `at`, with the other fields the write changes. */
export function movedPayment(payment: Payment, move: PaymentMove, at: Date, changes: Partial<Omit<Payment, 'status'>> = {}): Payment {
  const time = at.toISOString();
  return { ...payment, ...changes, ...PAYMENT_MOVES.columns(move, time), updatedAt: time };
}
