import { z } from 'zod';
import { listSchema } from '../../core/pagination';

const type = z.string().max(64).optional();

/** `GET /v1/events`: API.md lists the one filter `type`. */
export const listEventsInput = listSchema(['createdAt'] as const, { type });

/**
 * GraphQL's `events`: REST's filters and `objectId`, the events of one object (`data.object.id`;
 * the dashboard's detail views).
 */
export const listObjectEventsInput = listSchema(['createdAt'] as const, {
  type,
  objectId: z.string({ error: 'objectId must be a string' }).min(1, { error: 'objectId must not be empty' }).max(64, { error: 'objectId must be at most 64 characters' }).optional(),
});
