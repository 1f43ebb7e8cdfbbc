import { GraphQLScalarType, Kind } from 'graphql';
import {
  CHECKOUT_MODES, CHECKOUT_SESSION_STATUSES, PAYMENT_LINK_STATUSES, listCheckoutSessionsInput, listPaymentLinksInput,
} from '../../src/modules/checkout/checkout.inputs';
import type { PayResult } from '../../src/modules/payments/public-pay';
import { INVOICE_PAYMENT_STATUSES, INVOICE_STATUSES, listInvoicesInput } from '../../src/modules/invoices/invoice.inputs';
import { COLLECTION_METHODS, PRORATION_BEHAVIORS, SUBSCRIPTION_STATUSES, listSubscriptionsInput } from '../../src/modules/subscriptions/subscription.inputs';
import type { TestClock } from '../../src/modules/subscriptions/test-clock.service';
import { registerEnumType } from 'type-graphql';
import { DomainError } from '../../src/core/errors';
import type { Payment } from '../../src/modules/payments/payment.service';
import type { Refund } from '../../src/modules/payments/refund.service';
import type { Price } from '../../src/modules/catalog/catalog.service';
import type { EndpointStatus } from '../../src/modules/webhooks/endpoint.service';
import { PING_EVENT_TYPE, type WebhookAttempt } from '../../src/modules/webhooks/webhook.store';
import type { PendingTransaction } from '../../src/modules/payments/gateway-transaction.store';
import { listGatewayTransactionsInput } from '../../src/modules/payments/gateway-transaction.store';
import { EVENT_TYPES } from '../../src/modules/events/event.service';
import { listEventsInput } from '../../src/modules/events/event.service';
import { GATEWAY_TYPES } from '../../src/connectors/registry';
import { CARD_BRANDS } from '../../src/core/card';
import { CURRENCY_CODES } from '../../src/core/money';
import { COUNTRY_CODES, isCountryCode } from '../../src/core/parties';
import { GATEWAY_OUTCOMES } from '../../src/modules/payments/payment.inputs';
import { ROUTING_STRATEGIES } from '../../src/modules/routing/routing.inputs';
import type { SkipReason } from '../../src/modules/routing/candidates';
import { listCustomersInput } from '../../src/modules/customers/customer.inputs';
import { listPricesInput, listProductsInput } from '../../src/modules/catalog/catalog.inputs';
import { listPaymentsInput, listRefundsInput } from '../../src/modules/payments/payment.inputs';
import { listGatewaysInput } from '../../src/modules/gateways/gateway-config.service';
import { listPaymentMethodsInput } from '../../src/modules/payments/payment-method.service';
import { listAttemptsInput, listEndpointsInput, WILDCARD } from '../../src/modules/webhooks/webhook.inputs';
import { listKeysInput } from '../../src/modules/accounts/account.inputs';
import { TAX_EXEMPT } from '../../src/modules/customers/customer.inputs';
import { listTaxRatesInput } from '../../src/modules/tax-rates/tax-rate.inputs';

/**
 * The closed sets of the REST contract as GraphQL enums. Each value's name is REST's string
 * itself (lower case, not GraphQL's usual upper case), so the JSON a client reads or sends in
 * variables is the same over both transports. `exactly` makes tsc fail when a service's type
 * gains a value the enum lacks: the enum would otherwise refuse to answer with it.
 */
const exactly = <T extends string>() => <E extends { [K in T]: K }>(values: E & Record<Exclude<keyof E, T>, never>) => values;

/** An enum whose names are the values themselves, from a list the service owns. */
const sameNames = <T extends string>(values: readonly T[]) => Object.fromEntries(values.map((v) => [v, v])) as { [K in T]: K };

export const PaymentStatus = exactly<Payment['status']>()({
  pending: 'pending', requires_action: 'requires_action', requires_capture: 'requires_capture', succeeded: 'succeeded', failed: 'failed', canceled: 'canceled',
  requires_review: 'requires_review',
});
export const CaptureMethod = exactly<Payment['captureMethod']>()({ automatic: 'automatic', manual: 'manual' });
export const RefundStatus = exactly<Refund['status']>()({ pending: 'pending', succeeded: 'succeeded', failed: 'failed', requires_review: 'requires_review' });
export const PriceType = exactly<Price['type']>()({ one_time: 'one_time', recurring: 'recurring' });
export const RecurringInterval = { day: 'day', week: 'week', month: 'month', year: 'year' } as const;
export const WebhookEndpointStatus = exactly<EndpointStatus>()({ enabled: 'enabled', disabled: 'disabled' });
export const WebhookDeliveryAttemptStatus = exactly<WebhookAttempt['status']>()({ succeeded: 'succeeded', failed: 'failed' });
export const GatewayTransactionKind = exactly<PendingTransaction['kind']>()({ charge: 'charge', refund: 'refund', status: 'status', save_card: 'save_card', capture: 'capture', cancel: 'cancel' });
export const GatewayType = sameNames(GATEWAY_TYPES);
export const CardBrand = sameNames(CARD_BRANDS);
/** The currencies payments may be in, ISO 4217 upper case as REST answers them (inputs take any case, as strings). */
export const Currency = sameNames(CURRENCY_CODES);
export const InvoiceEmailStatus = { queued: 'queued', sent: 'sent', failed: 'failed' } as const;
export const RoutingStrategy = sameNames(ROUTING_STRATEGIES);
export const RoutingSkipReason = exactly<SkipReason>()({ unknown: 'unknown', disabled: 'disabled', currency: 'currency', circuit_open: 'circuit_open' });
export const SortDirection = { asc: 'asc', desc: 'desc' } as const;
export const CheckoutSessionMode = sameNames(CHECKOUT_MODES);
export const InvoiceStatus = sameNames(INVOICE_STATUSES);
export const InvoicePaymentStatus = sameNames(INVOICE_PAYMENT_STATUSES);
export const CheckoutSessionStatus = sameNames(CHECKOUT_SESSION_STATUSES);
export const PaymentLinkStatus = sameNames(PAYMENT_LINK_STATUSES);
export const PayResultStatus = exactly<PayResult['status']>()({ succeeded: 'succeeded', failed: 'failed', processing: 'processing', requires_action: 'requires_action' });
export const SubscriptionStatus = sameNames(SUBSCRIPTION_STATUSES);
export const SubscriptionCollectionMethod = sameNames(COLLECTION_METHODS);
export const ProrationBehavior = sameNames(PRORATION_BEHAVIORS);
/** `updateSubscription`'s `billingCycleAnchor`: restart the period now, or keep it. */
export const BillingCycleAnchorChange = { now: 'now', unchanged: 'unchanged' } as const;
export const TestClockStatus = exactly<TestClock['status']>()({ ready: 'ready', advancing: 'advancing' });

registerEnumType(PaymentStatus, { name: 'PaymentStatus' });
registerEnumType(Currency, { name: 'Currency', description: 'An ISO 4217 currency code, upper case, as REST answers it. Arguments take currencies as strings in any case.' });
registerEnumType(InvoiceEmailStatus, { name: 'InvoiceEmailStatus', description: 'Where the invoice e-mail stands.' });
registerEnumType(CaptureMethod, { name: 'CaptureMethod', description: 'automatic: captured with the authorisation; manual: authorised only, captured by capturePayment.' });
registerEnumType(CheckoutSessionMode, { name: 'CheckoutSessionMode', description: 'What a checkout session does: charge once (payment), save a card (setup), or start a subscription.' });
registerEnumType(CheckoutSessionStatus, { name: 'CheckoutSessionStatus' });
registerEnumType(InvoiceStatus, { name: 'InvoiceStatus' });
registerEnumType(InvoicePaymentStatus, { name: 'InvoicePaymentStatus' });
registerEnumType(PaymentLinkStatus, { name: 'PaymentLinkStatus' });
registerEnumType(PayResultStatus, { name: 'PayResultStatus' });
registerEnumType(SubscriptionStatus, { name: 'SubscriptionStatus' });
registerEnumType(SubscriptionCollectionMethod, {
  name: 'SubscriptionCollectionMethod',
  valuesConfig: {
    charge_automatically: { description: "Each invoice is charged to the subscription's saved card." },
    send_invoice: { description: 'Each invoice is left open for the customer to pay.' },
  },
});
registerEnumType(ProrationBehavior, {
  name: 'ProrationBehavior',
  valuesConfig: {
    create_prorations: { description: 'Proration lines wait for the next invoice (the default).' },
    none: { description: 'No proration lines: the change costs nothing for the rest of the current period; the next period bills the new plan.' },
    always_invoice: { description: 'A net charge is invoiced at once (and charged, when collected automatically) before the mutation answers; a net credit waits for the next invoice.' },
  },
});
registerEnumType(BillingCycleAnchorChange, { name: 'BillingCycleAnchorChange' });
registerEnumType(TestClockStatus, { name: 'TestClockStatus' });
registerEnumType(RefundStatus, { name: 'RefundStatus' });
registerEnumType(PriceType, { name: 'PriceType' });
registerEnumType(RecurringInterval, { name: 'RecurringInterval' });
registerEnumType(WebhookEndpointStatus, { name: 'WebhookEndpointStatus' });
registerEnumType(WebhookDeliveryAttemptStatus, { name: 'WebhookDeliveryAttemptStatus' });
registerEnumType(GatewayTransactionKind, { name: 'GatewayTransactionKind' });
registerEnumType(GatewayType, { name: 'GatewayType', description: 'The connector a gateway runs on.' });
registerEnumType(CardBrand, { name: 'CardBrand' });
registerEnumType(RoutingStrategy, { name: 'RoutingStrategy' });
registerEnumType(RoutingSkipReason, {
  name: 'RoutingSkipReason',
  valuesConfig: {
    unknown: { description: 'No gateway of the account and mode has this id.' },
    disabled: { description: 'The gateway is disabled.' },
    currency: { description: 'The gateway does not take the currency.' },
    circuit_open: { description: 'The gateway failed repeatedly and is skipped for a cool-down (circuit breaker).' },
  },
});
registerEnumType(SortDirection, { name: 'SortDirection' });

/**
 * Event types are a closed set, but REST's names hold dots (`payment.succeeded`), which a GraphQL
 * enum value cannot: an enum would make GraphQL say `payment_succeeded` where REST, webhooks and
 * the stored events say `payment.succeeded`. So the set is a scalar that takes and gives REST's
 * exact strings and refuses anything else (an unknown type, a wildcard such as `payment.*`)
 * while the document is validated, as REST refuses it.
 */
function eventTypeScalar(name: string, description: string, accepts: ReadonlySet<string>, expected: string): GraphQLScalarType<string, string> {
  const check = (value: unknown): string => {
    if (typeof value === 'string' && accepts.has(value)) return value;
    // Not a GraphQLError: graphql-js then reports where the value stands in the document.
    throw new TypeError(`expected ${expected}`);
  };
  return new GraphQLScalarType<string, string>({
    name,
    description,
    serialize: check,
    parseValue: check,
    parseLiteral: (ast) => check(ast.kind === Kind.STRING ? ast.value : undefined),
  });
}

const EVENT_TYPE_LIST = EVENT_TYPES.join(', ');

export const EventTypeName = eventTypeScalar(
  'EventTypeName',
  `An event's type, exactly as REST and webhooks write it; one of: ${EVENT_TYPE_LIST}.`,
  new Set<string>(EVENT_TYPES),
  'an event type such as "payment.succeeded" (no wildcards)',
);

/** The event type of a webhook delivery attempt: an event type, or `ping` (a test delivery, never an event). */
export const WebhookDeliveryEventType = eventTypeScalar(
  'WebhookDeliveryEventType',
  `The type of the event a webhook delivery carried: an event type (${EVENT_TYPE_LIST}), or "ping" for a test delivery (testWebhookEndpoint), which is no event.`,
  new Set<string>([...EVENT_TYPES, PING_EVENT_TYPE]),
  'an event type such as "payment.succeeded", or "ping"',
);

/** What a webhook endpoint subscribes to: an event type, or `*` (every type, those added later too). */
export const WebhookEventSelector = eventTypeScalar(
  'WebhookEventSelector',
  `An event type a webhook endpoint subscribes to, as REST writes it, or "*" for every type (those added later too); types: ${EVENT_TYPE_LIST}.`,
  new Set<string>([WILDCARD, ...EVENT_TYPES]),
  'an event type such as "payment.succeeded", or "*"',
);

/**
 * The `types` of the `events` subscription: `[String!]` as the API contract fixes it, checked
 * against the same set before the stream starts (`types[i]` names a refused one).
 */
export function eventTypesArgument(types: readonly string[] | null | undefined): readonly string[] | null {
  if (!types || types.length === 0) return null;
  const known = new Set<string>(EVENT_TYPES);
  types.forEach((type, i) => {
    if (!known.has(type)) {
      throw new DomainError('invalid_parameter', `types[${i}] is not an event type; give event types such as "payment.succeeded" (no wildcards), one of: ${EVENT_TYPE_LIST}`, `types[${i}]`);
    }
  });
  return types;
}

/** The `sortField` values a list accepts, read from its service's list schema: the same as REST's `sortField`. */
function sortFields<F extends string>(name: string, list: { shape: { sortField: { unwrap(): { options: readonly F[] } } } }) {
  const values = sameNames(list.shape.sortField.unwrap().options);
  registerEnumType(values, { name });
  return values;
}

export const CustomerSortField = sortFields('CustomerSortField', listCustomersInput);
export const ProductSortField = sortFields('ProductSortField', listProductsInput);
export const PriceSortField = sortFields('PriceSortField', listPricesInput);
export const EventSortField = sortFields('EventSortField', listEventsInput);
export const PaymentSortField = sortFields('PaymentSortField', listPaymentsInput);
export const RefundSortField = sortFields('RefundSortField', listRefundsInput);
export const GatewaySortField = sortFields('GatewaySortField', listGatewaysInput);
export const PaymentMethodSortField = sortFields('PaymentMethodSortField', listPaymentMethodsInput);
export const GatewayTransactionSortField = sortFields('GatewayTransactionSortField', listGatewayTransactionsInput);
export const WebhookEndpointSortField = sortFields('WebhookEndpointSortField', listEndpointsInput);
export const WebhookDeliveryAttemptSortField = sortFields('WebhookDeliveryAttemptSortField', listAttemptsInput);
export const CheckoutSessionSortField = sortFields('CheckoutSessionSortField', listCheckoutSessionsInput);
export const PaymentLinkSortField = sortFields('PaymentLinkSortField', listPaymentLinksInput);
export const InvoiceSortField = sortFields('InvoiceSortField', listInvoicesInput);
export const SubscriptionSortField = sortFields('SubscriptionSortField', listSubscriptionsInput);
export const ApiKeySortField = sortFields('ApiKeySortField', listKeysInput);

/** A customer's tax status (API.md §12). */
export const TaxExempt = sameNames(TAX_EXEMPT);
registerEnumType(TaxExempt, {
  name: 'TaxExempt',
  valuesConfig: {
    none: { description: 'Invoices carry the taxes of their tax rates (the default).' },
    exempt: { description: 'No tax on its invoices.' },
    reverse: { description: 'No tax on its invoices, which say the customer accounts for it (reverse charge).' },
  },
});
export const TaxRateSortField = sortFields('TaxRateSortField', listTaxRatesInput);

/** What a gateway answered one call: a gateway transaction's and a payment attempt's outcome, and a filter on them. */
export const GatewayTransactionOutcome = Object.fromEntries(GATEWAY_OUTCOMES.map((v) => [v, v])) as { [K in (typeof GATEWAY_OUTCOMES)[number]]: K };
registerEnumType(GatewayTransactionOutcome, { name: 'GatewayTransactionOutcome' });

/** ISO 3166-1 alpha-2, as an address holds it (validated against this list, upper-case). */
export const Country = Object.fromEntries(COUNTRY_CODES.map((v) => [v, v])) as Record<string, string>;
registerEnumType(Country, { name: 'Country', description: 'ISO 3166-1 alpha-2 country code.' });

/** The description of a Country a customer, tax rate or routing rule holds. */
export const COUNTRY_OUT = 'ISO 3166-1 alpha-2. Null for a code stored before codes were checked against the list that names no country (REST returns it as stored).';

/** A stored country code as the Country enum can carry it: null when it names no country (stored before codes were checked). */
export function knownCountry(code: string | null | undefined): string | null {
  return code !== null && code !== undefined && isCountryCode(code) ? code : null;
}
