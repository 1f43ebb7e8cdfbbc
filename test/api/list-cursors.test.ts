import { startTestApp, type TestApp, type TestAccount } from '../helpers/app';
import { FixedClock } from '../../src/core/clock';
import { API_ROUTES } from '../../rest/routes';

/*
 * Every list pages by cursor as well as by number (API.md §2, §14): REST `startingAfter` /
 * `endingBefore` with `meta.hasMore`, GraphQL Relay connections (`first`/`after`, `last`/`before`,
 * `edges`, `pageInfo`, `totalCount`), a keyset on (sort value, id) that stays put while objects
 * are added, and the created/updated ranges every list takes.
 */
let app: TestApp;
let account: TestAccount;
const clock = new FixedClock(new Date('2026-03-01T10:00:00.000Z'));

beforeAll(async () => {
  app = await startTestApp({ clock, runWorkers: false });
  account = app.account;
});
afterAll(() => app.stop());

const get = (path: string, key = account.testKey) => app.request('GET', path, { key });
const gql = (query: string, variables: Record<string, unknown> = {}, key = account.testKey) =>
  app.request('POST', '/graphql', { key, body: { query, variables } });

/** A payment made a second after the last one (the clock moves on), with `amount`. */
async function pay(amount: number, key = account.testKey): Promise<string> {
  clock.advance(1000);
  const res = await app.request('POST', '/v1/payments', { key, body: { amount, currency: 'usd', paymentMethod: 'pm_card_visa' } });
  expect(res.status).toBe(201);
  return res.body.data.id as string;
}

const ids = (res: { body: { data: Array<{ id: string }> } }) => res.body.data.map((p) => p.id);

describe('cursor pagination', () => {
  let key: string;
  let all: string[];
  beforeAll(async () => {
    const fresh = await app.createAccount();
    key = fresh.testKey;
    // Amounts out of creation order, two equal (ties are ordered by id).
    for (const amount of [500, 100, 300, 300, 900, 200, 700]) await pay(amount, key);
    all = ids(await get('/v1/payments?pageSize=100', key));
    expect(all).toHaveLength(7);
  });

  it('should walk the whole list forwards with startingAfter, hasMore false on the last page', async () => {
    const seen: string[] = [];
    const more: boolean[] = [];
    let after: string | undefined;
    for (;;) {
      const res = await get(`/v1/payments?pageSize=3${after ? `&startingAfter=${after}` : ''}`, key);
      expect(res.status).toBe(200);
      seen.push(...ids(res));
      more.push(res.body.meta.hasMore);
      expect(res.body.meta).toMatchObject({ total: 7, pageSize: 3, page: after ? null : 1 });
      if (!res.body.meta.hasMore) break;
      after = seen[seen.length - 1];
    }
    expect(seen).toEqual(all);
    expect(more).toEqual([true, true, false]);
  });

  it('should walk it backwards with endingBefore, each page in the list order', async () => {
    const page = await get(`/v1/payments?pageSize=3&endingBefore=${all[6]}`, key);
    expect(ids(page)).toEqual(all.slice(3, 6));
    expect(page.body.meta.hasMore).toBe(true);
    const first = await get(`/v1/payments?pageSize=3&endingBefore=${all[3]}`, key);
    expect(ids(first)).toEqual(all.slice(0, 3));
    expect(first.body.meta.hasMore).toBe(false);
  });

  it('should keep a cursor page in place while payments are added, where a page number shifts', async () => {
    const page1 = ids(await get('/v1/payments?pageSize=3', key));
    // Three newer payments arrive between the two reads.
    for (const amount of [111, 222, 333]) await pay(amount, key);
    const byCursor = ids(await get(`/v1/payments?pageSize=3&startingAfter=${page1[2]}`, key));
    const byNumber = ids(await get('/v1/payments?pageSize=3&page=2', key));
    expect(byCursor).toEqual(all.slice(3, 6));
    // The numbered page 2 now repeats what page 1 showed: what cursors are for.
    expect(byNumber).toEqual(page1);
    all = ids(await get('/v1/payments?pageSize=100', key));
  });

  it('should page by cursor in another sort order, ties by id', async () => {
    const sorted = await get('/v1/payments?pageSize=100&sortField=amount&sortDirection=asc', key);
    const order = ids(sorted);
    const amounts = sorted.body.data.map((p: { amount: number }) => p.amount);
    expect(amounts).toEqual([...amounts].sort((a: number, b: number) => a - b));
    const walked: string[] = [];
    let after: string | undefined;
    do {
      const res = await get(`/v1/payments?pageSize=2&sortField=amount&sortDirection=asc${after ? `&startingAfter=${after}` : ''}`, key);
      walked.push(...ids(res));
      after = res.body.meta.hasMore ? walked[walked.length - 1] : undefined;
    } while (after);
    expect(walked).toEqual(order);
  });

  it('should filter by created and updated ranges, counted in the total', async () => {
    const list = (await get('/v1/payments?pageSize=100&sortDirection=asc', key)).body.data as Array<{ id: string; createdAt: string }>;
    const from = list[2].createdAt;
    const to = list[5].createdAt;
    const ranged = await get(`/v1/payments?pageSize=100&sortDirection=asc&createdAfter=${from}&createdBefore=${to}`, key);
    expect(ids(ranged)).toEqual(list.slice(3, 5).map((p) => p.id));
    expect(ranged.body.meta.total).toBe(2);
    // One payment changed later than every creation: the only one updated after the newest creation.
    clock.advance(60_000);
    const changed = list[1].id;
    expect((await app.request('PATCH', `/v1/payments/${changed}`, { key, body: { description: 'changed' } })).status).toBe(200);
    const updated = await get(`/v1/payments?updatedAfter=${list[list.length - 1].createdAt}`, key);
    expect(ids(updated)).toEqual([changed]);
    const gqlRange = await gql('query($a: DateTime, $b: DateTime) { payments(createdAfter: $a, createdBefore: $b, sortDirection: asc) { nodes { id } totalCount } }', { a: from, b: to }, key);
    expect(gqlRange.body.data.payments).toEqual({ nodes: list.slice(3, 5).map((p) => ({ id: p.id })), totalCount: 2 });
  });

  it.each([
    ['startingAfter=pay_x&endingBefore=pay_y', 'endingBefore'],
    ['startingAfter=pay_x&page=2', 'page'],
    ['startingAfter=pay_doesnotexist', 'startingAfter'],
    ['endingBefore=pay_doesnotexist', 'endingBefore'],
    ['startingAfter=a%20b', 'startingAfter'],
    ['createdAfter=yesterday', 'createdAfter'],
  ])('should refuse %s with 400 naming %s', async (query, param) => {
    const res = await get(`/v1/payments?${query}`, key);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_parameter', param });
  });

  it("should refuse another account's object as a cursor, and the other mode's", async () => {
    const theirs = await pay(100);
    const res = await get(`/v1/payments?startingAfter=${theirs}`, key);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_parameter', param: 'startingAfter' });
    const live = await get(`/v1/payments?startingAfter=${all[0]}`, account.liveKey);
    expect(live.body.error).toMatchObject({ code: 'invalid_parameter', param: 'startingAfter' });
  });

  it('should take cursors on every top-level list', async () => {
    const lists = API_ROUTES.filter((r) => r.kind === 'list' && !r.path.includes('{'));
    expect(lists.length).toBeGreaterThan(10);
    for (const r of lists) {
      const res = await get(`/v1${r.path}?startingAfter=x_doesnotexist`, key);
      expect([r.path, res.status, res.body.error?.param]).toEqual([r.path, 400, 'startingAfter']);
      const ok = await get(`/v1${r.path}?pageSize=1`, key);
      expect([r.path, ok.status, typeof ok.body.meta?.hasMore]).toEqual([r.path, 200, 'boolean']);
    }
  });

  describe('GraphQL connections', () => {
    const EDGES = 'edges { cursor node { id } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor }';

    it('should walk forwards with first/after and answer pageInfo', async () => {
      const walked: string[] = [];
      let after: string | null = null;
      let pages = 0;
      for (;;) {
        const res = await gql(`query($after: ID) { payments(first: 4, after: $after) { ${EDGES} totalCount } }`, { after }, key);
        expect(res.body.errors).toBeUndefined();
        const c = res.body.data.payments;
        expect(c.totalCount).toBe(all.length);
        for (const e of c.edges) expect(e.cursor).toBe(e.node.id);
        walked.push(...c.edges.map((e: { node: { id: string } }) => e.node.id));
        expect(c.pageInfo.hasPreviousPage).toBe(after !== null);
        expect(c.pageInfo.startCursor).toBe(c.edges[0].cursor);
        pages++;
        if (!c.pageInfo.hasNextPage) break;
        after = c.pageInfo.endCursor;
      }
      expect(walked).toEqual(all);
      expect(pages).toBe(Math.ceil(all.length / 4));
    });

    it('should read the end with last, and backwards with last/before', async () => {
      const tail = await gql(`{ payments(last: 3) { ${EDGES} } }`, {}, key);
      const c = tail.body.data.payments;
      expect(c.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual(all.slice(-3));
      expect(c.pageInfo).toMatchObject({ hasNextPage: false, hasPreviousPage: true });
      const before = await gql(`query($b: ID) { payments(last: 2, before: $b) { ${EDGES} } }`, { b: all[4] }, key);
      expect(before.body.data.payments.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual(all.slice(2, 4));
      expect(before.body.data.payments.pageInfo).toMatchObject({ hasNextPage: true, hasPreviousPage: true });
      const start = await gql(`query($b: ID) { payments(last: 5, before: $b) { ${EDGES} } }`, { b: all[2] }, key);
      expect(start.body.data.payments.edges.map((e: { node: { id: string } }) => e.node.id)).toEqual(all.slice(0, 2));
      expect(start.body.data.payments.pageInfo.hasPreviousPage).toBe(false);
    });

    it('should keep page numbers and nodes working beside the connection', async () => {
      const res = await gql('{ payments(page: 2, pageSize: 3) { nodes { id } total page pageSize pageInfo { hasNextPage hasPreviousPage } } }', {}, key);
      expect(res.body.data.payments).toEqual({
        nodes: all.slice(3, 6).map((id) => ({ id })), total: all.length, page: 2, pageSize: 3, pageInfo: { hasNextPage: true, hasPreviousPage: true },
      });
    });

    it('should refuse contradictory paging arguments and unknown cursors', async () => {
      for (const [query, param] of [
        ['{ payments(first: 2, last: 2) { totalCount } }', 'last'],
        ['{ payments(first: 2, pageSize: 2) { totalCount } }', 'first'],
        ['{ payments(after: "pay_nope") { totalCount } }', 'after'],
        ['{ payments(first: 101) { totalCount } }', 'first'],
      ] as const) {
        const res = await gql(query, {}, key);
        expect([query, res.body.errors?.[0]?.extensions]).toEqual([query, expect.objectContaining({ code: 'invalid_parameter', param })]);
      }
    });
  });

  describe('nested lists', () => {
    it("should page a customer's payments and a payment's refunds with first/after, in one statement per field", async () => {
      const customers: string[] = [];
      for (let c = 0; c < 2; c++) {
        clock.advance(1000);
        const customer = await app.request('POST', '/v1/customers', { key, body: { email: `nested${c}@example.com` } });
        customers.push(customer.body.data.id);
        for (let i = 0; i < 5; i++) {
          clock.advance(1000);
          const res = await app.request('POST', '/v1/payments', { key, body: { amount: 1000 + i, currency: 'usd', paymentMethod: 'pm_card_visa', customerId: customer.body.data.id } });
          expect(res.status).toBe(201);
        }
      }
      const ofCustomer = async (id: string) => ids(await get(`/v1/payments?customerId=${id}&pageSize=100`, key));
      const expected = await Promise.all(customers.map(ofCustomer));
      const query = 'query($after: ID) { customers(pageSize: 100) { nodes { id payments(first: 2, after: $after) { id } } } }';
      const first = await gql(query, { after: null }, key);
      const byCustomer = (res: typeof first) => new Map((res.body.data.customers.nodes as Array<{ id: string; payments: Array<{ id: string }> }>)
        .filter((c) => customers.includes(c.id)).map((c) => [c.id, c.payments.map((p) => p.id)]));
      const page1 = byCustomer(first);
      expect(customers.map((c) => page1.get(c))).toEqual(expected.map((list) => list.slice(0, 2)));
      // The next page of the first customer's payments: the ones older than its second.
      const sqlBefore = app.sql.length;
      const next = await gql(query, { after: expected[0][1] }, key);
      const page2 = byCustomer(next);
      expect(page2.get(customers[0])).toEqual(expected[0].slice(2, 4));
      const paymentStatements = app.sql.slice(sqlBefore).filter((sql) => /FROM payments/.test(sql) && /customer_id/.test(sql));
      expect(paymentStatements).toHaveLength(1);
      // A payment's refunds the same way.
      const payment = expected[0][0];
      for (const amount of [10, 20, 30]) {
        clock.advance(1000);
        expect((await app.request('POST', `/v1/payments/${payment}/refunds`, { key, body: { amount } })).status).toBe(201);
      }
      const refunds = ids(await get(`/v1/refunds?paymentId=${payment}`, key));
      const refundPage = await gql('query($p: ID!, $after: ID) { payment(id: $p) { refunds(first: 2, after: $after) { id } } }', { p: payment, after: refunds[0] }, key);
      expect(refundPage.body.data.payment.refunds.map((r: { id: string }) => r.id)).toEqual(refunds.slice(1, 3));
      const unknown = await gql('query($p: ID!) { payment(id: $p) { refunds(first: 2, after: "re_unknown") { id } } }', { p: payment }, key);
      expect(unknown.body.data.payment.refunds).toEqual([]);
    });
  });
});
