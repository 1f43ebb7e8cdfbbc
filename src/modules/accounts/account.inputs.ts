import { z } from 'zod';
import { PERMISSION_RESOURCES } from '../../core/context';
import { listSchema } from '../../core/pagination';
import { accountTaxIdSchema, addressSchema } from '../../core/parties';
import { emailSchema } from '../../core/validation';

/** 1–12 upper-case letters or digits (API.md §3): `INV` gives `INV-000042`. */
export const invoicePrefixSchema = z
  .string({ error: 'must be 1 to 12 upper-case letters or digits' })
  .regex(/^[A-Z0-9]{1,12}$/, { error: 'must be 1 to 12 upper-case letters or digits' });

/** Days after a subscription's first failed charge on which it is retried: 1 to 10 days, increasing, each 1 to 365. */
export const dunningRetryDaysSchema = z
  .array(z.number({ error: 'each entry must be a whole number of days from 1 to 365' }).int({ error: 'each entry must be a whole number of days from 1 to 365' }).min(1, { error: 'each entry must be a whole number of days from 1 to 365' }).max(365, { error: 'each entry must be a whole number of days from 1 to 365' }), { error: 'must be a list of days, such as [1, 3, 7]' })
  .min(1, { error: 'must list at least one day' })
  .max(10, { error: 'must list at most 10 days' })
  .superRefine((days, ctx) => {
    for (let i = 1; i < days.length; i++) {
      if (days[i] <= days[i - 1]) ctx.addIssue({ code: 'custom', path: [i], message: 'days must increase: each retry comes after the one before' });
    }
  });

export const updateAccountInput = z
  .object({
    name: z.string({ error: 'must be a name' }).trim().min(1, { error: 'must not be empty' }).max(200, { error: 'must be at most 200 characters' }).optional(),
    invoicePrefix: invoicePrefixSchema.optional(),
    dunningRetryDays: dunningRetryDaysSchema.optional(),
    publicDeclinesPerHour: z
      .number({ error: 'must be a whole number from 1 to 100000' })
      .int({ error: 'must be a whole number from 1 to 100000' })
      .min(1, { error: 'must be a whole number from 1 to 100000' })
      .max(100_000, { error: 'must be a whole number from 1 to 100000' })
      .optional(),
    // The seller's block on invoices (API.md §3): each replaced whole, null removes it.
    address: addressSchema.nullable().optional(),
    taxId: accountTaxIdSchema.nullable().optional(),
    supportEmail: emailSchema.nullable().optional(),
  })
  .strict();

/** What `payorch accounts create` may set beside the name (the same checks as PATCH /v1/account). */
export const newAccountPartyInput = z
  .object({
    address: addressSchema.optional(),
    taxId: accountTaxIdSchema.optional(),
    supportEmail: emailSchema.optional(),
  })
  .strict();

const PERMISSION_PATTERN = new RegExp(`^(\\*|(${PERMISSION_RESOURCES.join('|')}):(read|write))$`);

/** Says which part of a refused permission is wrong, listing what is valid there. */
function permissionError(input: unknown): string {
  const [resource, access, ...rest] = String(input).slice(0, 64).split(':');
  if (!(PERMISSION_RESOURCES as readonly string[]).includes(resource)) {
    return `unknown resource '${resource}'; use "*" or "<resource>:read|write" with one of: ${PERMISSION_RESOURCES.join(', ')}`;
  }
  if (rest.length > 0 || (access !== 'read' && access !== 'write')) return `use '${resource}:read' or '${resource}:write'`;
  return 'must be "*" or "<resource>:read|write"';
}

export const permissionsSchema = z
  .array(z.string({ error: 'must be a string' }).regex(PERMISSION_PATTERN, { error: (issue) => permissionError(issue.input) }), {
    error: 'permissions must be an array of strings',
  })
  .min(1, { error: 'permissions must not be empty' })
  .max(64);

export const createKeyInput = z
  .object({
    name: z.string().max(200).optional(),
    permissions: permissionsSchema.optional(),
  })
  .strict();

export const listKeysInput = listSchema(['createdAt'] as const, {});
