import { z } from 'zod';
import { metadataOut, objectBase, timestamp } from '../../core/api-schemas';
import { creditBalanceSchema } from './customer-credit.schemas';
import { addressOut, taxIdOut } from '../../core/parties';

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
    address: addressOut.nullable().meta({ description: "The buyer's address, printed on the customer's invoices." }),
    taxIds: z.array(taxIdOut).meta({ description: "The customer's tax ids (at most 5), printed on its invoices; [] when none." }),
    taxExempt: z.enum(['none', 'exempt', 'reverse']).meta({ description: 'none (default): its invoices carry the taxes of their tax rates; exempt: no tax; reverse: no tax, and the invoice says the customer accounts for it (reverse charge).' }),
    metadata: metadataOut,
    creditBalance: creditBalanceSchema,
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Customer' });
