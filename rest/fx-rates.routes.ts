import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, one } from './route';

export function fxRateRoutes(router: Router, s: Services): void {
  router.get('/fx-rates', one((rc) => s.fx.list(rc)));
  router.put('/fx-rates', one((rc, ctx) => s.fx.replace(rc, body(ctx))));
}
