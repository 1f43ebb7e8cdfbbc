import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';

let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp();
  key = app.account.testKey;
});
afterAll(() => app.stop());

const gql = (query: string, variables?: Record<string, unknown>, k = key) => app.request('POST', '/graphql', { key: k, body: { query, variables } });

describe(`tax rates over GraphQL (${DIALECT})`, () => {
  it('should create, list and deactivate tax rates and tax an invoice of a reverse-charge and a taxed customer as REST does', async () => {
    const created = await gql('mutation($i: CreateTaxRateInput!) { createTaxRate(input: $i) { id object percentage inclusive active displayName country } }', {
      i: { displayName: 'VAT', percentage: 19, inclusive: false, country: 'de' },
    });
    expect(created.body.errors).toBeUndefined();
    const vat = created.body.data.createTaxRate;
    expect(vat).toMatchObject({ object: 'tax_rate', percentage: 19, inclusive: false, active: true, country: 'DE' });
    const reduced = (await gql('mutation { createTaxRate(input: { displayName: "VAT reduced", percentage: 7, inclusive: false }) { id } }')).body.data.createTaxRate;

    const customer = (await gql('mutation { createCustomer(input: { email: "gql-tax@example.com", taxExempt: none }) { id taxExempt } }')).body.data.createCustomer;
    expect(customer.taxExempt).toBe('none');
    const invoice = await gql(`mutation($i: CreateInvoiceInput!) { createInvoice(input: $i) {
      subtotal tax total amountDue defaultTaxRateIds customerTaxExempt lineItems { amount taxRateIds }
      taxBreakdown { taxRateId displayName percentage inclusive taxableAmount amount } } }`, {
      i: { customerId: customer.id, currency: 'EUR', defaultTaxRateIds: [vat.id], lineItems: [{ description: 'Work', unitAmount: 10000 }, { description: 'Book', unitAmount: 2990, taxRateIds: [reduced.id] }] },
    });
    expect(invoice.body.errors).toBeUndefined();
    // 19 % of 10000 = 1900; 7 % of 2990 = 209.3 → 209.
    expect(invoice.body.data.createInvoice).toEqual({
      subtotal: 12990, tax: 2109, total: 15099, amountDue: 15099, defaultTaxRateIds: [vat.id], customerTaxExempt: 'none',
      lineItems: [{ amount: 10000, taxRateIds: [] }, { amount: 2990, taxRateIds: [reduced.id] }],
      taxBreakdown: [
        { taxRateId: vat.id, displayName: 'VAT', percentage: 19, inclusive: false, taxableAmount: 10000, amount: 1900 },
        { taxRateId: reduced.id, displayName: 'VAT reduced', percentage: 7, inclusive: false, taxableAmount: 2990, amount: 209 },
      ],
    });

    const reverse = (await gql('mutation($id: ID!) { updateCustomer(id: $id, input: { taxExempt: reverse }) { taxExempt } }', { id: customer.id })).body.data.updateCustomer;
    expect(reverse.taxExempt).toBe('reverse');
    const untaxed = (await gql('mutation($c: String!, $t: [String!]) { createInvoice(input: { customerId: $c, currency: "EUR", defaultTaxRateIds: $t, lineItems: [{ description: "x", unitAmount: 10000 }] }) { tax total customerTaxExempt } }', { c: customer.id, t: [vat.id] })).body.data.createInvoice;
    expect(untaxed).toEqual({ tax: 0, total: 10000, customerTaxExempt: 'reverse' });

    const off = await gql('mutation($id: ID!) { updateTaxRate(id: $id, input: { active: false, displayName: "VAT old" }) { active displayName percentage } }', { id: reduced.id });
    expect(off.body.data.updateTaxRate).toEqual({ active: false, displayName: 'VAT old', percentage: 7 });
    const listed = await gql('{ taxRates(active: true) { total nodes { id } } }');
    expect(listed.body.data.taxRates).toEqual({ total: 1, nodes: [{ id: vat.id }] });
    expect((await gql('query($id: ID!) { taxRate(id: $id) { displayName } }', { id: vat.id })).body.data.taxRate.displayName).toBe('VAT');

    // The same refusals as REST, with their param.
    const inactive = await gql('mutation($c: String!, $t: [String!]) { createInvoice(input: { customerId: $c, currency: "EUR", lineItems: [{ description: "x", unitAmount: 1, taxRateIds: $t }] }) { id } }', { c: customer.id, t: [reduced.id] });
    expect(inactive.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'lineItems[0].taxRateIds' });
    const tooPrecise = await gql('mutation { createTaxRate(input: { displayName: "x", percentage: 1.23456, inclusive: true }) { id } }');
    expect(tooPrecise.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'percentage' });
    // No way to change a percentage: the input type has no such field.
    const change = await gql('mutation($id: ID!) { updateTaxRate(id: $id, input: { percentage: 20 }) { id } }', { id: vat.id });
    expect(change.body.errors[0].message).toMatch(/percentage/);
  });

  it('should set a subscription\'s defaultTaxRateIds and show its upcoming invoice\'s tax', async () => {
    const vat = (await gql('mutation { createTaxRate(input: { displayName: "VAT", percentage: 20, inclusive: false }) { id } }')).body.data.createTaxRate;
    const product = (await app.request('POST', '/v1/products', { key, body: { name: 'Plan' } })).body.data;
    const price = (await app.request('POST', '/v1/prices', { key, body: { productId: product.id, unitAmount: 1000, currency: 'gbp', recurring: { interval: 'month' } } })).body.data;
    const customer = (await app.request('POST', '/v1/customers', { key, body: { email: 'gql-sub-tax@example.com' } })).body.data;
    await app.request('POST', `/v1/customers/${customer.id}/payment-methods`, { key, body: { card: { number: '4242424242424242', expMonth: 12, expYear: 2040, cvc: '123' } } });
    const created = await gql('mutation($i: CreateSubscriptionInput!) { createSubscription(input: $i) { id defaultTaxRateIds } }', { i: { customerId: customer.id, priceId: price.id, defaultTaxRateIds: [vat.id] } });
    expect(created.body.errors).toBeUndefined();
    const sub = created.body.data.createSubscription;
    expect(sub.defaultTaxRateIds).toEqual([vat.id]);
    const upcoming = await gql('query($id: ID!) { upcomingInvoice(subscriptionId: $id) { subtotal tax total taxBreakdown { taxableAmount amount } } }', { id: sub.id });
    expect(upcoming.body.errors).toBeUndefined();
    expect(upcoming.body.data.upcomingInvoice).toEqual({ subtotal: 1000, tax: 200, total: 1200, taxBreakdown: [{ taxableAmount: 1000, amount: 200 }] });
    const cleared = await gql('mutation($id: ID!) { updateSubscription(id: $id, input: { defaultTaxRateIds: [] }) { defaultTaxRateIds } }', { id: sub.id });
    expect(cleared.body.data.updateSubscription.defaultTaxRateIds).toEqual([]);
  });
});
