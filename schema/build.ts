import 'reflect-metadata';
import { buildSchemaSync, type PubSub } from 'type-graphql';
import { printSchema, type GraphQLSchema } from 'graphql';
import type { GqlContext } from './context';
import { clearLoaders } from './loaders';
import { idempotentMutations } from './idempotency';
import { assertArgumentsChecked } from './mutation-checks';
import { CustomerResolver } from './customer.resolver';
import { BalanceTransactionResolver, CustomerCreditResolver } from './customer-credit.resolver';
import { PriceResolver, ProductResolver } from './catalog.resolver';
import { EventResolver } from './event.resolver';
import { CustomerPaymentsResolver, PaymentResolver, RefundResolver } from './payment.resolver';
import { GatewayResolver } from './gateway.resolver';
import { FxRateResolver } from './fx-rate.resolver';
import { RoutingConditionsResolver, RoutingResolver } from './routing.resolver';
import { CustomerPaymentMethodsResolver, PaymentGatewayTransactionsResolver, PaymentMethodResolver } from './payment-method.resolver';
import { LiveEventsResolver } from './live-events.resolver';
import { WebhookEndpointResolver } from './webhook.resolver';
import { CheckoutSessionResolver, PaymentCheckoutSessionResolver } from './checkout-session.resolver';
import { PaymentLinkResolver, PaymentPaymentLinkResolver } from './payment-link.resolver';
import { CustomerInvoicesResolver, InvoiceResolver } from './invoice.resolver';
import { AccountResolver } from './account.resolver';
import { ApiKeyResolver } from './api-key.resolver';
import { CustomerSubscriptionsResolver, SubscriptionResolver } from './subscription.resolver';
import { TestClockResolver } from './test-clock.resolver';
import { DashboardResolver } from './dashboard.resolver';
import { TaxRateResolver } from './tax-rate.resolver';
import { NodeResolver } from './node.resolver';
import { LINK_RESOLVERS } from './links.resolver';
import { ExportResolver } from './export.resolver';
import { PaymentSummaryResolver } from './payment-summary.resolver';

let cached: GraphQLSchema | undefined;

export function buildPayorchSchema(): GraphQLSchema {
  if (cached) return cached;
  const schema = buildSchemaSync({
    resolvers: [
      CustomerResolver, CustomerPaymentsResolver, ProductResolver, PriceResolver, EventResolver,
      PaymentResolver, RefundResolver, GatewayResolver, FxRateResolver, RoutingResolver, RoutingConditionsResolver, LiveEventsResolver, WebhookEndpointResolver,
      PaymentMethodResolver, CustomerPaymentMethodsResolver, PaymentGatewayTransactionsResolver,
      CheckoutSessionResolver, PaymentCheckoutSessionResolver, PaymentLinkResolver, PaymentPaymentLinkResolver,
      InvoiceResolver, CustomerInvoicesResolver, AccountResolver, ApiKeyResolver, SubscriptionResolver, CustomerSubscriptionsResolver, TestClockResolver,
      DashboardResolver, CustomerCreditResolver, BalanceTransactionResolver, TaxRateResolver, ExportResolver, PaymentSummaryResolver,
      NodeResolver, ...LINK_RESOLVERS,
    ],
    validate: false,
    // Every subscription brings its own stream from the EventBus; type-graphql still wants a
    // pubSub object, so it gets one that refuses to be used.
    pubSub: {
      publish: () => {
        throw new Error('events are published through the EventBus');
      },
      subscribe: () => {
        throw new Error('subscriptions stream from the EventBus');
      },
    } as unknown as PubSub,
  });
  assertArgumentsChecked(schema);
  idempotentMutations(schema);
  freshLoadersPerMutation(schema);
  cached = schema;
  return schema;
}

/**
 * Wraps each mutation's resolver (once, when the schema is built) so that it starts with empty
 * loaders (see clearLoaders). Only the Mutation type's own fields: nothing is added to the
 * resolution of any other field.
 */
function freshLoadersPerMutation(schema: GraphQLSchema): void {
  for (const field of Object.values(schema.getMutationType()?.getFields() ?? {})) {
    const resolve = field.resolve;
    if (!resolve) continue;
    field.resolve = (source, args, context: GqlContext, info) => {
      clearLoaders(context.loaders);
      return resolve(source, args, context, info);
    };
  }
}

export function printPayorchSchema(): string {
  return `${printSchema(buildPayorchSchema())}\n`;
}
