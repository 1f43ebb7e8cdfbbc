import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, list, one, param } from './route';

export function webhookRoutes(router: Router, s: Services): void {
  const endpoints = s.webhooks.endpoints;
  router.post('/webhook-endpoints', one((rc, ctx) => endpoints.create(rc, body(ctx)), 201));
  router.get('/webhook-endpoints', list((rc, q) => endpoints.list(rc, q)));
  router.get('/webhook-endpoints/:id', one((rc, ctx) => endpoints.retrieve(rc, param(ctx, 'id'))));
  router.patch('/webhook-endpoints/:id', one((rc, ctx) => endpoints.update(rc, param(ctx, 'id'), body(ctx))));
  router.delete('/webhook-endpoints/:id', one((rc, ctx) => endpoints.remove(rc, param(ctx, 'id'))));
  router.post('/webhook-endpoints/:id/rotate-secret', one((rc, ctx) => endpoints.rotateSecret(rc, param(ctx, 'id'), body(ctx))));
  router.get('/webhook-endpoints/:id/deliveries', list((rc, q, ctx) => s.webhooks.deliveries.attempts(rc, param(ctx, 'id'), q)));

  router.post('/events/:id/resend', one((rc, ctx) => s.webhooks.deliveries.resend(rc, param(ctx, 'id'), body(ctx))));
}
