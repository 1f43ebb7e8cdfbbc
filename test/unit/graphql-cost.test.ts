import { buildSchema, getOperationAST, parse, type DocumentNode } from 'graphql';
import { rateCost, requestedObjects, returnedObjects } from '../../schema/result-size';
import { fragmentsOf } from '../../schema/mutation-checks';

/**
 * The rate cost's counting (API.md §14), on a small schema with the shapes the API's has or will
 * have: list queries paged by `pageSize` (`…List { nodes }`), Relay connections sized by
 * `first`/`last` (`…Connection { edges { node } nodes }`), nested lists sized by `first`, and
 * lists held inside an object, which count nothing.
 */

const schema = buildSchema(`
  type Query {
    items(first: Int, last: Int, after: String): ItemConnection
    list(page: Int, pageSize: Int): ItemList
    item(id: ID!): Item
  }
  type ItemConnection { edges: [ItemEdge!]! nodes: [Item!]! totalCount: Int }
  type ItemEdge { cursor: String! node: Item! }
  type ItemList { nodes: [Item!]! total: Int page: Int }
  type Item { id: ID! children(first: Int = 10): [Item!] parts: [Part!]! }
  type Part { name: String }
`);

function measure(query: string, variables: Record<string, unknown> = {}) {
  const document: DocumentNode = parse(query);
  const operation = getOperationAST(document)!;
  const fragments = fragmentsOf(document);
  return {
    requested: requestedObjects(schema, (name) => fragments[name], operation, variables),
    returned: (data: unknown) => returnedObjects(schema, (name) => fragments[name], operation, data),
  };
}

describe('the GraphQL rate cost', () => {
  it('should count each connection by its size, multiplied through nesting, and nothing for lists held in an object', () => {
    expect(measure('{ item(id: "i") { id parts { name } } }').requested).toBe(0);
    expect(measure('{ list { nodes { id } } }').requested).toBe(20);
    expect(measure('{ list(pageSize: 100) { total nodes { id parts { name } } } }').requested).toBe(100);
    expect(measure('{ list(pageSize: 100) { nodes { children { id } } } }').requested).toBe(100 + 100 * 10);
    expect(measure('{ list(pageSize: 100) { nodes { children(first: 50) { children(first: 2) { id } } } } }').requested).toBe(100 + 5000 + 10000);
    // A Relay connection by first or last (the larger when both), edges and nodes counted once.
    expect(measure('{ items(first: 30) { edges { node { id } } nodes { id } totalCount } }').requested).toBe(30);
    expect(measure('{ items(last: 40) { edges { node { children(first: 5) { id } } } } }').requested).toBe(40 + 200);
    expect(measure('{ items(first: 10, last: 60) { nodes { id } } }').requested).toBe(60);
    // Aliases and fragments count where they are; @skip leaves out what it skips.
    expect(measure('{ a: list(pageSize: 50) { nodes { id } } b: list(pageSize: 50) { ...N } } fragment N on ItemList { nodes { children { id } } }').requested)
      .toBe(50 + 50 + 500);
    expect(measure('query($s: Boolean!) { list(pageSize: 100) { nodes { children @skip(if: $s) { id } } } }', { s: true }).requested).toBe(100);
    // Sizes in variables count as given; absent, as the default.
    expect(measure('query($n: Int, $m: Int) { list(pageSize: $n) { nodes { children(first: $m) { id } } } }', { n: 10, m: 3 }).requested).toBe(10 + 30);
    expect(measure('query($n: Int) { list(pageSize: $n) { nodes { id } } }', {}).requested).toBe(20);
  });

  it('should count what came back by the same rule: the items each connection held, wherever it repeats', () => {
    const page = measure('{ l: list(pageSize: 100) { total nodes { id kids: children { id } } } }');
    expect(page.returned({ l: { total: 3, nodes: [{ id: '1', kids: [{ id: 'a' }, { id: 'b' }] }, { id: '2', kids: [] }, { id: '3', kids: null }] } })).toBe(3 + 2);
    const relay = measure('{ items(first: 5) { edges { node { id children { id } } } nodes { id } } }');
    expect(relay.returned({ items: { edges: [{ node: { id: '1', children: [{ id: 'x' }] } }, { node: { id: '2', children: [] } }], nodes: [{ id: '1' }, { id: '2' }] } })).toBe(2 + 1);
    const fragment = measure('{ list { ...L } } fragment L on ItemList { nodes { children { id } } }');
    expect(fragment.returned({ list: { nodes: [{ children: [{ id: 'a' }, { id: 'b' }, { id: 'c' }] }] } })).toBe(1 + 3);
    expect(page.returned(null)).toBe(0);
    // The paths are planned once per operation: each result of the same operation is counted on its own.
    expect(page.returned({ l: { total: 1, nodes: [{ id: '9', kids: [{ id: 'z' }] }] } })).toBe(1 + 1);
    expect(page.returned({ l: { total: 0, nodes: [] } })).toBe(0);
    // A connection reached through plain objects (an item, its parts beside) is still found.
    const deep = measure('{ item(id: "i") { id parts { name } children(first: 3) { id children { id } } } }');
    expect(deep.returned({ item: { id: 'i', parts: [{ name: 'p' }], children: [{ id: 'c1', children: [{ id: 'g' }, null] }, { id: 'c2', children: null }] } })).toBe(2 + 1);
  });

  it('should cost 1 per request, one per mutation of a document of several, plus 1 per 100 objects rounded down', () => {
    expect(rateCost(1, 0)).toBe(1);
    expect(rateCost(0, 99)).toBe(1);
    expect(rateCost(1, 100)).toBe(2);
    expect(rateCost(1, 1100)).toBe(12);
    expect(rateCost(3, 250)).toBe(5);
  });
});
