import { listAccountGatewayTransactionsInput } from '../src/modules/payments/payment.inputs';
import { gatewayTransactionSchema } from '../src/modules/payments/payment.schemas';
import { route } from './route-table';

/** The account's gateway calls (a payment's own are also at /payments/{id}/gateway-transactions). */
export const gatewayTransactionRoutes = [
  route.list({
    method: 'GET', path: '/gateway-transactions', operationId: 'listGatewayTransactions', tag: 'Payments', summary: "List the account's gateway calls",
    description: 'Every call made to a gateway (charges, refunds, status look-ups, saved cards, captures, cancels), newest first; filter by payment, refund, gateway or outcome.',
    permission: 'payments:read', query: listAccountGatewayTransactionsInput, response: gatewayTransactionSchema, errors: [],
    handle: (s, r) => s.payments.listGatewayTransactions(r.rc, r.query),
  }),
];
