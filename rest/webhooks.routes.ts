import { createEndpointInput, listAttemptsInput, listEndpointsInput, rotateSecretInput, testEndpointInput, updateEndpointInput } from '../src/modules/webhooks/webhook.inputs';
import { deletedWebhookEndpointSchema, webhookAttemptSchema, webhookEndpointSchema, webhookEndpointTestSchema } from '../src/modules/webhooks/webhook.schemas';
import { webhookEndpointExample } from './response-examples';
import { route } from './route-table';

export const webhookRoutes = [
  route.one({
    method: 'POST', path: '/webhook-endpoints', operationId: 'createWebhookEndpoint', tag: 'Webhooks', summary: 'Create a webhook endpoint (its signing secret is shown once)',
    permission: 'webhook_endpoints:write', idempotent: 'createWebhookEndpoint', body: createEndpointInput, response: webhookEndpointSchema, errors: ['limit_exceeded'],
    example: { url: 'https://shop.example.com/payorch/webhooks', events: ['payment.succeeded', 'refund.succeeded'] },
    responseExample: { ...webhookEndpointExample, secret: 'whsec_ExampleSecretNotRealAAAAAAAAAAAAAAAAAAAAAAA' },
    handle: (s, r) => s.webhooks.endpoints.create(r.rc, r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/webhook-endpoints', operationId: 'listWebhookEndpoints', tag: 'Webhooks', summary: 'List webhook endpoints',
    permission: 'webhook_endpoints:read', query: listEndpointsInput, response: webhookEndpointSchema, errors: [],
    handle: (s, r) => s.webhooks.endpoints.list(r.rc, r.query),
  }),
  route.one({
    method: 'GET', path: '/webhook-endpoints/{id}', operationId: 'retrieveWebhookEndpoint', tag: 'Webhooks', summary: 'Retrieve a webhook endpoint',
    permission: 'webhook_endpoints:read', response: webhookEndpointSchema, errors: [],
    handle: (s, r) => s.webhooks.endpoints.retrieve(r.rc, r.param('id')),
  }),
  route.one({
    method: 'PATCH', path: '/webhook-endpoints/{id}', operationId: 'updateWebhookEndpoint', tag: 'Webhooks', summary: 'Update a webhook endpoint',
    permission: 'webhook_endpoints:write', body: updateEndpointInput, response: webhookEndpointSchema, errors: [],
    example: { status: 'disabled' },
    handle: (s, r) => s.webhooks.endpoints.update(r.rc, r.param('id'), r.body),
  }),
  route.one({
    method: 'DELETE', path: '/webhook-endpoints/{id}', operationId: 'deleteWebhookEndpoint', tag: 'Webhooks', summary: 'Delete a webhook endpoint (its attempt log stays)',
    permission: 'webhook_endpoints:write', response: deletedWebhookEndpointSchema, errors: [],
    handle: (s, r) => s.webhooks.endpoints.remove(r.rc, r.param('id')),
  }),
  route.one({
    method: 'POST', path: '/webhook-endpoints/{id}/rotate-secret', operationId: 'rotateWebhookSecret', tag: 'Webhooks', summary: 'Rotate the signing secret (the old one signs on for overlapSeconds)',
    permission: 'webhook_endpoints:write', idempotent: 'rotateWebhookSecret', body: rotateSecretInput, response: webhookEndpointSchema, errors: [],
    example: { overlapSeconds: 3600 },
    responseExample: { ...webhookEndpointExample, secret: 'whsec_ExampleSecretNotRealBBBBBBBBBBBBBBBBBBBBBBB' },
    handle: (s, r) => s.webhooks.endpoints.rotateSecret(r.rc, r.param('id'), r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/webhook-endpoints/{id}/deliveries', operationId: 'listWebhookDeliveryAttempts', tag: 'Webhooks', summary: "An endpoint's delivery attempts",
    permission: 'webhook_endpoints:read', query: listAttemptsInput, response: webhookAttemptSchema, errors: [],
    handle: (s, r) => s.webhooks.deliveries.attempts(r.rc, r.param('id'), r.query),
  }),
  // A signed `ping` to this one endpoint through the delivery loop (tried once; not an event row).
  route.one({
    method: 'POST', path: '/webhook-endpoints/{id}/test', operationId: 'testWebhookEndpoint', tag: 'Webhooks', summary: 'Send the endpoint a signed ping event',
    permission: 'webhook_endpoints:write', idempotent: 'testWebhookEndpoint', body: testEndpointInput, response: webhookEndpointTestSchema, errors: ['invalid_state'],
    example: {},
    handle: (s, r) => s.webhooks.deliveries.sendTest(r.rc, r.param('id'), r.body, r.idem),
  }),
];
