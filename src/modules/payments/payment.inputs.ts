import { z } from 'zod';
import { amountSchema, currencySchema } from '../../core/money';
import { emailSchema, metadataPatchSchema, metadataSchema } from '../../core/validation';
import { closedSetFilter, idFilter, listSchema, metadataFilter, searchSchema, severalFilter, updatedAfterFilter } from '../../core/pagination';
import { cardInputSchema } from '../../core/card';
import type { GatewayOutcome } from '../../connectors/connector';

export const createPaymentInput = z
  .object({
    customerId: z.string().min(1).max(64).optional(),
    amount: amountSchema,
    currency: currencySchema,
    originalCurrency: currencySchema.optional(),
    paymentMethod: z
      .string({ error: 'must be "card", a saved payment method id (pm_…) or a test token' })
      .min(1)
      .max(64)
      .refine((v) => v === 'card' || /^pm_[A-Za-z0-9_]+$/.test(v), {
        error: 'must be "card", a saved payment method id (pm_…) or a test token',
      }),
    card: cardInputSchema.optional(),
    description: z.string().max(1000).nullable().optional(),
    /** Where the receipt goes when no customer is attached (a hosted page's anonymous payer). */
    receiptEmail: emailSchema.nullable().optional(),
    metadata: metadataSchema.optional(),
    /** `manual`: authorise only; the merchant captures it with POST /v1/payments/{id}/capture. */
    captureMethod: z.enum(['automatic', 'manual'], { error: 'captureMethod must be automatic or manual' }).optional(),
    /** Where the customer is sent once a 3-D Secure challenge is answered (https; checked per mode by the service). */
    returnUrl: z.string().max(2000).optional(),
  })
  .strict()
  .superRefine((v, ctx) => {
    if (v.card && v.paymentMethod !== 'card') {
      ctx.addIssue({ code: 'custom', path: ['card'], message: 'card is only accepted with paymentMethod "card"' });
    }
  });

export const PAYMENT_STATUSES = ['pending', 'requires_action', 'requires_capture', 'succeeded', 'failed', 'canceled', 'requires_review'] as const;

/** POST /v1/payments/{id}/capture: at most what the authorisation holds; all of it by default. */
export const capturePaymentInput = z.object({ amount: amountSchema.optional() }).strict();

export const cancelPaymentInput = z.object({}).strict();

export const updatePaymentInput = z
  .object({
    description: z.string().max(1000).nullable().optional(),
    metadata: metadataPatchSchema.optional(),
  })
  .strict();

/** A bound of the amount filters: an integer in minor units (a REST query's digits, or a GraphQL number). */
const amountBound = (name: string, description: string) => z.preprocess(
  (v) => (typeof v === 'string' && /^-?\d{1,16}$/.test(v) ? Number(v) : v),
  z.number({ error: `${name} must be an integer amount in the smallest currency unit` })
    .int({ error: `${name} must be an integer amount in the smallest currency unit` })
    .min(0, { error: `${name} must not be negative` })
    .max(Number.MAX_SAFE_INTEGER, { error: `${name} must be an integer amount in the smallest currency unit` }),
).optional().meta({ type: 'integer', description } as Record<string, unknown>);

export const listPaymentsInput = listSchema(['createdAt', 'amount'] as const, {
  ...updatedAfterFilter,
  search: searchSchema,
  status: closedSetFilter('status', PAYMENT_STATUSES),
  customerId: idFilter('Only the payments of this customer.'),
  currency: severalFilter('currency', currencySchema, {
    itemLabel: 'an ISO 4217 currency code', description: 'Only payments in one of these currencies: ISO 4217 codes, comma-separated (EUR,USD).',
  }),
  amountGte: amountBound('amountGte', 'Only payments of at least this amount (minor units).'),
  amountLte: amountBound('amountLte', 'Only payments of at most this amount (minor units); not below amountGte.'),
  failureCode: z.string({ error: 'failureCode must be a decline code' }).min(1).max(64, { error: 'failureCode must be at most 64 characters' }).optional()
    .meta({ description: 'Only failed payments with this failure code (card_declined, insufficient_funds, …).' }),
  gatewayId: idFilter('Only the payments that went through this gateway.'),
  invoiceId: idFilter('Only the payments of this invoice.'),
  subscriptionId: idFilter('Only the payments of this subscription\'s invoices.'),
  checkoutSessionId: idFilter('Only the payments made through this checkout session.'),
  paymentLinkId: idFilter('Only the payments made through this payment link.'),
  metadata: metadataFilter,
}).superRefine((v, ctx) => {
  const range = v as { amountGte?: number; amountLte?: number };
  if (range.amountGte !== undefined && range.amountLte !== undefined && range.amountGte > range.amountLte) {
    ctx.addIssue({ code: 'custom', path: ['amountLte'], message: 'amountLte must not be below amountGte' });
  }
});

export const REFUND_STATUSES = ['pending', 'succeeded', 'failed', 'requires_review'] as const;

export const createRefundInput = z
  .object({
    paymentId: z.string({ error: 'must be a payment id' }).min(1).max(64),
    amount: amountSchema.optional(),
    reason: z.string().max(200).nullable().optional(),
  })
  .strict();

export const listRefundsInput = listSchema(['createdAt', 'amount'] as const, {
  ...updatedAfterFilter,
  status: closedSetFilter('status', REFUND_STATUSES),
  paymentId: idFilter('Only the refunds of this payment.'),
  customerId: idFilter('Only the refunds of this customer\'s payments.'),
});

export const savePaymentMethodInput = z
  .object({
    card: cardInputSchema,
    gatewayId: z.string().max(64).optional(),
    /** The currency the card will be charged in: the card is saved where such a payment would route. */
    currency: currencySchema.optional(),
    setDefault: z.boolean().optional(),
  })
  .strict();

export type CreatePaymentInput = z.output<typeof createPaymentInput>;

export const listPaymentMethodsInput = listSchema(['createdAt'] as const, {});

export const GATEWAY_OUTCOMES = ['succeeded', 'declined', 'retryable_error', 'timeout', 'requires_action'] as const satisfies readonly GatewayOutcome[];

const gatewayTransactionFilters = {
  gatewayId: idFilter('Only the calls made to this gateway.'),
  outcome: closedSetFilter('outcome', GATEWAY_OUTCOMES, 'Only the calls whose outcome is one of these'),
};

/** The gateway calls of one payment or subscription (the path names it). */
export const listGatewayTransactionsInput = listSchema(['createdAt'] as const, gatewayTransactionFilters);

/** The account's gateway calls (`GET /v1/gateway-transactions`). */
export const listAccountGatewayTransactionsInput = listSchema(['createdAt'] as const, {
  ...gatewayTransactionFilters,
  paymentId: idFilter('Only the calls made for this payment.'),
  refundId: idFilter('Only the calls made for this refund.'),
});

/** POST /v1/payments/{id}/refunds: the payment is the path's (naming another in the body is refused). */
export const refundPaymentInput = createRefundInput.omit({ paymentId: true });

/** What the hosted page sends: the card, and the payer's name and e-mail where it asks for them. */
export const publicPayInput = z
  .object({
    card: cardInputSchema,
    name: z.string().trim().max(200, { error: 'must be at most 200 characters' }).optional(),
    email: emailSchema.optional(),
  })
  .strict();

export type PublicPayInput = z.infer<typeof publicPayInput>;
