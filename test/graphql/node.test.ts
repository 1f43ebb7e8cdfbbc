import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { loggedSql } from '../helpers/plans';
import { TYPE_OF, makeObjects, restClient, type Objects } from '../helpers/graphql-objects';
import { parse, type OperationDefinitionNode } from 'graphql';
import { buildPayorchSchema } from '../../schema/build';
import { measureOperation } from '../../schema/result-size';

type Json = Record<string, any>;

let app: TestApp;
let key: string;
let objects: Objects;
beforeAll(async () => {
  app = await startTestApp();
  key = app.account.testKey;
  objects = await makeObjects(app, key);
});
afterAll(() => app.stop());

/** A response body without its extensions (the query's cost, which the rate budget's state changes). */
const withoutCost = (body: object) => ({ ...body, extensions: undefined });
const gql = async (query: string, variables: Json = {}, k = key) => (await app.request('POST', '/graphql', { key: k, body: { query, variables } })).body as { data?: Json; errors?: Json[] };

/** The statements the app ran while `run` ran, less the key look-up and transaction markers. */
async function statementsOf<T>(run: () => Promise<T>): Promise<{ result: T; statements: string[] }> {
  const before = app.sql.length;
  const result = await run();
  const statements = app.sql.slice(before).map(loggedSql).filter((q) => !/^(BEGIN|COMMIT|ROLLBACK|START TRANSACTION)\b/i.test(q) && !/\bFROM api_keys k JOIN accounts\b/.test(q));
  return { result, statements };
}

describe(`GraphQL node and nodes (${DIALECT})`, () => {
  it('should resolve every prefixed id of the account and mode to its typed object', async () => {
    for (const [name, id] of Object.entries(objects) as Array<[keyof Objects, string]>) {
      const res = await gql('query($id: ID!) { node(id: $id) { __typename id } }', { id });
      expect({ name, errors: res.errors }).toEqual({ name, errors: undefined });
      expect(res.data!.node).toEqual({ __typename: TYPE_OF[name], id });
    }
    // Fields through fragments on the type, nested links included.
    const res = await gql(`query($p: ID!, $k: ID!) {
      p: node(id: $p) { ... on Payment { amount status customer { id } } }
      k: node(id: $k) { ... on ApiKey { name permissions secret } }
    }`, { p: objects.payment, k: objects.apiKey });
    expect(res.errors).toBeUndefined();
    expect(res.data!.p).toEqual({ amount: 1500, status: 'succeeded', customer: { id: objects.customer } });
    // An API key's node never carries its secret.
    expect(res.data!.k).toEqual({ name: 'reader', permissions: ['customers:read'], secret: null });
  });

  it('should answer null, never an error, for another account\'s or mode\'s id, an unknown prefix and an id that does not exist', async () => {
    const other = await app.createAccount();
    const theirs = await restClient(app, other.testKey)('POST', '/v1/customers', { email: 'other@example.com' });
    const ids = [theirs.id, 'pay_doesnotexist000000000000', 'zzz_123', 'no-prefix', '', 'acct_123', 'sk_test_abc', 'gw_builtin_simulator'];
    for (const id of ids) {
      const res = await gql('query($id: ID!) { node(id: $id) { id } }', { id });
      expect({ id, data: res.data, errors: res.errors }).toEqual({ id, data: { node: null }, errors: undefined });
    }
    // The same test-mode ids asked with the live key: not found in live mode.
    const live = await gql('query($ids: [ID!]!) { nodes(ids: $ids) { id } }', { ids: [objects.customer, objects.payment, objects.testClock, objects.event] }, app.account.liveKey);
    expect(withoutCost(live)).toEqual({ data: { nodes: [null, null, null, null] } });
    // And the other account's key does not see ours.
    const theirView = await gql('query($id: ID!) { node(id: $id) { id } }', { id: objects.customer }, other.testKey);
    expect(withoutCost(theirView)).toEqual({ data: { node: null } });
  });

  it('should need the read permission of the type\'s own query: null with permission_denied at that field or index', async () => {
    const limited = await restClient(app, key)('POST', '/v1/api-keys', { permissions: ['customers:read'] });
    const own = await gql('query($c: ID!, $p: ID!) { c: node(id: $c) { id } p: node(id: $p) { id } }', { c: objects.customer, p: objects.payment }, limited.secret);
    expect(own.data).toEqual({ c: { id: objects.customer }, p: null });
    expect(own.errors).toHaveLength(1);
    expect(own.errors![0]).toMatchObject({ path: ['p'], extensions: { code: 'permission_denied' } });
    expect(own.errors![0].message).toContain('payments:read');
    // The same as the type's own query refuses it.
    const direct = await gql('query($p: ID!) { payment(id: $p) { id } }', { p: objects.payment }, limited.secret);
    expect(direct.errors![0].extensions.code).toBe('permission_denied');

    const many = await gql('query($ids: [ID!]!) { nodes(ids: $ids) { id } }', { ids: [objects.customer, objects.refund, objects.paymentMethod, 'zzz_1'] }, limited.secret);
    // A saved card is read with customers:read, as a customer's paymentMethods are.
    expect(many.data!.nodes).toEqual([{ id: objects.customer }, null, { id: objects.paymentMethod }, null]);
    expect(many.errors).toHaveLength(1);
    expect(many.errors![0]).toMatchObject({ path: ['nodes', 1], extensions: { code: 'permission_denied' } });

    // An event whose object the key may not read is refused as `event(id:)` refuses it.
    const events = await restClient(app, key)('POST', '/v1/api-keys', { permissions: ['events:read'] });
    const event = await gql('query($e: ID!) { node(id: $e) { id } }', { e: objects.event }, events.secret);
    expect(event.data).toEqual({ node: null });
    expect(event.errors![0]).toMatchObject({ path: ['node'], extensions: { code: 'permission_denied' } });
    expect(event.errors![0].message).toContain('customers:read');
  });

  it('should read 50 ids of mixed types in one statement per type, in the order asked', async () => {
    const all = Object.values(objects);
    const ids = Array.from({ length: 50 }, (_, i) => (i % 10 === 9 ? `pay_missing${i}` : all[i % all.length]));
    const { result: res, statements } = await statementsOf(() => gql('query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }', { ids }));
    expect(res.errors).toBeUndefined();
    const nodes = res.data!.nodes as Array<{ id: string } | null>;
    expect(nodes).toHaveLength(50);
    nodes.forEach((node, i) => expect(node?.id ?? null).toBe(i % 10 === 9 ? null : ids[i]));
    // 19 types asked: one statement each, plus the invoice's lines and the subscription's plan
    // (a few more), however many ids of each type; never one per id.
    const types = new Set(Object.values(TYPE_OF)).size;
    expect(statements.length).toBeGreaterThanOrEqual(types);
    expect(statements.length).toBeLessThanOrEqual(types + 4);
    expect(statements.filter((q) => /\bFROM payments\b/.test(q))).toHaveLength(1);

    // Asked twice in one document (node and nodes), an object is read once.
    const { statements: again } = await statementsOf(() => gql('query($id: ID!, $ids: [ID!]!) { node(id: $id) { id } nodes(ids: $ids) { id } }', { id: objects.refund, ids: [objects.refund, objects.refund] }));
    expect(again.filter((q) => /\bFROM refunds\b/.test(q))).toHaveLength(1);
  });

  it('should refuse more than 100 ids with invalid_parameter naming ids', async () => {
    const res = await gql('query($ids: [ID!]!) { nodes(ids: $ids) { id } }', { ids: Array.from({ length: 101 }, (_, i) => `cus_${i}`) });
    expect(res.data).toEqual({ nodes: null });
    expect(res.errors![0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'ids' });
    expect((await gql('{ nodes(ids: []) { id } }')).data).toEqual({ nodes: [] });
  });

  it('should count at least the statements that links and node types run, for the statement limit', async () => {
    const schema = buildPayorchSchema();
    const counted = (query: string, variables?: Json) => {
      const operation = parse(query).definitions[0] as OperationDefinitionNode;
      return measureOperation(schema, () => null, operation, { maxFields: Infinity, maxStatements: Infinity, variables }).statements;
    };
    const documents: Array<[string, Json]> = [
      // Links at several places, and aliases of one (read together).
      [`query($p: ID!) { node(id: $p) { ... on Payment {
        customer { id } a: customer { id } invoice { id subscription { id price { id } latestInvoice { id customer { id } } defaultPaymentMethod { id } } }
        subscription { id } gateway { id } refunds { id payment { id customer { id } } }
      } } }`, { p: objects.payment }],
      [`{ refunds(pageSize: 5) { nodes { payment { id customer { id } invoice { id } } } } subscriptions(pageSize: 5) { nodes { customer { id } price { id } latestInvoice { id } } } }`, {}],
      // Every type at once.
      ['query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }', { ids: Object.values(objects) }],
      ['query($a: ID!, $b: ID!) { a: node(id: $a) { id } b: node(id: $b) { id } }', { a: objects.invoice, b: objects.subscription }],
    ];
    for (const [query, variables] of documents) {
      const { result, statements } = await statementsOf(() => gql(query, variables));
      expect(result.errors).toBeUndefined();
      // Before the variables are known (validation) and once they are (the same or fewer).
      const atValidation = counted(query);
      const known = counted(query, variables);
      expect(known).toBeGreaterThanOrEqual(statements.length);
      expect(atValidation).toBeGreaterThanOrEqual(known);
    }
    // Aliases of node read their types together: counted once.
    expect(counted('{ a: node(id: "pay_1") { id } b: node(id: "pay_2") { id } c: nodes(ids: ["pay_3", "cus_1"]) { id } }')).toBe(2);
  });
});
