import { Args, Ctx, FieldResolver, Resolver, Root, createUnionType } from 'type-graphql';
import type { GqlContext } from './context';
import { NESTED_LIST_DESCRIPTION, NestedListArgs, nestedLimit } from './types/common';
import { AccountType } from './account.resolver';
import { PriceType, ProductType } from './catalog.resolver';
import { CheckoutSessionType } from './checkout-session.resolver';
import { CustomerType } from './customer.resolver';
import { EventType } from './event.resolver';
import { GatewayType } from './gateway.resolver';
import { InvoiceType } from './invoice.resolver';
import { PaymentLinkType } from './payment-link.resolver';
import { GatewayTransactionType, PaymentMethodType } from './payment-method.resolver';
import { PaymentType, RefundType } from './payment.resolver';
import { SubscriptionType } from './subscription.resolver';
import { TaxRateType } from './tax-rate.resolver';
import { WebhookAttemptType, WebhookEndpointType } from './webhook.resolver';
import type { CustomerRecord } from '../src/modules/customers/customer.service';
import type { ApiEvent } from '../src/modules/events/event.store';
import type { Invoice } from '../src/modules/invoices/invoice.service';
import type { GatewayTransaction } from '../src/modules/payments/gateway-transaction.store';
import type { Payment } from '../src/modules/payments/payment.service';
import type { Refund } from '../src/modules/payments/refund.service';
import type { Subscription } from '../src/modules/subscriptions/subscription.service';
import type { WebhookAttempt } from '../src/modules/webhooks/webhook.store';

/*
 * The typed links between objects: each the object an id field names (`Refund.paymentId` gives
 * `Refund.payment`), loaded through the request's loaders (schema/loaders.ts), so the links of a
 * whole list are read in one statement per field, and an object read once in a request is not
 * read again. A link is null when its id is null or names nothing the key's account and mode
 * has (a deleted gateway or endpoint, the built-in simulator); null with the permission_denied
 * error of the linked type's own query when the key may not read that type, as every nested
 * field is.
 */

const link = <T>(id: string | null | undefined, load: (id: string) => Promise<T | null>): Promise<T | null> | null => (id ? load(id) : null);

@Resolver(() => RefundType)
export class RefundLinksResolver {
  @FieldResolver(() => PaymentType, { nullable: true, description: 'The payment refunded.' })
  payment(@Root() refund: Refund, @Ctx() { loaders }: GqlContext) {
    return link(refund.paymentId, (id) => loaders.payment.load(id));
  }
}

@Resolver(() => GatewayTransactionType)
export class GatewayTransactionLinksResolver {
  @FieldResolver(() => PaymentType, { nullable: true, description: 'The payment the call was made for (a refund\'s call too).' })
  payment(@Root() call: GatewayTransaction, @Ctx() { loaders }: GqlContext) {
    return link(call.paymentId, (id) => loaders.payment.load(id));
  }

  @FieldResolver(() => RefundType, { nullable: true, description: 'The refund the call was made for; null for a payment\'s own calls.' })
  refund(@Root() call: GatewayTransaction, @Ctx() { loaders }: GqlContext) {
    return link(call.refundId, (id) => loaders.refund.load(id));
  }

  @FieldResolver(() => GatewayType, { nullable: true, description: 'The gateway called; null for the built-in simulator and a deleted gateway.' })
  gateway(@Root() call: GatewayTransaction, @Ctx() { loaders }: GqlContext) {
    return link(call.gatewayId, (id) => loaders.gateway.load(id));
  }
}

@Resolver(() => PaymentType)
export class PaymentLinksResolver {
  @FieldResolver(() => InvoiceType, { nullable: true, description: 'The invoice the payment pays.' })
  invoice(@Root() payment: Payment, @Ctx() { loaders }: GqlContext) {
    return link(payment.invoiceId, (id) => loaders.invoice.load(id));
  }

  @FieldResolver(() => SubscriptionType, { nullable: true, description: 'The subscription whose invoice the payment pays.' })
  subscription(@Root() payment: Payment, @Ctx() { loaders }: GqlContext) {
    return link(payment.subscriptionId, (id) => loaders.subscription.load(id));
  }

  @FieldResolver(() => GatewayType, { nullable: true, description: 'The gateway that settled the payment; null for the built-in simulator and a deleted gateway.' })
  gateway(@Root() payment: Payment, @Ctx() { loaders }: GqlContext) {
    return link(payment.gatewayId, (id) => loaders.gateway.load(id));
  }
}

@Resolver(() => InvoiceType)
export class InvoiceLinksResolver {
  @FieldResolver(() => SubscriptionType, { nullable: true, description: 'The subscription that made the invoice.' })
  subscription(@Root() invoice: Invoice, @Ctx() { loaders }: GqlContext) {
    return link(invoice.subscriptionId, (id) => loaders.subscription.load(id));
  }

  @FieldResolver(() => PaymentType, { nullable: true, description: 'The payment of the invoice\'s latest charge.' })
  latestPayment(@Root() invoice: Invoice, @Ctx() { loaders }: GqlContext) {
    return link(invoice.latestPaymentId, (id) => loaders.payment.load(id));
  }

  @FieldResolver(() => String, {
    nullable: true,
    description: 'Where the invoice\'s PDF is, in every status: `GET /v1/invoices/{id}/pdf`, with the API key as every /v1 route (not a public link: the hosted page is hostedUrl).',
  })
  pdfUrl(@Root() invoice: Invoice, @Ctx() { services }: GqlContext) {
    return `${services.urls.base()}/v1/invoices/${encodeURIComponent(invoice.id)}/pdf`;
  }
}

@Resolver(() => SubscriptionType)
export class SubscriptionLinksResolver {
  @FieldResolver(() => PriceType, { nullable: true, description: 'The price billed (plan is its summary).' })
  price(@Root() subscription: Subscription, @Ctx() { loaders }: GqlContext) {
    return link(subscription.priceId, (id) => loaders.price.load(id));
  }

  @FieldResolver(() => InvoiceType, { nullable: true, description: 'The newest invoice of the subscription.' })
  latestInvoice(@Root() subscription: Subscription, @Ctx() { loaders }: GqlContext) {
    return link(subscription.latestInvoiceId, (id) => loaders.invoice.load(id));
  }

  @FieldResolver(() => PaymentMethodType, { nullable: true, description: 'The saved card the subscription is charged to; null: the customer\'s default.' })
  defaultPaymentMethod(@Root() subscription: Subscription, @Ctx() { loaders }: GqlContext) {
    return link(subscription.defaultPaymentMethodId, (id) => loaders.paymentMethod.load(id));
  }

  @FieldResolver(() => [PaymentType], { nullable: true, description: `The payments of its invoices. ${NESTED_LIST_DESCRIPTION}` })
  payments(@Root() subscription: Subscription, @Args(() => NestedListArgs) args: NestedListArgs, @Ctx() { loaders }: GqlContext) {
    return loaders.paymentsBySubscription.load(subscription.id, nestedLimit(args));
  }

  @FieldResolver(() => [GatewayTransactionType], {
    nullable: true,
    description: `The gateway calls of its payments (GET /v1/subscriptions/{id}/gateway-transactions). ${NESTED_LIST_DESCRIPTION}`,
  })
  gatewayTransactions(@Root() subscription: Subscription, @Args(() => NestedListArgs) args: NestedListArgs, @Ctx() { loaders }: GqlContext) {
    return loaders.gatewayTransactionsBySubscription.load(subscription.id, nestedLimit(args));
  }
}

@Resolver(() => CustomerType)
export class CustomerLinksResolver {
  @FieldResolver(() => PaymentMethodType, { nullable: true, description: 'The customer\'s default card (defaultPaymentMethodId).' })
  defaultPaymentMethod(@Root() customer: CustomerRecord, @Ctx() { loaders }: GqlContext) {
    return link(customer.defaultPaymentMethodId, (id) => loaders.paymentMethod.load(id));
  }
}

@Resolver(() => WebhookAttemptType)
export class DeliveryAttemptLinksResolver {
  @FieldResolver(() => EventType, { nullable: true, description: 'The event delivered; null for a test ping, which is no event.' })
  event(@Root() attempt: WebhookAttempt, @Ctx() { loaders }: GqlContext) {
    return link(attempt.eventId, (id) => loaders.event.load(id));
  }

  @FieldResolver(() => WebhookEndpointType, { nullable: true, description: 'The endpoint it was sent to; null once the endpoint is deleted.' })
  endpoint(@Root() attempt: WebhookAttempt, @Ctx() { loaders }: GqlContext) {
    return link(attempt.endpointId, (id) => loaders.webhookEndpoint.load(id));
  }
}

/** The GraphQL type of an event's object, by its `object` field. */
const EVENT_OBJECT_TYPES: Readonly<Record<string, string>> = {
  payment: 'Payment',
  refund: 'Refund',
  customer: 'Customer',
  invoice: 'Invoice',
  subscription: 'BillingSubscription',
  checkout_session: 'CheckoutSession',
  payment_link: 'PaymentLink',
  product: 'Product',
  price: 'Price',
  tax_rate: 'TaxRate',
  account: 'Account',
};

export const EventObjectUnion = createUnionType({
  name: 'EventObject',
  description: 'The object an event carries (its `data.object`), typed.',
  types: () => [
    PaymentType, RefundType, CustomerType, InvoiceType, SubscriptionType, CheckoutSessionType, PaymentLinkType, ProductType, PriceType, TaxRateType, AccountType,
  ] as const,
  resolveType: (value: { object?: unknown }) => EVENT_OBJECT_TYPES[String(value.object)],
});

@Resolver(() => EventType)
export class EventLinksResolver {
  @FieldResolver(() => EventObjectUnion, {
    nullable: true,
    description: 'data.object as its type (`... on Payment { status }`): the object as it was when the event was written, not as it is now. Its nested links (`customer`, …) are read now.',
  })
  dataObject(@Root() event: ApiEvent) {
    const object = event.data?.object;
    return object && Object.hasOwn(EVENT_OBJECT_TYPES, String(object.object)) ? object : null;
  }

  @FieldResolver(() => [WebhookAttemptType], {
    nullable: true,
    description: `Every endpoint's attempts to deliver the event (needs webhook_endpoints:read). ${NESTED_LIST_DESCRIPTION}`,
  })
  deliveries(@Root() event: ApiEvent, @Args(() => NestedListArgs) args: NestedListArgs, @Ctx() { loaders }: GqlContext) {
    return loaders.deliveriesByEvent.load(event.id, nestedLimit(args));
  }
}

export const LINK_RESOLVERS = [
  RefundLinksResolver, GatewayTransactionLinksResolver, PaymentLinksResolver, InvoiceLinksResolver, SubscriptionLinksResolver,
  CustomerLinksResolver, DeliveryAttemptLinksResolver, EventLinksResolver,
] as const;
