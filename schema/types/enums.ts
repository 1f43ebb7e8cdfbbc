import { registerEnumType } from 'type-graphql';
import type { Payment } from '../../src/modules/payments/payment.service';
import type { Refund } from '../../src/modules/payments/refund.service';
import type { Price } from '../../src/modules/catalog/catalog.service';
import type { EndpointStatus } from '../../src/modules/webhooks/endpoint.service';
import type { WebhookAttempt } from '../../src/modules/webhooks/webhook.store';
import type { PendingTransaction } from '../../src/modules/payments/gateway-transaction.store';

/**
 * The closed sets of the REST contract as GraphQL enums. Each value's name is REST's string
 * itself (lower case, not GraphQL's usual upper case), so the JSON a client reads or sends in
 * variables is the same over both transports. `exactly` makes tsc fail when a service's type
 * gains a value the enum lacks: the enum would otherwise refuse to answer with it.
 */
const exactly = <T extends string>() => <E extends { [K in T]: K }>(values: E & Record<Exclude<keyof E, T>, never>) => values;

export const PaymentStatus = exactly<Payment['status']>()({ pending: 'pending', succeeded: 'succeeded', failed: 'failed', canceled: 'canceled', requires_review: 'requires_review' });
export const RefundStatus = exactly<Refund['status']>()({ pending: 'pending', succeeded: 'succeeded', failed: 'failed', requires_review: 'requires_review' });
export const PriceType = exactly<Price['type']>()({ one_time: 'one_time', recurring: 'recurring' });
export const RecurringInterval = { day: 'day', week: 'week', month: 'month', year: 'year' } as const;
export const WebhookEndpointStatus = exactly<EndpointStatus>()({ enabled: 'enabled', disabled: 'disabled' });
export const WebhookDeliveryAttemptStatus = exactly<WebhookAttempt['status']>()({ succeeded: 'succeeded', failed: 'failed' });
export const GatewayTransactionKind = exactly<PendingTransaction['kind']>()({ charge: 'charge', refund: 'refund', status: 'status', save_card: 'save_card' });

registerEnumType(PaymentStatus, { name: 'PaymentStatus' });
registerEnumType(RefundStatus, { name: 'RefundStatus' });
registerEnumType(PriceType, { name: 'PriceType' });
registerEnumType(RecurringInterval, { name: 'RecurringInterval' });
registerEnumType(WebhookEndpointStatus, { name: 'WebhookEndpointStatus' });
registerEnumType(WebhookDeliveryAttemptStatus, { name: 'WebhookDeliveryAttemptStatus' });
registerEnumType(GatewayTransactionKind, { name: 'GatewayTransactionKind' });
