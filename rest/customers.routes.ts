import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, list, one, param } from './route';

export function customerRoutes(router: Router, s: Services): void {
  router.post('/customers', one((rc, ctx) => s.customers.create(rc, body(ctx)), 201));
  router.get('/customers', list((rc, q) => s.customers.list(rc, q)));
  router.get('/customers/:id', one((rc, ctx) => s.customers.retrieve(rc, param(ctx, 'id'))));
  router.patch('/customers/:id', one((rc, ctx) => s.customers.update(rc, param(ctx, 'id'), body(ctx))));
}
