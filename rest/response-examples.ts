import type { z } from 'zod';
import { accountSettingsSchema, apiKeySchema } from '../src/modules/accounts/account.schemas';
import { priceSchema, productSchema } from '../src/modules/catalog/catalog.schemas';
import {
  checkoutSessionSchema, payResultSchema, paymentLinkSchema, publicCheckoutSessionSchema, publicPaymentLinkSchema,
} from '../src/modules/checkout/checkout.schemas';
import { customerSchema } from '../src/modules/customers/customer.schemas';
import { balanceTransactionSchema } from '../src/modules/customers/customer-credit.schemas';
import { eventSchema } from '../src/modules/events/event.schemas';
import { fxRateSetSchema } from '../src/modules/fx/fx.schemas';
import { gatewaySchema } from '../src/modules/gateways/gateway.schemas';
import { invoiceSchema, publicInvoiceSchema } from '../src/modules/invoices/invoice.schemas';
import { taxRateSchema } from '../src/modules/tax-rates/tax-rate.schemas';
import { exportSchema } from '../src/modules/exports/export.schemas';
import { paymentSummarySchema } from '../src/modules/payments/payment-summary.schemas';
import { gatewayTransactionSchema, paymentMethodSchema, paymentSchema, refundSchema } from '../src/modules/payments/payment.schemas';
import { routingDecisionSchema, routingSchema } from '../src/modules/routing/routing.schemas';
import { prorationPreviewSchema, subscriptionSchema, testClockSchema, upcomingInvoiceSchema } from '../src/modules/subscriptions/subscription.schemas';
import { deletedWebhookEndpointSchema, eventResendSchema, webhookAttemptSchema, webhookEndpointSchema, webhookEndpointTestSchema } from '../src/modules/webhooks/webhook.schemas';

/**
 * One example of each response object, shown in the OpenAPI document on every operation that
 * answers it (components/examples). Each is typed as its schema's output, so a field added to a
 * schema fails to compile here, and test/unit/openapi-document.test.ts validates each against the
 * document's own schema with ajv. The ids match the request examples of the route table.
 */
const examples = new Map<z.ZodType, unknown>();

function example<S extends z.ZodType>(schema: S, value: z.output<S>): z.output<S> {
  examples.set(schema, value);
  return value;
}

/** The example of a response schema (undefined when none is declared). */
export function responseExampleOf(schema: z.ZodType): unknown {
  return examples.get(schema);
}

const T0 = '2026-03-02T09:14:07.512Z';
const T1 = '2026-03-02T09:14:08.031Z';
const ids = {
  account: 'acct_6Rb2Xq9LmT4zKd',
  customer: 'cus_3Jq8LmZ2xV9cTb',
  product: 'prod_8Zq2mB4kTn1xYw',
  price: 'price_9Kd2PqL7wZ1xYb',
  payment: 'pay_7Hc2kQ9mXz4Lb1',
  refund: 're_2Nf6Tq1vLp8Ws3',
  paymentMethod: 'pm_5Tg7YhQ2wE3rXc',
  gateway: 'gw_4f9Kq2mB8xZt1n',
  session: 'cs_8Vb3Nm6Qz2Lk7Px',
  link: 'plink_1Qw8Er4Ty6Ui2O',
  invoice: 'in_5Yh2Kd8Mx3Qp9Z',
  subscription: 'sub_4Lm9Qx2Ve7Rt1B',
  taxRate: 'txr_7Hn3Bv5Cx1Zq8Wd',
  clock: 'clock_7Df3Hq1Zx8Wm2N',
  endpoint: 'we_9Pk4Rt2Yx6Nb3M',
  event: 'evt_2Gh7Jk4Lz9Xc1V',
  gatewayTransaction: 'gtx_6Sd1Fg8Hj3Kl5Q',
  apiKey: 'key_3Zx5Cv7Bn9Mq1W',
  delivery: 'whd_8Qa2Ws4Ed6Rf7T',
  export: 'exp_4Rt8Yu2Io6Pa1Sd',
};
const BASE = 'https://pay.example.com';

example(accountSettingsSchema, {
  id: ids.account, object: 'account', livemode: false, name: 'Acme Ltd', invoicePrefix: 'ACME',
  dunningRetryDays: [1, 3, 7], rateLimitPerMinute: null, publicDeclinesPerHour: 50,
  address: { line1: 'Friedrichstraße 68', line2: null, postalCode: '10117', city: 'Berlin', state: null, country: 'DE' },
  taxId: 'DE123456789', supportEmail: 'billing@acme.example', createdAt: T0, updatedAt: T1,
});

export const apiKeyExample = example(apiKeySchema, {
  id: ids.apiKey, object: 'api_key', livemode: false, name: 'Dashboard (read only)', permissions: ['payments:read', 'customers:read'],
  keyHint: 'sk_test_…Q7xP', revoked: false, revokedAt: null, createdAt: T0, updatedAt: T0,
});

example(productSchema, {
  id: ids.product, object: 'product', livemode: false, name: 'Pro plan', description: 'Everything in Basic, and more',
  active: true, metadata: {}, createdAt: T0, updatedAt: T0,
});

example(priceSchema, {
  id: ids.price, object: 'price', livemode: false, productId: ids.product, unitAmount: 1900, currency: 'EUR', type: 'recurring',
  recurring: { interval: 'month', intervalCount: 1 }, nickname: 'Monthly', active: true, metadata: {}, createdAt: T0, updatedAt: T0,
});

example(customerSchema, {
  id: ids.customer, object: 'customer', livemode: false, email: 'ada@example.com', name: 'Ada Lovelace', country: 'GB', phone: null,
  defaultPaymentMethodId: ids.paymentMethod, testClockId: null, locale: 'en',
  address: { line1: '12 St James\'s Square', line2: 'Floor 3', postalCode: 'SW1Y 4LB', city: 'London', state: null, country: 'GB' },
  taxIds: [{ type: 'gb_vat', value: 'GB123456789' }], taxExempt: 'none', metadata: { crm: '4711' }, creditBalance: { EUR: 2500 }, createdAt: T0, updatedAt: T1,
});

example(balanceTransactionSchema, {
  id: 'cbtxn_4Rt7Yu1Io3Pa5Sd8Fg', object: 'balance_transaction', livemode: false, customerId: ids.customer, currency: 'EUR', amount: 2500,
  type: 'adjustment', invoiceId: null, description: 'Goodwill credit for the outage on March 1', createdAt: T1, updatedAt: T1,
});

example(paymentSchema, {
  id: ids.payment, object: 'payment', livemode: false, customerId: ids.customer, amount: 2500, currency: 'EUR',
  originalCurrency: 'EUR', originalAmount: null, exchangeRate: null, paymentMethod: 'card',
  paymentMethodDetails: { type: 'card', brand: 'visa', last4: '4242', expMonth: 12, expYear: 2030, fingerprint: 'fp_Xq2Lm9Tz4Kd8Rb1V' },
  description: 'Order 1042', receiptEmail: null, metadata: { orderId: '1042' }, status: 'succeeded', failureCode: null, failureMessage: null,
  captureMethod: 'automatic', amountCapturable: 0, amountCaptured: 2500, nextAction: null,
  amountRefunded: 0, refunded: false, gatewayId: ids.gateway,
  attempts: [{ gateway: ids.gateway, outcome: 'succeeded', code: null, latency: 184 }],
  invoiceId: null, subscriptionId: null, checkoutSessionId: null, paymentLinkId: null, createdAt: T0, updatedAt: T1,
});

example(refundSchema, {
  id: ids.refund, object: 'refund', livemode: false, paymentId: ids.payment, amount: 500, currency: 'EUR', reason: 'requested_by_customer',
  status: 'succeeded', gatewayId: ids.gateway, failureCode: null, failureMessage: null, createdAt: T0, updatedAt: T1,
});

example(gatewayTransactionSchema, {
  id: ids.gatewayTransaction, object: 'gateway_transaction', livemode: false, paymentId: ids.payment, refundId: null, gatewayId: ids.gateway,
  gatewayType: 'simulator', kind: 'charge', attempt: 1, idempotencyKey: `${ids.payment}:1`, outcome: 'succeeded', code: null, message: null,
  reference: 'sim_ch_5Kq8Zt2Xw', latencyMs: 184, request: { amount: 2500, currency: 'EUR' }, response: { status: 'succeeded' },
  createdAt: T0, updatedAt: T1,
});

example(paymentMethodSchema, {
  id: ids.paymentMethod, object: 'payment_method', livemode: false, customerId: ids.customer, gatewayId: ids.gateway, type: 'card',
  card: { brand: 'visa', last4: '4242', expMonth: 12, expYear: 2030, fingerprint: 'fp_Xq2Lm9Tz4Kd8Rb1V' }, isDefault: true,
  createdAt: T0, updatedAt: T0,
});

example(gatewaySchema, {
  id: ids.gateway, object: 'gateway', livemode: false, name: 'Simulator EU', type: 'simulator', enabled: true, currencies: ['EUR'],
  settings: {}, credentialsSet: false, createdAt: T0, updatedAt: T0,
});

example(routingSchema, {
  object: 'routing', livemode: false,
  rules: [{ name: 'EUR to the EU gateway', when: { currency: ['EUR'] }, strategy: 'priority', gateways: [{ gatewayId: ids.gateway }] }],
  fallback: [], maxAttempts: 2, updatedAt: T0,
});

example(routingDecisionSchema, {
  object: 'routing_decision', rule: 'EUR to the EU gateway', gateways: [ids.gateway], maxAttempts: 2, skipped: [], usesBuiltinSimulator: false,
});

example(fxRateSetSchema, {
  object: 'fx_rates', livemode: false, rates: [{ from: 'USD', to: 'EUR', rate: '0.92', updatedAt: T0 }],
  demoRatesAvailable: true, demoRates: [{ from: 'GBP', to: 'EUR', rate: '1.17', updatedAt: null }],
});

export const webhookEndpointExample = example(webhookEndpointSchema, {
  id: ids.endpoint, object: 'webhook_endpoint', livemode: false, url: 'https://shop.example.com/payorch/webhooks',
  events: ['payment.succeeded', 'refund.succeeded'], description: null, status: 'enabled', disabledReason: null, createdAt: T0, updatedAt: T0,
});

example(deletedWebhookEndpointSchema, { ...webhookEndpointExample, updatedAt: T1, deleted: true });

example(webhookAttemptSchema, {
  id: 'whd_2Bn5Mq8Lz1Xc4V', object: 'webhook_delivery_attempt', livemode: false, endpointId: ids.endpoint, deliveryId: ids.delivery,
  eventId: ids.event, eventType: 'payment.succeeded', attempt: 1, status: 'succeeded', statusCode: 200, latencyMs: 42, error: null,
  nextRetryAt: null, createdAt: T0, updatedAt: T0,
});

example(eventResendSchema, { object: 'event_resend', eventId: ids.event, deliveriesQueued: 1 });

example(webhookEndpointTestSchema, {
  object: 'webhook_endpoint_test', endpointId: ids.endpoint, eventId: 'evt_5Pn3Tg8Wq2Yd6K', eventType: 'ping', deliveryId: ids.delivery, status: 'pending',
});

example(eventSchema, {
  id: ids.event, object: 'event', livemode: false, type: 'customer.created', createdAt: T0,
  data: { object: { id: ids.customer, object: 'customer', email: 'ada@example.com', name: 'Ada Lovelace' } },
});

example(checkoutSessionSchema, {
  id: ids.session, object: 'checkout_session', livemode: false, mode: 'payment', status: 'open', url: `${BASE}/checkout/${ids.session}`,
  amount: 4900, currency: 'EUR', priceId: null, description: 'Conference ticket', customerId: null, customerEmail: null,
  successUrl: 'https://shop.example.com/thanks', cancelUrl: null, expiresAt: '2026-03-03T09:14:07.512Z', paymentId: null,
  paymentMethodId: null, subscriptionId: null, invoiceId: null, captureMethod: 'automatic', metadata: {}, createdAt: T0, updatedAt: T0, completedAt: null, expiredAt: null,
});

example(publicCheckoutSessionSchema, {
  id: ids.session, object: 'checkout_session', livemode: false, mode: 'payment', status: 'open', amount: 4900, currency: 'EUR',
  description: 'Conference ticket', merchantName: 'Acme Ltd', customerEmail: null, expiresAt: '2026-03-03T09:14:07.512Z',
  successUrl: 'https://shop.example.com/thanks', cancelUrl: null, recurring: null, payable: true,
});

example(paymentLinkSchema, {
  id: ids.link, object: 'payment_link', livemode: false, slug: 'Hq3Zx8Lm2Tk9Wb4Nc7Vd1R', url: `${BASE}/pay/Hq3Zx8Lm2Tk9Wb4Nc7Vd1R`,
  name: 'Donation', description: null, amount: 1000, currency: 'EUR', priceId: null, status: 'active', captureMethod: 'automatic', metadata: {}, createdAt: T0, updatedAt: T0,
});

example(publicPaymentLinkSchema, {
  object: 'payment_link', livemode: false, slug: 'Hq3Zx8Lm2Tk9Wb4Nc7Vd1R', name: 'Donation', description: null, amount: 1000, currency: 'EUR',
  merchantName: 'Acme Ltd', status: 'active',
});

example(payResultSchema, {
  status: 'succeeded', paymentId: ids.payment, subscriptionId: null, paymentMethodId: null, failureCode: null, failureMessage: null,
  redirectUrl: 'https://shop.example.com/thanks',
});

example(invoiceSchema, {
  id: ids.invoice, object: 'invoice', livemode: false, number: 'ACME-0042', customerId: ids.customer, subscriptionId: null, status: 'sent',
  paymentStatus: 'unpaid', currency: 'EUR',
  lineItems: [{ id: 'il_3Xc6Vb9Nm2Qw5E', description: 'Consulting, March', quantity: 10, unitAmount: 12000, amount: 120000, periodStart: null, periodEnd: null, proration: false, taxRateIds: [] }],
  subtotal: 120000, tax: 22800, total: 142800, amountPaid: 0, amountDue: 142800, creditApplied: 0,
  taxBreakdown: [{ taxRateId: ids.taxRate, displayName: 'VAT', percentage: 19, inclusive: false, taxableAmount: 120000, amount: 22800 }],
  defaultTaxRateIds: [ids.taxRate], customerTaxExempt: 'none', dueDate: '2026-04-30', memo: 'Thank you for your business',
  sentAt: T1, paidAt: null, voidedAt: null, paidOutOfBand: false, emailStatus: 'sent', latestPaymentId: null,
  hostedUrl: `${BASE}/invoice/${ids.invoice}`, metadata: {}, createdAt: T0, updatedAt: T1,
});

example(publicInvoiceSchema, {
  id: ids.invoice, object: 'invoice', livemode: false, number: 'ACME-0042', status: 'sent', paymentStatus: 'unpaid', currency: 'EUR',
  subtotal: 120000, tax: 24000, taxBreakdown: [{ displayName: 'USt', percentage: 20, inclusive: false, taxableAmount: 120000, amount: 24000 }], reverseCharge: false,
  total: 144000, creditApplied: 0, amountPaid: 0, amountDue: 144000, dueDate: '2026-04-30', merchantName: 'Acme Ltd', locale: 'de-AT',
  lineItems: [{ description: 'Consulting, March', quantity: 10, amount: 120000 }], nextActionUrl: null, paymentFailureCode: null,
});

example(taxRateSchema, {
  id: ids.taxRate, object: 'tax_rate', livemode: false, displayName: 'VAT', description: 'German VAT, standard rate', percentage: 19, inclusive: false,
  country: 'DE', jurisdiction: null, active: true, metadata: {}, createdAt: T0, updatedAt: T0,
});

example(subscriptionSchema, {
  id: ids.subscription, object: 'subscription', livemode: false, customerId: ids.customer, priceId: ids.price, quantity: 1, status: 'active',
  collectionMethod: 'charge_automatically', currentPeriodStart: T0, currentPeriodEnd: '2026-04-02T09:14:07.512Z', billingCycleAnchor: T0,
  plan: { priceId: ids.price, productId: ids.product, productName: 'Pro plan', unitAmount: 1900, currency: 'EUR', interval: 'month', intervalCount: 1 },
  cancelAtPeriodEnd: false, canceledAt: null, pausedAt: null, endedAt: null, latestInvoiceId: ids.invoice,
  defaultPaymentMethodId: ids.paymentMethod, testClockId: null, nextPaymentAttemptAt: null, defaultTaxRateIds: [], metadata: {}, createdAt: T0, updatedAt: T1,
});

example(prorationPreviewSchema, {
  object: 'proration_preview', subscriptionId: ids.subscription, prorationDate: '2026-03-17T00:00:00.000Z', currency: 'EUR',
  lines: [
    { description: 'Unused time on Pro plan after 17 Mar 2026', amount: -981, periodStart: '2026-03-17T00:00:00.000Z', periodEnd: '2026-04-02T09:14:07.512Z' },
    { description: 'Remaining time on Pro plan × 2 after 17 Mar 2026', amount: 1962, periodStart: '2026-03-17T00:00:00.000Z', periodEnd: '2026-04-02T09:14:07.512Z' },
  ],
  total: 981,
});

example(upcomingInvoiceSchema, {
  object: 'upcoming_invoice', subscriptionId: ids.subscription, currency: 'EUR',
  lineItems: [{ description: 'Pro plan', quantity: 1, unitAmount: 1900, amount: 1900, periodStart: '2026-04-02T09:14:07.512Z', periodEnd: '2026-05-02T09:14:07.512Z', proration: false }],
  subtotal: 1900, tax: 0, taxBreakdown: [], total: 1900, periodStart: '2026-04-02T09:14:07.512Z', periodEnd: '2026-05-02T09:14:07.512Z', createsAt: '2026-04-02T09:14:07.512Z',
});

example(testClockSchema, {
  id: ids.clock, object: 'test_clock', livemode: false, name: 'Leap-year renewals', frozenTime: '2026-01-31T00:00:00.000Z', status: 'ready',
  createdAt: T0, updatedAt: T0,
});

example(paymentSummarySchema, [
  { currency: 'EUR', status: 'succeeded', count: 42, amount: 104_500, amountRefunded: 2_500, net: 102_000 },
  { currency: 'EUR', status: 'failed', count: 3, amount: 0, amountRefunded: 0, net: 0 },
  { currency: 'USD', status: 'succeeded', count: 7, amount: 18_900, amountRefunded: 0, net: 18_900 },
]);

example(exportSchema, {
  id: ids.export, object: 'export', livemode: false, resource: 'payments', format: 'csv', filters: { status: 'succeeded' }, status: 'complete',
  rowCount: 1280, progress: 1, failureMessage: null, url: `${BASE}/v1/exports/${ids.export}/file`, expiresAt: '2026-03-03T09:14:07.512Z',
  completedAt: T1, createdAt: T0, updatedAt: T1,
});
