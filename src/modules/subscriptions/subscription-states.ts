import { defineMoves } from '../../core/state-machine';

export type SubscriptionStatus = 'active' | 'past_due' | 'paused' | 'canceled';

/** What moves a subscription: a merchant's request or the billing run. */
export type SubscriptionMove =
  | 'create' | 'pause' | 'resume' | 'resume_owing' | 'cancel'
  | 'charge_failed' | 'authentication_required' | 'charge_succeeded' | 'invoice_voided' | 'dunning_exhausted' | 'period_end_cancel';

export type SubscriptionEventType =
  | 'subscription.updated' | 'subscription.paused' | 'subscription.resumed' | 'subscription.canceled' | 'subscription.past_due';

/**
 * Every allowed move of a subscription, in one table: where it may start, where it ends, who
 * makes it, the event written with it (in the same transaction) and the time it stamps. A new
 * rule is one line here; the service and the billing run write a status only through it
 * (`BillingService.change` and `write` take a move), never spelled where they write.
 */
export const SUBSCRIPTION_MOVES = defineMoves<SubscriptionStatus, SubscriptionMove, SubscriptionEventType | 'subscription.created', 'pausedAt'>({
  create: { from: [], to: 'active', by: ['merchant', 'customer'], event: 'subscription.created', stamps: null },
  pause: { from: ['active', 'past_due'], to: 'paused', by: ['merchant'], event: 'subscription.paused', stamps: 'pausedAt' },
  resume: { from: ['paused'], to: 'active', by: ['merchant'], event: 'subscription.resumed', stamps: null },
  // Paused while past due, its invoice still unpaid: resumed into past due, that invoice still dunned.
  resume_owing: { from: ['paused'], to: 'past_due', by: ['merchant'], event: 'subscription.resumed', stamps: null },
  cancel: { from: ['active', 'past_due', 'paused'], to: 'canceled', by: ['merchant'], event: 'subscription.canceled', stamps: null },
  charge_failed: { from: ['active', 'past_due'], to: 'past_due', by: ['system'], event: 'subscription.past_due', stamps: null },
  // Its invoice's charge waits for the customer's 3-D Secure authentication: owed, not failed (no dunning failure counted).
  authentication_required: { from: ['active'], to: 'past_due', by: ['system'], event: 'subscription.past_due', stamps: null },
  charge_succeeded: { from: ['active', 'past_due'], to: 'active', by: ['system', 'customer'], event: 'subscription.updated', stamps: null },
  // The merchant voided the invoice being dunned: nothing is owed any more.
  invoice_voided: { from: ['past_due'], to: 'active', by: ['system'], event: 'subscription.updated', stamps: null },
  dunning_exhausted: { from: ['past_due'], to: 'canceled', by: ['system'], event: 'subscription.canceled', stamps: null },
  period_end_cancel: { from: ['active', 'past_due'], to: 'canceled', by: ['system'], event: 'subscription.canceled', stamps: null },
}, {
  object: 'subscription',
  words: {
    create: 'created', pause: 'paused', resume: 'resumed', resume_owing: 'resumed', cancel: 'canceled', charge_failed: 'moved to past due', authentication_required: 'moved to past due',
    charge_succeeded: 'made active by a payment', invoice_voided: 'made active by voiding its invoice', dunning_exhausted: 'canceled by dunning', period_end_cancel: 'ended at period end',
  },
});

/** The move's rule (target and event); refused with 422 `invalid_state` when `from` may not make it. */
export function transition(from: SubscriptionStatus, move: SubscriptionMove) {
  return SUBSCRIPTION_MOVES.check(from, move);
}
