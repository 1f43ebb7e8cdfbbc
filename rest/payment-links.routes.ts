import { createPaymentLinkInput, listPaymentLinksInput, updatePaymentLinkInput } from '../src/modules/checkout/checkout.inputs';
import { publicPayInput } from '../src/modules/payments/payment.inputs';
import { payResultSchema, paymentLinkSchema, publicPaymentLinkSchema } from '../src/modules/checkout/checkout.schemas';
import { route } from './route-table';

const card = { number: '4242424242424242', expMonth: 12, expYear: 2030, cvc: '123' };

export const paymentLinkRoutes = [
  route.one({
    method: 'POST', path: '/payment-links', operationId: 'createPaymentLink', tag: 'Payment links', summary: 'Create a payment link',
    permission: 'payment_links:write', idempotent: 'createPaymentLink', body: createPaymentLinkInput, response: paymentLinkSchema, errors: [],
    example: { name: 'Donation', amount: 1000, currency: 'EUR' },
    handle: (s, r) => s.paymentLinks.create(r.rc, r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/payment-links', operationId: 'listPaymentLinks', tag: 'Payment links', summary: 'List payment links',
    permission: 'payment_links:read', query: listPaymentLinksInput, response: paymentLinkSchema, errors: [],
    handle: (s, r) => s.paymentLinks.list(r.rc, r.query),
  }),
  route.one({
    method: 'GET', path: '/payment-links/{id}', operationId: 'retrievePaymentLink', tag: 'Payment links', summary: 'Retrieve a payment link',
    permission: 'payment_links:read', response: paymentLinkSchema, errors: [],
    handle: (s, r) => s.paymentLinks.retrieve(r.rc, r.param('id')),
  }),
  route.one({
    method: 'PATCH', path: '/payment-links/{id}', operationId: 'updatePaymentLink', tag: 'Payment links', summary: 'Update a payment link (deactivate it)',
    permission: 'payment_links:write', body: updatePaymentLinkInput, response: paymentLinkSchema, errors: [],
    example: { status: 'inactive' },
    handle: (s, r) => s.paymentLinks.update(r.rc, r.param('id'), r.body),
  }),

  // Public (no key): the link by its slug (410 when inactive), and its pay.
  route.one({
    method: 'GET', path: '/public/payment-links/{slug}', operationId: 'retrievePublicPaymentLink', tag: 'Public', summary: 'What the payment link page shows',
    public: true, response: publicPaymentLinkSchema, errors: ['payment_link_inactive'],
    handle: (s, r) => s.paymentLinks.publicView(r.param('slug')),
  }),
  route.one({
    method: 'POST', path: '/public/payment-links/{slug}/pay', operationId: 'payPaymentLink', tag: 'Public', summary: 'Pay a payment link with a card',
    description: 'A declined card answers 200 with status `failed`. The payer is anonymous: no customer is attached, and `email` becomes the payment\'s `receiptEmail`. At most 5 failed pays per client address in an hour, and the account\'s `publicDeclinesPerHour` per mode (429 `too_many_attempts`).',
    public: true, idempotent: 'payPaymentLink', body: publicPayInput, response: payResultSchema,
    errors: ['payment_link_inactive', 'no_gateway_available', 'gateway_unavailable', 'card_declined', 'too_many_attempts'],
    example: { card, email: 'ada@example.com' },
    handle: (s, r) => s.paymentLinks.publicPay(r.param('slug'), r.body, r.idem, r.client),
  }),
];
