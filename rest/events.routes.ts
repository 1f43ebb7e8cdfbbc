import { listEventsInput } from '../src/modules/events/event.inputs';
import { eventSchema } from '../src/modules/events/event.schemas';
import { resendInput } from '../src/modules/webhooks/webhook.inputs';
import { eventResendSchema } from '../src/modules/webhooks/webhook.schemas';
import { route } from './route-table';

export const eventRoutes = [
  route.list({
    method: 'GET', path: '/events', operationId: 'listEvents', tag: 'Events', summary: 'List events (only types the key may read)',
    permission: 'events:read', query: listEventsInput, response: eventSchema, errors: [],
    handle: (s, r) => s.events.list(r.rc, r.query),
  }),
  route.one({
    method: 'GET', path: '/events/{id}', operationId: 'retrieveEvent', tag: 'Events', summary: 'Retrieve an event',
    permission: 'events:read', response: eventSchema, errors: [],
    handle: (s, r) => s.events.retrieve(r.rc, r.param('id')),
  }),
  // A fresh delivery to every endpoint subscribed to the event (the webhook outbox sends it).
  route.one({
    method: 'POST', path: '/events/{id}/resend', operationId: 'resendEvent', tag: 'Events', summary: 'Deliver an event again to every endpoint subscribed to it',
    permission: 'webhook_endpoints:write', idempotent: 'resendEvent', body: resendInput, response: eventResendSchema, errors: [],
    example: {},
    handle: (s, r) => s.webhooks.deliveries.resend(r.rc, r.param('id'), r.body, r.idem),
  }),
];
