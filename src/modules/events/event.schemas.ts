import { z } from 'zod';
import { jsonObject, objectBase, timestamp } from '../../core/api-schemas';

export const eventSchema = z
  .object({
    ...objectBase('event'),
    type: z.string(),
    createdAt: timestamp,
    data: z.object({ object: jsonObject }),
  })
  .meta({ id: 'Event' });
