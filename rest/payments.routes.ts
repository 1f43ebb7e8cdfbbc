import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, list, one, param } from './route';
import { PAYMENT_CREATED_STATUS } from '../src/modules/payments/payment.service';
import { REFUND_CREATED_STATUS } from '../src/modules/payments/refund.service';

export function paymentRoutes(router: Router, s: Services): void {
  router.post('/payments', one((rc, ctx) => s.payments.create(rc, body(ctx)), PAYMENT_CREATED_STATUS));
  router.get('/payments', list((rc, q) => s.payments.list(rc, q)));
  router.get('/payments/:id', one((rc, ctx) => s.payments.retrieve(rc, param(ctx, 'id'))));
  router.patch('/payments/:id', one((rc, ctx) => s.payments.update(rc, param(ctx, 'id'), body(ctx))));
  router.get('/payments/:id/refunds', list((rc, q, ctx) => s.refunds.list(rc, q, param(ctx, 'id'))));
  router.post('/payments/:id/refunds', one((rc, ctx) => s.refunds.create(rc, body(ctx), param(ctx, 'id')), REFUND_CREATED_STATUS));
  router.get('/payments/:id/gateway-transactions', list((rc, q, ctx) => s.payments.gatewayTransactions(rc, param(ctx, 'id'), q)));

  router.post('/refunds', one((rc, ctx) => s.refunds.create(rc, body(ctx)), REFUND_CREATED_STATUS));
  router.get('/refunds', list((rc, q) => s.refunds.list(rc, q)));
  router.get('/refunds/:id', one((rc, ctx) => s.refunds.retrieve(rc, param(ctx, 'id'))));

  router.post('/customers/:id/payment-methods', one((rc, ctx) => s.paymentMethods.save(rc, param(ctx, 'id'), body(ctx)), 201));
  router.get('/customers/:id/payment-methods', list((rc, q, ctx) => s.paymentMethods.list(rc, param(ctx, 'id'), q)));
}
