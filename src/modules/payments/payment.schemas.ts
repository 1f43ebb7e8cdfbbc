import { z } from 'zod';
import { amountOut, currencyOut, jsonObject, metadataOut, objectBase, timestamp } from '../../core/api-schemas';

const paymentMethodDetails = z.object({
  type: z.literal('card'),
  brand: z.string(),
  last4: z.string(),
  expMonth: z.number().int().nullable(),
  expYear: z.number().int().nullable(),
  fingerprint: z.string().nullable(),
});

/** One gateway tried: its outcome, decline code and latency in ms. */
const paymentAttempt = z.object({ gateway: z.string(), outcome: z.string(), code: z.string().nullable(), latency: z.number() });

export const paymentSchema = z
  .object({
    ...objectBase('payment'),
    customerId: z.string().nullable(),
    amount: amountOut,
    currency: currencyOut,
    originalCurrency: currencyOut,
    originalAmount: amountOut.nullable(),
    exchangeRate: z.string().nullable(),
    paymentMethod: z.string(),
    paymentMethodDetails,
    description: z.string().nullable(),
    receiptEmail: z.string().nullable().meta({ description: 'The e-mail an anonymous payer gave on a hosted page for the receipt; such a payment attaches no customer.' }),
    metadata: metadataOut,
    status: z.enum(['pending', 'requires_action', 'requires_capture', 'succeeded', 'failed', 'canceled', 'requires_review']),
    failureCode: z.string().nullable(),
    failureMessage: z.string().nullable(),
    captureMethod: z.enum(['automatic', 'manual']),
    amountCapturable: amountOut.meta({ description: 'What an uncaptured authorisation holds (status requires_capture); 0 otherwise.' }),
    amountCaptured: amountOut.meta({ description: 'What was taken from the card; refunds apply to it.' }),
    nextAction: z.object({ type: z.literal('redirect_to_url'), url: z.string() }).nullable()
      .meta({ description: 'While requires_action: the page where the customer authenticates the payment (3-D Secure).' }),
    amountRefunded: amountOut,
    refunded: z.boolean(),
    gatewayId: z.string().nullable(),
    attempts: z.array(paymentAttempt),
    invoiceId: z.string().nullable(),
    subscriptionId: z.string().nullable(),
    checkoutSessionId: z.string().nullable(),
    paymentLinkId: z.string().nullable(),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Payment' });

export const refundSchema = z
  .object({
    ...objectBase('refund'),
    paymentId: z.string(),
    amount: amountOut,
    currency: currencyOut,
    reason: z.string().nullable(),
    status: z.enum(['pending', 'succeeded', 'failed', 'requires_review']),
    gatewayId: z.string().nullable(),
    failureCode: z.string().nullable(),
    failureMessage: z.string().nullable(),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Refund' });

export const gatewayTransactionSchema = z
  .object({
    ...objectBase('gateway_transaction'),
    paymentId: z.string().nullable(),
    refundId: z.string().nullable(),
    gatewayId: z.string(),
    gatewayType: z.string(),
    kind: z.string(),
    attempt: z.number().int(),
    idempotencyKey: z.string(),
    outcome: z.string(),
    code: z.string().nullable(),
    message: z.string().nullable(),
    reference: z.string().nullable(),
    latencyMs: z.number(),
    request: jsonObject,
    response: jsonObject,
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'GatewayTransaction' });

export const paymentMethodSchema = z
  .object({
    ...objectBase('payment_method'),
    customerId: z.string(),
    gatewayId: z.string(),
    type: z.literal('card'),
    card: z.object({ brand: z.string(), last4: z.string(), expMonth: z.number().int(), expYear: z.number().int(), fingerprint: z.string() }),
    isDefault: z.boolean(),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'PaymentMethod' });
