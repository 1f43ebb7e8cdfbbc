import type { ErrorCode } from '../src/core/errors';
import {
  cancelSubscriptionInput, createSubscriptionInput, listSubscriptionsInput, previewProrationInput, subListInput, updateSubscriptionInput,
} from '../src/modules/subscriptions/subscription.inputs';
import { prorationPreviewSchema, subscriptionSchema, upcomingInvoiceSchema } from '../src/modules/subscriptions/subscription.schemas';
import { invoiceSchema } from '../src/modules/invoices/invoice.schemas';
import { gatewayTransactionSchema, paymentSchema } from '../src/modules/payments/payment.schemas';
import { checkoutSessionSchema } from '../src/modules/checkout/checkout.schemas';
import { listGatewayTransactionsInput } from '../src/modules/payments/payment.inputs';
import { route } from './route-table';

const CHARGING: ErrorCode[] = ['card_declined', 'no_gateway_available', 'gateway_unavailable', 'invoice_payment_in_progress'];

export const subscriptionRoutes = [
  route.one({
    method: 'POST', path: '/subscriptions', operationId: 'createSubscription', tag: 'Subscriptions', summary: 'Subscribe a customer to a recurring price (the first invoice is charged now)',
    permission: 'subscriptions:write', idempotent: 'createSubscription', body: createSubscriptionInput, response: subscriptionSchema,
    errors: ['invalid_state', 'mode_mismatch', ...CHARGING],
    example: { customerId: 'cus_3Jq8LmZ2xV9cTb', priceId: 'price_9Kd2PqL7wZ1xYb', paymentMethodId: 'pm_5Tg7YhQ2wE3rXc' },
    handle: (s, r) => s.subscriptions.create(r.rc, r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/subscriptions', operationId: 'listSubscriptions', tag: 'Subscriptions', summary: 'List subscriptions',
    permission: 'subscriptions:read', query: listSubscriptionsInput, response: subscriptionSchema, errors: [],
    handle: (s, r) => s.subscriptions.list(r.rc, r.query),
  }),
  route.one({
    method: 'GET', path: '/subscriptions/{id}', operationId: 'retrieveSubscription', tag: 'Subscriptions', summary: 'Retrieve a subscription',
    permission: 'subscriptions:read', response: subscriptionSchema, errors: [],
    handle: (s, r) => s.subscriptions.retrieve(r.rc, r.param('id')),
  }),
  route.one({
    method: 'PATCH', path: '/subscriptions/{id}', operationId: 'updateSubscription', tag: 'Subscriptions', summary: 'Change plan or quantity, with prorations',
    permission: 'subscriptions:write', idempotent: 'updateSubscription', body: updateSubscriptionInput, response: subscriptionSchema,
    errors: ['invalid_state', 'proration_unavailable', 'invalid_proration_date', ...CHARGING],
    example: { priceId: 'price_2Wd8HkR5tY3mNc', prorationBehavior: 'create_prorations' },
    handle: (s, r) => s.subscriptions.update(r.rc, r.param('id'), r.body, r.idem),
  }),
  route.one({
    method: 'POST', path: '/subscriptions/{id}/preview-proration', operationId: 'previewProration', tag: 'Subscriptions', summary: 'What a plan change would prorate',
    permission: 'subscriptions:read', body: previewProrationInput, response: prorationPreviewSchema, errors: ['invalid_state', 'proration_unavailable', 'invalid_proration_date'],
    example: { priceId: 'price_2Wd8HkR5tY3mNc', quantity: 2 },
    handle: (s, r) => s.subscriptions.previewProration(r.rc, r.param('id'), r.body),
  }),
  route.one({
    method: 'GET', path: '/subscriptions/{id}/upcoming-invoice', operationId: 'upcomingInvoice', tag: 'Subscriptions', summary: 'What the next billing run will invoice',
    permission: 'subscriptions:read', response: upcomingInvoiceSchema, errors: ['invalid_state'],
    handle: (s, r) => s.subscriptions.upcomingInvoice(r.rc, r.param('id')),
  }),
  route.one({
    method: 'POST', path: '/subscriptions/{id}/pause', operationId: 'pauseSubscription', tag: 'Subscriptions', summary: 'Pause billing',
    permission: 'subscriptions:write', idempotent: 'pauseSubscription', noBody: true, response: subscriptionSchema, errors: ['invalid_state'],
    handle: (s, r) => s.subscriptions.pause(r.rc, r.param('id'), r.idem),
  }),
  route.one({
    method: 'POST', path: '/subscriptions/{id}/resume', operationId: 'resumeSubscription', tag: 'Subscriptions', summary: 'Resume a paused subscription',
    permission: 'subscriptions:write', idempotent: 'resumeSubscription', noBody: true, response: subscriptionSchema, errors: ['invalid_state'],
    handle: (s, r) => s.subscriptions.resume(r.rc, r.param('id'), r.idem),
  }),
  route.one({
    method: 'POST', path: '/subscriptions/{id}/cancel', operationId: 'cancelSubscription', tag: 'Subscriptions', summary: 'Cancel now or at the period end',
    permission: 'subscriptions:write', idempotent: 'cancelSubscription', body: cancelSubscriptionInput, response: subscriptionSchema, errors: ['invalid_state'],
    example: { atPeriodEnd: true },
    handle: (s, r) => s.subscriptions.cancel(r.rc, r.param('id'), r.body, r.idem),
  }),
  route.one({
    method: 'POST', path: '/subscriptions/{id}/retry-payment', operationId: 'retrySubscriptionPayment', tag: 'Subscriptions', summary: "Charge a past-due subscription's open invoice now",
    description: 'Answers a checkout session tied to the invoice: complete when the retry paid it, else open for the customer to pay with another card.',
    permission: 'subscriptions:write', idempotent: 'retrySubscriptionPayment', noBody: true, response: checkoutSessionSchema, errors: ['invalid_state', ...CHARGING],
    handle: (s, r) => s.subscriptions.retryPayment(r.rc, r.param('id'), r.idem),
  }),
  route.list({
    method: 'GET', path: '/subscriptions/{id}/invoices', operationId: 'listSubscriptionInvoices', tag: 'Subscriptions', summary: "A subscription's invoices",
    permission: 'subscriptions:read', query: subListInput, response: invoiceSchema, errors: [],
    handle: (s, r) => s.subscriptions.invoicesOf(r.rc, r.param('id'), r.query),
  }),
  route.list({
    method: 'GET', path: '/subscriptions/{id}/payments', operationId: 'listSubscriptionPayments', tag: 'Subscriptions', summary: "A subscription's payments",
    permission: 'subscriptions:read', query: subListInput, response: paymentSchema, errors: [],
    handle: (s, r) => s.subscriptions.paymentsOf(r.rc, r.param('id'), r.query),
  }),
  route.list({
    method: 'GET', path: '/subscriptions/{id}/gateway-transactions', operationId: 'listSubscriptionGatewayTransactions', tag: 'Subscriptions', summary: "Every gateway call made for a subscription's payments",
    permission: 'subscriptions:read', query: listGatewayTransactionsInput, response: gatewayTransactionSchema, errors: [],
    handle: (s, r) => s.subscriptions.gatewayTransactionsOf(r.rc, r.param('id'), r.query),
  }),
];
