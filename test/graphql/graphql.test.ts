import type { RequestContext } from '../../src/core/context';
import { startTestApp, type TestApp } from '../helpers/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const gql = (query: string, variables: Record<string, unknown> = {}, key: string | null = app.account.testKey) =>
  app.request('POST', '/graphql', { key: key ?? undefined, body: { query, variables } });

describe('GraphQL', () => {
  it('should create, update and read a customer through the same service as REST', async () => {
    const created = await gql(
      'mutation($input: CreateCustomerInput!) { createCustomer(input: $input) { id email country livemode metadata } }',
      { input: { email: 'gql@example.com', country: 'fr', metadata: { source: 'gql' } } },
    );
    expect(created.status).toBe(200);
    expect(created.body.errors).toBeUndefined();
    const c = created.body.data.createCustomer;
    expect(c).toMatchObject({ email: 'gql@example.com', country: 'FR', livemode: false, metadata: { source: 'gql' } });
    const updated = await gql('mutation($id: ID!) { updateCustomer(id: $id, input: { name: "G" }) { name } }', { id: c.id });
    expect(updated.body.data.updateCustomer.name).toBe('G');
    const viaRest = await app.request('GET', `/v1/customers/${c.id}`, { key: app.account.testKey });
    expect(viaRest.body.data.name).toBe('G');
    const listed = await gql('{ customers(pageSize: 5, search: "gql@") { total page pageSize nodes { id } } }');
    expect(listed.body.data.customers).toEqual({ total: 1, page: 1, pageSize: 5, nodes: [{ id: c.id }] });
  });

  it('should report domain errors with extensions.code, param and requestId', async () => {
    const missing = await gql('{ customer(id: "cus_nope") { id } }');
    expect(missing.body.errors[0].extensions).toMatchObject({ code: 'resource_not_found', requestId: missing.headers['x-request-id'] });
    const invalid = await gql('mutation { createCustomer(input: { email: "nope" }) { id } }');
    expect(invalid.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'email' });
    await gql('mutation { createCustomer(input: { email: "twice@example.com" }) { id } }');
    const dup = await gql('mutation { createCustomer(input: { email: "TWICE@example.com" }) { id } }');
    expect(dup.body.errors[0].extensions.code).toBe('duplicate_email');
    const badList = await gql('{ customers(pageSize: 500) { total } }');
    expect(badList.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'pageSize' });
    const syntax = await gql('{ customers( }');
    expect(syntax.body.errors[0].extensions.code).toBe('invalid_parameter');
    expect(syntax.body.errors[0].extensions.requestId).toBe(syntax.headers['x-request-id']);
  });

  it('should put the requestId in the errors of a request refused before the document runs', async () => {
    for (const body of [{ query: '{ customers { total } }', variables: 'x' }, {}]) {
      const res = await app.request('POST', '/graphql', { key: app.account.testKey, body });
      expect(res.status).toBe(400);
      expect(res.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', requestId: res.headers['x-request-id'] });
    }
  });

  it('should give input errors the REST codes and params: unknown, missing or invalid field', async () => {
    const err = async (query: string, variables: Record<string, unknown> = {}) => {
      const res = await gql(query, variables);
      expect(res.body.errors).toHaveLength(1);
      return res.body.errors[0].extensions as { code: string; param?: string };
    };
    const pay = 'mutation($input: CreatePaymentInput!) { createPayment(input: $input) { id } }';
    const card = { number: '4242424242424242', expMonth: 1, expYear: 2033, cvc: '123' };
    // In variables: the path inside the argument, as a service names it.
    expect(await err(pay, { input: { amount: 100, currency: 'usd', paymentMethod: 'card', color: 'red' } }))
      .toMatchObject({ code: 'unknown_parameter', param: 'color' });
    expect(await err(pay, { input: { amount: 100, currency: 'usd', paymentMethod: 'card', card: { ...card, name: 'A' } } }))
      .toMatchObject({ code: 'unknown_parameter', param: 'card.name' });
    expect(await err(pay, { input: { currency: 'usd', paymentMethod: 'card' } })).toMatchObject({ code: 'missing_parameter', param: 'amount' });
    const { cvc: _cvc, ...noCvc } = card;
    expect(await err(pay, { input: { amount: 100, currency: 'usd', paymentMethod: 'card', card: noCvc } }))
      .toMatchObject({ code: 'missing_parameter', param: 'card.cvc' });
    expect(await err(pay, { input: { amount: 100, currency: 'usd', paymentMethod: 'card', card: { ...card, expMonth: 'May' } } }))
      .toMatchObject({ code: 'invalid_parameter', param: 'card.expMonth' });
    expect(await err(pay, { input: 'all of it' })).toMatchObject({ code: 'invalid_parameter', param: 'input' });
    expect(await err(pay)).toMatchObject({ code: 'missing_parameter', param: 'input' });
    expect(await err('mutation($r: [FxRateInput!]!) { setFxRates(rates: $r) { __typename } }', { r: [{ from: 'USD', to: 'EUR', rate: '1.1', extra: 1 }] }))
      .toMatchObject({ code: 'unknown_parameter', param: 'r[0].extra' });
    // Written in the document: the field or argument by name.
    expect(await err('mutation { createCustomer(input: { email: "a@example.com", colour: "red" }) { id } }'))
      .toMatchObject({ code: 'unknown_parameter', param: 'colour' });
    expect(await err('mutation { createCustomer(input: { name: "A" }) { id } }')).toMatchObject({ code: 'missing_parameter', param: 'email' });
    expect(await err('{ customer { id } }')).toMatchObject({ code: 'missing_parameter', param: 'id' });
    expect(await err('{ customer(id: "cus_x", expand: true) { id } }')).toMatchObject({ code: 'unknown_parameter', param: 'expand' });
    // A key that is not a GraphQL name is never echoed, not even as the param.
    const odd = await err(pay, { input: { amount: 100, currency: 'usd', paymentMethod: 'card', card: { ...card, '4242 4242 4242 4242': 1 } } });
    expect(odd).toEqual({ code: 'unknown_parameter', requestId: expect.any(String) });
    // A GraphQL name can still hold card digits: the param is redacted like any quoted text.
    const pan = '4000056655665556';
    const digits = await app.request('POST', '/graphql', {
      key: app.account.testKey, headers: { 'idempotency-key': 'gql-param-pan' },
      body: { query: pay, variables: { input: { amount: 100, currency: 'usd', paymentMethod: 'card', card: { ...card, [`n${pan}`]: 1 } } } },
    });
    expect(digits.body.errors[0].extensions).toMatchObject({ code: 'unknown_parameter', param: 'card.n[redacted-card]' });
    expect(digits.text).not.toContain(pan);
    // Refused before the mutation ran: nothing is kept under the key.
    expect(await app.server.services.db.select("SELECT response_body FROM idempotency_keys WHERE idempotency_key = 'gql-param-pan'")).toEqual([]);
    expect(await err(`{ customer(id: "cus_x", c${pan}: 1) { id } }`)).toMatchObject({ code: 'unknown_parameter', param: 'c[redacted-card]' });
    expect(await err(`mutation { createCustomer(input: { email: "a@example.com", x${pan}: "red" }) { id } }`))
      .toMatchObject({ code: 'unknown_parameter', param: 'x[redacted-card]' });
    // A name far longer than any field path is the client's text: no param.
    expect(await err(`{ customer(id: "cus_x", ${'a'.repeat(5000)}: 1) { id } }`)).toEqual({ code: 'unknown_parameter', requestId: expect.any(String) });
    // A key quoting graphql-js's own message cannot make another field look like the culprit.
    expect(await err(pay, { input: { amount: 100, currency: 'usd', paymentMethod: 'card', card: { ...card, 'amount" is not defined by type "X". Did you mean "y"?': 1 } } }))
      .toEqual({ code: 'unknown_parameter', requestId: expect.any(String) });
    // Not an input: a field the type does not have is still invalid_parameter.
    expect(await err('{ customers { nodes { colour } } }')).toEqual({ code: 'invalid_parameter', requestId: expect.any(String) });
  });

  it('should refuse a request without a valid key with 401 and a GraphQL-shaped error', async () => {
    const res = await gql('{ customers { total } }', {}, null);
    expect(res.status).toBe(401);
    expect(res.body.errors[0].extensions).toMatchObject({ code: 'missing_api_key', requestId: res.headers['x-request-id'] });
    const bad = await gql('{ customers { total } }', {}, 'sk_test_' + 'z'.repeat(43));
    expect(bad.status).toBe(401);
    expect(bad.body.errors[0].extensions.code).toBe('invalid_api_key');
  });

  it('should apply key permissions and account/mode scoping', async () => {
    const restricted = await app.request('POST', '/v1/api-keys', { key: app.account.testKey, body: { permissions: ['products:read'] } });
    const denied = await gql('{ customers { total } }', {}, restricted.body.data.secret);
    expect(denied.body.errors[0].extensions.code).toBe('permission_denied');
    const live = await gql('{ customers { total } }', {}, app.account.liveKey);
    expect(live.body.data.customers.total).toBe(0);
  });

  it('should keep the data of the fields that succeed beside the errors of those that fail', async () => {
    const restricted = await app.request('POST', '/v1/api-keys', { key: app.account.testKey, body: { permissions: ['customers:read'] } });
    const key = restricted.body.data.secret as string;
    const customer = await app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'partial@example.com' } });
    const customerId = customer.body.data.id as string;
    await app.request('POST', '/v1/payments', { key: app.account.testKey, body: { amount: 300, currency: 'usd', paymentMethod: 'pm_card_visa', customerId } });

    // A root list the key may not read is null with its error; the one it may read keeps its data.
    const lists = await gql('{ payments { total } customers(pageSize: 1) { total } }', {}, key);
    expect(lists.status).toBe(200);
    expect(lists.body.data.payments).toBeNull();
    expect(lists.body.data.customers.total).toBeGreaterThan(0);
    expect(lists.body.errors).toEqual([expect.objectContaining({ path: ['payments'], extensions: expect.objectContaining({ code: 'permission_denied' }) })]);
    // A single object too: one not found beside a list that is found.
    const single = await gql('{ customer(id: "cus_nope") { id } customers(pageSize: 1) { total } }');
    expect(single.body.data.customer).toBeNull();
    expect(single.body.data.customers.total).toBeGreaterThan(0);
    expect(single.body.errors.map((e: { path: string[] }) => e.path)).toEqual([['customer']]);
    // A nested list the key may not read is null under each parent, and the parents stay.
    const nested = await gql('query($id: ID!) { customer(id: $id) { id payments { id } } }', { id: customerId }, key);
    expect(nested.body.data.customer).toEqual({ id: customerId, payments: null });
    expect(nested.body.errors[0]).toMatchObject({ path: ['customer', 'payments'], extensions: { code: 'permission_denied' } });
    // A nested `first` out of range nulls that list only.
    const first = await gql('query($id: ID!) { customer(id: $id) { email payments(first: 0) { id } p: payments(first: 1) { amount } } refunds { total } }', { id: customerId });
    expect(first.body.data.customer).toEqual({ email: 'partial@example.com', payments: null, p: [{ amount: 300 }] });
    expect(first.body.data.refunds.total).toEqual(expect.any(Number));
    expect(first.body.errors).toEqual([expect.objectContaining({ path: ['customer', 'payments'], extensions: expect.objectContaining({ code: 'invalid_parameter', param: 'first' }) })]);
  });

  it('should give every error one shape: the message once, extensions {code, param?, requestId}', async () => {
    const shapes: Array<{ status: number; errors: Array<Record<string, unknown>>; requestId: unknown }> = [];
    const record = (res: { status: number; body: { errors: Array<Record<string, unknown>> }; headers: Record<string, unknown> }) => {
      shapes.push({ status: res.status, errors: res.body.errors, requestId: res.headers['x-request-id'] });
    };
    record(await gql('{ customers { total } }', {}, null)); // refused by auth (401)
    record(await app.request('POST', '/graphql', { key: app.account.testKey, rawBody: '{"query": ' })); // malformed JSON (400)
    record(await app.request('GET', '/graphql', { key: app.account.testKey })); // 405
    record(await app.request('POST', '/graphql', { key: app.account.testKey, body: { query: '{ customers { total } }', variables: [] } })); // refused by Apollo
    record(await gql('{ customers( }')); // syntax
    record(await gql('{ customers(pageSize: 500) { total } }')); // the service's refusal, with a param
    record(await gql('{ customer(id: "cus_nope") { id } }')); // resolver error with a path
    expect(shapes.map((s) => s.status)).toEqual([401, 400, 405, 400, 400, 200, 200]);
    for (const { errors, requestId } of shapes) {
      expect(errors).toHaveLength(1);
      const [error] = errors;
      expect(typeof error.message).toBe('string');
      expect(Object.keys(error).every((k) => ['message', 'locations', 'path', 'extensions'].includes(k))).toBe(true);
      const extensions = error.extensions as Record<string, unknown>;
      expect(Object.keys(extensions).filter((k) => k !== 'param')).toEqual(['code', 'requestId']);
      expect(extensions.requestId).toBe(requestId);
    }
    expect(shapes[5].errors[0].extensions).toEqual({ code: 'invalid_parameter', param: 'pageSize', requestId: shapes[5].requestId });
  });

  it('should refuse queries that are too deep or too costly', async () => {
    const deep = await gql('{ prices { nodes { product { prices { product { prices { product { prices { product { name } } } } } } } } } }');
    expect(deep.body.errors[0].extensions.code).toBe('query_too_complex');
    const aliases = Array.from({ length: 400 }, (_, i) => `a${i}: customers { nodes { id email name country phone metadata } }`).join(' ');
    const costly = await gql(`{ ${aliases} }`);
    expect(costly.body.errors[0].extensions.code).toBe('query_too_complex');
  });

  it('should count list sizes: nested lists that could return millions of objects are refused before running', async () => {
    const customer = await app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'fanout@example.com' } });
    for (let i = 0; i < 3; i++) {
      await app.request('POST', '/v1/payments', { key: app.account.testKey, body: { amount: 100 + i, currency: 'usd', paymentMethod: 'pm_card_visa', customerId: customer.body.data.id } });
    }
    // Within the depth limit, but 20 customers × 10 payments × 10 payments × 10 … (the default `first`)
    const nested = '{ customers { nodes { payments { customer { payments { customer { payments { id amount } } } } } } } }';
    const refused = await gql(nested);
    expect(refused.body.errors[0].extensions.code).toBe('query_too_complex');
    expect(refused.body.data).toBeUndefined();
    // The same through a fragment and a variable page size.
    const viaFragment = await gql('query($n: Int) { customers(pageSize: $n) { nodes { ...C } } } fragment C on Customer { payments { customer { payments { customer { payments { id } } } } } }', { n: 5 });
    expect(viaFragment.body.errors[0].extensions.code).toBe('query_too_complex');
    // A dashboard-sized query still runs.
    const fine = await gql('{ customers(pageSize: 20) { nodes { id email payments { id amount status } } } payments(pageSize: 100) { nodes { id refunds { id amount } } } }');
    expect(fine.body.errors).toBeUndefined();
    expect(fine.body.data.customers.nodes.some((c: { payments: unknown[] }) => c.payments.length === 3)).toBe(true);
  });

  it('should batch Price.product through DataLoader (constant SQL queries for N prices)', async () => {
    const account = await app.createAccount();
    const key = account.testKey;
    const makePrices = async (n: number) => {
      for (let i = 0; i < n; i++) {
        const p = await app.request('POST', '/v1/products', { key, body: { name: `P${i}` } });
        await app.request('POST', '/v1/prices', { key, body: { productId: p.body.data.id, unitAmount: 100 + i, currency: 'usd' } });
      }
    };
    const countQueries = async () => {
      const before = app.sql.length;
      const res = await gql('{ prices(pageSize: 100) { total nodes { id product { id name } } } }', {}, key);
      expect(res.body.errors).toBeUndefined();
      // Statements reading these tables: an API key cache refill (1 s) is no N+1.
      const queries = app.sql.slice(before).filter((q) => /\b(prices|products)\b/.test(q)).length;
      return { queries, nodes: res.body.data.prices.nodes };
    };
    await makePrices(3);
    const small = await countQueries();
    expect(small.nodes).toHaveLength(3);
    await makePrices(12);
    const large = await countQueries();
    expect(large.nodes).toHaveLength(15);
    for (const n of large.nodes) expect(n.product.name).toMatch(/^P\d+$/);
    expect(large.queries).toBe(small.queries);
    expect(large.queries).toBeLessThanOrEqual(4);
  });

  it('should give Product.prices newest first, at most 100 per product, in one query for many products', async () => {
    const account = await app.createAccount();
    const key = account.testKey;
    const product = async (name: string, prices: number) => {
      const p = (await app.request('POST', '/v1/products', { key, body: { name } })).body.data;
      for (let i = 0; i < prices; i++) {
        const res = await app.request('POST', '/v1/prices', { key, body: { productId: p.id, unitAmount: 100 + i, currency: 'usd', nickname: `${name}${i}`, recurring: i === 0 ? { interval: 'month' } : undefined } });
        expect(res.status).toBe(201);
      }
      return p.id as string;
    };
    const a = await product('A', 3);
    const b = await product('B', 2);
    const res = await gql('{ products(pageSize: 10) { nodes { name prices { nickname unitAmount active type recurring { interval intervalCount } product { name } } } } }', {}, key);
    expect(res.body.errors).toBeUndefined();
    const byName = (n: string) => res.body.data.products.nodes.find((p: { name: string }) => p.name === n);
    const [pa, pb] = [byName('A'), byName('B')];
    expect(pa.prices.map((x: { nickname: string }) => x.nickname)).toEqual(['A2', 'A1', 'A0']);
    expect(pa.prices[2]).toEqual({ nickname: 'A0', unitAmount: 100, active: true, type: 'recurring', recurring: { interval: 'month', intervalCount: 1 }, product: { name: 'A' } });
    expect(pb.prices.map((x: { nickname: string }) => x.nickname)).toEqual(['B1', 'B0']);
    // The cap, exercised with a small limit: the newest of each product, one statement for all.
    const rc: RequestContext = { accountId: account.accountId, mode: 'test', permissions: ['*'], requestId: 'req_prices_test', clock: app.server.services.clock };
    const before = app.sql.length;
    const capped = await app.server.services.catalog.pricesForProducts(rc, [a, b, a], 2);
    expect(app.sql.slice(before).filter((q) => /\bprices\b/.test(q))).toHaveLength(1);
    expect(capped.get(a)!.map((x) => x.nickname)).toEqual(['A2', 'A1']);
    expect(capped.get(b)!.map((x) => x.nickname)).toEqual(['B1', 'B0']);
  });
});
