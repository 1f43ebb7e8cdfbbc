import { z } from 'zod';
import { amountOut, currencyOut, metadataOut, nullableTimestamp, objectBase, timestamp } from '../../core/api-schemas';
import { CAPTURE_METHODS, CHECKOUT_MODES, CHECKOUT_SESSION_STATUSES, PAYMENT_LINK_STATUSES } from './checkout.inputs';

const captureMethodOut = z.enum(CAPTURE_METHODS).meta({
  description: 'How the payments made here are captured: automatic, or manual (authorised only: requires_capture until POST /v1/payments/{id}/capture; the authorisation pays the session).',
});

export const checkoutSessionSchema = z
  .object({
    ...objectBase('checkout_session'),
    mode: z.enum(CHECKOUT_MODES),
    status: z.enum(CHECKOUT_SESSION_STATUSES),
    url: z.string().meta({ description: 'The hosted page where the customer pays.' }),
    amount: amountOut.nullable(),
    currency: currencyOut.nullable(),
    priceId: z.string().nullable(),
    description: z.string().nullable(),
    customerId: z.string().nullable(),
    customerEmail: z.string().nullable(),
    successUrl: z.string().nullable(),
    cancelUrl: z.string().nullable(),
    expiresAt: timestamp,
    paymentId: z.string().nullable(),
    paymentMethodId: z.string().nullable(),
    subscriptionId: z.string().nullable(),
    invoiceId: z.string().nullable(),
    captureMethod: captureMethodOut,
    metadata: metadataOut,
    createdAt: timestamp,
    updatedAt: timestamp,
    completedAt: nullableTimestamp,
    expiredAt: nullableTimestamp,
  })
  .meta({ id: 'CheckoutSession' });

export const publicCheckoutSessionSchema = z
  .object({
    ...objectBase('checkout_session'),
    mode: z.enum(CHECKOUT_MODES),
    status: z.enum(CHECKOUT_SESSION_STATUSES),
    amount: amountOut.nullable(),
    currency: currencyOut.nullable(),
    description: z.string().nullable(),
    merchantName: z.string(),
    customerEmail: z.string().nullable(),
    expiresAt: timestamp,
    successUrl: z.string().nullable(),
    cancelUrl: z.string().nullable(),
    recurring: z.object({ interval: z.string(), intervalCount: z.number().int() }).nullable(),
    payable: z.boolean().meta({ description: 'Whether the session takes a pay now: open, and not closed by too many failed attempts (then a pay answers 429 too_many_attempts).' }),
  })
  .meta({ id: 'PublicCheckoutSession' });

export const paymentLinkSchema = z
  .object({
    ...objectBase('payment_link'),
    slug: z.string(),
    url: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    amount: amountOut,
    currency: currencyOut,
    priceId: z.string().nullable(),
    status: z.enum(PAYMENT_LINK_STATUSES),
    captureMethod: captureMethodOut,
    metadata: metadataOut,
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'PaymentLink' });

export const publicPaymentLinkSchema = z
  .object({
    object: z.literal('payment_link'),
    livemode: z.boolean(),
    slug: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    amount: amountOut,
    currency: currencyOut,
    merchantName: z.string(),
    status: z.literal('active'),
  })
  .meta({ id: 'PublicPaymentLink' });

/** What a public pay answers: the page shows it and follows `redirectUrl`. */
export const payResultSchema = z
  .object({
    status: z.enum(['succeeded', 'failed', 'processing', 'requires_action']).meta({ description: 'requires_action: follow redirectUrl, the 3-D Secure challenge; it brings the payer back to the page.' }),
    paymentId: z.string().nullable(),
    subscriptionId: z.string().nullable(),
    paymentMethodId: z.string().nullable(),
    failureCode: z.string().nullable(),
    failureMessage: z.string().nullable(),
    redirectUrl: z.string().nullable(),
  })
  .meta({ id: 'PayResult' });
