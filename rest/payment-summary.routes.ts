import { paymentSummaryInput } from '../src/modules/payments/payment-summary.inputs';
import { paymentSummarySchema } from '../src/modules/payments/payment-summary.schemas';
import { route } from './route-table';

/**
 * `GET /payments/summary`: listed before the payments' routes (rest/routes.ts), so the router
 * matches it before `/payments/{id}`, which would otherwise take `summary` for an id.
 */
export const paymentSummaryRoutes = [
  route.one({
    method: 'GET', path: '/payments/summary', operationId: 'paymentSummary', tag: 'Payments', summary: 'Count and sum the payments and refunds of a window, per group',
    description: 'Payments count by their creation in [from, to), succeeded ones with what they captured; succeeded refunds count by their own creation in the window (netted by refund date). Rows are always per currency; `groupBy` adds status, gateway and day (UTC).',
    permission: 'payments:read', query: paymentSummaryInput, response: paymentSummarySchema, errors: [],
    handle: (s, r) => s.paymentSummary.summarize(r.rc, r.query),
  }),
];
