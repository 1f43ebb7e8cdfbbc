import { z } from 'zod';

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
  })
  .strict();
