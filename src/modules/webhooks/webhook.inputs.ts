import { z } from 'zod';
import { closedSetFilter, idFilter, listSchema } from '../../core/pagination';
import { EVENT_TYPES } from '../events/event.service';

export const WILDCARD = '*';
const SUBSCRIBABLE = [WILDCARD, ...EVENT_TYPES] as [string, ...string[]];

const eventType = z.enum(SUBSCRIBABLE, {
  error: (issue) => `unknown event type '${String(issue.input).slice(0, 64)}'; use "*" or one of: ${EVENT_TYPES.join(', ')}`,
});

const events = z
  .array(eventType, { error: 'events must be an array of event types' })
  .min(1, { error: 'events must list at least one event type (or "*")' })
  .max(SUBSCRIBABLE.length, { error: `events may list at most ${SUBSCRIBABLE.length} types` })
  // Stored once each, in the order given.
  .transform((list) => [...new Set(list)]);

const url = z.string({ error: 'url must be a string' }).trim().min(1, { error: 'url must not be empty' }).max(2048, {
  error: 'url must be at most 2048 characters',
});

const description = z.string({ error: 'description must be a string' }).max(5000, { error: 'description must be at most 5000 characters' }).nullable();

export const createEndpointInput = z
  .object({
    url,
    events,
    description: description.optional(),
  })
  .strict();

export const updateEndpointInput = z
  .object({
    url: url.optional(),
    events: events.optional(),
    description: description.optional(),
    status: z.enum(['enabled', 'disabled'], { error: 'status must be enabled or disabled' }).optional(),
  })
  .strict();

export const DEFAULT_SECRET_OVERLAP_SECONDS = 24 * 60 * 60;
export const MAX_SECRET_OVERLAP_SECONDS = 7 * 24 * 60 * 60;

export const rotateSecretInput = z
  .object({
    // How long the replaced secret keeps signing X-Service-Signature; 0 retires it at once.
    overlapSeconds: z
      .number({ error: 'overlapSeconds must be a number of seconds' })
      .int({ error: 'overlapSeconds must be a whole number of seconds' })
      .min(0, { error: 'overlapSeconds must not be negative' })
      .max(MAX_SECRET_OVERLAP_SECONDS, { error: `overlapSeconds may be at most ${MAX_SECRET_OVERLAP_SECONDS} (7 days)` })
      .default(DEFAULT_SECRET_OVERLAP_SECONDS),
  })
  .strict();

export const listEndpointsInput = listSchema(['createdAt'] as const, {
  status: closedSetFilter('status', ['enabled', 'disabled']),
});

export const listAttemptsInput = listSchema(['createdAt'] as const, {
  status: closedSetFilter('status', ['succeeded', 'failed'], 'Only the delivery attempts whose outcome is one of these'),
  eventId: idFilter('Only the attempts to deliver this event.'),
});

export const resendInput = z.object({}).strict();

/** `POST /v1/webhook-endpoints/{id}/test` takes no fields. */
export const testEndpointInput = z.object({}).strict();
