import { startTestApp, type TestApp } from '../helpers/app';
import type { Client } from 'graphql-ws';
import { closed, connect as connectTo, run, wsClient as clientFor, type WsResult } from '../helpers/graphql-ws';
import { waitFor, watchStreams } from '../helpers/wait';

/**
 * GraphQL over WebSocket (graphql-ws) under the same limits as over HTTP: every operation counts
 * against the account's rate limit, each mutation of a document too; a socket holds a bounded
 * number of operations, a key a bounded number of sockets, and an address that keeps failing to
 * log in is turned away for a while.
 */

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({
    env: {
      GRAPHQL_WS_MAX_SUBSCRIPTIONS: '3', GRAPHQL_WS_MAX_SOCKETS_PER_KEY: '2', GRAPHQL_WS_FAILED_CONNECTS_PER_MINUTE: '3',
      GRAPHQL_WS_MAX_SUBSCRIPTIONS_PER_ACCOUNT: '4',
    },
  });
});
afterAll(() => app.stop());

/** The event streams the app's subscriptions open and close, per test. */
let streams: ReturnType<typeof watchStreams>;
beforeEach(() => {
  streams = watchStreams(app.server.services.bus);
});
afterEach(() => streams.stop());

const wsClient = (key: string) => clientFor(app, key);
const connect = (key: string | null) => connectTo(app, key);

type Subscribed = { stop: () => void; errors: WsResult['errors'] | null };

/**
 * Subscribes `count` times at once: each the errors it was refused with, or null once it is open
 * (its event stream opened on the server). Each subscription either opens a stream or is
 * refused, so this waits until as many streams opened as were not refused.
 */
async function subscribedAll(client: Client, query: string, count: number): Promise<Subscribed[]> {
  const before = streams.opened();
  const subs = Array.from({ length: count }, () => {
    const sub: Subscribed = { stop: () => undefined, errors: null };
    sub.stop = client.subscribe({ query }, {
      next: () => undefined, error: (e) => { sub.errors = e as WsResult['errors']; }, complete: () => undefined,
    });
    return sub;
  });
  await waitFor(() => streams.opened() - before + subs.filter((s) => s.errors).length >= count, { what: `${count} subscription(s) to open or be refused` });
  return subs;
}

const subscribed = async (client: Client, query: string): Promise<Subscribed> => (await subscribedAll(client, query, 1))[0];

/** Waits until `count` more subscription streams have closed on the server than before `close` ran. */
async function afterStreamsClose(count: number, close: () => unknown): Promise<void> {
  const before = streams.closed();
  await close();
  await waitFor(() => streams.closed() - before >= count, { what: `${count} subscription stream(s) to close` });
}

const PAY = 'mutation { createPayment(input: { amount: 950, currency: "usd", paymentMethod: "pm_card_visa" }) { id status } }';

/** The account's payments, read from the database (a request would count against the budget under test). */
async function paymentCount(key: string): Promise<number> {
  const { accountId } = (await app.server.services.accounts.authenticate(key))!;
  const [row] = await app.server.services.db.select<{ n: number | string }>('SELECT COUNT(*) AS n FROM payments WHERE account_id = $1', [accountId]);
  return Number(row.n);
}

describe('GraphQL over WebSocket: limits', () => {
  it('should count every operation over a socket against the account, shared with HTTP, and refuse past it with rate_limited', async () => {
    const { testKey: key } = await app.createAccount({ rateLimitPerMinute: 5 });
    const client = wsClient(key);
    // Opening the socket is one request, each operation another: four payments fit in five.
    const results = [];
    for (let i = 0; i < 6; i++) results.push(await run(client, PAY));
    expect(results.slice(0, 4).map((r) => r.data?.createPayment?.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
    for (const refused of results.slice(4)) {
      expect(refused.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'rate_limited', requestId: expect.stringMatching(/^ws_/) }) })]);
    }
    expect(await paymentCount(key)).toBe(4);
    // The same budget as HTTP: used up there too.
    const http = await app.request('GET', '/v1/customers', { key });
    expect(http.status).toBe(429);
    await client.dispose();
  });

  it('should count each mutation of a document sent over a socket, refusing one over the budget before any runs', async () => {
    const { testKey: key } = await app.createAccount({ rateLimitPerMinute: 10 });
    const client = wsClient(key);
    const mutations = (n: number) => `mutation { ${Array.from({ length: n }, (_, i) => `m${i}: createPayment(input: { amount: 951, currency: "usd", paymentMethod: "pm_card_visa" }) { id }`).join(' ')} }`;
    expect((await run(client, mutations(3))).errors).toBeUndefined(); // 1 (socket) + 3
    const refused = await run(client, mutations(7)); // 1 + 6 more than the 6 left
    expect(refused.errors?.[0].extensions.code).toBe('rate_limited');
    expect(await paymentCount(key)).toBe(3);
    expect((await run(client, mutations(5))).errors).toBeUndefined(); // the refused one's mutations were given back
    expect(await paymentCount(key)).toBe(8);
    await client.dispose();
  });

  it('should check every argument of a mutation document over a socket before it charges', async () => {
    const { testKey: key } = await app.createAccount();
    const client = wsClient(key);
    const refused = await run(client, 'mutation { createPayment(input: { amount: 952, currency: "usd", paymentMethod: "pm_card_visa" }) { id refunds(first: 0) { id } } }');
    expect(refused.errors?.[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'first' });
    expect(refused.data).toBeUndefined();
    expect(await paymentCount(key)).toBe(0);
    await client.dispose();
  });

  it('should cap the operations open at once on one socket, keeping the socket and its subscriptions', async () => {
    const { testKey: key } = await app.createAccount();
    const client = wsClient(key);
    const received: string[] = [];
    const stops = [0, 1, 2].map(() => client.subscribe<{ customerUpdated: { email: string } }>(
      { query: 'subscription { customerUpdated { email } }' },
      { next: (r) => { received.push(r.data!.customerUpdated.email); }, error: () => undefined, complete: () => undefined },
    ));
    await waitFor(() => streams.opened() >= 3, { what: 'the three subscriptions to open' });
    const fourth = await run(client, 'subscription { paymentUpdated { id } }');
    expect(fourth.errors?.[0].extensions.code).toBe('limit_exceeded');
    expect(fourth.errors?.[0].message).toBe('At most 3 operations at once on one socket (subscriptions included); complete one first');
    // The three still stream.
    await app.request('POST', '/v1/customers', { key, body: { email: 'still-open@example.com' } });
    await waitFor(() => received.length >= 3, { what: 'the three subscriptions to stream the customer' });
    expect(received).toEqual(['still-open@example.com', 'still-open@example.com', 'still-open@example.com']);
    // One completed makes room again.
    await afterStreamsClose(1, () => stops[0]());
    expect((await run(client, '{ customers { total } }')).data).toEqual({ customers: { total: 1 } });
    stops.slice(1).forEach((stop) => stop());
    await client.dispose();
  });

  it('should cap the subscriptions one account holds open on the instance, over all its keys and sockets', async () => {
    const account = await app.createAccount();
    const SUBSCRIPTION = 'subscription { customerUpdated { id } }';
    const refusal = {
      message: 'At most 4 subscriptions open at once for this account on one instance (all its keys and sockets); complete one first',
      extensions: expect.objectContaining({ code: 'limit_exceeded', requestId: expect.stringMatching(/^ws_/) }),
    };
    const test = wsClient(account.testKey);
    const live = wsClient(account.liveKey);
    const onTest = await subscribedAll(test, SUBSCRIPTION, 3);
    const first = await subscribed(live, SUBSCRIPTION);
    expect([...onTest, first].map((s) => s.errors)).toEqual([null, null, null, null]);
    expect((await subscribed(live, SUBSCRIPTION)).errors).toEqual([expect.objectContaining(refusal)]);
    // Queries are not subscriptions; another account has its own.
    expect((await run(live, '{ customers { total } }')).data).toEqual({ customers: { total: 0 } });
    const other = wsClient((await app.createAccount()).testKey);
    expect((await subscribed(other, SUBSCRIPTION)).errors).toBeNull();
    // A completed subscription makes room, and a closed socket gives back all of its own.
    await afterStreamsClose(1, () => first.stop());
    const second = await subscribed(live, SUBSCRIPTION);
    expect(second.errors).toBeNull();
    expect((await subscribed(live, SUBSCRIPTION)).errors).toEqual([expect.objectContaining(refusal)]);
    await afterStreamsClose(3, () => test.dispose());
    const again = wsClient(account.testKey);
    expect((await subscribedAll(again, SUBSCRIPTION, 3)).map((s) => s.errors)).toEqual([null, null, null]);
    expect((await subscribed(live, SUBSCRIPTION)).errors).toEqual([expect.objectContaining(refusal)]);
    for (const c of [live, other, again]) await c.dispose();
  });

  it('should cap the sockets one API key holds open, per key', async () => {
    const account = await app.createAccount();
    const first = await connect(account.testKey);
    const second = await connect(account.testKey);
    expect([first.outcome, second.outcome]).toEqual(['ack', 'ack']);
    const third = await connect(account.testKey);
    expect(third.outcome).toEqual({ code: 4429, reason: 'Too many open sockets for this API key (at most 2); close one first' });
    // Another key has its own sockets.
    const other = await connect(account.liveKey);
    expect(other.outcome).toBe('ack');
    // A closed socket frees its place.
    await closed(first.socket);
    // The server frees it once it has seen the close: tried until it is let in, with a deadline.
    const again = await waitFor(async () => {
      const attempt = await connect(account.testKey);
      if (attempt.outcome === 'ack') return attempt;
      return undefined;
    }, { timeoutMs: 2_000, what: 'a socket for the key to be let in again', intervalMs: 20 });
    expect(again.outcome).toBe('ack');
    await Promise.all([second, other, again].map((c) => closed(c.socket)));
  });

  it('should let in a burst of valid connections from one address larger than its failed-attempt budget', async () => {
    // Eight sockets at once (two keys of four accounts) against a budget of three failed attempts:
    // checked side by side, each counted as failed until its key passed, most were refused.
    const keys = (await Promise.all(Array.from({ length: 4 }, () => app.createAccount()))).flatMap((a) => [a.testKey, a.liveKey]);
    const attempts = await Promise.all(keys.map((key) => connect(key)));
    expect(attempts.map((a) => a.outcome)).toEqual(keys.map(() => 'ack'));
    await Promise.all(attempts.map((a) => closed(a.socket)));
    // Given back once let in: the budget is whole for what follows.
    expect((await connect(app.account.testKey)).outcome).toBe('ack');
  });

  // Last: it turns this test process's address away for the rest of the minute.
  it('should turn an address away after too many failed connection attempts, even with a valid key then', async () => {
    const bad = 'sk_test_' + 'z'.repeat(43);
    for (const key of [bad, null, bad]) expect((await connect(key)).outcome).toMatchObject({ code: 4403 });
    for (const key of [bad, app.account.testKey]) {
      const refused = await connect(key);
      expect(refused.outcome).toEqual({ code: 4429, reason: expect.stringMatching(/^Too many failed connection attempts from this address; retry in [1-9][0-9]* s$/) });
    }
    // HTTP keeps its own budget.
    expect((await app.request('GET', '/v1/customers', { key: app.account.testKey })).status).toBe(200);
  });
});
