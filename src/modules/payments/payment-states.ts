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
export type PaymentMove = 'create' | 'succeed' | 'fail' | 'review' | 'leave_pending' | 'review_late_success';

/** The moves of the settling write: one statement for many payments on PostgreSQL, guarded by their common `from`. */
export const SETTLING_MOVES = ['succeed', 'fail', 'review', 'leave_pending'] as const;
export type SettlingMove = (typeof SETTLING_MOVES)[number];

/**
 * Every write of a payment's status. No move stamps a time of its own (the row's `updated_at`
 * is written with every write); `canceled` is a status of the API that no move reaches yet.
 */
export const PAYMENT_MOVES = defineMoves<PaymentStatus, PaymentMove, Extract<EventType, `payment.${string}`>>({
  // POST /v1/payments, a hosted page's pay, the billing run's charge.
  create: { from: [], to: 'pending', by: ['merchant', 'customer', 'system'], event: null, stamps: null },
  succeed: { from: ['pending'], to: 'succeeded', by: ['system'], event: 'payment.succeeded', stamps: null },
  fail: { from: ['pending'], to: 'failed', by: ['system'], event: 'payment.failed', stamps: null },
  review: { from: ['pending'], to: 'requires_review', by: ['system'], event: 'payment.requires_review', stamps: null },
  leave_pending: { from: ['pending'], to: 'pending', by: ['system'], event: null, stamps: null },
  review_late_success: { from: ['failed', 'canceled'], to: 'requires_review', by: ['system'], event: 'payment.requires_review', stamps: null },
}, {
  object: 'payment',
  words: { create: 'created', succeed: 'succeeded', fail: 'failed', review: 'put under review', leave_pending: 'left pending', review_late_success: 'put under review' },
});

/** The payment as `move` leaves it at `at`, with the other fields the write changes. */
export function movedPayment(payment: Payment, move: PaymentMove, at: Date, changes: Partial<Omit<Payment, 'status'>> = {}): Payment {
  const time = at.toISOString();
  return { ...payment, ...changes, ...PAYMENT_MOVES.columns(move, time), updatedAt: time };
}
