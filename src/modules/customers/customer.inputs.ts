import { z } from 'zod';
import { countrySchema, emailSchema as email, metadataPatchSchema, metadataSchema } from '../../core/validation';
import { listSchema, searchSchema, updatedAfterFilter } from '../../core/pagination';
import { addressSchema, taxIdsSchema } from '../../core/parties';

const LOCALE_MESSAGE = 'must be a BCP 47 language tag such as en, en-GB, de, de-CH or fr';
/**
 * A BCP 47 language tag (`en`, `en-GB`, `de-CH`, `fr`, `sr-Latn-RS`), kept in its canonical form
 * (`EN-gb` → `en-GB`): its language picks the texts, its region the date and number formats.
 * At most 16 characters, what the column holds.
 */
const locale = z
  .string({ error: LOCALE_MESSAGE })
  .trim()
  .max(16, { error: 'must be a language tag of at most 16 characters, such as en-GB' })
  .regex(/^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*$/, { error: LOCALE_MESSAGE })
  .transform((value, ctx) => {
    let canonical: string | undefined;
    try {
      [canonical] = Intl.getCanonicalLocales(value);
    } catch {
      canonical = undefined;
    }
    if (canonical && canonical.length <= 16 && /^[a-z]{2,3}(?:-|$)/.test(canonical)) return canonical;
    ctx.addIssue({ code: 'custom', message: LOCALE_MESSAGE });
    return z.NEVER;
  });
/** A customer's tax status (API.md §7, §12): `exempt` and `reverse` drop the taxes of its invoices; `reverse` also prints the reverse-charge notice. */
export const TAX_EXEMPT = ['none', 'exempt', 'reverse'] as const;
export type TaxExempt = (typeof TAX_EXEMPT)[number];
const taxExempt = z.enum(TAX_EXEMPT, { error: `must be one of ${TAX_EXEMPT.join(', ')}` });
const phone = z.string().trim().max(40).regex(/^\+?[0-9 ().-]{3,40}$/, { error: 'must be a phone number' });

export const createCustomerInput = z
  .object({
    email,
    name: z.string().trim().max(200).nullable().optional(),
    country: countrySchema.nullable().optional(),
    phone: phone.nullable().optional(),
    locale: locale.nullable().optional(),
    // The buyer's block on invoices (API.md §7).
    address: addressSchema.nullable().optional(),
    taxIds: taxIdsSchema.nullable().optional(),
    taxExempt: taxExempt.optional(),
    // Test mode: the customer (and its subscriptions, invoices, payments, events) lives on this clock's time.
    testClockId: z.string({ error: 'must be a test clock id (clock_…)' }).regex(/^clock_[A-Za-z0-9_]{1,60}$/, { error: 'must be a test clock id (clock_…)' }).optional(),
    metadata: metadataSchema.optional(),
  })
  .strict();

export const updateCustomerInput = z
  .object({
    email: email.optional(),
    name: z.string().trim().max(200).nullable().optional(),
    country: countrySchema.nullable().optional(),
    phone: phone.nullable().optional(),
    locale: locale.nullable().optional(),
    // Each replaced whole; null removes it (taxIds: null or [] removes them all).
    address: addressSchema.nullable().optional(),
    taxIds: taxIdsSchema.nullable().optional(),
    taxExempt: taxExempt.optional(),
    metadata: metadataPatchSchema.optional(),
  })
  .strict();

export const listCustomersInput = listSchema(['createdAt'] as const, {
  ...updatedAfterFilter,
  search: searchSchema,
  email: z.string().max(320).optional(),
});

export type CreateCustomerInput = z.infer<typeof createCustomerInput>;
export type UpdateCustomerInput = z.infer<typeof updateCustomerInput>;
