import { z } from 'zod';
import { listSchema } from '../../core/pagination';
import { createdRangeFilters } from '../../core/created-range';
import { EVENT_TYPES } from './event-types';

const type = z.string().max(64).optional();

const KNOWN_TYPES = new Set<string>(EVENT_TYPES);

/**
 * `types`: only events of these types (any of them), each an event type as REST writes it (no
 * wildcards); `types[i]` names the first that is not one. GraphQL sends a list.
 */
const typesList = z
  .array(z.string({ error: 'each of types must be a string' }), { error: 'types must be a list of event types' })
  .min(1, { error: 'types must name at least one event type' })
  .max(EVENT_TYPES.length, { error: `types may name at most ${EVENT_TYPES.length} event types` })
  .superRefine((list, ctx) => {
    const unknown = list.findIndex((t) => !KNOWN_TYPES.has(t));
    if (unknown >= 0) {
      ctx.addIssue({
        code: 'custom',
        path: [unknown],
        message: `'${list[unknown].slice(0, 64)}' is not an event type; give event types such as payment.succeeded (no wildcards), one of: ${EVENT_TYPES.join(', ')}`,
      });
    }
  })
  .transform((list) => [...new Set(list)]);

/** REST's `types`: the same, comma-separated in one query parameter (`types=payment.succeeded,refund.created`). */
const typesText = z
  .string({ error: 'types must be event types, comma-separated' })
  .max(2000, { error: 'types must be at most 2000 characters' })
  .meta({ description: 'Only events of these types, comma-separated (payment.succeeded,refund.created); not with type.' })
  .transform((text) => text.split(',').map((t) => t.trim()))
  .pipe(typesList);

/** The most ids `objectIds` may hold (the dashboard's payment detail asks for the payment and its newest 50 refunds). */
export const OBJECT_IDS_MAX = 100;

const objectIdSchema = (name: string) =>
  z.string({ error: `${name} must be a string` }).min(1, { error: `${name} must not be empty` }).max(64, { error: `${name} must be at most 64 characters` });

/** `type` and `types` say the same thing: one of them. */
const oneTypeFilter = (input: { type?: string; types?: string[] }) => input.type === undefined || input.types === undefined;
const ONE_TYPE_FILTER = { error: 'Give type or types, not both', path: ['types'] };

/**
 * `GET /v1/events`: `type` (one), `types` (several, comma-separated), `objectId` (the events of one
 * object, `data.object.id`), and `createdAfter`/`createdBefore` (both exclusive).
 */
export const listEventsInput = listSchema(['createdAt'] as const, {
  type,
  types: typesText.optional(),
  objectId: objectIdSchema('objectId').optional().meta({ description: 'Only the events of this object (data.object.id), e.g. a payment\'s.' }),
  ...createdRangeFilters,
}).refine(oneTypeFilter, ONE_TYPE_FILTER);

/**
 * GraphQL's `events`: REST's filters, and `objectIds`, the events of any of several objects (a
 * payment and its refunds); not both with `objectId`.
 */
export const listObjectEventsInput = listSchema(['createdAt'] as const, {
  type,
  types: typesList.optional(),
  ...createdRangeFilters,
  objectId: objectIdSchema('objectId').optional(),
  objectIds: z
    .array(objectIdSchema('each id'), { error: 'objectIds must be a list of ids' })
    .max(OBJECT_IDS_MAX, { error: `objectIds may hold at most ${OBJECT_IDS_MAX} ids` })
    .optional(),
}).refine((input) => input.objectId === undefined || input.objectIds === undefined, {
  error: 'Give objectId or objectIds, not both',
  path: ['objectIds'],
}).refine(oneTypeFilter, ONE_TYPE_FILTER);

/**
 * The `events` subscription's start: `after`, an event id of the account and mode (`evt_…`) whose
 * successors are replayed before the stream goes live.
 */
export const streamEventsInput = z.object({
  after: z
    .string({ error: 'after must be an event id' })
    .min(1, { error: 'after must be an event id' })
    .max(64, { error: 'after must be at most 64 characters' })
    .nullish()
    .transform((v) => v ?? undefined),
}).strict();
