import { z } from 'zod';
import { metadataOut, objectBase, timestamp } from '../../core/api-schemas';

export const taxRateSchema = z
  .object({
    ...objectBase('tax_rate'),
    displayName: z.string(),
    description: z.string().nullable(),
    percentage: z.number().min(0).max(100).meta({ description: 'Percent, up to 4 decimals (19.5 is 19.5 %); never changes.' }),
    inclusive: z.boolean().meta({ description: 'true: the tax is part of the line amounts it applies to; false: it is added on top.' }),
    country: z.string().nullable(),
    jurisdiction: z.string().nullable(),
    active: z.boolean().meta({ description: 'Only active rates can be put on new invoices and subscriptions.' }),
    metadata: metadataOut,
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'TaxRate' });
