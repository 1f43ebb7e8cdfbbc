import { randomBytes } from 'node:crypto';
import { startTestApp, type TestApp } from '../helpers/app';
import type { HttpResponse } from '../helpers/http';

/**
 * Documents holding several mutations, however they are written (aliases, fragments, inline
 * fragments): each mutation has its own Idempotency-Key, the document's arguments are checked
 * before any of them runs, and each counts against the account's rate limit.
 */

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const newKey = (label: string) => `gql-${label}-${randomBytes(6).toString('hex')}`;

const gql = (key: string, query: string, variables: Record<string, unknown> = {}, idem?: string): Promise<HttpResponse> =>
  app.request('POST', '/graphql', { key, body: { query, variables }, headers: idem ? { 'Idempotency-Key': idem } : {} });

async function paymentsOf(key: string): Promise<Array<{ id: string; amount: number; amountRefunded: number }>> {
  const res = await app.request('GET', '/v1/payments?pageSize=100', { key });
  expect(res.status).toBe(200);
  return res.body.data;
}

async function refundsOf(key: string, paymentId: string): Promise<Array<{ id: string; amount: number }>> {
  const res = await app.request('GET', `/v1/payments/${paymentId}/refunds`, { key });
  expect(res.status).toBe(200);
  return res.body.data;
}

describe('mutations inside fragments with one Idempotency-Key', () => {
  it('should make two refunds of two aliased refundPayment in a fragment, and replay both on a retry', async () => {
    const { testKey: key } = await app.createAccount();
    const paid = await app.request('POST', '/v1/payments', { key, body: { amount: 1000, currency: 'usd', paymentMethod: 'pm_card_visa' } });
    const query = `mutation($p: ID!) { ...R }
      fragment R on Mutation { a: refundPayment(paymentId: $p, amount: 250) { id amount } b: refundPayment(paymentId: $p, amount: 250) { id amount } }`;
    const idem = newKey('fragment-refunds');
    const first = await gql(key, query, { p: paid.body.data.id }, idem);
    expect(first.body.errors).toBeUndefined();
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const { a, b } = first.body.data;
    expect(a.id).not.toBe(b.id);
    expect((await refundsOf(key, paid.body.data.id)).map((r) => r.id).sort()).toEqual([a.id, b.id].sort());

    const retried = await gql(key, query, { p: paid.body.data.id }, idem);
    expect(retried.headers['idempotent-replayed']).toBe('true');
    // The same answer; only the rate budget left (extensions.cost.remaining) is the retry's own.
    expect(retried.body).toEqual({ ...first.body, extensions: { cost: { ...first.body.extensions.cost, remaining: expect.any(Number) } } });
    expect(await refundsOf(key, paid.body.data.id)).toHaveLength(2);
    expect((await paymentsOf(key))[0].amountRefunded).toBe(500);
  });

  it('should make two charges of two createPayment spread from fragments and inline fragments, and replay both', async () => {
    const { testKey: key } = await app.createAccount();
    const documents = [
      `mutation { ...P }
       fragment P on Mutation { a: createPayment(input: { amount: 501, currency: "usd", paymentMethod: "pm_card_visa" }) { id amount }
                                b: createPayment(input: { amount: 501, currency: "usd", paymentMethod: "pm_card_visa" }) { id amount } }`,
      `mutation { ... on Mutation { a: createPayment(input: { amount: 502, currency: "usd", paymentMethod: "pm_card_visa" }) { id amount } }
                  ... { b: createPayment(input: { amount: 502, currency: "usd", paymentMethod: "pm_card_visa" }) { id amount } } }`,
    ];
    const made: string[] = [];
    for (const [i, query] of documents.entries()) {
      const idem = newKey(`fragment-payments-${i}`);
      const first = await gql(key, query, {}, idem);
      expect(first.body.errors).toBeUndefined();
      const { a, b } = first.body.data;
      expect(a.id).not.toBe(b.id);
      made.push(a.id, b.id);
      const retried = await gql(key, query, {}, idem);
      expect(retried.headers['idempotent-replayed']).toBe('true');
      // The same answer; only the rate budget left (extensions.cost.remaining) is the retry's own.
      expect(retried.body).toEqual({ ...first.body, extensions: { cost: { ...first.body.extensions.cost, remaining: expect.any(Number) } } });
    }
    expect((await paymentsOf(key)).map((p) => p.id).sort()).toEqual(made.sort());
  });

  it('should keep the plain key for one mutation spread from a fragment, as REST and a bare mutation do', async () => {
    const { testKey: key } = await app.createAccount();
    const idem = newKey('fragment-one');
    const spread = await gql(key, 'mutation { ...P } fragment P on Mutation { createPayment(input: { amount: 503, currency: "usd", paymentMethod: "pm_card_visa" }) { id } }', {}, idem);
    expect(spread.body.errors).toBeUndefined();
    const bare = await gql(key, 'mutation { createPayment(input: { amount: 503, currency: "usd", paymentMethod: "pm_card_visa" }) { id } }', {}, idem);
    expect(bare.headers['idempotent-replayed']).toBe('true');
    expect(bare.body.data.createPayment.id).toBe(spread.body.data.createPayment.id);
    expect(await paymentsOf(key)).toHaveLength(1);
  });

  it('should give a mutation the same key whatever @skip/@include leave of the document, so a retry with other variables replays it', async () => {
    const { testKey: key } = await app.createAccount();
    const query = `mutation($s: Boolean!) {
      a: createPayment(input: { amount: 504, currency: "usd", paymentMethod: "pm_card_visa" }) { id }
      b: createPayment(input: { amount: 505, currency: "usd", paymentMethod: "pm_card_visa" }) @skip(if: $s) { id } }`;
    const idem = newKey('skipped');
    const alone = await gql(key, query, { s: true }, idem);
    expect(alone.body.errors).toBeUndefined();
    expect(Object.keys(alone.body.data)).toEqual(['a']);
    const both = await gql(key, query, { s: false }, idem);
    expect(both.body.errors).toBeUndefined();
    expect(both.headers['idempotent-replayed']).toBe('true');
    expect(both.body.data.a.id).toBe(alone.body.data.a.id);
    expect((await paymentsOf(key)).map((p) => p.id).sort()).toEqual([alone.body.data.a.id, both.body.data.b.id].sort());
  });
});

describe('arguments checked before any mutation runs', () => {
  const card = 'amount: 704, currency: "usd", paymentMethod: "pm_card_visa"';

  it('should refuse a createPayment whose own selection has an invalid `first`, charging nothing and leaving the key unused', async () => {
    const { testKey: key } = await app.createAccount();
    const idem = newKey('nested-first');
    const refused = await gql(key, `mutation { createPayment(input: { ${card} }) { id refunds(first: 0) { id } } }`, {}, idem);
    expect(refused.status).toBe(400);
    expect(refused.body.data).toBeUndefined();
    expect(refused.body.errors).toEqual([expect.objectContaining({
      message: 'first must be between 1 and 100',
      extensions: expect.objectContaining({ code: 'invalid_parameter', param: 'first', requestId: expect.any(String) }),
    })]);
    expect(refused.body.errors[0].locations).toEqual([{ line: 1, column: expect.any(Number) }]);
    expect(await paymentsOf(key)).toEqual([]);

    // The same key with the document fixed: charged once, then replayed.
    const fixed = `mutation { createPayment(input: { ${card} }) { id refunds(first: 1) { id } } }`;
    const paid = await gql(key, fixed, {}, idem);
    expect(paid.body.errors).toBeUndefined();
    expect(paid.headers['idempotent-replayed']).toBeUndefined();
    expect((await gql(key, fixed, {}, idem)).headers['idempotent-replayed']).toBe('true');
    expect((await paymentsOf(key)).map((p) => p.id)).toEqual([paid.body.data.createPayment.id]);
  });

  it('should check arguments given in variables, inside fragments and on any later mutation of the document', async () => {
    const { testKey: key } = await app.createAccount();
    const refusals: Array<[string, Record<string, unknown>, string]> = [
      [`mutation($n: Int) { createPayment(input: { ${card} }) { id refunds(first: $n) { id } } }`, { n: 101 }, 'first'],
      [`mutation { createPayment(input: { ${card} }) { ...P } } fragment P on Payment { gatewayTransactions(first: -1) { id } }`, {}, 'first'],
      [`mutation { a: createPayment(input: { ${card} }) { id } b: createCustomer(input: { email: "n@example.com" }) { payments(first: 1000) { id } } }`, {}, 'first'],
      ['mutation { createWebhookEndpoint(input: { url: "https://example.com/h", events: ["*"] }) { id deliveries(pageSize: 0) { total } } }', {}, 'pageSize'],
      ['mutation { createWebhookEndpoint(input: { url: "https://example.com/h", events: ["*"] }) { id deliveries(sortField: "amount") { total } } }', {}, 'sortField'],
    ];
    for (const [query, variables, param] of refusals) {
      const res = await gql(key, query, variables);
      expect(res.status).toBe(400);
      expect(res.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param });
    }
    expect(await paymentsOf(key)).toEqual([]);
    expect((await app.request('GET', '/v1/customers', { key })).body.data).toEqual([]);
    expect((await app.request('GET', '/v1/webhook-endpoints', { key })).body.data).toEqual([]);
  });

  it('should not refuse a field the document skips', async () => {
    const { testKey: key } = await app.createAccount();
    const res = await gql(key, `mutation($skip: Boolean!) { createPayment(input: { ${card} }) { id refunds(first: 0) @skip(if: $skip) { id } } }`, { skip: true });
    expect(res.body.errors).toBeUndefined();
    expect(await paymentsOf(key)).toHaveLength(1);
  });
});

describe('mutations against the rate limit and the per-document cap', () => {
  const create = (n: number, amount: number) =>
    Array.from({ length: n }, (_, i) => `m${i}: createPayment(input: { amount: ${amount}, currency: "usd", paymentMethod: "pm_card_visa" }) { id }`).join(' ');

  it('should count each mutation of a document as a request, refusing one over the budget before any runs', async () => {
    const { testKey: key } = await app.createAccount({ rateLimitPerMinute: 10 });
    const four = await gql(key, `mutation { ...M } fragment M on Mutation { ${create(4, 801)} }`);
    expect(four.body.errors).toBeUndefined();
    expect(four.headers['ratelimit-remaining']).toBe('6');

    const seven = await gql(key, `mutation { ${create(7, 802)} }`);
    expect(seven.status).toBe(429);
    expect(seven.body.data).toBeUndefined();
    expect(seven.body.errors[0].extensions.code).toBe('rate_limited');
    expect(seven.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
    // The refused document's mutations were given back: only the request itself counted.
    expect(seven.headers['ratelimit-remaining']).toBe('5');
    expect(await paymentsOf(key)).toHaveLength(4); // (a request too: 4 left)

    const three = await gql(key, `mutation { ${create(3, 803)} }`);
    expect(three.body.errors).toBeUndefined();
    expect(three.headers['ratelimit-remaining']).toBe('1');
    expect((await app.request('GET', '/v1/customers', { key })).status).toBe(200);
    expect((await app.request('GET', '/v1/customers', { key })).status).toBe(429);
  });

  it('should refuse a document with more than 20 mutations, written or spread, before any runs', async () => {
    const { testKey: key } = await app.createAccount();
    const aliases = Array.from({ length: 250 }, (_, i) => `m${i}: createPayment(input: $p) { id }`).join(' ');
    const documents: Array<[string, Record<string, unknown>]> = [
      [`mutation($p: CreatePaymentInput!) { ${aliases} }`, { p: { amount: 804, currency: 'usd', paymentMethod: 'pm_card_visa' } }],
      [`mutation { ${create(10, 804)} ...M } fragment M on Mutation { ${create(11, 805).replace(/m(\d+):/g, 'f$1:')} }`, {}],
    ];
    for (const [query, variables] of documents) {
      const res = await gql(key, query, variables);
      expect(res.status).toBe(400);
      expect(res.body.errors[0].extensions.code).toBe('query_too_complex');
      expect(res.body.errors[0].message).toMatch(/mutations, more than 20; send them in several requests/);
    }
    expect(await paymentsOf(key)).toEqual([]);
    expect((await gql(key, `mutation { ${create(20, 806)} }`)).body.errors).toBeUndefined();
    expect(await paymentsOf(key)).toHaveLength(20);
  });
});
