import { z } from 'zod';
import { jsonObject, objectBase, timestamp } from '../../core/api-schemas';

export const gatewaySchema = z
  .object({
    ...objectBase('gateway'),
    name: z.string(),
    type: z.string(),
    enabled: z.boolean(),
    currencies: z.array(z.string()).nullable(),
    settings: jsonObject,
    credentialsSet: z.boolean(),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Gateway' });
