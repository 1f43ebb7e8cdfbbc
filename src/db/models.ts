import { HasMany } from 'sequelize-typescript';
import { AccountModel } from '../modules/accounts/account.model';
import { ApiKeyModel } from '../modules/accounts/api-key.model';
import { CustomerModel } from '../modules/customers/customer.model';
import { CustomerBalanceModel, CustomerBalanceTransactionModel } from '../modules/customers/customer-balance.model';
import { ProductModel } from '../modules/catalog/product.model';
import { PriceModel } from '../modules/catalog/price.model';
import { IdempotencyKeyModel } from '../modules/idempotency/idempotency-key.model';
import { EventModel } from '../modules/events/event.model';
import { GatewayModel } from '../modules/gateways/gateway.model';
import { RoutingConfigModel } from '../modules/routing/routing-config.model';
import { FxRateModel } from '../modules/fx/fx-rate.model';
import { PaymentMethodModel } from '../modules/payments/payment-method.model';
import { PaymentModel } from '../modules/payments/payment.model';
import { RefundModel } from '../modules/payments/refund.model';
import { PaymentCountDeltaModel, PaymentCountModel } from '../modules/payments/payment-count.model';
import { GatewayTransactionModel } from '../modules/payments/gateway-transaction.model';
import { WebhookEndpointModel } from '../modules/webhooks/webhook-endpoint.model';
import { WebhookDeliveryModel } from '../modules/webhooks/webhook-delivery.model';
import { WebhookAttemptModel } from '../modules/webhooks/webhook-attempt.model';
import { CheckoutSessionModel } from '../modules/checkout/checkout-session.model';
import { PaymentLinkModel } from '../modules/checkout/payment-link.model';
import { PublicPayAttemptModel } from '../modules/payments/public-pay-attempt.model';
import { InvoiceLineItemModel, InvoiceModel, InvoiceNumberSequenceModel } from '../modules/invoices/invoice.model';
import { MailOutboxModel } from '../modules/mail/mail-outbox.model';
import { SubscriptionModel, SubscriptionPendingLineModel, TestClockModel } from '../modules/subscriptions/subscription.model';
import { TaxRateModel } from '../modules/tax-rates/tax-rate.model';
import { ExportModel } from '../modules/exports/export.model';

/** One model per table the migrations create (test/unit/model-schema.test.ts holds them to it). */
export const MODELS = [
  AccountModel, ApiKeyModel, CustomerModel, ProductModel, PriceModel, IdempotencyKeyModel, EventModel,
  GatewayModel, RoutingConfigModel, FxRateModel, PaymentMethodModel, PaymentModel, PaymentCountModel, PaymentCountDeltaModel, RefundModel, GatewayTransactionModel,
  WebhookEndpointModel, WebhookDeliveryModel, WebhookAttemptModel, CheckoutSessionModel, PaymentLinkModel, PublicPayAttemptModel,
  InvoiceModel, InvoiceLineItemModel, InvoiceNumberSequenceModel,
  MailOutboxModel,
  SubscriptionModel, SubscriptionPendingLineModel, TestClockModel,
  CustomerBalanceModel, CustomerBalanceTransactionModel,
  TaxRateModel,
  ExportModel,
];

/**
 * The has-many side of the associations, declared here rather than on the parent models: a
 * parent naming its children and each child naming its parent would make their modules import
 * each other. Applied once, before any Sequelize instance adds the models.
 */
const COLLECTIONS: Array<[parent: object, property: string, child: () => typeof MODELS[number], foreignKey: string]> = [
  [PaymentModel, 'refunds', () => RefundModel, 'paymentId'],
  [PaymentModel, 'gatewayTransactions', () => GatewayTransactionModel, 'paymentId'],
  [RefundModel, 'gatewayTransactions', () => GatewayTransactionModel, 'refundId'],
  [EventModel, 'deliveries', () => WebhookDeliveryModel, 'eventId'],
  [WebhookEndpointModel, 'deliveries', () => WebhookDeliveryModel, 'endpointId'],
  [WebhookEndpointModel, 'attemptLog', () => WebhookAttemptModel, 'endpointId'],
  [WebhookDeliveryModel, 'attemptLog', () => WebhookAttemptModel, 'deliveryId'],
  [InvoiceModel, 'lineItemRows', () => InvoiceLineItemModel, 'invoiceId'],
];
for (const [parent, property, child, foreignKey] of COLLECTIONS) {
  HasMany(child, { foreignKey, constraints: false })((parent as { prototype: object }).prototype, property);
}
