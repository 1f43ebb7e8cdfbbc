import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, idempotent, list, one, param } from './route';

export function apiKeyRoutes(router: Router, s: Services): void {
  router.post('/api-keys', idempotent('createApiKey', (rc, ctx, idem) => s.accounts.createKey(rc, body(ctx), idem)));
  router.get('/api-keys', list((rc, q) => s.accounts.listKeys(rc, q)));
  router.delete('/api-keys/:id', one((rc, ctx) => s.accounts.revokeKey(rc, param(ctx, 'id'))));
}
