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
  });

export const invoiceSchema = z
  .object({
    ...objectBase('invoice'),
    number: z.string(),
    customerId: z.string(),
    subscriptionId: z.string().nullable(),
    status: z.enum(INVOICE_STATUSES),
    paymentStatus: z.enum(INVOICE_PAYMENT_STATUSES),
    currency: currencyOut,
    lineItems: z.array(invoiceLineItemSchema),
    subtotal: amountOut,
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
    amountDue: amountOut,
    total: amountOut,
    dueDate: z.string().nullable(),
    merchantName: z.string(),
    locale: z.string().meta({ description: "The customer's locale (BCP 47): the language and the date and number formats the hosted invoice page uses." }),
    lineItems: z.array(z.object({ description: z.string(), quantity: z.number().int(), amount: amountOut })),
  })
  .meta({ id: 'PublicInvoice' });
