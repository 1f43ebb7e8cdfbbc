import type { ErrorCode } from '../src/core/errors';
import { createInvoiceInput, listInvoicesInput, payInvoiceInput, updateInvoiceInput } from '../src/modules/invoices/invoice.inputs';
import { invoiceSchema, publicInvoiceSchema } from '../src/modules/invoices/invoice.schemas';
import { publicPayInput } from '../src/modules/payments/payment.inputs';
import { payResultSchema } from '../src/modules/checkout/checkout.schemas';
import { route } from './route-table';

const CHANGING: ErrorCode[] = ['invalid_state', 'invoice_payment_in_progress'];
const card = { number: '4242424242424242', expMonth: 12, expYear: 2030, cvc: '123' };

export const invoiceRoutes = [
  route.one({
    method: 'POST', path: '/invoices', operationId: 'createInvoice', tag: 'Invoices', summary: 'Create a draft invoice',
    permission: 'invoices:write', idempotent: 'createInvoice', body: createInvoiceInput, response: invoiceSchema, errors: [],
    example: { customerId: 'cus_3Jq8LmZ2xV9cTb', currency: 'EUR', lineItems: [{ description: 'Consulting, March', quantity: 10, unitAmount: 12000 }], dueDate: '2026-04-30' },
    handle: (s, r) => s.invoices.create(r.rc, r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/invoices', operationId: 'listInvoices', tag: 'Invoices', summary: 'List invoices',
    permission: 'invoices:read', query: listInvoicesInput, response: invoiceSchema, errors: [],
    handle: (s, r) => s.invoices.list(r.rc, r.query),
  }),
  route.one({
    method: 'GET', path: '/invoices/{id}', operationId: 'retrieveInvoice', tag: 'Invoices', summary: 'Retrieve an invoice',
    permission: 'invoices:read', response: invoiceSchema, errors: [],
    handle: (s, r) => s.invoices.retrieve(r.rc, r.param('id')),
  }),
  route.one({
    method: 'PATCH', path: '/invoices/{id}', operationId: 'updateInvoice', tag: 'Invoices', summary: 'Update a draft invoice',
    permission: 'invoices:write', body: updateInvoiceInput, response: invoiceSchema, errors: ['invalid_state', 'invoice_payment_in_progress'],
    example: { memo: 'Thank you for your business' },
    handle: (s, r) => s.invoices.update(r.rc, r.param('id'), r.body),
  }),
  route.one({
    method: 'POST', path: '/invoices/{id}/send', operationId: 'sendInvoice', tag: 'Invoices', summary: 'Finalise and e-mail an invoice',
    permission: 'invoices:write', idempotent: 'sendInvoice', noBody: true, response: invoiceSchema, errors: ['invalid_state'],
    handle: (s, r) => s.invoices.send(r.rc, r.param('id'), r.idem),
  }),
  route.one({
    method: 'POST', path: '/invoices/{id}/pay', operationId: 'payInvoice', tag: 'Invoices', summary: "Charge an invoice on the customer's saved card",
    permission: 'invoices:write', idempotent: 'payInvoice', body: payInvoiceInput, response: invoiceSchema,
    errors: [...CHANGING, 'card_declined', 'no_gateway_available', 'gateway_unavailable'],
    example: { paymentMethod: 'pm_5Tg7YhQ2wE3rXc' },
    handle: (s, r) => s.invoices.payWithSavedCard(r.rc, r.param('id'), r.body, r.idem),
  }),
  route.one({
    method: 'POST', path: '/invoices/{id}/mark-paid', operationId: 'markInvoicePaid', tag: 'Invoices', summary: 'Record an invoice paid outside Payorch',
    permission: 'invoices:write', idempotent: 'markInvoicePaid', noBody: true, response: invoiceSchema, errors: CHANGING,
    handle: (s, r) => s.invoices.markPaid(r.rc, r.param('id'), r.idem),
  }),
  route.one({
    method: 'POST', path: '/invoices/{id}/void', operationId: 'voidInvoice', tag: 'Invoices', summary: 'Void an invoice',
    permission: 'invoices:write', idempotent: 'voidInvoice', noBody: true, response: invoiceSchema, errors: CHANGING,
    handle: (s, r) => s.invoices.void(r.rc, r.param('id'), r.idem),
  }),
  route.file({
    method: 'GET', path: '/invoices/{id}/pdf', operationId: 'invoicePdf', tag: 'Invoices', summary: "The invoice's PDF",
    permission: 'invoices:read', contentType: 'application/pdf', errors: ['invalid_state'],
    handle: (s, r) => s.invoices.pdf(r.rc, r.param('id')),
  }),

  // Public (no key): the hosted invoice page's data and its card pay.
  route.one({
    method: 'GET', path: '/public/invoices/{id}', operationId: 'retrievePublicInvoice', tag: 'Public', summary: 'What the hosted invoice page shows',
    public: true, response: publicInvoiceSchema, errors: [],
    handle: (s, r) => s.invoices.publicView(r.param('id')),
  }),
  route.one({
    method: 'POST', path: '/public/invoices/{id}/pay', operationId: 'payPublicInvoice', tag: 'Public', summary: 'Pay a sent invoice with a card',
    description: 'At most 5 failed pays per client address in an hour, and the account\'s `publicDeclinesPerHour` per mode (429 `too_many_attempts`).',
    public: true, idempotent: 'payInvoicePublic', body: publicPayInput, response: payResultSchema,
    errors: [...CHANGING, 'card_declined', 'no_gateway_available', 'gateway_unavailable', 'too_many_attempts'],
    example: { card },
    handle: (s, r) => s.invoices.publicPay(r.param('id'), r.body, r.idem, r.client),
  }),
];
