import { z } from 'zod';
import { listSchema } from '../../core/pagination';
import { createdRangeFilters } from '../../core/created-range';

const type = z.string().max(64).optional();

/** `GET /v1/events`: `type`, and `createdAfter`/`createdBefore` (both exclusive). */
export const listEventsInput = listSchema(['createdAt'] as const, { type, ...createdRangeFilters });

/** The most ids `objectIds` may hold (the dashboard's payment detail asks for the payment and its newest 50 refunds). */
export const OBJECT_IDS_MAX = 100;

const objectIdSchema = (name: string) =>
  z.string({ error: `${name} must be a string` }).min(1, { error: `${name} must not be empty` }).max(64, { error: `${name} must be at most 64 characters` });

/**
 * GraphQL's `events`: REST's filters and `objectId`, the events of one object (`data.object.id`;
 * the dashboard's detail views), or `objectIds`, the events of any of several (a payment and its
 * refunds); not both.
 */
export const listObjectEventsInput = listSchema(['createdAt'] as const, {
  type,
  ...createdRangeFilters,
  objectId: objectIdSchema('objectId').optional(),
  objectIds: z
    .array(objectIdSchema('each id'), { error: 'objectIds must be a list of ids' })
    .max(OBJECT_IDS_MAX, { error: `objectIds may hold at most ${OBJECT_IDS_MAX} ids` })
    .optional(),
}).refine((input) => input.objectId === undefined || input.objectIds === undefined, {
  error: 'Give objectId or objectIds, not both',
  path: ['objectIds'],
});
