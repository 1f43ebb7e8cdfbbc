import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, idempotent, list, one, param } from './route';

export function customerRoutes(router: Router, s: Services): void {
  router.post('/customers', idempotent('createCustomer', (rc, ctx, idem) => s.customers.create(rc, body(ctx), idem)));
  router.get('/customers', list((rc, q) => s.customers.list(rc, q)));
  router.get('/customers/:id', one((rc, ctx) => s.customers.retrieve(rc, param(ctx, 'id'))));
  router.patch('/customers/:id', one((rc, ctx) => s.customers.update(rc, param(ctx, 'id'), body(ctx))));
}
