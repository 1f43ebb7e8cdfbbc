import { getIntrospectionQuery } from 'graphql';
import { startTestApp, type TestApp } from '../helpers/app';

/**
 * The cost model counts what a query makes the server do: fields (list sizes included, lists held
 * in an object at their real bound), database statements (each list and its COUNT), and the
 * fields introspection resolves.
 */

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const gql = (query: string, variables: Record<string, unknown> = {}, key = app.account.testKey) =>
  app.request('POST', '/graphql', { key, body: { query, variables } });

const aliased = (n: number, field: string) => Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(' ');

describe('the GraphQL cost model', () => {
  it('should refuse 400 aliased list queries as too many database statements, running none', async () => {
    const statementsBefore = app.sql.length;
    const refused = await gql(`{ ${aliased(400, 'payments(search: "x") { total }')} }`);
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0].extensions.code).toBe('query_too_complex');
    expect(refused.body.errors[0].message).toMatch(/more than 50 database statements/);
    // Nothing ran (the key lookup aside, which the cache may or may not need).
    expect(app.sql.slice(statementsBefore).filter((s) => /payments/i.test(s))).toEqual([]);

    // 25 lists with their totals are 50 statements: within the limit; one more is not.
    expect((await gql(`{ ${aliased(25, 'payments(search: "x") { total }')} }`)).body.errors).toBeUndefined();
    expect((await gql(`{ ${aliased(26, 'payments(search: "x") { total }')} }`)).body.errors[0].extensions.code).toBe('query_too_complex');
    // Without `total` a list query is one statement.
    expect((await gql(`{ ${aliased(50, 'payments(search: "x") { page }')} }`)).body.errors).toBeUndefined();
    // A nested list is one statement for all its parents, a paged one (deliveries) too, with one
    // more for all their totals; aliases still count each.
    expect((await gql(`{ ${aliased(40, 'customers { nodes { payments(first: 1) { id } } }')} }`)).body.errors[0].extensions.code).toBe('query_too_complex');
    expect((await gql('{ webhookEndpoints(pageSize: 100) { nodes { deliveries { total nodes { id } } } } }')).body.errors).toBeUndefined();
    const deliveries = aliased(25, 'deliveries { total nodes { id } }');
    expect((await gql(`{ webhookEndpoints(pageSize: 10) { nodes { ${deliveries} } } }`)).body.errors[0].message)
      .toMatch(/database statements.*webhookEndpoints\.nodes\.a\d+/);
  });

  it('should accept a dashboard view of 100 payments with their attempts, customers and refunds', async () => {
    const customer = await app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'dash@example.com', name: 'Dash' } });
    for (let i = 0; i < 3; i++) {
      await app.request('POST', '/v1/payments', { key: app.account.testKey, body: { amount: 900 + i, currency: 'usd', paymentMethod: 'pm_card_visa', customerId: customer.body.data.id } });
    }
    const dashboard = `{
      payments(pageSize: 100) { total page pageSize nodes {
        id amount currency status description createdAt failureCode
        customer { id email name }
        paymentMethodDetails { brand last4 }
        attempts { gateway outcome code latency }
        refunds { id amount status }
      } }
      customers(pageSize: 20) { total nodes { id email name createdAt } }
      events(pageSize: 20) { total nodes { id type createdAt } }
    }`;
    const res = await gql(dashboard);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.payments.nodes[0]).toMatchObject({ customer: { email: 'dash@example.com' }, attempts: [expect.objectContaining({ outcome: 'succeeded' })] });
  });

  it('should count the fields introspection resolves: a full introspection runs, 330 aliased __schema do not', async () => {
    const full = await gql(getIntrospectionQuery({ descriptions: true, specifiedByUrl: true, directiveIsRepeatable: true, inputValueDeprecation: true }));
    expect(full.body.errors).toBeUndefined();
    expect(full.body.data.__schema.types.length).toBeGreaterThan(20);

    const started = Date.now();
    const refused = await gql(`{ ${aliased(330, '__schema { types { name fields { name } } }')} }`);
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0].extensions.code).toBe('query_too_complex');
    expect(refused.body.errors[0].message).toMatch(/more than 50,000 fields/);
    expect(Date.now() - started).toBeLessThan(2000);
    const types = await gql(`{ ${aliased(330, '__type(name: "Payment") { fields { name type { name ofType { name } } } }')} }`);
    expect(types.body.errors[0].extensions.code).toBe('query_too_complex');
    // A type named in a variable counts as any type could.
    const variable = await gql(`query($t: String!) { ${aliased(60, '__type(name: $t) { fields { name args { name } } }')} }`, { t: 'Query' });
    expect(variable.body.errors[0].extensions.code).toBe('query_too_complex');
    expect((await gql('query($t: String!) { __type(name: $t) { name fields { name } } }', { t: 'Payment' })).body.errors).toBeUndefined();
  });
});
