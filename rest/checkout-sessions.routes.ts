import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, idempotent, list, one, param, publicRoute } from './route';

export function checkoutSessionRoutes(router: Router, s: Services): void {
  const sessions = s.checkoutSessions;
  router.post('/checkout-sessions', idempotent('createCheckoutSession', (rc, ctx, idem) => sessions.create(rc, body(ctx), idem)));
  router.get('/checkout-sessions', list((rc, q) => sessions.list(rc, q)));
  router.get('/checkout-sessions/:id', one((rc, ctx) => sessions.retrieve(rc, param(ctx, 'id'))));
  router.post('/checkout-sessions/:id/expire', idempotent('expireCheckoutSession', (rc, ctx, idem) => sessions.expire(rc, param(ctx, 'id'), idem)));

  // Public (no key): what the hosted page shows, and its pay.
  router.get('/public/checkout-sessions/:id', publicRoute((ctx) => sessions.publicView(param(ctx, 'id'))));
  router.post('/public/checkout-sessions/:id/pay', publicRoute((ctx, r) => sessions.publicPay(param(ctx, 'id'), body(ctx), r.idem, r.requestId)));
}
