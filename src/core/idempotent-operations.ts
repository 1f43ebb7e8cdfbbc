/**
 * The operations that honour an Idempotency-Key, and what their stored answer carries. Both
 * transports look operations up here: a REST route hands the request's key to the service
 * operation it calls (rest/route.ts `idempotent`), and the service claims and answers the key in
 * its own transaction (IdempotencyService.once, or the payment and refund writes).
 *
 * What is stored is the operation's object and this status; each transport renders its own
 * envelope on a replay. An operation answering with a secret (`sensitive`) is stored sealed and
 * replayed only to the API key that sent the first request.
 */
export interface IdempotentOperation {
  /** The success status the stored answer is replayed with. */
  status: number;
  /** The answer holds a secret (a new API key, a webhook signing secret). */
  sensitive?: boolean;
  /** The GraphQL mutation running the same operation. */
  graphqlMutation?: string;
}

export const IDEMPOTENT_OPERATIONS = {
  createPayment: { status: 201, graphqlMutation: 'createPayment' },
  createRefund: { status: 201, graphqlMutation: 'refundPayment' },
  capturePayment: { status: 200, graphqlMutation: 'capturePayment' },
  cancelPayment: { status: 200, graphqlMutation: 'cancelPayment' },
  savePaymentMethod: { status: 201, graphqlMutation: 'savePaymentMethod' },
  createCustomer: { status: 201, graphqlMutation: 'createCustomer' },
  adjustCustomerBalance: { status: 201, graphqlMutation: 'adjustCustomerBalance' },
  createProduct: { status: 201, graphqlMutation: 'createProduct' },
  createPrice: { status: 201, graphqlMutation: 'createPrice' },
  createApiKey: { status: 201, sensitive: true, graphqlMutation: 'createApiKey' },
  createGateway: { status: 201, graphqlMutation: 'createGateway' },
  createWebhookEndpoint: { status: 201, sensitive: true, graphqlMutation: 'createWebhookEndpoint' },
  rotateWebhookSecret: { status: 200, sensitive: true, graphqlMutation: 'rotateWebhookSecret' },
  resendEvent: { status: 200, graphqlMutation: 'resendEvent' },
  testWebhookEndpoint: { status: 200, graphqlMutation: 'testWebhookEndpoint' },
  createCheckoutSession: { status: 201, graphqlMutation: 'createCheckoutSession' },
  expireCheckoutSession: { status: 200, graphqlMutation: 'expireCheckoutSession' },
  createPaymentLink: { status: 201, graphqlMutation: 'createPaymentLink' },
  // Public pays (no key): the key is scoped to the session or link, and the payment or saved
  // card it makes is what is stored; it replays as the pay result.
  payCheckoutSession: { status: 200 },
  payPaymentLink: { status: 200 },
  createInvoice: { status: 201, graphqlMutation: 'createInvoice' },
  createTaxRate: { status: 201, graphqlMutation: 'createTaxRate' },
  sendInvoice: { status: 200, graphqlMutation: 'sendInvoice' },
  payInvoice: { status: 200, graphqlMutation: 'payInvoice' },
  payInvoicePublic: { status: 200 },
  markInvoicePaid: { status: 200, graphqlMutation: 'markInvoicePaid' },
  voidInvoice: { status: 200, graphqlMutation: 'voidInvoice' },
  createSubscription: { status: 201, graphqlMutation: 'createSubscription' },
  updateSubscription: { status: 200, graphqlMutation: 'updateSubscription' },
  pauseSubscription: { status: 200, graphqlMutation: 'pauseSubscription' },
  resumeSubscription: { status: 200, graphqlMutation: 'resumeSubscription' },
  cancelSubscription: { status: 200, graphqlMutation: 'cancelSubscription' },
  retrySubscriptionPayment: { status: 200, graphqlMutation: 'retrySubscriptionPayment' },
  createTestClock: { status: 201, graphqlMutation: 'createTestClock' },
  createExport: { status: 201, graphqlMutation: 'createExport' },
  advanceTestClock: { status: 200, graphqlMutation: 'advanceTestClock' },
} as const satisfies Record<string, IdempotentOperation>;

export type IdempotentOperationName = keyof typeof IDEMPOTENT_OPERATIONS;
