import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, one } from './route';

export function accountRoutes(router: Router, s: Services): void {
  router.get('/account', one((rc) => s.accounts.settings(rc)));
  router.patch('/account', one((rc, ctx) => s.accounts.updateSettings(rc, body(ctx))));
}
