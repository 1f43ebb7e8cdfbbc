import type { Router } from '@koa/router';
import type { Services } from '../src/services';
import { body, file, idempotent, list, noBody, one, param, publicRoute } from './route';

export function invoiceRoutes(router: Router, s: Services): void {
  const invoices = s.invoices;
  router.post('/invoices', idempotent('createInvoice', (rc, ctx, idem) => invoices.create(rc, body(ctx), idem)));
  router.get('/invoices', list((rc, q) => invoices.list(rc, q)));
  router.get('/invoices/:id', one((rc, ctx) => invoices.retrieve(rc, param(ctx, 'id'))));
  router.patch('/invoices/:id', one((rc, ctx) => invoices.update(rc, param(ctx, 'id'), body(ctx))));
  router.post('/invoices/:id/send', idempotent('sendInvoice', (rc, ctx, idem) => (noBody(ctx), invoices.send(rc, param(ctx, 'id'), idem))));
  router.post('/invoices/:id/pay', idempotent('payInvoice', (rc, ctx, idem) => invoices.payWithSavedCard(rc, param(ctx, 'id'), body(ctx), idem)));
  router.post('/invoices/:id/mark-paid', idempotent('markInvoicePaid', (rc, ctx, idem) => (noBody(ctx), invoices.markPaid(rc, param(ctx, 'id'), idem))));
  router.post('/invoices/:id/void', idempotent('voidInvoice', (rc, ctx, idem) => (noBody(ctx), invoices.void(rc, param(ctx, 'id'), idem))));
  router.get('/invoices/:id/pdf', file((rc, ctx) => invoices.pdf(rc, param(ctx, 'id')), 'application/pdf'));

  // Public (no key): the hosted invoice page's data and its card pay.
  router.get('/public/invoices/:id', publicRoute((ctx) => invoices.publicView(param(ctx, 'id'))));
  router.post('/public/invoices/:id/pay', publicRoute((ctx, r) => invoices.publicPay(param(ctx, 'id'), body(ctx), r.idem, r.requestId)));
}
