import { z } from 'zod';
import { listSchema } from '../../core/pagination';

export const listEventsInput = listSchema(['createdAt'] as const, {
  type: z.string().max(64).optional(),
});
