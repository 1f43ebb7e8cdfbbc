import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, idempotent, list, one, param } from './route';

export function gatewayRoutes(router: Router, s: Services): void {
  router.post('/gateways', idempotent('createGateway', (rc, ctx, idem) => s.gateways.create(rc, body(ctx), idem)));
  router.get('/gateways', list((rc, q) => s.gateways.list(rc, q)));
  router.get('/gateways/:id', one((rc, ctx) => s.gateways.retrieve(rc, param(ctx, 'id'))));
  router.patch('/gateways/:id', one((rc, ctx) => s.gateways.update(rc, param(ctx, 'id'), body(ctx))));
  router.delete('/gateways/:id', one((rc, ctx) => s.gateways.remove(rc, param(ctx, 'id'))));
}
