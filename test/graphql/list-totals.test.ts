import { startTestApp, type TestApp } from '../helpers/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const gql = (key: string, query: string, variables: Record<string, unknown> = {}) =>
  app.request('POST', '/graphql', { key, body: { query, variables } });

/** The COUNT statements a request ran, and its answer. */
async function counting<T>(run: () => Promise<T>): Promise<{ counts: string[]; result: T }> {
  const before = app.sql.length;
  const result = await run();
  return { counts: app.sql.slice(before).filter((q) => /\bCOUNT\(\*\)/i.test(q)), result };
}

describe('GraphQL list totals', () => {
  it('should run a list query\'s COUNT only when `total` is selected, and count right when it is', async () => {
    const account = await app.createAccount();
    const key = account.testKey;
    const customer = await app.request('POST', '/v1/customers', { key, body: { email: 'totals@example.com' } });
    const customerId = customer.body.data.id as string;
    await app.request('POST', `/v1/customers/${customerId}/payment-methods`, { key, body: { card: { number: '4242424242424242', expMonth: 12, expYear: 2040, cvc: '123' } } });
    const payment = await app.request('POST', '/v1/payments', { key, body: { amount: 900, currency: 'usd', paymentMethod: 'pm_card_visa', customerId } });
    const paymentId = payment.body.data.id as string;
    await app.request('POST', '/v1/refunds', { key, body: { paymentId, amount: 100 } });
    const product = await app.request('POST', '/v1/products', { key, body: { name: 'Totals' } });
    await app.request('POST', '/v1/prices', { key, body: { productId: product.body.data.id, unitAmount: 100, currency: 'usd' } });
    await app.request('POST', '/v1/gateways', { key, body: { name: 'Sim', type: 'simulator' } });
    await app.request('POST', '/v1/webhook-endpoints', { key, body: { url: 'https://127.0.0.1:9/hook', events: ['*'] } });

    // Each list query with the REST list of the same objects.
    const lists: Array<[string, string]> = [
      ['customers', '/v1/customers'], ['products', '/v1/products'], ['prices', '/v1/prices'], ['events', '/v1/events'],
      ['payments', '/v1/payments'], ['refunds', '/v1/refunds'], ['gateways', '/v1/gateways'], ['webhookEndpoints', '/v1/webhook-endpoints'],
      [`paymentMethods(customerId: "${customerId}")`, `/v1/customers/${customerId}/payment-methods`],
      [`gatewayTransactions(paymentId: "${paymentId}")`, `/v1/payments/${paymentId}/gateway-transactions`],
    ];
    for (const [field, path] of lists) {
      const rest = await counting(() => app.request('GET', path, { key }));
      expect([path, rest.counts]).toEqual([path, [expect.any(String)]]); // REST always counts
      const total = rest.result.body.meta.total as number;
      expect(total).toBeGreaterThan(0);

      const without = await counting(() => gql(key, `{ list: ${field} { page pageSize nodes { id } } }`));
      expect(without.result.body.errors).toBeUndefined();
      expect([field, without.counts]).toEqual([field, []]);
      expect(without.result.body.data.list.nodes).toHaveLength(total);

      const withTotal = await counting(() => gql(key, `{ list: ${field} { n: total nodes { id } } }`));
      expect([field, withTotal.counts.length]).toEqual([field, 1]);
      expect(withTotal.result.body.data.list.n).toBe(total);
    }

    // Through a fragment or an inline fragment it is selected; skipped by a directive it is not.
    const fragment = await counting(() => gql(key, '{ customers { ...Page } } fragment Page on CustomerList { nodes { id } ... on CustomerList { total } }'));
    expect(fragment.counts).toHaveLength(1);
    expect(fragment.result.body.data.customers.total).toBe(1);
    const skipped = await counting(() => gql(key, 'query($t: Boolean!) { customers { total @include(if: $t) nodes { id } } }', { t: false }));
    expect(skipped.counts).toEqual([]);
    expect(skipped.result.body.data.customers).toEqual({ nodes: [{ id: customerId }] });
    const included = await counting(() => gql(key, 'query($t: Boolean!) { customers { total @include(if: $t) } }', { t: true }));
    expect(included.counts).toHaveLength(1);
    expect(included.result.body.data.customers).toEqual({ total: 1 });
  });
});
