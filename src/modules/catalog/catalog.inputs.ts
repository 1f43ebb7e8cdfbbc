import { z } from 'zod';
import { amountSchema, currencySchema } from '../../core/money';
import { metadataPatchSchema, metadataSchema } from '../../core/validation';
import { closedSetFilter, listSchema, searchSchema } from '../../core/pagination';

const boolFromQuery = z.preprocess(
  (v) => (v === 'true' ? true : v === 'false' ? false : v),
  z.boolean({ error: 'must be true or false' }),
);

export const createProductInput = z
  .object({
    name: z.string().trim().min(1, { error: 'must not be empty' }).max(250),
    description: z.string().max(5000).nullable().optional(),
    active: z.boolean().optional(),
    metadata: metadataSchema.optional(),
  })
  .strict();

export const updateProductInput = z
  .object({
    name: z.string().trim().min(1, { error: 'must not be empty' }).max(250).optional(),
    description: z.string().max(5000).nullable().optional(),
    active: z.boolean().optional(),
    metadata: metadataPatchSchema.optional(),
  })
  .strict();

export const listProductsInput = listSchema(['createdAt', 'name'] as const, {
  search: searchSchema,
  active: boolFromQuery.optional(),
});

const INTERVAL_MAX = { day: 1095, week: 156, month: 36, year: 3 } as const;

export const recurringSchema = z
  .object({
    interval: z.enum(['day', 'week', 'month', 'year'], { error: 'must be day, week, month or year' }),
    intervalCount: z.number().int().min(1).optional(),
  })
  .strict()
  .superRefine((r, ctx) => {
    if (r.intervalCount !== undefined && r.intervalCount > INTERVAL_MAX[r.interval]) {
      ctx.addIssue({ code: 'custom', path: ['intervalCount'], message: `must be at most ${INTERVAL_MAX[r.interval]} for ${r.interval}` });
    }
  })
  .transform((r) => ({ interval: r.interval, intervalCount: r.intervalCount ?? 1 }));

export const createPriceInput = z
  .object({
    productId: z.string({ error: 'must be a product id' }).min(1).max(64),
    unitAmount: amountSchema,
    currency: currencySchema,
    recurring: recurringSchema.nullable().optional(),
    nickname: z.string().max(200).nullable().optional(),
    active: z.boolean().optional(),
    metadata: metadataSchema.optional(),
  })
  .strict();

export const updatePriceInput = z
  .object({
    nickname: z.string().max(200).nullable().optional(),
    active: z.boolean().optional(),
    metadata: metadataPatchSchema.optional(),
  })
  .strict();

export const listPricesInput = listSchema(['createdAt', 'unitAmount', 'amount'] as const, {
  productId: z.string().max(64).optional(),
  active: boolFromQuery.optional(),
  currency: currencySchema.optional(),
  type: closedSetFilter('type', ['one_time', 'recurring']),
});
