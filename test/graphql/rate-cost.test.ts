import { startTestApp, type TestApp, type TestAccount } from '../helpers/app';
import { run } from '../helpers/graphql-ws';
import { collect, wsClientAt } from '../helpers/live-events';
import { waitFor, watchStreams } from '../helpers/wait';

/**
 * GraphQL's rate cost (API.md §14, GitHub's rule): a request costs 1 point, plus 1 per 100
 * objects its connections may return (each list's page size, multiplied by the sizes of the
 * lists above it, summed; rounded down), and the per-minute budget of the account and mode
 * (§5) counts those points. Each response says `extensions.cost {requested, actual, remaining}`,
 * `actual` by the same rule over what came back, `remaining` as RateLimit-Remaining says it. A
 * REST request still costs 1.
 *
 * The numbers here: `payments(pageSize: 100) { nodes { refunds { id } } }` may return 100
 * payments and 10 refunds of each (a nested list's default `first`): 1,100 objects, 1 + 11 = 12.
 */

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

type Cost = { requested: number; actual: number; remaining: number };
const gql = (key: string, query: string, variables: Record<string, unknown> = {}) => app.request('POST', '/graphql', { key, body: { query, variables } });
const costOf = (res: { body: { extensions?: { cost?: Cost } } }) => res.body.extensions?.cost;

const TRIVIAL = '{ account { id } }';
const HUNDRED_WITH_REFUNDS = '{ payments(pageSize: 100) { nodes { id refunds { id } } } }';

async function pay(account: TestAccount, refunds: number[] = []): Promise<void> {
  const payment = await app.request('POST', '/v1/payments', { key: account.testKey, body: { amount: 2000, currency: 'usd', paymentMethod: 'pm_card_visa' } });
  expect(payment.status).toBe(201);
  for (const amount of refunds) expect((await app.request('POST', `/v1/payments/${payment.body.data.id}/refunds`, { key: account.testKey, body: { amount } })).status).toBe(201);
}

describe('GraphQL cost against the rate budget', () => {
  it('should cost a trivial query 1 and a page of 100 with a nested list 1 per 100 objects more, requested and actual', async () => {
    const account = await app.createAccount();
    await pay(account, [100, 200]);
    await pay(account);
    const trivial = await gql(account.testKey, TRIVIAL);
    expect(trivial.body.errors).toBeUndefined();
    expect(costOf(trivial)).toEqual({ requested: 1, actual: 1, remaining: expect.any(Number) });

    // 100 payments + 100 × 10 refunds may come back: 1 + 11. Two payments and two refunds did: 1.
    const costly = await gql(account.testKey, HUNDRED_WITH_REFUNDS);
    expect(costly.body.errors).toBeUndefined();
    expect(costOf(costly)).toEqual({ requested: 12, actual: 1, remaining: expect.any(Number) });
    // A larger nested page costs more: 100 + 100 × 50 objects.
    expect(costOf(await gql(account.testKey, '{ payments(pageSize: 100) { nodes { refunds(first: 50) { id } } } }'))).toMatchObject({ requested: 52 });
    // The default page is 20: below 100 objects, nothing more than the request; `total` alone
    // asks for the page as well (what the connection may return).
    expect(costOf(await gql(account.testKey, '{ payments { nodes { id } } customers { total } }'))).toMatchObject({ requested: 1 });
    expect(costOf(await gql(account.testKey, '{ payments(pageSize: 60) { total } events(pageSize: 60) { total } }'))).toMatchObject({ requested: 2 });
    // Sizes given in variables count as given.
    const sized = 'query($n: Int, $m: Int) { payments(pageSize: $n) { nodes { id refunds(first: $m) { id } } } }';
    expect(costOf(await gql(account.testKey, sized, { n: 10, m: 5 }))).toMatchObject({ requested: 1 });
    expect(costOf(await gql(account.testKey, sized, { n: 100, m: 100 }))).toMatchObject({ requested: 102 });
    expect(costOf(await gql(account.testKey, sized, { n: 100 }))).toMatchObject({ requested: 12 });
    // Lists held inside an object (a payment's attempts, the dashboard's figures) are part of it.
    expect(costOf(await gql(account.testKey, '{ dashboard { payments { gateways { name } perMinute { total } } } payment(id: "pay_x") { attempts { code } } }'))).toMatchObject({ requested: 1 });
    // A document of two mutations: one point each, plus what their lists may return.
    const two = await gql(account.testKey, `mutation { ${[1, 2].map((i) => `m${i}: createPayment(input: { amount: 500, currency: "usd", paymentMethod: "pm_card_visa" }) { id refunds(first: 100) { id } }`).join(' ')} }`);
    expect(two.body.errors).toBeUndefined();
    expect(costOf(two)).toEqual({ requested: 4, actual: 2, remaining: expect.any(Number) });
  });

  it('should count what came back in actual: 100 and more objects returned cost 2', async () => {
    const account = await app.createAccount();
    for (let i = 0; i < 105; i += 15) {
      await Promise.all(Array.from({ length: 15 }, (_, j) => app.request('POST', '/v1/customers', { key: account.testKey, body: { email: `cost-${i + j}@example.com` } })));
    }
    const res = await gql(account.testKey, '{ events(pageSize: 100) { nodes { id } } customers(pageSize: 5) { nodes { id } } }');
    expect(res.body.data.events.nodes).toHaveLength(100);
    // 105 may come back (1 + 1), 105 did.
    expect(costOf(res)).toEqual({ requested: 2, actual: 2, remaining: expect.any(Number) });
  });

  it('should spend the budget sooner with costly queries, refuse one that costs more than is left with 429, and keep REST at 1', async () => {
    const account = await app.createAccount({ rateLimitPerMinute: 30 });
    const key = account.testKey;
    const seen: Array<[string | undefined, number | undefined]> = [];
    const costly = async () => {
      const res = await gql(key, HUNDRED_WITH_REFUNDS);
      seen.push([res.headers['ratelimit-remaining'] as string | undefined, costOf(res)?.remaining]);
      return res;
    };
    expect((await costly()).status).toBe(200); // 30 - 12 = 18
    expect((await costly()).status).toBe(200); // 6
    const refused = await costly(); // the request is counted (5 left); its 11 more points are not
    expect(refused.status).toBe(429);
    expect(refused.body.errors[0].extensions.code).toBe('rate_limited');
    expect(refused.body.errors[0].message).toMatch(/costs 12 points/);
    expect(refused.body.data).toBeUndefined();
    expect(refused.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
    expect(seen).toEqual([['18', 18], ['6', 6], ['5', 5]]);

    // A trivial query still fits, at 1; and so does REST's largest page, at 1 as well.
    const trivial = await gql(key, TRIVIAL);
    expect(trivial.status).toBe(200);
    expect(costOf(trivial)).toEqual({ requested: 1, actual: 1, remaining: 4 });
    expect(trivial.headers['ratelimit-remaining']).toBe('4');
    const rest = await app.request('GET', '/v1/payments?pageSize=100', { key });
    expect(rest.status).toBe(200);
    expect(rest.headers['ratelimit-remaining']).toBe('3');
    expect(rest.body.extensions).toBeUndefined();
  });

  it('should let a budget of 30 run 30 trivial queries, where it ran two costly ones', async () => {
    const account = await app.createAccount({ rateLimitPerMinute: 30 });
    for (let i = 0; i < 30; i++) {
      const res = await gql(account.testKey, TRIVIAL);
      expect([i, res.status, costOf(res)?.remaining]).toEqual([i, 200, 29 - i]);
    }
    expect((await gql(account.testKey, TRIVIAL)).status).toBe(429);
  });

  it('should count each operation over graphql-ws by the same rule and say its cost in each result, subscription events included', async () => {
    const account = await app.createAccount({ rateLimitPerMinute: 40 });
    const key = account.testKey;
    const client = wsClientAt(app.baseUrl, app.server.cert, key);
    const streams = watchStreams(app.server.services.bus);
    try {
      const costly = (await run(client, HUNDRED_WITH_REFUNDS)) as { extensions?: { cost: Cost } };
      // The socket cost 1, the operation 12.
      expect(costly.extensions?.cost).toEqual({ requested: 12, actual: 1, remaining: 27 });
      const http = await gql(key, TRIVIAL);
      expect(costOf(http)?.remaining).toBe(26);
      expect((await run(client, HUNDRED_WITH_REFUNDS)).errors).toBeUndefined(); // 14 left
      const refused = await run(client, '{ payments(pageSize: 100) { nodes { refunds(first: 20) { id } } } }'); // 1 + 21 > 14
      expect(refused.errors?.[0].extensions.code).toBe('rate_limited');
      // A subscription costs what its selection may return, once; each event says it.
      const live = collect(client, 'subscription { paymentUpdated { id refunds(first: 100) { id } } }', {}, (d) => d.paymentUpdated as { id: string });
      await waitFor(() => streams.opened() === 1, { what: 'the subscription to start' });
      await pay(account);
      await waitFor(() => live.results.length === 1, { what: 'the payment event' });
      expect((live.results[0] as { extensions?: { cost: Cost } }).extensions?.cost).toEqual({ requested: 2, actual: 1, remaining: expect.any(Number) });
    } finally {
      streams.stop();
      await client.dispose();
    }
  });
});
