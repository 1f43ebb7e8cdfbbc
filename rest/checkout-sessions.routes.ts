import { createCheckoutSessionInput, listCheckoutSessionsInput } from '../src/modules/checkout/checkout.inputs';
import { publicPayInput } from '../src/modules/payments/payment.inputs';
import { checkoutSessionSchema, payResultSchema, publicCheckoutSessionSchema } from '../src/modules/checkout/checkout.schemas';
import { route } from './route-table';

const card = { number: '4242424242424242', expMonth: 12, expYear: 2030, cvc: '123' };

export const checkoutSessionRoutes = [
  route.one({
    method: 'POST', path: '/checkout-sessions', operationId: 'createCheckoutSession', tag: 'Checkout sessions', summary: 'Create a hosted checkout session',
    permission: 'checkout_sessions:write', idempotent: 'createCheckoutSession', body: createCheckoutSessionInput, response: checkoutSessionSchema, errors: [],
    example: { mode: 'payment', amount: 4900, currency: 'EUR', description: 'Conference ticket', successUrl: 'https://shop.example.com/thanks' },
    handle: (s, r) => s.checkoutSessions.create(r.rc, r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/checkout-sessions', operationId: 'listCheckoutSessions', tag: 'Checkout sessions', summary: 'List checkout sessions',
    permission: 'checkout_sessions:read', query: listCheckoutSessionsInput, response: checkoutSessionSchema, errors: [],
    handle: (s, r) => s.checkoutSessions.list(r.rc, r.query),
  }),
  route.one({
    method: 'GET', path: '/checkout-sessions/{id}', operationId: 'retrieveCheckoutSession', tag: 'Checkout sessions', summary: 'Retrieve a checkout session',
    permission: 'checkout_sessions:read', response: checkoutSessionSchema, errors: [],
    handle: (s, r) => s.checkoutSessions.retrieve(r.rc, r.param('id')),
  }),
  route.one({
    method: 'POST', path: '/checkout-sessions/{id}/expire', operationId: 'expireCheckoutSession', tag: 'Checkout sessions', summary: 'Expire an open checkout session',
    permission: 'checkout_sessions:write', idempotent: 'expireCheckoutSession', response: checkoutSessionSchema, errors: ['invalid_state', 'checkout_session_in_use'],
    handle: (s, r) => s.checkoutSessions.expire(r.rc, r.param('id'), r.idem),
  }),

  // Public (no key): what the hosted page shows, and its pay.
  route.one({
    method: 'GET', path: '/public/checkout-sessions/{id}', operationId: 'retrievePublicCheckoutSession', tag: 'Public', summary: 'What the hosted checkout page shows',
    public: true, response: publicCheckoutSessionSchema, errors: [],
    handle: (s, r) => s.checkoutSessions.publicView(r.param('id')),
  }),
  route.one({
    method: 'POST', path: '/public/checkout-sessions/{id}/pay', operationId: 'payCheckoutSession', tag: 'Public', summary: 'Pay a checkout session with a card (the hosted page calls this)',
    description: 'A declined card answers 200 with status `failed`; the session stays open, for at most 5 failed pays in all (then 429 `too_many_attempts`, and the session can no longer be paid). A session made without `customerId` is paid anonymously: in payment mode no customer is attached (`email` becomes the payment\'s `receiptEmail`); in setup and subscription mode a new customer is made once the card is saved, and an e-mail that is already a customer\'s answers 422 `customer_exists`. Every public pay counts against the account\'s `publicDeclinesPerHour` per mode.',
    public: true, idempotent: 'payCheckoutSession', body: publicPayInput, response: payResultSchema,
    errors: ['invalid_state', 'checkout_session_in_use', 'no_gateway_available', 'gateway_unavailable', 'card_declined', 'invoice_payment_in_progress', 'customer_exists', 'too_many_attempts'],
    example: { card, email: 'ada@example.com', name: 'Ada Lovelace' },
    handle: (s, r) => s.checkoutSessions.publicPay(r.param('id'), r.body, r.idem, r.client),
  }),
];
