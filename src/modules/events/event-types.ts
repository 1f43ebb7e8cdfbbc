/** Every event type the service writes, as REST, GraphQL and webhooks name them. */
export const EVENT_TYPES = [
  'customer.created', 'customer.updated',
  'product.created', 'product.updated', 'price.created', 'price.updated',
  'payment.succeeded', 'payment.failed', 'payment.requires_review', 'payment.updated',
  'payment.authorized', 'payment.requires_action', 'payment.canceled',
  'refund.created', 'refund.succeeded', 'refund.failed', 'refund.requires_review',
  'checkout.session.completed', 'checkout.session.expired',
  'subscription.created', 'subscription.updated', 'subscription.paused', 'subscription.resumed',
  'subscription.canceled', 'subscription.past_due',
  'invoice.created', 'invoice.sent', 'invoice.paid', 'invoice.payment_failed', 'invoice.payment_action_required', 'invoice.voided',
  'payment_link.created', 'payment_link.updated',
  'tax_rate.created', 'tax_rate.updated',
  'account.public_declines_exceeded',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
