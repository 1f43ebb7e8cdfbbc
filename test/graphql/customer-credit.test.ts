import { startTestApp, type TestApp, type TestAccount } from '../helpers/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const gql = (key: string, query: string, variables: Record<string, unknown> = {}, headers?: Record<string, string>) =>
  app.request('POST', '/graphql', { key, body: { query, variables }, headers });

const ADJUST = `mutation($c: ID!, $cur: String!, $a: SafeInt!, $d: String!) {
  adjustCustomerBalance(customerId: $c, currency: $cur, amount: $a, description: $d) { id object livemode customerId currency amount type invoiceId description createdAt updatedAt }
}`;

async function newCustomer(account: TestAccount): Promise<string> {
  const res = await app.request('POST', '/v1/customers', { key: account.testKey, body: { email: `credit${Math.random()}@example.com` } });
  expect(res.status).toBe(201);
  return res.body.data.id as string;
}

describe('GraphQL customer credit', () => {
  it('should adjust with adjustCustomerBalance, the same object REST lists, and refuse as REST does', async () => {
    const account = await app.createAccount();
    const customer = await newCustomer(account);
    const added = await gql(account.testKey, ADJUST, { c: customer, cur: 'eur', a: 2500, d: 'Goodwill' });
    expect(added.body.errors).toBeUndefined();
    const rest = await app.request('GET', `/v1/customers/${customer}/balance-transactions`, { key: account.testKey });
    expect(rest.body.data).toEqual([added.body.data.adjustCustomerBalance]);
    expect(added.body.data.adjustCustomerBalance).toMatchObject({ object: 'balance_transaction', currency: 'EUR', amount: 2500, type: 'adjustment', invoiceId: null, description: 'Goodwill' });

    const refusals: Array<[Record<string, unknown>, string, string]> = [
      [{ c: customer, cur: 'EUR', a: -2501, d: 'Too much' }, 'insufficient_credit', 'amount'],
      [{ c: customer, cur: 'EUR', a: 0, d: 'Nothing' }, 'invalid_parameter', 'amount'],
      [{ c: customer, cur: 'EURO', a: 10, d: 'x' }, 'invalid_parameter', 'currency'],
      [{ c: customer, cur: 'EUR', a: 10, d: '   ' }, 'invalid_parameter', 'description'],
      [{ c: 'cus_nope', cur: 'EUR', a: 10, d: 'x' }, 'resource_not_found', 'customerId'],
    ];
    for (const [variables, code, param] of refusals) {
      const res = await gql(account.testKey, ADJUST, variables);
      expect([variables, res.body.data?.adjustCustomerBalance, res.body.errors?.[0]?.extensions]).toEqual([variables, null, expect.objectContaining({ code, param })]);
    }
    // A fraction is refused by the type, before the service.
    const fraction = await gql(account.testKey, ADJUST, { c: customer, cur: 'EUR', a: 1.5, d: 'x' });
    expect(fraction.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'a' });
    const after = await app.request('GET', `/v1/customers/${customer}`, { key: account.testKey });
    expect(after.body.data.creditBalance).toEqual({ EUR: 2500 });
  });

  it('should replay adjustCustomerBalance under the same Idempotency-Key without adjusting twice', async () => {
    const account = await app.createAccount();
    const customer = await newCustomer(account);
    const headers = { 'Idempotency-Key': `gql-credit-${Math.random()}` };
    const first = await gql(account.testKey, ADJUST, { c: customer, cur: 'USD', a: 700, d: 'Refund as credit' }, headers);
    const again = await gql(account.testKey, ADJUST, { c: customer, cur: 'USD', a: 700, d: 'Refund as credit' }, headers);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.data).toEqual(first.body.data);
    const res = await gql(account.testKey, 'query($c: ID!) { customer(id: $c) { creditBalance { currency amount } } }', { c: customer });
    expect(res.body.data.customer.creditBalance).toEqual([{ currency: 'USD', amount: 700 }]);
  });

  it('should give Customer.creditBalance and Customer.balanceTransactions(first, after), batched over a page of customers', async () => {
    const account = await app.createAccount();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await newCustomer(account));
    // The first customer: three adjustments in two currencies; the second: credit taken back to 0.
    const made: string[] = [];
    for (const [cur, a] of [['EUR', 300], ['JPY', 5000], ['EUR', -100]] as const) {
      const res = await gql(account.testKey, ADJUST, { c: ids[0], cur, a, d: `step ${made.length}` });
      expect(res.body.errors).toBeUndefined();
      made.unshift(res.body.data.adjustCustomerBalance.id);
      await new Promise((r) => setTimeout(r, 5)); // distinct createdAt: the list's order
    }
    await gql(account.testKey, ADJUST, { c: ids[1], cur: 'GBP', a: 50, d: 'in' });
    await gql(account.testKey, ADJUST, { c: ids[1], cur: 'GBP', a: -50, d: 'out' });

    const before = app.sql.length;
    const page = await gql(account.testKey, `{ customers(pageSize: 10, sortDirection: asc) { nodes {
      id creditBalance { currency amount } balanceTransactions(first: 2) { id amount currency type description }
    } } }`);
    expect(page.body.errors).toBeUndefined();
    const nodes = page.body.data.customers.nodes as Array<{ id: string; creditBalance: unknown; balanceTransactions: Array<{ id: string }> }>;
    expect(nodes.map((n) => n.id)).toEqual(ids);
    expect(nodes.map((n) => n.creditBalance)).toEqual([[{ currency: 'EUR', amount: 200 }, { currency: 'JPY', amount: 5000 }], [], [], []]);
    expect(nodes[0].balanceTransactions.map((b) => b.id)).toEqual(made.slice(0, 2));
    expect(nodes[0].balanceTransactions[0]).toMatchObject({ amount: -100, currency: 'EUR', type: 'adjustment', description: 'step 2' });
    expect(nodes[1].balanceTransactions.map((b) => b.id)).toHaveLength(2);
    expect(nodes[2].balanceTransactions).toEqual([]);
    // One statement for the page's balances, one for its transactions, whatever the page's size.
    const statements = app.sql.slice(before);
    expect(statements.filter((q) => /\bFROM customer_balances\b/.test(q))).toHaveLength(1);
    expect(statements.filter((q) => /\bFROM customer_balance_transactions\b/.test(q))).toHaveLength(1);

    // `after`: the ones older than a transaction of the same customer; another customer's cursor gives none.
    const next = await gql(account.testKey, `query($c: ID!, $d: ID!, $after: ID) { c: customer(id: $c) { balanceTransactions(first: 5, after: $after) { id } } d: customer(id: $d) { balanceTransactions(after: $after) { id } } }`, { c: ids[0], d: ids[1], after: made[1] });
    expect(next.body.errors).toBeUndefined();
    expect(next.body.data.c.balanceTransactions.map((b: { id: string }) => b.id)).toEqual([made[2]]);
    expect(next.body.data.d.balanceTransactions).toEqual([]);
    for (const [args, param] of [['first: 0', 'first'], ['after: "pay_123"', 'after']]) {
      const refused = await gql(account.testKey, `query($c: ID!) { customer(id: $c) { balanceTransactions(${args}) { id } } }`, { c: ids[0] });
      expect(refused.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param });
    }
    // Checked before a mutation runs: nothing adjusted.
    const whole = await gql(account.testKey, `mutation($c: ID!) { adjustCustomerBalance(customerId: $c, currency: "EUR", amount: 5, description: "x") { id } a: updateCustomer(id: $c, input: {}) { balanceTransactions(first: 0) { id } } }`, { c: ids[3] });
    expect(whole.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'first' });
    expect((await app.request('GET', `/v1/customers/${ids[3]}/balance-transactions`, { key: account.testKey })).body.meta.total).toBe(0);

    // The list query mirrors REST's.
    const listed = await gql(account.testKey, 'query($c: ID!) { balanceTransactions(customerId: $c, pageSize: 2) { total nodes { id } } }', { c: ids[0] });
    expect(listed.body.data.balanceTransactions).toEqual({ total: 3, nodes: made.slice(0, 2).map((id) => ({ id })) });
    const missing = await gql(account.testKey, '{ balanceTransactions(customerId: "cus_nope") { total } }');
    expect(missing.body.errors[0].extensions).toMatchObject({ code: 'resource_not_found', param: 'customerId' });
  });

  it('should give the credit of a customer reached through another object, and Invoice.creditApplied', async () => {
    const account = await app.createAccount();
    const customer = await newCustomer(account);
    await gql(account.testKey, ADJUST, { c: customer, cur: 'EUR', a: 900, d: 'x' });
    const invoice = await app.request('POST', '/v1/invoices', { key: account.testKey, body: { customerId: customer, currency: 'EUR', lineItems: [{ description: 'Work', unitAmount: 100 }] } });
    expect(invoice.status).toBe(201);
    expect(invoice.body.data.creditApplied).toBe(0);
    const res = await gql(account.testKey, 'query($i: ID!) { invoice(id: $i) { creditApplied customer { creditBalance { currency amount } } } }', { i: invoice.body.data.id });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.invoice).toEqual({ creditApplied: 0, customer: { creditBalance: [{ currency: 'EUR', amount: 900 }] } });
  });

  it('should need customers:write to adjust and customers:read to read, and keep modes apart', async () => {
    const account = await app.createAccount();
    const customer = await newCustomer(account);
    const reader = await app.request('POST', '/v1/api-keys', { key: account.testKey, body: { permissions: ['customers:read'] } });
    const refused = await gql(reader.body.data.secret, ADJUST, { c: customer, cur: 'EUR', a: 5, d: 'x' });
    expect(refused.body.errors[0].extensions).toMatchObject({ code: 'permission_denied' });
    const read = await gql(reader.body.data.secret, 'query($c: ID!) { customer(id: $c) { creditBalance { amount } balanceTransactions { id } } }', { c: customer });
    expect(read.body.data.customer).toEqual({ creditBalance: [], balanceTransactions: [] });
    const live = await gql(account.liveKey, ADJUST, { c: customer, cur: 'EUR', a: 5, d: 'x' });
    expect(live.body.errors[0].extensions).toMatchObject({ code: 'resource_not_found', param: 'customerId' });
  });
});
