import { defineMoves } from '../../core/state-machine';
import type { EventType } from '../events/event.service';
import type { Refund } from './refund.types';

export type RefundStatus = Refund['status'];

/**
 * What moves a refund: `create` writes the pending row with its amount reserved; the gateway's
 * answer then makes `succeed` or `fail` (which gives the amount back); `review_late_success` is
 * a refund the gateway reports made after it was recorded failed (the amount counted again).
 */
export type RefundMove = 'create' | 'succeed' | 'fail' | 'review_late_success';

/** Every write of a refund's status; none stamps a time of its own (`updated_at` goes with every write). */
export const REFUND_MOVES = defineMoves<RefundStatus, RefundMove, Extract<EventType, `refund.${string}`>>({
  create: { from: [], to: 'pending', by: ['merchant'], event: 'refund.created', stamps: null },
  // The gateway's answer, to the request or to recovery.
  succeed: { from: ['pending'], to: 'succeeded', by: ['system'], event: 'refund.succeeded', stamps: null },
  fail: { from: ['pending'], to: 'failed', by: ['system'], event: 'refund.failed', stamps: null },
  review_late_success: { from: ['failed'], to: 'requires_review', by: ['system'], event: 'refund.requires_review', stamps: null },
}, { object: 'refund', words: { create: 'created', succeed: 'succeeded', fail: 'failed', review_late_success: 'put under review' } });

/** The refund as `move` leaves it at `at`, with the other fields the write changes. */
export function movedRefund(refund: Refund, move: RefundMove, at: Date, changes: Partial<Omit<Refund, 'status'>> = {}): Refund {
  const time = at.toISOString();
  return { ...refund, ...changes, ...REFUND_MOVES.columns(move, time), updatedAt: time };
}
