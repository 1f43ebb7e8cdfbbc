import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { list, one, param } from './route';

export function eventRoutes(router: Router, s: Services): void {
  router.get('/events', list((rc, q) => s.events.list(rc, q)));
  router.get('/events/:id', one((rc, ctx) => s.events.retrieve(rc, param(ctx, 'id'))));
}
