import { defineMoves } from '../../core/state-machine';
import type { EventType } from '../events/event.service';
import type { CHECKOUT_SESSION_STATUSES } from './checkout.inputs';

export type CheckoutSessionStatus = (typeof CHECKOUT_SESSION_STATUSES)[number];

/**
 * What moves a checkout session: `create` (open), `create_paid` (a subscription's retry whose
 * charge already paid the invoice: the session is made complete), `complete` (its pay succeeded:
 * the customer's request, or the reconciling job from the payment that holds it) and `expire`
 * (the merchant's `POST /{id}/expire`, or the expiry job once it is past `expiresAt`).
 * A pay's claim (`paying_token`) is not a status: it is the store's.
 */
export type CheckoutSessionMove = 'create' | 'create_paid' | 'complete' | 'expire';

export type CheckoutSessionStamp = 'completedAt' | 'expiredAt';

export const CHECKOUT_SESSION_MOVES = defineMoves<CheckoutSessionStatus, CheckoutSessionMove, Extract<EventType, `checkout.session.${string}`>, CheckoutSessionStamp>({
  create: { from: [], to: 'open', by: ['merchant'], event: null, stamps: null },
  create_paid: { from: [], to: 'complete', by: ['merchant'], event: 'checkout.session.completed', stamps: 'completedAt' },
  complete: { from: ['open'], to: 'complete', by: ['customer', 'system'], event: 'checkout.session.completed', stamps: 'completedAt' },
  expire: { from: ['open'], to: 'expired', by: ['merchant', 'system'], event: 'checkout.session.expired', stamps: 'expiredAt' },
}, { object: 'checkout session', words: { create: 'created', create_paid: 'created paid', complete: 'paid', expire: 'expired' } });
