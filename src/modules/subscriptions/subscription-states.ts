import { invalidState } from '../../core/errors';

export type SubscriptionStatus = 'active' | 'past_due' | 'paused' | 'canceled';

/** What moves a subscription: a merchant's request or the billing run. */
export type SubscriptionMove =
  | 'pause' | 'resume' | 'resume_owing' | 'cancel'
  | 'charge_failed' | 'charge_succeeded' | 'invoice_voided' | 'dunning_exhausted' | 'period_end_cancel';

export type SubscriptionEventType =
  | 'subscription.updated' | 'subscription.paused' | 'subscription.resumed' | 'subscription.canceled' | 'subscription.past_due';

interface Transition {
  from: readonly SubscriptionStatus[];
  to: SubscriptionStatus;
  event: SubscriptionEventType;
}

/**
 * Every allowed move of a subscription, in one table: where it may start, where it ends and the
 * event written with it (in the same transaction). A new rule is one line here; the service and
 * the billing run consult `transition` and never test statuses on their own.
 */
export const SUBSCRIPTION_TRANSITIONS: Readonly<Record<SubscriptionMove, Transition>> = {
  pause: { from: ['active', 'past_due'], to: 'paused', event: 'subscription.paused' },
  resume: { from: ['paused'], to: 'active', event: 'subscription.resumed' },
  // Paused while past due, its invoice still unpaid: resumed into past due, that invoice still dunned.
  resume_owing: { from: ['paused'], to: 'past_due', event: 'subscription.resumed' },
  cancel: { from: ['active', 'past_due', 'paused'], to: 'canceled', event: 'subscription.canceled' },
  charge_failed: { from: ['active', 'past_due'], to: 'past_due', event: 'subscription.past_due' },
  charge_succeeded: { from: ['active', 'past_due'], to: 'active', event: 'subscription.updated' },
  // The merchant voided the invoice being dunned: nothing is owed any more.
  invoice_voided: { from: ['past_due'], to: 'active', event: 'subscription.updated' },
  dunning_exhausted: { from: ['past_due'], to: 'canceled', event: 'subscription.canceled' },
  period_end_cancel: { from: ['active', 'past_due'], to: 'canceled', event: 'subscription.canceled' },
};

/** The move's target and event; refused with 422 `invalid_state` when `from` may not make it. */
export function transition(from: SubscriptionStatus, move: SubscriptionMove): Transition {
  const rule = SUBSCRIPTION_TRANSITIONS[move];
  if (!rule.from.includes(from)) {
    throw invalidState(`A ${from.replace('_', ' ')} subscription cannot be ${MOVE_WORDS[move]}; allowed from ${rule.from.join(', ')}`);
  }
  return rule;
}

const MOVE_WORDS: Record<SubscriptionMove, string> = {
  pause: 'paused', resume: 'resumed', resume_owing: 'resumed', cancel: 'canceled', charge_failed: 'moved to past due',
  charge_succeeded: 'made active by a payment', invoice_voided: 'made active by voiding its invoice', dunning_exhausted: 'canceled by dunning', period_end_cancel: 'ended at period end',
};
