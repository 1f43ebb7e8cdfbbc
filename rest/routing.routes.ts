import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, one } from './route';

export function routingRoutes(router: Router, s: Services): void {
  router.get('/routing', one((rc) => s.routing.get(rc)));
  router.put('/routing', one((rc, ctx) => s.routing.replace(rc, body(ctx))));
  router.post('/routing/simulate', one((rc, ctx) => s.routing.simulate(rc, body(ctx))));
}
