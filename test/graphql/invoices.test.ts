import { startTestApp, type TestApp } from '../helpers/app';

let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp();
  key = app.account.testKey;
});
afterAll(() => app.stop());

const gql = (query: string, variables?: Record<string, unknown>, k = key) => app.request('POST', '/graphql', { key: k, body: { query, variables } });

describe('invoices over GraphQL', () => {
  it('should create, update, pay, mark paid and void invoices through the same service as REST', async () => {
    const customer = (await app.request('POST', '/v1/customers', { key, body: { email: 'gql-inv@example.com', locale: 'fr' } })).body.data;
    expect(customer.locale).toBe('fr');
    const created = await gql('mutation($i: CreateInvoiceInput!) { createInvoice(input: $i) { id number status total lineItems { description amount } customer { email locale } } }', {
      i: { customerId: customer.id, currency: 'eur', lineItems: [{ description: 'Audit', quantity: 2, unitAmount: 5000 }] },
    });
    expect(created.body.errors).toBeUndefined();
    const inv = created.body.data.createInvoice;
    expect(inv).toMatchObject({ status: 'draft', total: 10000, lineItems: [{ description: 'Audit', amount: 10000 }], customer: { email: 'gql-inv@example.com', locale: 'fr' } });
    const updated = await gql('mutation($id: ID!) { updateInvoice(id: $id, input: { memo: "Merci" }) { memo } }', { id: inv.id });
    expect(updated.body.data.updateInvoice.memo).toBe('Merci');
    const paid = await gql('mutation($id: ID!) { payInvoice(id: $id, paymentMethod: "pm_card_visa") { status paymentStatus payments { status amount invoiceId } } }', { id: inv.id });
    expect(paid.body.data.payInvoice).toMatchObject({ status: 'paid', paymentStatus: 'paid', payments: [{ status: 'succeeded', amount: 10000, invoiceId: inv.id }] });
    const other = (await gql('mutation($c: String!) { createInvoice(input: { customerId: $c, currency: "eur", lineItems: [{ description: "x", unitAmount: 1 }] }) { id } }', { c: customer.id })).body.data.createInvoice;
    expect((await gql('mutation($id: ID!) { markInvoicePaid(id: $id) { status paidOutOfBand } }', { id: other.id })).body.data.markInvoicePaid).toEqual({ status: 'paid', paidOutOfBand: true });
    const third = (await gql('mutation($c: String!) { createInvoice(input: { customerId: $c, currency: "eur", lineItems: [{ description: "y", unitAmount: 1 }] }) { id } }', { c: customer.id })).body.data.createInvoice;
    expect((await gql('mutation($id: ID!) { voidInvoice(id: $id) { status } }', { id: third.id })).body.data.voidInvoice.status).toBe('void');
    const listed = await gql('query($c: String) { invoices(customerId: $c, status: paid, sortField: total, sortDirection: desc) { total nodes { id } } }', { c: customer.id });
    expect(listed.body.data.invoices).toEqual({ total: 2, nodes: [{ id: inv.id }, { id: other.id }] });
    const refused = await gql('mutation($c: String!) { createInvoice(input: { customerId: $c, currency: "eur", lineItems: [] }) { id } }', { c: customer.id });
    expect(refused.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'lineItems' });
  });

  it('should batch Customer.invoices and Invoice.payments: one statement each for a page', async () => {
    for (let i = 0; i < 3; i++) {
      const c = (await app.request('POST', '/v1/customers', { key, body: { email: `batch-${i}@example.com` } })).body.data;
      const inv = (await app.request('POST', '/v1/invoices', { key, body: { customerId: c.id, currency: 'usd', lineItems: [{ description: 'b', unitAmount: 100 }] } })).body.data;
      await app.request('POST', `/v1/invoices/${inv.id}/pay`, { key, body: { paymentMethod: 'pm_card_visa' } });
    }
    const before = app.sql.length;
    const res = await gql('{ customers(pageSize: 10, search: "batch-") { nodes { invoices { number payments { id } } } } }');
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.customers.nodes.every((n: { invoices: Array<{ payments: unknown[] }> }) => n.invoices.length === 1 && n.invoices[0].payments.length === 1)).toBe(true);
    const statements = app.sql.slice(before);
    expect(statements.filter((q) => /FROM [`"]?invoices\b/.test(q))).toHaveLength(1);
    expect(statements.filter((q) => /FROM [`"]?payments\b/.test(q))).toHaveLength(1);
  });

  it('should read and change the account\'s settings', async () => {
    const read = await gql('{ account { name invoicePrefix dunningRetryDays rateLimitPerMinute } }');
    expect(read.body.data.account).toMatchObject({ name: 'Test account', invoicePrefix: 'INV', dunningRetryDays: [1, 3, 7] });
    const changed = await gql('mutation { updateAccount(input: { dunningRetryDays: [2, 4] }) { dunningRetryDays } }');
    expect(changed.body.data.updateAccount.dunningRetryDays).toEqual([2, 4]);
    const restricted = (await app.request('POST', '/v1/api-keys', { key, body: { permissions: ['account:read'] } })).body.data.secret;
    expect((await gql('mutation { updateAccount(input: { name: "X" }) { name } }', undefined, restricted)).body.errors[0].extensions.code).toBe('permission_denied');
  });
});
