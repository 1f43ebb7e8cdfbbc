import { z } from 'zod';
import { amountSchema, currencySchema } from '../../core/money';
import { emailSchema, metadataPatchSchema, metadataSchema } from '../../core/validation';
import { listSchema, searchSchema, updatedAfterFilter } from '../../core/pagination';
import { cardInputSchema } from '../../core/card';

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

export const listPaymentsInput = listSchema(['createdAt', 'amount'] as const, {
  ...updatedAfterFilter,
  search: searchSchema,
  status: z.enum(PAYMENT_STATUSES, { error: `status must be one of ${PAYMENT_STATUSES.join(', ')}` }).optional(),
  customerId: z.string().max(64).optional(),
});

export const createRefundInput = z
  .object({
    paymentId: z.string({ error: 'must be a payment id' }).min(1).max(64),
    amount: amountSchema.optional(),
    reason: z.string().max(200).nullable().optional(),
  })
  .strict();

export const listRefundsInput = listSchema(['createdAt', 'amount'] as const, {
  ...updatedAfterFilter,
  status: z.enum(['pending', 'succeeded', 'failed', 'requires_review'], { error: 'status must be pending, succeeded, failed or requires_review' }).optional(),
  paymentId: z.string().max(64).optional(),
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

export const listGatewayTransactionsInput = listSchema(['createdAt'] as const, {});

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
