import { z } from 'zod';
import { metadataOut, objectBase, timestamp } from '../../core/api-schemas';
import { creditBalanceSchema } from './customer-credit.schemas';

/** A customer as the API returns it (customer.store.ts `Customer`). */
export const customerSchema = z
  .object({
    ...objectBase('customer'),
    email: z.string(),
    name: z.string().nullable(),
    country: z.string().nullable(),
    phone: z.string().nullable(),
    defaultPaymentMethodId: z.string().nullable(),
    testClockId: z.string().nullable(),
    locale: z.string(),
    taxExempt: z.enum(['none', 'exempt', 'reverse']).meta({ description: 'none (default): its invoices carry the taxes of their tax rates; exempt: no tax; reverse: no tax, and the invoice says the customer accounts for it (reverse charge).' }),
    metadata: metadataOut,
    creditBalance: creditBalanceSchema,
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Customer' });
