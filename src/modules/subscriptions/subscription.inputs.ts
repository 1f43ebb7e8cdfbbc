import { z } from 'zod';
import { metadataPatchSchema, metadataSchema } from '../../core/validation';
import { closedSetFilter, idFilter, listSchema, updatedAfterFilter } from '../../core/pagination';
import { taxRateIdsSchema } from '../tax-rates/tax-rate.inputs';

export const SUBSCRIPTION_STATUSES = ['active', 'past_due', 'paused', 'canceled'] as const;
export const COLLECTION_METHODS = ['charge_automatically', 'send_invoice'] as const;
export const PRORATION_BEHAVIORS = ['create_prorations', 'none', 'always_invoice'] as const;

const INSTANT = 'must be an ISO 8601 instant such as 2026-01-31T00:00:00Z';
/** An ISO 8601 instant with its offset (a bare date or a local time is refused: periods are UTC). */
export const instant = z
  .string({ error: INSTANT })
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/, { error: INSTANT })
  .refine((v) => !Number.isNaN(Date.parse(v)) && Date.parse(v) >= Date.UTC(1970, 0, 1) && Date.parse(v) < Date.UTC(10000, 0, 1), { error: INSTANT })
  .transform((v) => new Date(v));

const ref = (what: string, prefix: string) =>
  z.string({ error: `must be a ${what} id (${prefix}_…)` }).regex(new RegExp(`^${prefix}_[A-Za-z0-9_]{1,60}$`), { error: `must be a ${what} id (${prefix}_…)` });

const quantity = z
  .number({ error: 'must be a whole number from 1 to 10000' })
  .int({ error: 'must be a whole number from 1 to 10000' })
  .min(1, { error: 'must be a whole number from 1 to 10000' })
  .max(10_000, { error: 'must be a whole number from 1 to 10000' });

export const createSubscriptionInput = z
  .object({
    customerId: ref('customer', 'cus'),
    priceId: ref('price', 'price'),
    quantity: quantity.default(1),
    paymentMethodId: ref('saved payment method', 'pm').optional(),
    // The instant the periods are counted from; later than now: a shorter first period, prorated.
    billingCycleAnchor: instant.optional(),
    collectionMethod: z.enum(COLLECTION_METHODS, { error: `must be one of ${COLLECTION_METHODS.join(', ')}` }).default('charge_automatically'),
    testClockId: ref('test clock', 'clock').optional(),
    // The tax rates of its invoices' lines, proration lines included (API.md §12).
    defaultTaxRateIds: taxRateIdsSchema.optional(),
    metadata: metadataSchema.optional(),
  })
  .strict();

export const updateSubscriptionInput = z
  .object({
    priceId: ref('price', 'price').optional(),
    quantity: quantity.optional(),
    billingCycleAnchor: z.enum(['now', 'unchanged'], { error: 'must be now or unchanged' }).optional(),
    prorationBehavior: z.enum(PRORATION_BEHAVIORS, { error: `must be one of ${PRORATION_BEHAVIORS.join(', ')}` }).default('create_prorations'),
    prorationDate: instant.optional(),
    // Taken by the invoices made from now on (an empty list: no tax).
    defaultTaxRateIds: taxRateIdsSchema.optional(),
    metadata: metadataPatchSchema.optional(),
  })
  .strict();

export const previewProrationInput = z
  .object({
    priceId: ref('price', 'price'),
    quantity: quantity.optional(),
    prorationDate: instant.optional(),
  })
  .strict();

export const cancelSubscriptionInput = z
  .object({ atPeriodEnd: z.boolean({ error: 'must be true or false' }).default(false) })
  .strict();

export const listSubscriptionsInput = listSchema(['createdAt'] as const, {
  ...updatedAfterFilter,
  customerId: idFilter('Only the subscriptions of this customer.'),
  status: closedSetFilter('status', SUBSCRIPTION_STATUSES),
});

/** The sub-lists of one subscription (invoices, payments, gateway transactions): newest first, paged. */
export const subListInput = listSchema(['createdAt'] as const, {});

export const createTestClockInput = z
  .object({
    frozenTime: instant,
    name: z.string({ error: 'must be text' }).trim().max(200, { error: 'must be at most 200 characters' }).optional(),
  })
  .strict();

export const advanceTestClockInput = z.object({ frozenTime: instant }).strict();

/** `GET /v1/test-clocks`: the account's clocks (test mode), newest first. */
export const listTestClocksInput = listSchema(['createdAt'] as const, {});

export type CreateSubscriptionInput = z.output<typeof createSubscriptionInput>;
export type UpdateSubscriptionInput = z.output<typeof updateSubscriptionInput>;
