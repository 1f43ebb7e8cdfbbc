import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, idempotent, list, one, param } from './route';

export function webhookRoutes(router: Router, s: Services): void {
  const endpoints = s.webhooks.endpoints;
  router.post('/webhook-endpoints', idempotent('createWebhookEndpoint', (rc, ctx, idem) => endpoints.create(rc, body(ctx), idem)));
  router.get('/webhook-endpoints', list((rc, q) => endpoints.list(rc, q)));
  router.get('/webhook-endpoints/:id', one((rc, ctx) => endpoints.retrieve(rc, param(ctx, 'id'))));
  router.patch('/webhook-endpoints/:id', one((rc, ctx) => endpoints.update(rc, param(ctx, 'id'), body(ctx))));
  router.delete('/webhook-endpoints/:id', one((rc, ctx) => endpoints.remove(rc, param(ctx, 'id'))));
  router.post('/webhook-endpoints/:id/rotate-secret', idempotent('rotateWebhookSecret', (rc, ctx, idem) => endpoints.rotateSecret(rc, param(ctx, 'id'), body(ctx), idem)));
  router.get('/webhook-endpoints/:id/deliveries', list((rc, q, ctx) => s.webhooks.deliveries.attempts(rc, param(ctx, 'id'), q)));
}
