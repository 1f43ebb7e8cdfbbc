import { z } from 'zod';
import { countrySchema, emailSchema as email, metadataPatchSchema, metadataSchema } from '../../core/validation';
import { listSchema, searchSchema } from '../../core/pagination';
import { addressSchema, taxIdsSchema } from '../../core/parties';

/** A language tag such as `en`, `de`, `fr` or `de-AT` (invoices and e-mails use its language). */
const locale = z
  .string({ error: 'must be a language tag such as en, de or fr' })
  .trim()
  .regex(/^[a-zA-Z]{2,3}(?:-[a-zA-Z0-9]{2,8})?$/, { error: 'must be a language tag such as en, de or fr' })
  .transform((v) => v.replace(/^([a-zA-Z]+)/, (l) => l.toLowerCase()));
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
  search: searchSchema,
  email: z.string().max(320).optional(),
});

export type CreateCustomerInput = z.infer<typeof createCustomerInput>;
export type UpdateCustomerInput = z.infer<typeof updateCustomerInput>;
