import { z } from 'zod';
import { amountOut, currencyOut, metadataOut, objectBase, timestamp } from '../../core/api-schemas';

export const productSchema = z
  .object({
    ...objectBase('product'),
    name: z.string(),
    description: z.string().nullable(),
    active: z.boolean(),
    metadata: metadataOut,
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Product' });

export const priceSchema = z
  .object({
    ...objectBase('price'),
    productId: z.string(),
    unitAmount: amountOut,
    currency: currencyOut,
    type: z.enum(['one_time', 'recurring']),
    recurring: z.object({ interval: z.string(), intervalCount: z.number().int() }).nullable(),
    nickname: z.string().nullable(),
    active: z.boolean(),
    metadata: metadataOut,
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Price' });
