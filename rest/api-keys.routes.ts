import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, list, one, param } from './route';

export function apiKeyRoutes(router: Router, s: Services): void {
  router.post('/api-keys', one((rc, ctx) => s.accounts.createKey(rc, body(ctx)), 201));
  router.get('/api-keys', list((rc, q) => s.accounts.listKeys(rc, q)));
  router.delete('/api-keys/:id', one((rc, ctx) => s.accounts.revokeKey(rc, param(ctx, 'id'))));
}
