import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, idempotent, list, one, param, publicRoute } from './route';

export function paymentLinkRoutes(router: Router, s: Services): void {
  const links = s.paymentLinks;
  router.post('/payment-links', idempotent('createPaymentLink', (rc, ctx, idem) => links.create(rc, body(ctx), idem)));
  router.get('/payment-links', list((rc, q) => links.list(rc, q)));
  router.get('/payment-links/:id', one((rc, ctx) => links.retrieve(rc, param(ctx, 'id'))));
  router.patch('/payment-links/:id', one((rc, ctx) => links.update(rc, param(ctx, 'id'), body(ctx))));

  // Public (no key): the link by its slug (410 when inactive), and its pay.
  router.get('/public/payment-links/:slug', publicRoute((ctx) => links.publicView(param(ctx, 'slug'))));
  router.post('/public/payment-links/:slug/pay', publicRoute((ctx, r) => links.publicPay(param(ctx, 'slug'), body(ctx), r.idem, r.requestId)));
}
