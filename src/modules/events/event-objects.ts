import type { Customer } from '../customers/customer.store';
import type { Product, Price } from '../catalog/catalog.store';
import type { Payment } from '../payments/payment.types';
import type { Refund } from '../payments/refund.types';
import type { CheckoutSession } from '../checkout/checkout-session.service';
import type { PaymentLink } from '../checkout/payment-link.service';
import type { Subscription } from '../subscriptions/subscription-view';
import type { Invoice } from '../invoices/invoice.service';
import type { AccountSettings } from '../accounts/account.service';

type Each<Prefix extends string, Suffixes extends string, Object> = { [S in Suffixes as `${Prefix}.${S}`]: Object };

/**
 * What each event type carries as `data.object`: the resource as the API returns it (API.md §13).
 * The one map from type to payload, so a service records an event with its own object's type and
 * the compiler checks the pair (`record(ctx, t, 'invoice.paid', invoice)`), with no cast.
 */
export type EventObjects =
  & Each<'customer', 'created' | 'updated', Customer>
  & Each<'product', 'created' | 'updated', Product>
  & Each<'price', 'created' | 'updated', Price>
  & Each<'payment', 'succeeded' | 'failed' | 'requires_review' | 'updated', Payment>
  & Each<'refund', 'created' | 'succeeded' | 'failed' | 'requires_review', Refund>
  & Each<'checkout.session', 'completed' | 'expired', CheckoutSession>
  & Each<'subscription', 'created' | 'updated' | 'paused' | 'resumed' | 'canceled' | 'past_due', Subscription>
  & Each<'invoice', 'created' | 'sent' | 'paid' | 'payment_failed' | 'voided', Invoice>
  & Each<'payment_link', 'created' | 'updated', PaymentLink>
  & Each<'account', 'public_declines_exceeded', AccountSettings>;
