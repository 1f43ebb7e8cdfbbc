import { z } from 'zod';
import { amountSchema, currencySchema } from '../../core/money';
import { emailSchema as email, metadataPatchSchema, metadataSchema } from '../../core/validation';
import { closedSetFilter, idFilter, listSchema, searchSchema, updatedAfterFilter } from '../../core/pagination';

/** A session lives 30 minutes to 24 hours (24 hours unless asked). */
export const SESSION_LIFETIME = { minSeconds: 30 * 60, maxSeconds: 24 * 60 * 60, defaultSeconds: 24 * 60 * 60 };

export const CHECKOUT_MODES = ['payment', 'setup', 'subscription'] as const;
export const CHECKOUT_SESSION_STATUSES = ['open', 'complete', 'expired'] as const;
export const PAYMENT_LINK_STATUSES = ['active', 'inactive'] as const;

/** Where the customer is sent back to; whether http is allowed depends on the mode (the service checks). */
const returnUrl = z.string({ error: 'must be an absolute https:// URL' }).trim().max(2048, { error: 'must be at most 2048 characters' });

const description = z.string({ error: 'must be a string' }).trim().max(500, { error: 'must be at most 500 characters' });

export const CAPTURE_METHODS = ['automatic', 'manual'] as const;

/** How the payments made from a session or a link are captured (API.md §9): `manual` authorises only. */
const captureMethod = z.enum(CAPTURE_METHODS, { error: 'captureMethod must be automatic or manual' });

export const createCheckoutSessionInput = z
  .object({
    mode: z.enum(CHECKOUT_MODES, { error: `mode must be one of ${CHECKOUT_MODES.join(', ')}` }),
    customerId: z.string().min(1).max(64).optional(),
    customerEmail: email.optional(),
    amount: amountSchema.optional(),
    currency: currencySchema.optional(),
    priceId: z.string().min(1).max(64).optional(),
    description: description.optional(),
    successUrl: returnUrl.optional(),
    cancelUrl: returnUrl.optional(),
    expiresInSeconds: z
      .number({ error: `must be a whole number of seconds from ${SESSION_LIFETIME.minSeconds} to ${SESSION_LIFETIME.maxSeconds}` })
      .int({ error: `must be a whole number of seconds from ${SESSION_LIFETIME.minSeconds} to ${SESSION_LIFETIME.maxSeconds}` })
      .min(SESSION_LIFETIME.minSeconds, { error: `must be at least ${SESSION_LIFETIME.minSeconds} (30 minutes)` })
      .max(SESSION_LIFETIME.maxSeconds, { error: `must be at most ${SESSION_LIFETIME.maxSeconds} (24 hours)` })
      .optional(),
    captureMethod: captureMethod.optional(),
    metadata: metadataSchema.optional(),
  })
  .strict()
  .superRefine((v, ctx) => {
    if (v.captureMethod === 'manual' && v.mode !== 'payment') {
      // A setup session charges nothing; a subscription's invoices are always captured at once.
      ctx.addIssue({ code: 'custom', path: ['captureMethod'], message: `a ${v.mode} session captures automatically: captureMethod manual is for payment sessions` });
    }
    if (v.customerId && v.customerEmail) {
      ctx.addIssue({ code: 'custom', path: ['customerEmail'], message: 'give customerId or customerEmail, not both' });
    }
    if (v.mode === 'setup') {
      for (const field of ['amount', 'currency', 'priceId'] as const) {
        if (v[field] !== undefined) ctx.addIssue({ code: 'custom', path: [field], message: `a setup session saves a card and charges nothing: ${field} is not accepted` });
      }
      if (!v.customerId && !v.customerEmail) {
        ctx.addIssue({ code: 'custom', path: ['customerId'], message: 'a setup session needs customerId or customerEmail: the card is saved for that customer' });
      }
      return;
    }
    if (v.priceId !== undefined) {
      for (const field of ['amount', 'currency'] as const) {
        if (v[field] !== undefined) ctx.addIssue({ code: 'custom', path: [field], message: `give priceId or amount and currency, not both` });
      }
      return;
    }
    if (v.mode === 'subscription') {
      ctx.addIssue({ code: 'custom', path: ['priceId'], message: 'a subscription session needs priceId (a recurring price)' });
      return;
    }
    if (v.amount === undefined) ctx.addIssue({ code: 'custom', path: ['amount'], message: 'a payment session needs amount and currency, or priceId' });
    if (v.currency === undefined) ctx.addIssue({ code: 'custom', path: ['currency'], message: 'a payment session needs amount and currency, or priceId' });
  });

export const listCheckoutSessionsInput = listSchema(['createdAt', 'amount'] as const, {
  ...updatedAfterFilter,
  status: closedSetFilter('status', CHECKOUT_SESSION_STATUSES),
  mode: closedSetFilter('mode', CHECKOUT_MODES),
  customerId: idFilter('Only the sessions of this customer.'),
});

export const createPaymentLinkInput = z
  .object({
    name: z.string({ error: 'name is required' }).trim().min(1, { error: 'name must not be empty' }).max(200, { error: 'must be at most 200 characters' }),
    description: description.nullable().optional(),
    amount: amountSchema.optional(),
    currency: currencySchema.optional(),
    priceId: z.string().min(1).max(64).optional(),
    captureMethod: captureMethod.optional(),
    metadata: metadataSchema.optional(),
  })
  .strict()
  .superRefine((v, ctx) => {
    if (v.priceId !== undefined) {
      for (const field of ['amount', 'currency'] as const) {
        if (v[field] !== undefined) ctx.addIssue({ code: 'custom', path: [field], message: 'give priceId or amount and currency, not both' });
      }
      return;
    }
    if (v.amount === undefined) ctx.addIssue({ code: 'custom', path: ['amount'], message: 'a payment link needs amount and currency, or priceId' });
    if (v.currency === undefined) ctx.addIssue({ code: 'custom', path: ['currency'], message: 'a payment link needs amount and currency, or priceId' });
  });

export const updatePaymentLinkInput = z
  .object({
    name: z.string().trim().min(1, { error: 'name must not be empty' }).max(200, { error: 'must be at most 200 characters' }).optional(),
    description: description.nullable().optional(),
    status: z.enum(PAYMENT_LINK_STATUSES, { error: 'status must be active or inactive' }).optional(),
    metadata: metadataPatchSchema.optional(),
  })
  .strict();

export const listPaymentLinksInput = listSchema(['createdAt', 'amount'] as const, {
  ...updatedAfterFilter,
  search: searchSchema,
  status: closedSetFilter('status', PAYMENT_LINK_STATUSES),
});

export type CreateCheckoutSessionInput = z.infer<typeof createCheckoutSessionInput>;
