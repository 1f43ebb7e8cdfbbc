import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, idempotent, list, noBody, one, param } from './route';

export function subscriptionRoutes(router: Router, s: Services): void {
  const subs = s.subscriptions;
  router.post('/subscriptions', idempotent('createSubscription', (rc, ctx, idem) => subs.create(rc, body(ctx), idem)));
  router.get('/subscriptions', list((rc, q) => subs.list(rc, q)));
  router.get('/subscriptions/:id', one((rc, ctx) => subs.retrieve(rc, param(ctx, 'id'))));
  router.patch('/subscriptions/:id', idempotent('updateSubscription', (rc, ctx, idem) => subs.update(rc, param(ctx, 'id'), body(ctx), idem)));
  router.post('/subscriptions/:id/preview-proration', one((rc, ctx) => subs.previewProration(rc, param(ctx, 'id'), body(ctx))));
  router.get('/subscriptions/:id/upcoming-invoice', one((rc, ctx) => subs.upcomingInvoice(rc, param(ctx, 'id'))));
  router.post('/subscriptions/:id/pause', idempotent('pauseSubscription', (rc, ctx, idem) => (noBody(ctx), subs.pause(rc, param(ctx, 'id'), idem))));
  router.post('/subscriptions/:id/resume', idempotent('resumeSubscription', (rc, ctx, idem) => (noBody(ctx), subs.resume(rc, param(ctx, 'id'), idem))));
  router.post('/subscriptions/:id/cancel', idempotent('cancelSubscription', (rc, ctx, idem) => subs.cancel(rc, param(ctx, 'id'), body(ctx), idem)));
  router.post('/subscriptions/:id/retry-payment', idempotent('retrySubscriptionPayment', (rc, ctx, idem) => (noBody(ctx), subs.retryPayment(rc, param(ctx, 'id'), idem))));
  router.get('/subscriptions/:id/invoices', list((rc, q, ctx) => subs.invoicesOf(rc, param(ctx, 'id'), q)));
  router.get('/subscriptions/:id/payments', list((rc, q, ctx) => subs.paymentsOf(rc, param(ctx, 'id'), q)));
  router.get('/subscriptions/:id/gateway-transactions', list((rc, q, ctx) => subs.gatewayTransactionsOf(rc, param(ctx, 'id'), q)));
}
