import type { TestApp } from './app';

type Json = Record<string, any>;

/** One object of every type `node` reads, made over REST in one account and mode (test). */
export interface Objects {
  gateway: string;
  customer: string;
  paymentMethod: string;
  payment: string;
  refund: string;
  gatewayTransaction: string;
  refundTransaction: string;
  product: string;
  price: string;
  subscription: string;
  invoice: string;
  subscriptionPayment: string;
  taxRate: string;
  checkoutSession: string;
  paymentLink: string;
  webhookEndpoint: string;
  webhookAttempt: string;
  event: string;
  testClock: string;
  apiKey: string;
  balanceTransaction: string;
}

export const CARD = { number: '4242424242424242', expMonth: 12, expYear: 2040, cvc: '123' };

export function restClient(app: TestApp, key: string) {
  // `any`: a list route answers an array, any other an object.
  return async (method: string, path: string, body?: Json): Promise<any> => {
    const res = await app.request(method, path, { key, body });
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.data;
  };
}

/**
 * Makes the objects: payments through a simulator gateway of the account (so they name it), a
 * subscription charged to the customer's saved default card, a webhook endpoint whose delivery to
 * a closed port failed once (an attempt).
 */
export async function makeObjects(app: TestApp, key: string): Promise<Objects> {
  const rest = restClient(app, key);
  const gateway = await rest('POST', '/v1/gateways', { name: 'Sim', type: 'simulator' });
  const webhookEndpoint = await rest('POST', '/v1/webhook-endpoints', { url: 'https://127.0.0.1:9/nodes', events: ['customer.created'] });
  const customer = await rest('POST', '/v1/customers', { email: `node${Math.random()}@example.com` });
  await app.server.services.webhooks.deliveries.deliverDue(100);
  const [webhookAttempt] = await rest('GET', `/v1/webhook-endpoints/${webhookEndpoint.id}/deliveries`);
  const [event] = await rest('GET', '/v1/events?type=customer.created');
  const paymentMethod = await rest('POST', `/v1/customers/${customer.id}/payment-methods`, { card: CARD, setDefault: true });
  const payment = await rest('POST', '/v1/payments', { amount: 1500, currency: 'usd', paymentMethod: 'pm_card_visa', customerId: customer.id });
  const refund = await rest('POST', '/v1/refunds', { paymentId: payment.id, amount: 100 });
  const calls = await rest('GET', `/v1/payments/${payment.id}/gateway-transactions`);
  const product = await rest('POST', '/v1/products', { name: 'Plan' });
  const price = await rest('POST', '/v1/prices', { productId: product.id, unitAmount: 900, currency: 'usd', recurring: { interval: 'month' } });
  const subscription = await rest('POST', '/v1/subscriptions', { customerId: customer.id, priceId: price.id, paymentMethodId: paymentMethod.id });
  const invoice = await rest('GET', `/v1/invoices/${subscription.latestInvoiceId}`);
  const taxRate = await rest('POST', '/v1/tax-rates', { displayName: 'VAT', percentage: 20, inclusive: false });
  const checkoutSession = await rest('POST', '/v1/checkout-sessions', { mode: 'payment', amount: 500, currency: 'usd' });
  const paymentLink = await rest('POST', '/v1/payment-links', { name: 'Link', amount: 700, currency: 'usd' });
  const testClock = await rest('POST', '/v1/test-clocks', { frozenTime: '2027-01-01T00:00:00Z' });
  const apiKey = await rest('POST', '/v1/api-keys', { name: 'reader', permissions: ['customers:read'] });
  const balanceTransaction = await rest('POST', `/v1/customers/${customer.id}/balance-transactions`, { amount: 250, currency: 'usd', description: 'goodwill' });
  return {
    gateway: gateway.id,
    customer: customer.id,
    paymentMethod: paymentMethod.id,
    payment: payment.id,
    refund: refund.id,
    gatewayTransaction: calls.find((c: Json) => c.kind === 'charge').id,
    refundTransaction: calls.find((c: Json) => c.kind === 'refund').id,
    product: product.id,
    price: price.id,
    subscription: subscription.id,
    invoice: invoice.id,
    subscriptionPayment: invoice.latestPaymentId,
    taxRate: taxRate.id,
    checkoutSession: checkoutSession.id,
    paymentLink: paymentLink.id,
    webhookEndpoint: webhookEndpoint.id,
    webhookAttempt: webhookAttempt.id,
    event: event.id,
    testClock: testClock.id,
    apiKey: apiKey.id,
    balanceTransaction: balanceTransaction.id,
  };
}

/** The GraphQL type each fixture object answers as. */
export const TYPE_OF: Record<keyof Objects, string> = {
  gateway: 'Gateway',
  customer: 'Customer',
  paymentMethod: 'PaymentMethod',
  payment: 'Payment',
  refund: 'Refund',
  gatewayTransaction: 'GatewayTransaction',
  refundTransaction: 'GatewayTransaction',
  product: 'Product',
  price: 'Price',
  subscription: 'BillingSubscription',
  invoice: 'Invoice',
  subscriptionPayment: 'Payment',
  taxRate: 'TaxRate',
  checkoutSession: 'CheckoutSession',
  paymentLink: 'PaymentLink',
  webhookEndpoint: 'WebhookEndpoint',
  webhookAttempt: 'WebhookDeliveryAttempt',
  event: 'Event',
  testClock: 'TestClock',
  apiKey: 'ApiKey',
  balanceTransaction: 'BalanceTransaction',
};
