import { accountRoutes } from './account.routes';
import { apiKeyRoutes } from './api-keys.routes';
import { catalogRoutes } from './catalog.routes';
import { checkoutSessionRoutes } from './checkout-sessions.routes';
import { customerRoutes } from './customers.routes';
import { eventRoutes } from './events.routes';
import { fxRateRoutes } from './fx-rates.routes';
import { gatewayRoutes } from './gateways.routes';
import { invoiceRoutes } from './invoices.routes';
import { paymentLinkRoutes } from './payment-links.routes';
import { paymentRoutes } from './payments.routes';
import { paymentSummaryRoutes } from './payment-summary.routes';
import { exportRoutes } from './exports.routes';
import { routingRoutes } from './routing.routes';
import { subscriptionRoutes } from './subscriptions.routes';
import { taxRateRoutes } from './tax-rates.routes';
import { testClockRoutes } from './test-clocks.routes';
import { webhookRoutes } from './webhooks.routes';
import { gatewayTransactionRoutes } from './gateway-transactions.routes';
import { openApiDocument } from './openapi';
import { route, type RouteSpec } from './route-table';

/** The document's version of the API under /v1. */
export const API_VERSION = '1.0.0';

let document: Record<string, unknown> | undefined;

/** The OpenAPI document of API_ROUTES, built once. */
export function apiDocument(): Record<string, unknown> {
  return (document ??= openApiDocument(API_ROUTES, { version: API_VERSION }));
}

/** The document as docs/openapi.json holds it. */
export function apiDocumentText(): string {
  return `${JSON.stringify(apiDocument(), null, 2)}\n`;
}

const openApiRoutes = [
  route.document({
    method: 'GET', path: '/openapi.json', operationId: 'openApiDocument', tag: 'Reference', summary: 'This OpenAPI 3.1 document',
    public: true, errors: [],
    handle: async () => apiDocument(),
  }),
];

/**
 * Every REST route under /v1 (and /api/v1): the router registers these and nothing else, and the
 * OpenAPI document and the contract test read the same list.
 */
export const API_ROUTES: readonly RouteSpec[] = [
  ...customerRoutes,
  ...catalogRoutes,
  ...eventRoutes,
  ...apiKeyRoutes,
  ...accountRoutes,
  // Before paymentRoutes: the router tries routes in this order, and `/payments/{id}` would take `summary` for an id.
  ...paymentSummaryRoutes,
  ...paymentRoutes,
  ...gatewayRoutes,
  ...routingRoutes,
  ...fxRateRoutes,
  ...webhookRoutes,
  ...checkoutSessionRoutes,
  ...paymentLinkRoutes,
  ...invoiceRoutes,
  ...taxRateRoutes,
  ...subscriptionRoutes,
  ...testClockRoutes,
  ...exportRoutes,
  ...gatewayTransactionRoutes,
  ...openApiRoutes,
];
