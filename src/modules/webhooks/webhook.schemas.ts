import { z } from 'zod';
import { nullableTimestamp, objectBase, timestamp } from '../../core/api-schemas';

const endpointFields = {
  ...objectBase('webhook_endpoint'),
  url: z.string(),
  events: z.array(z.string()),
  description: z.string().nullable(),
  status: z.enum(['enabled', 'disabled']),
  disabledReason: z.string().nullable(),
  createdAt: timestamp,
  updatedAt: timestamp,
  secret: z.string().optional().meta({ description: 'The signing secret: only in the answers of create and rotate-secret.' }),
};

export const webhookEndpointSchema = z.object(endpointFields).meta({ id: 'WebhookEndpoint' });

export const deletedWebhookEndpointSchema = z.object({ ...endpointFields, deleted: z.literal(true) }).meta({ id: 'DeletedWebhookEndpoint' });

export const webhookAttemptSchema = z
  .object({
    ...objectBase('webhook_delivery_attempt'),
    endpointId: z.string(),
    deliveryId: z.string(),
    eventId: z.string(),
    eventType: z.string(),
    attempt: z.number().int(),
    status: z.enum(['succeeded', 'failed']),
    statusCode: z.number().int().nullable(),
    latencyMs: z.number(),
    error: z.string().nullable(),
    nextRetryAt: nullableTimestamp,
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'WebhookDeliveryAttempt' });

export const eventResendSchema = z
  .object({ object: z.literal('event_resend'), eventId: z.string(), deliveriesQueued: z.number().int() })
  .meta({ id: 'EventResend' });

export const webhookEndpointTestSchema = z
  .object({
    object: z.literal('webhook_endpoint_test'),
    endpointId: z.string(),
    eventId: z.string().meta({ description: "The ping's id (its webhook-id); not an event row: GET /v1/events does not list it." }),
    eventType: z.literal('ping'),
    deliveryId: z.string(),
    status: z.literal('pending').meta({ description: 'Queued; its one attempt shows in GET /v1/webhook-endpoints/{id}/deliveries?eventId=.' }),
  })
  .meta({ id: 'WebhookEndpointTest' });
