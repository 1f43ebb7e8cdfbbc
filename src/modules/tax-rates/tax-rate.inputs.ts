import { z } from 'zod';
import { countrySchema, metadataPatchSchema, metadataSchema } from '../../core/validation';
import { listSchema } from '../../core/pagination';

const boolFromQuery = z.preprocess(
  (v) => (v === 'true' ? true : v === 'false' ? false : v),
  z.boolean({ error: 'must be true or false' }),
);

const PERCENTAGE = 'must be a number from 0 to 100 with at most 4 decimals';

/**
 * A percentage in ten-thousandths, exactly as written: `19` → 190000, `7.25` → 72500. The number's
 * shortest decimal form is what is read (JSON `19.0025` is `19.0025`, never its binary neighbour).
 */
export function percentageToE4(value: number): number | null {
  if (!Number.isFinite(value) || value < 0 || value > 100) return null;
  const m = /^(\d+)(?:\.(\d{1,4}))?$/.exec(String(value));
  if (!m) return null;
  return Number(m[1]) * 10_000 + Number((m[2] ?? '').padEnd(4, '0'));
}

/** Ten-thousandths back to the API's number: 195000 → 19.5 (the shortest decimal of e4 / 10^4 is the one written). */
export function percentageFromE4(e4: number): number {
  return e4 / 10_000;
}

const percentage = z
  .number({ error: PERCENTAGE })
  .refine((v) => percentageToE4(v) !== null, { error: PERCENTAGE })
  .transform((v) => percentageToE4(v) as number);

const displayName = z.string({ error: 'must be text' }).trim().min(1, { error: 'must not be empty' }).max(50, { error: 'must be at most 50 characters' });
const description = z.string({ error: 'must be text' }).trim().max(500, { error: 'must be at most 500 characters' });

export const createTaxRateInput = z
  .object({
    displayName,
    percentage,
    inclusive: z.boolean({ error: 'must be true (the tax is part of the line amount) or false (added on top)' }),
    country: countrySchema.nullable().optional(),
    jurisdiction: z.string({ error: 'must be text' }).trim().max(50, { error: 'must be at most 50 characters' }).nullable().optional(),
    description: description.nullable().optional(),
    active: z.boolean({ error: 'must be true or false' }).optional(),
    metadata: metadataSchema.optional(),
  })
  .strict();

/** What never changes on a tax rate: named, so the answer says why rather than "unknown parameter". */
const fixed = (what: string) =>
  z.unknown().refine(() => false, { error: `a tax rate's ${what} never changes (invoices computed with it must stay true): create a new tax rate and deactivate this one` }).optional();

export const updateTaxRateInput = z
  .object({
    displayName: displayName.optional(),
    description: description.nullable().optional(),
    active: z.boolean({ error: 'must be true or false' }).optional(),
    metadata: metadataPatchSchema.optional(),
    percentage: fixed('percentage'),
    inclusive: fixed('inclusive'),
  })
  .strict();

export const listTaxRatesInput = listSchema(['createdAt'] as const, {
  active: boolFromQuery.optional(),
  inclusive: boolFromQuery.optional(),
});

/** A list of tax rate ids (a line's, an invoice's or a subscription's defaults): at most 5, no repeats. */
export const MAX_TAX_RATES = 5;
export const taxRateIdsSchema = z
  .array(
    z.string({ error: 'must be a tax rate id (txr_…)' }).regex(/^txr_[A-Za-z0-9_]{1,60}$/, { error: 'must be a tax rate id (txr_…)' }),
    { error: 'must be a list of tax rate ids (txr_…)' },
  )
  .max(MAX_TAX_RATES, { error: `at most ${MAX_TAX_RATES} tax rates` })
  .refine((ids) => new Set(ids).size === ids.length, { error: 'must not name a tax rate twice' });
