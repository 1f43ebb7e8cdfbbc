import { createTaxRateInput, listTaxRatesInput, updateTaxRateInput } from '../src/modules/tax-rates/tax-rate.inputs';
import { taxRateSchema } from '../src/modules/tax-rates/tax-rate.schemas';
import { route } from './route-table';

export const taxRateRoutes = [
  route.one({
    method: 'POST', path: '/tax-rates', operationId: 'createTaxRate', tag: 'Tax rates', summary: 'Create a tax rate',
    description: 'The percentage (0–100, up to 4 decimals) and `inclusive` never change afterwards: make a new rate and deactivate the old one.',
    permission: 'tax_rates:write', idempotent: 'createTaxRate', body: createTaxRateInput, response: taxRateSchema, errors: [],
    example: { displayName: 'VAT', percentage: 19, inclusive: false, country: 'DE', description: 'German VAT, standard rate' },
    handle: (s, r) => s.taxRates.create(r.rc, r.body, r.idem),
  }),
  route.list({
    method: 'GET', path: '/tax-rates', operationId: 'listTaxRates', tag: 'Tax rates', summary: 'List tax rates',
    permission: 'tax_rates:read', query: listTaxRatesInput, response: taxRateSchema, errors: [],
    handle: (s, r) => s.taxRates.list(r.rc, r.query),
  }),
  route.one({
    method: 'GET', path: '/tax-rates/{id}', operationId: 'retrieveTaxRate', tag: 'Tax rates', summary: 'Retrieve a tax rate',
    permission: 'tax_rates:read', response: taxRateSchema, errors: [],
    handle: (s, r) => s.taxRates.retrieve(r.rc, r.param('id')),
  }),
  route.one({
    method: 'PATCH', path: '/tax-rates/{id}', operationId: 'updateTaxRate', tag: 'Tax rates', summary: 'Update a tax rate (displayName, description, active, metadata)',
    permission: 'tax_rates:write', body: updateTaxRateInput, response: taxRateSchema, errors: [],
    example: { active: false },
    handle: (s, r) => s.taxRates.update(r.rc, r.param('id'), r.body),
  }),
];
