import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, idempotent, list, one, param } from './route';

export function paymentRoutes(router: Router, s: Services): void {
  router.post('/payments', idempotent('createPayment', (rc, ctx, idem) => s.payments.create(rc, body(ctx), idem)));
  router.get('/payments', list((rc, q) => s.payments.list(rc, q)));
  router.get('/payments/:id', one((rc, ctx) => s.payments.retrieve(rc, param(ctx, 'id'))));
  router.patch('/payments/:id', one((rc, ctx) => s.payments.update(rc, param(ctx, 'id'), body(ctx))));
  router.get('/payments/:id/refunds', list((rc, q, ctx) => s.refunds.list(rc, q, param(ctx, 'id'))));
  router.post('/payments/:id/refunds', idempotent('createRefund', (rc, ctx, idem) => s.refunds.create(rc, body(ctx), idem, param(ctx, 'id'))));
  router.get('/payments/:id/gateway-transactions', list((rc, q, ctx) => s.payments.gatewayTransactions(rc, param(ctx, 'id'), q)));

  router.post('/refunds', idempotent('createRefund', (rc, ctx, idem) => s.refunds.create(rc, body(ctx), idem)));
  router.get('/refunds', list((rc, q) => s.refunds.list(rc, q)));
  router.get('/refunds/:id', one((rc, ctx) => s.refunds.retrieve(rc, param(ctx, 'id'))));

  router.post('/customers/:id/payment-methods', idempotent('savePaymentMethod', (rc, ctx, idem) => s.paymentMethods.save(rc, param(ctx, 'id'), body(ctx), idem)));
  router.get('/customers/:id/payment-methods', list((rc, q, ctx) => s.paymentMethods.list(rc, param(ctx, 'id'), q)));
}
