import { defineMoves } from '../../core/state-machine';
import type { EventType } from '../events/event.service';

export type InvoiceStatus = 'draft' | 'sent' | 'paid' | 'void';

/**
 * What moves an invoice (its `status`; how its charge stands is `paymentStatus`):
 * - `create`: a new draft (a merchant's, or a subscription's);
 * - `send`: a draft e-mailed to the customer (the merchant's `send`, a `send_invoice`
 *   subscription's invoice); `finalize`: a draft finalised without an e-mail (its charge
 *   settled, or it waits behind another invoice being collected);
 * - `pay`: a sent invoice whose charge succeeded, or the customer's credit covered;
 *   `pay_at_once`: a draft with nothing to pay (a free plan, credits covering it) paid as it is
 *   made; `mark_paid`: paid outside the service;
 * - `void`: forgiven, its number kept.
 */
export type InvoiceMove = 'create' | 'send' | 'finalize' | 'pay' | 'pay_at_once' | 'mark_paid' | 'void';

/** Every write of an invoice's status, with the event written with it and the time it stamps. */
export const INVOICE_MOVES = defineMoves<InvoiceStatus, InvoiceMove, Extract<EventType, `invoice.${string}`>, 'sentAt' | 'paidAt' | 'voidedAt'>({
  create: { from: [], to: 'draft', by: ['merchant', 'system'], event: 'invoice.created', stamps: null },
  send: { from: ['draft'], to: 'sent', by: ['merchant', 'system'], event: 'invoice.sent', stamps: 'sentAt' },
  finalize: { from: ['draft'], to: 'sent', by: ['system'], event: 'invoice.sent', stamps: 'sentAt' },
  pay: { from: ['sent'], to: 'paid', by: ['system', 'customer'], event: 'invoice.paid', stamps: 'paidAt' },
  pay_at_once: { from: ['draft'], to: 'paid', by: ['system'], event: 'invoice.paid', stamps: 'paidAt' },
  mark_paid: { from: ['draft', 'sent'], to: 'paid', by: ['merchant'], event: 'invoice.paid', stamps: 'paidAt' },
  void: { from: ['draft', 'sent'], to: 'void', by: ['merchant'], event: 'invoice.voided', stamps: 'voidedAt' },
}, { object: 'invoice', words: { create: 'created', send: 'sent', finalize: 'finalised', pay: 'paid', pay_at_once: 'paid', mark_paid: 'marked paid', void: 'voided' } });
