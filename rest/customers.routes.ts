import { createCustomerInput, listCustomersInput, updateCustomerInput } from '../src/modules/customers/customer.inputs';
import { customerSchema } from '../src/modules/customers/customer.schemas';
import { adjustBalanceInput, listBalanceTransactionsInput } from '../src/modules/customers/customer-credit.inputs';
import { balanceTransactionSchema } from '../src/modules/customers/customer-credit.schemas';
import { route } from './route-table';

export const customerRoutes = [
  route.one({
    method: 'POST', path: '/customers', operationId: 'createCustomer', tag: 'Customers', summary: 'Create a customer',
    permission: 'customers:write', idempotent: 'createCustomer', body: createCustomerInput, response: customerSchema,
    errors: ['duplicate_email', 'mode_mismatch'],
    example: {
      email: 'ada@example.com', name: 'Ada Lovelace', country: 'GB', locale: 'en',
      address: { line1: '12 St James\'s Square', postalCode: 'SW1Y 4LB', city: 'London', country: 'GB' }, taxIds: [{ type: 'gb_vat', value: 'GB123456789' }],
    },
    handle: (s, r) => s.customers.create(r.rc, r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/customers', operationId: 'listCustomers', tag: 'Customers', summary: 'List customers',
    permission: 'customers:read', query: listCustomersInput, response: customerSchema, errors: [],
    handle: (s, r) => s.customers.list(r.rc, r.query),
  }),
  route.one({
    method: 'GET', path: '/customers/{id}', operationId: 'retrieveCustomer', tag: 'Customers', summary: 'Retrieve a customer',
    permission: 'customers:read', response: customerSchema, errors: [],
    handle: (s, r) => s.customers.retrieve(r.rc, r.param('id')),
  }),
  route.one({
    method: 'PATCH', path: '/customers/{id}', operationId: 'updateCustomer', tag: 'Customers', summary: 'Update a customer',
    permission: 'customers:write', body: updateCustomerInput, response: customerSchema, errors: ['duplicate_email'],
    example: { name: 'Ada King', metadata: { crm: '4711' } },
    handle: (s, r) => s.customers.update(r.rc, r.param('id'), r.body),
  }),
  route.one({
    method: 'POST', path: '/customers/{id}/balance-transactions', operationId: 'adjustCustomerBalance', tag: 'Customers',
    summary: "Add to or take from a customer's credit balance",
    description: "A manual `adjustment` of the customer's `creditBalance` in `currency`: a positive `amount` adds credit, a negative one takes it away. A balance never goes below 0: a larger debit answers 422 `insufficient_credit` and changes nothing. Records `customer.updated`.",
    permission: 'customers:write', idempotent: 'adjustCustomerBalance', body: adjustBalanceInput, response: balanceTransactionSchema,
    errors: ['insufficient_credit'],
    example: { currency: 'EUR', amount: 2500, description: 'Goodwill credit for the outage on March 1' },
    handle: (s, r) => s.customerCredit.adjust(r.rc, r.param('id'), r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/customers/{id}/balance-transactions', operationId: 'listCustomerBalanceTransactions', tag: 'Customers',
    summary: "Every change of a customer's credit balance",
    description: 'Newest first: credit kept from negative invoice totals (`invoice_credit`), taken by invoices (`applied_to_invoice`) and changed by hand (`adjustment`).',
    permission: 'customers:read', query: listBalanceTransactionsInput, response: balanceTransactionSchema, errors: [],
    handle: (s, r) => s.customerCredit.list(r.rc, r.param('id'), r.query),
  }),
];
