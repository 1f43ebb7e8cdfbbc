import { z } from 'zod';
import { amountOut, currencyOut, metadataOut, nullableTimestamp, objectBase, timestamp } from '../../core/api-schemas';
import { INVOICE_PAYMENT_STATUSES, INVOICE_STATUSES } from './invoice.inputs';

export const invoiceLineItemSchema = z
  .object({
    id: z.string(),
    description: z.string(),
    quantity: z.number().int(),
    unitAmount: amountOut,
    amount: amountOut,
    periodStart: nullableTimestamp,
    periodEnd: nullableTimestamp,
    proration: z.boolean(),
    taxRateIds: z.array(z.string()).meta({ description: "The line's own tax rates (txr_…); empty: the invoice's defaultTaxRateIds apply." }),
  });

/** Per tax rate, what an invoice's lines owe (API.md §12): computed on the sum of the rate's lines, rounded once. */
export const taxBreakdownSchema = z
  .array(z.object({
    taxRateId: z.string(),
    displayName: z.string(),
    percentage: z.number(),
    inclusive: z.boolean(),
    taxableAmount: amountOut.meta({ description: "The amount taxed: the rate's lines' sum, or for an inclusive rate that sum less the tax in it." }),
    amount: amountOut.meta({ description: 'The tax (0 for a customer exempt or reverse charge).' }),
  }));

export const invoiceSchema = z
  .object({
    ...objectBase('invoice'),
    number: z.string(),
    customerId: z.string(),
    subscriptionId: z.string().nullable(),
    status: z.enum(INVOICE_STATUSES),
    paymentStatus: z.enum(INVOICE_PAYMENT_STATUSES).meta({ description: "requires_action: the latest payment waits for the customer's 3-D Secure authentication on the hosted invoice page; no other charge is made meanwhile." }),
    currency: currencyOut,
    lineItems: z.array(invoiceLineItemSchema),
    subtotal: amountOut,
    tax: amountOut.meta({ description: 'The exclusive taxes (inclusive taxes are inside the line amounts); total = subtotal + tax.' }),
    taxBreakdown: taxBreakdownSchema,
    defaultTaxRateIds: z.array(z.string()).meta({ description: 'The tax rates of lines that name none of their own.' }),
    customerTaxExempt: z.enum(['none', 'exempt', 'reverse']).meta({ description: "The customer's taxExempt the taxes were computed with; reverse: the invoice carries the reverse-charge notice." }),
    total: amountOut,
    amountPaid: amountOut,
    amountDue: amountOut,
    creditApplied: amountOut.meta({ description: "What the invoice took from the customer's creditBalance (minor units); amountDue is total − creditApplied − what was paid." }),
    dueDate: z.string().nullable(),
    memo: z.string().nullable(),
    sentAt: nullableTimestamp,
    paidAt: nullableTimestamp,
    voidedAt: nullableTimestamp,
    paidOutOfBand: z.boolean(),
    emailStatus: z.enum(['queued', 'sent', 'failed']).nullable(),
    latestPaymentId: z.string().nullable(),
    hostedUrl: z.string().nullable().meta({ description: 'The public page where the customer pays a sent invoice; null unless sent and unpaid.' }),
    metadata: metadataOut,
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Invoice' });

export const publicInvoiceSchema = z
  .object({
    ...objectBase('invoice'),
    number: z.string(),
    status: z.string(),
    paymentStatus: z.string(),
    currency: currencyOut,
    subtotal: amountOut,
    tax: amountOut.meta({ description: 'The exclusive taxes; total = subtotal + tax.' }),
    taxBreakdown: z.array(z.object({
      displayName: z.string(),
      percentage: z.number(),
      inclusive: z.boolean(),
      taxableAmount: amountOut,
      amount: amountOut,
    })).meta({ description: 'Per tax rate, what it taxes and the tax (as the invoice\'s taxBreakdown, without the rate ids).' }),
    reverseCharge: z.boolean().meta({ description: 'The customer accounts for the tax (taxExempt reverse): the page shows the reverse-charge notice.' }),
    total: amountOut,
    creditApplied: amountOut.meta({ description: "What the invoice took from the customer's credit balance." }),
    amountPaid: amountOut,
    amountDue: amountOut,
    dueDate: z.string().nullable(),
    merchantName: z.string().meta({ description: 'The seller as the invoice was issued.' }),
    locale: z.string().meta({ description: "The customer's locale (BCP 47): the language and the date and number formats the hosted invoice page uses." }),
    lineItems: z.array(z.object({ description: z.string(), quantity: z.number().int(), amount: amountOut })),
    nextActionUrl: z.string().nullable().meta({ description: "While paymentStatus is requires_action: where the customer authenticates the invoice's payment (3-D Secure); it brings them back to the hosted invoice page." }),
    paymentFailureCode: z.string().nullable().meta({ description: "While paymentStatus is failed: the latest payment's failureCode (authentication_failed, authentication_expired, card_declined, …)." }),
  })
  .meta({ id: 'PublicInvoice' });
