import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, idempotent, list, one, param } from './route';

export function eventRoutes(router: Router, s: Services): void {
  router.get('/events', list((rc, q) => s.events.list(rc, q)));
  router.get('/events/:id', one((rc, ctx) => s.events.retrieve(rc, param(ctx, 'id'))));
  // A fresh delivery to every endpoint subscribed to the event (the webhook outbox sends it).
  router.post('/events/:id/resend', idempotent('resendEvent', (rc, ctx, idem) => s.webhooks.deliveries.resend(rc, param(ctx, 'id'), body(ctx), idem)));
}
