import { createCustomerInput, listCustomersInput, updateCustomerInput } from '../src/modules/customers/customer.inputs';
import { customerSchema } from '../src/modules/customers/customer.schemas';
import { route } from './route-table';

export const customerRoutes = [
  route.one({
    method: 'POST', path: '/customers', operationId: 'createCustomer', tag: 'Customers', summary: 'Create a customer',
    permission: 'customers:write', idempotent: 'createCustomer', body: createCustomerInput, response: customerSchema,
    errors: ['duplicate_email', 'mode_mismatch'],
    example: { email: 'ada@example.com', name: 'Ada Lovelace', country: 'GB', locale: 'en' },
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
];
