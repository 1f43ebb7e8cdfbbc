import { z } from 'zod';
import { MAX_AMOUNT, currencySchema } from '../../core/money';
import { metadataPatchSchema, metadataSchema } from '../../core/validation';
import { closedSetFilter, idFilter, listSchema, updatedAfterFilter } from '../../core/pagination';
import { taxRateIdsSchema } from '../tax-rates/tax-rate.inputs';

export const INVOICE_STATUSES = ['draft', 'sent', 'paid', 'void'] as const;
/**
 * How an invoice's charge stands: `requires_action` while the customer is asked to authenticate
 * its latest payment (3-D Secure) on the hosted invoice page; no other charge is made meanwhile.
 */
export const INVOICE_PAYMENT_STATUSES = ['unpaid', 'processing', 'requires_action', 'paid', 'failed'] as const;
/** At most this many lines an invoice (a PDF's table continues over pages). */
export const MAX_LINE_ITEMS = 250;

const lineItem = z
  .object({
    description: z.string({ error: 'must be a description' }).trim().min(1, { error: 'must not be empty' }).max(500, { error: 'must be at most 500 characters' }),
    quantity: z.number({ error: 'must be a whole number from 1 to 1000000' }).int({ error: 'must be a whole number from 1 to 1000000' }).min(1, { error: 'must be a whole number from 1 to 1000000' }).max(1_000_000, { error: 'must be a whole number from 1 to 1000000' }).default(1),
    // A free line (0) is allowed; amounts are minor units up to 10^12.
    unitAmount: z.number({ error: 'must be an integer amount in minor units' }).int({ error: 'must be an integer amount in minor units' }).min(0, { error: 'must be 0 or more (minor units)' }).max(MAX_AMOUNT, { error: `must be at most ${MAX_AMOUNT}` }),
    // The line's own tax rates; none: the invoice's defaultTaxRateIds.
    taxRateIds: taxRateIdsSchema.optional(),
  })
  .strict();

const lineItems = z
  .array(lineItem, { error: 'must be a list of line items' })
  .min(1, { error: 'an invoice needs at least one line item' })
  .max(MAX_LINE_ITEMS, { error: `an invoice takes at most ${MAX_LINE_ITEMS} line items` });

/** A due date: a date (`2026-12-31`, end of that day UTC) or an ISO instant. */
const DUE_DATE = 'must be a real date (YYYY-MM-DD) or an ISO 8601 instant, in the years 2000 to 9999';
/** Its date part must exist as written (no 31 February rolled into March) and lie in 2000–9999. */
function realDate(v: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})(T[\d:.]+(Z|[+-]\d{2}:\d{2}))?$/.exec(v);
  if (!m || Number.isNaN(Date.parse(v))) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return year >= 2000 && date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}
const dueDate = z
  .string({ error: DUE_DATE })
  .refine(realDate, { error: DUE_DATE })
  .transform((v) => new Date(/^\d{4}-\d{2}-\d{2}$/.test(v) ? `${v}T23:59:59.999Z` : v));

const memo = z.string({ error: 'must be text' }).max(5000, { error: 'must be at most 5000 characters' });

export const createInvoiceInput = z
  .object({
    customerId: z.string({ error: 'must be a customer id' }).min(1).max(64),
    currency: currencySchema,
    lineItems,
    defaultTaxRateIds: taxRateIdsSchema.optional(),
    dueDate: dueDate.nullable().optional(),
    memo: memo.nullable().optional(),
    metadata: metadataSchema.optional(),
  })
  .strict();

export const updateInvoiceInput = z
  .object({
    lineItems: lineItems.optional(),
    defaultTaxRateIds: taxRateIdsSchema.optional(),
    dueDate: dueDate.nullable().optional(),
    memo: memo.nullable().optional(),
    metadata: metadataPatchSchema.optional(),
  })
  .strict();

export const listInvoicesInput = listSchema(['createdAt', 'total', 'amount'] as const, {
  ...updatedAfterFilter,
  customerId: idFilter('Only the invoices of this customer.'),
  subscriptionId: idFilter('Only the invoices of this subscription.'),
  status: closedSetFilter('status', INVOICE_STATUSES),
});

export const payInvoiceInput = z
  .object({
    paymentMethod: z
      .string({ error: 'must be a saved payment method id (pm_…) or a test token' })
      .regex(/^pm_[A-Za-z0-9_]+$/, { error: 'must be a saved payment method id (pm_…) or a test token' })
      .max(64)
      .optional(),
  })
  .strict();

export type LineItemInput = z.output<typeof lineItem>;
