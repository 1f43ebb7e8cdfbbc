import type { ErrorCode } from '../src/core/errors';
import {
  createPaymentInput, createRefundInput, listGatewayTransactionsInput, listPaymentMethodsInput, listPaymentsInput,
  listRefundsInput, refundPaymentInput, savePaymentMethodInput, updatePaymentInput, capturePaymentInput,
} from '../src/modules/payments/payment.inputs';
import { gatewayTransactionSchema, paymentMethodSchema, paymentSchema, refundSchema } from '../src/modules/payments/payment.schemas';
import { route } from './route-table';

/** What charging a card through routing can answer besides the payment itself. */
const CHARGING: ErrorCode[] = ['no_gateway_available', 'gateway_unavailable', 'fx_rate_unavailable'];
const REFUNDING: ErrorCode[] = ['payment_not_refundable', 'refund_exceeds_remaining', 'gateway_unavailable'];

const card = { number: '4242424242424242', expMonth: 12, expYear: 2030, cvc: '123' };

export const paymentRoutes = [
  route.one({
    method: 'POST', path: '/payments', operationId: 'createPayment', tag: 'Payments', summary: 'Charge a card (routed across the gateways)',
    description: 'A declined card answers 201 with the payment `failed` and its failureCode; a gateway outage answers 503 and frees the Idempotency-Key.',
    permission: 'payments:write', idempotent: 'createPayment', body: createPaymentInput, response: paymentSchema, errors: CHARGING,
    example: { amount: 2500, currency: 'EUR', paymentMethod: 'card', card, description: 'Order 1042' },
    handle: (s, r) => s.payments.create(r.rc, r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/payments', operationId: 'listPayments', tag: 'Payments', summary: 'List payments',
    permission: 'payments:read', query: listPaymentsInput, response: paymentSchema, errors: [],
    handle: (s, r) => s.payments.list(r.rc, r.query),
  }),
  route.one({
    method: 'GET', path: '/payments/{id}', operationId: 'retrievePayment', tag: 'Payments', summary: 'Retrieve a payment',
    permission: 'payments:read', response: paymentSchema, errors: [],
    handle: (s, r) => s.payments.retrieve(r.rc, r.param('id')),
  }),
  route.one({
    method: 'PATCH', path: '/payments/{id}', operationId: 'updatePayment', tag: 'Payments', summary: "Update a payment's description or metadata",
    permission: 'payments:write', body: updatePaymentInput, response: paymentSchema, errors: [],
    example: { metadata: { orderId: '1042' } },
    handle: (s, r) => s.payments.update(r.rc, r.param('id'), r.body),
  }),
  route.one({
    method: 'POST', path: '/payments/{id}/capture', operationId: 'capturePayment', tag: 'Payments', summary: 'Capture an authorised payment, in whole or in part',
    description: 'Only a payment in `requires_capture` (made with captureMethod `manual`); `amount` defaults to amountCapturable and the rest of the authorisation is released.',
    permission: 'payments:write', idempotent: 'capturePayment', body: capturePaymentInput, response: paymentSchema,
    errors: ['invalid_state', 'capture_exceeds_authorized', 'capture_failed', 'payment_in_progress', 'gateway_unavailable'],
    example: { amount: 2000 },
    handle: (s, r) => s.paymentActions.capture(r.rc, r.param('id'), r.body, r.idem),
  }),
  route.one({
    method: 'POST', path: '/payments/{id}/cancel', operationId: 'cancelPayment', tag: 'Payments', summary: 'Void an uncaptured authorisation, or a payment waiting for 3-D Secure',
    permission: 'payments:write', idempotent: 'cancelPayment', noBody: true, response: paymentSchema,
    errors: ['invalid_state', 'payment_in_progress', 'gateway_unavailable'],
    handle: (s, r) => s.paymentActions.cancel(r.rc, r.param('id'), r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/payments/{id}/refunds', operationId: 'listPaymentRefunds', tag: 'Refunds', summary: "A payment's refunds",
    permission: 'refunds:read', query: listRefundsInput, response: refundSchema, errors: [],
    handle: (s, r) => s.refunds.list(r.rc, r.query, r.param('id')),
  }),
  route.one({
    method: 'POST', path: '/payments/{id}/refunds', operationId: 'refundPayment', tag: 'Refunds', summary: 'Refund a payment, in whole or in part',
    permission: 'refunds:write', idempotent: 'createRefund', body: refundPaymentInput, response: refundSchema, errors: REFUNDING,
    example: { amount: 500, reason: 'requested_by_customer' },
    handle: (s, r) => s.refunds.create(r.rc, r.body, r.idem, r.param('id')),
  }),
  route.list({
    method: 'GET', path: '/payments/{id}/gateway-transactions', operationId: 'listPaymentGatewayTransactions', tag: 'Payments', summary: 'Every gateway call made for a payment',
    permission: 'payments:read', query: listGatewayTransactionsInput, response: gatewayTransactionSchema, errors: [],
    handle: (s, r) => s.payments.gatewayTransactions(r.rc, r.param('id'), r.query),
  }),

  route.one({
    method: 'POST', path: '/refunds', operationId: 'createRefund', tag: 'Refunds', summary: 'Refund a payment named in the body',
    permission: 'refunds:write', idempotent: 'createRefund', body: createRefundInput, response: refundSchema, errors: ['resource_not_found', ...REFUNDING],
    example: { paymentId: 'pay_7Hc2kQ9mXz4Lb1', amount: 500 },
    handle: (s, r) => s.refunds.create(r.rc, r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/refunds', operationId: 'listRefunds', tag: 'Refunds', summary: 'List refunds',
    permission: 'refunds:read', query: listRefundsInput, response: refundSchema, errors: [],
    handle: (s, r) => s.refunds.list(r.rc, r.query),
  }),
  route.one({
    method: 'GET', path: '/refunds/{id}', operationId: 'retrieveRefund', tag: 'Refunds', summary: 'Retrieve a refund',
    permission: 'refunds:read', response: refundSchema, errors: [],
    handle: (s, r) => s.refunds.retrieve(r.rc, r.param('id')),
  }),

  route.one({
    method: 'POST', path: '/customers/{id}/payment-methods', operationId: 'savePaymentMethod', tag: 'Payment methods', summary: 'Save a card for a customer (at a gateway; the number is never kept)',
    permission: 'customers:write', idempotent: 'savePaymentMethod', body: savePaymentMethodInput, response: paymentMethodSchema,
    errors: ['card_declined', 'no_gateway_available', 'gateway_unavailable'],
    example: { card, currency: 'EUR', setDefault: true },
    handle: (s, r) => s.paymentMethods.save(r.rc, r.param('id'), r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/customers/{id}/payment-methods', operationId: 'listPaymentMethods', tag: 'Payment methods', summary: "A customer's saved cards",
    permission: 'customers:read', query: listPaymentMethodsInput, response: paymentMethodSchema, errors: [],
    handle: (s, r) => s.paymentMethods.list(r.rc, r.param('id'), r.query),
  }),
];
