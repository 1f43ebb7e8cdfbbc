import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, idempotent, list, one, param } from './route';

export function catalogRoutes(router: Router, s: Services): void {
  router.post('/products', idempotent('createProduct', (rc, ctx, idem) => s.catalog.createProduct(rc, body(ctx), idem)));
  router.get('/products', list((rc, q) => s.catalog.listProducts(rc, q)));
  router.get('/products/:id', one((rc, ctx) => s.catalog.retrieveProduct(rc, param(ctx, 'id'))));
  router.patch('/products/:id', one((rc, ctx) => s.catalog.updateProduct(rc, param(ctx, 'id'), body(ctx))));

  router.post('/prices', idempotent('createPrice', (rc, ctx, idem) => s.catalog.createPrice(rc, body(ctx), idem)));
  router.get('/prices', list((rc, q) => s.catalog.listPrices(rc, q)));
  router.get('/prices/:id', one((rc, ctx) => s.catalog.retrievePrice(rc, param(ctx, 'id'))));
  router.patch('/prices/:id', one((rc, ctx) => s.catalog.updatePrice(rc, param(ctx, 'id'), body(ctx))));
}
