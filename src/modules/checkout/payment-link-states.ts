import { defineMoves } from '../../core/state-machine';
import type { EventType } from '../events/event.service';
import type { PAYMENT_LINK_STATUSES } from './checkout.inputs';

export type PaymentLinkStatus = (typeof PAYMENT_LINK_STATUSES)[number];

/** What moves a payment link: its creation (active), and the merchant's `status` in `PATCH /v1/payment-links/{id}`. */
export type PaymentLinkMove = 'create' | 'deactivate' | 'activate';

export const PAYMENT_LINK_MOVES = defineMoves<PaymentLinkStatus, PaymentLinkMove, Extract<EventType, `payment_link.${string}`>>({
  create: { from: [], to: 'active', by: ['merchant'], event: 'payment_link.created', stamps: null },
  deactivate: { from: ['active'], to: 'inactive', by: ['merchant'], event: 'payment_link.updated', stamps: null },
  activate: { from: ['inactive'], to: 'active', by: ['merchant'], event: 'payment_link.updated', stamps: null },
}, { object: 'payment link', words: { create: 'created', deactivate: 'deactivated', activate: 'activated' } });

/** The move that takes a link to `status`. */
export function linkMoveTo(status: PaymentLinkStatus): PaymentLinkMove {
  return status === 'active' ? 'activate' : 'deactivate';
}
