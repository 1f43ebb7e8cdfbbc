// Billing subscriptions (REST /v1/subscriptions) and test clocks over GraphQL. Not to be confused
// with subscriptions.test.ts, which is about GraphQL's live operations over graphql-ws.
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { wsClient } from '../helpers/graphql-ws';
import { waitFor, watchStreams } from '../helpers/wait';

let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp();
  key = app.account.testKey;
});
afterAll(() => app.stop());

type Json = Record<string, any>;
const gql = async (query: string, variables?: Json, k = key) => (await app.request('POST', '/graphql', { key: k, body: { query, variables } })).body as { data?: Json; errors?: Json[] };
/** The data of a document that must succeed. */
const ok = async (query: string, variables?: Json, k = key) => {
  const body = await gql(query, variables, k);
  if (body.errors) throw new Error(JSON.stringify(body.errors));
  return body.data as Json;
};
const rest = async (path: string, body: Json) => {
  const res = await app.request('POST', path, { key, body });
  if (res.status >= 300) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data as Json;
};
const price = async (unitAmount: number, recurring: Json = { interval: 'month' }) => {
  const product = await rest('/v1/products', { name: `Plan ${unitAmount}` });
  return rest('/v1/prices', { productId: product.id, unitAmount, currency: 'usd', recurring });
};
/** A customer created over GraphQL (on a test clock when given), with a saved default card. */
const customer = async (email: string, testClockId?: string) => {
  const { createCustomer } = await ok('mutation($i: CreateCustomerInput!) { createCustomer(input: $i) { id testClockId } }', { i: { email, ...(testClockId ? { testClockId } : {}) } });
  await rest(`/v1/customers/${createCustomer.id}/payment-methods`, { card: { number: '4242424242424242', expMonth: 12, expYear: 2040, cvc: '123' } });
  return createCustomer as { id: string; testClockId: string | null };
};
const SUB = 'id status quantity priceId currentPeriodStart currentPeriodEnd cancelAtPeriodEnd canceledAt pausedAt endedAt testClockId';

describe(`billing subscriptions and test clocks over GraphQL (${DIALECT})`, () => {
  it('should create, preview, update, pause, resume and cancel a subscription on a test clock, and advance the clock', async () => {
    const { createTestClock: clock } = await ok('mutation { createTestClock(input: { frozenTime: "2027-01-31T12:00:00Z", name: "gql" }) { id object livemode name frozenTime status } }');
    expect(clock).toMatchObject({ object: 'test_clock', livemode: false, name: 'gql', frozenTime: '2027-01-31T12:00:00.000Z', status: 'ready' });
    const c = await customer('gql-sub@example.com', clock.id);
    expect(c.testClockId).toBe(clock.id);
    const basic = await price(1000);
    const pro = await price(3000);

    const { createSubscription: sub } = await ok(`mutation($i: CreateSubscriptionInput!) { createSubscription(input: $i) {
      ${SUB} collectionMethod plan { priceId unitAmount currency interval intervalCount } customer { id email } invoices { status total } } }`,
    { i: { customerId: c.id, priceId: basic.id, collectionMethod: 'charge_automatically', metadata: { team: 'a' } } });
    expect(sub).toMatchObject({
      status: 'active', quantity: 1, testClockId: clock.id, collectionMethod: 'charge_automatically',
      // On the clock's time; the month end keeps the anchor day, clamped to February's last.
      currentPeriodStart: '2027-01-31T12:00:00.000Z', currentPeriodEnd: '2027-02-28T12:00:00.000Z',
      plan: { priceId: basic.id, unitAmount: 1000, currency: 'USD', interval: 'month', intervalCount: 1 },
      customer: { id: c.id, email: 'gql-sub@example.com' },
      invoices: [{ status: 'paid', total: 1000 }],
    });

    const { advanceTestClock } = await ok('mutation($id: ID!) { advanceTestClock(id: $id, frozenTime: "2027-02-14T12:00:00Z") { frozenTime status } }', { id: clock.id });
    expect(advanceTestClock).toEqual({ frozenTime: '2027-02-14T12:00:00.000Z', status: 'ready' });
    expect((await ok('query($id: ID!) { testClock(id: $id) { frozenTime } }', { id: clock.id })).testClock.frozenTime).toBe('2027-02-14T12:00:00.000Z');

    // Half of a 28-day period left: a credit of 500 and a charge of 1500.
    const { previewProration: preview } = await ok('query($s: ID!, $p: String!) { previewProration(subscriptionId: $s, priceId: $p) { object subscriptionId prorationDate currency total lines { amount periodStart periodEnd } } }', { s: sub.id, p: pro.id });
    expect(preview).toMatchObject({
      object: 'proration_preview', subscriptionId: sub.id, prorationDate: '2027-02-14T12:00:00.000Z', currency: 'USD', total: 1000,
      lines: [{ amount: -500, periodEnd: '2027-02-28T12:00:00.000Z' }, { amount: 1500, periodEnd: '2027-02-28T12:00:00.000Z' }],
    });
    const refused = await gql('query($s: ID!, $p: String!) { previewProration(subscriptionId: $s, priceId: $p) { total } }', { s: sub.id, p: (await price(9000, { interval: 'year' })).id });
    expect(refused.errors?.[0].extensions).toMatchObject({ code: 'proration_unavailable', param: 'priceId' });

    const { updateSubscription: updated } = await ok('mutation($id: ID!, $i: UpdateSubscriptionInput!) { updateSubscription(id: $id, input: $i) { priceId status plan { unitAmount } } }', {
      id: sub.id, i: { priceId: pro.id, prorationBehavior: 'create_prorations', prorationDate: preview.prorationDate },
    });
    expect(updated).toEqual({ priceId: pro.id, status: 'active', plan: { unitAmount: 3000 } });
    // The preview's lines wait for the next invoice, before the new plan's period.
    const { upcomingInvoice: upcoming } = await ok('query($s: ID!) { upcomingInvoice(subscriptionId: $s) { object total periodStart periodEnd createsAt lineItems { amount proration } } }', { s: sub.id });
    expect(upcoming).toEqual({
      object: 'upcoming_invoice', total: -500 + 1500 + 3000, periodStart: '2027-02-28T12:00:00.000Z', periodEnd: '2027-03-31T12:00:00.000Z', createsAt: '2027-02-28T12:00:00.000Z',
      lineItems: [{ amount: -500, proration: true }, { amount: 1500, proration: true }, { amount: 3000, proration: false }],
    });

    const { pauseSubscription: paused } = await ok(`mutation($id: ID!) { pauseSubscription(id: $id) { ${SUB} } }`, { id: sub.id });
    expect(paused).toMatchObject({ status: 'paused', pausedAt: '2027-02-14T12:00:00.000Z' });
    expect((await gql('query($s: ID!) { upcomingInvoice(subscriptionId: $s) { total } }', { s: sub.id })).errors?.[0].extensions?.code).toBe('invalid_state');
    expect((await gql('mutation($id: ID!) { pauseSubscription(id: $id) { id } }', { id: sub.id })).errors?.[0].extensions?.code).toBe('invalid_state');

    await ok('mutation($id: ID!) { advanceTestClock(id: $id, frozenTime: "2027-03-10T00:00:00Z") { id } }', { id: clock.id });
    const { resumeSubscription: resumed } = await ok(`mutation($id: ID!) { resumeSubscription(id: $id) { ${SUB} invoices(first: 1) { total status } } }`, { id: sub.id });
    // A new period from the clock's now, invoiced with the waiting prorations (−500 + 1500) and a
    // credit for the paid time the pause left unused: all 14 days of Feb 14–28 on the new plan,
    // 3000 × 14/28 = 1500; then 3000 for the period: 2500.
    expect(resumed).toMatchObject({ status: 'active', pausedAt: null, currentPeriodStart: '2027-03-10T00:00:00.000Z', currentPeriodEnd: '2027-04-10T00:00:00.000Z', invoices: [{ total: 2500, status: 'paid' }] });

    const { cancelSubscription: ending } = await ok(`mutation($id: ID!) { cancelSubscription(id: $id, atPeriodEnd: true) { ${SUB} } }`, { id: sub.id });
    expect(ending).toMatchObject({ status: 'active', cancelAtPeriodEnd: true });
    await ok('mutation($id: ID!) { advanceTestClock(id: $id, frozenTime: "2027-04-11T00:00:00Z") { id } }', { id: clock.id });
    const { subscription: ended } = await ok(`query($id: ID!) { subscription(id: $id) { ${SUB} } }`, { id: sub.id });
    expect(ended).toMatchObject({ status: 'canceled', endedAt: '2027-04-10T00:00:00.000Z' });

    // Canceled at once, and the list with its filters, paging and sorting.
    const second = (await ok('mutation($i: CreateSubscriptionInput!) { createSubscription(input: $i) { id } }', { i: { customerId: c.id, priceId: basic.id } })).createSubscription;
    expect((await ok(`mutation($id: ID!) { cancelSubscription(id: $id) { ${SUB} } }`, { id: second.id })).cancelSubscription)
      .toMatchObject({ status: 'canceled', canceledAt: '2027-04-11T00:00:00.000Z', endedAt: '2027-04-11T00:00:00.000Z' });
    const list = await ok('query($c: String) { subscriptions(customerId: $c, status: canceled, sortField: createdAt, sortDirection: asc, pageSize: 1) { total page pageSize nodes { id } } }', { c: c.id });
    expect(list.subscriptions).toEqual({ total: 2, page: 1, pageSize: 1, nodes: [{ id: sub.id }] });
    expect((await ok('query($c: String) { subscriptions(customerId: $c, status: active) { total } }', { c: c.id })).subscriptions.total).toBe(0);
  });

  it('should refuse bad input with the REST codes and params, and test clocks to a live key', async () => {
    const c = await customer('gql-sub-bad@example.com');
    const p = await price(500);
    const bad = await gql('mutation($i: CreateSubscriptionInput!) { createSubscription(input: $i) { id } }', { i: { customerId: c.id, priceId: p.id, quantity: 0 } });
    expect(bad.errors?.[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'quantity' });
    const clock = await gql('mutation { createTestClock(input: { frozenTime: "2027-01-01" }) { id } }');
    expect(clock.errors?.[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'frozenTime' });
    const live = await gql('mutation { createTestClock(input: { frozenTime: "2027-01-01T00:00:00Z" }) { id } }', undefined, app.account.liveKey);
    expect(live.errors?.[0].extensions?.code).toBe('mode_mismatch');
    const { createTestClock: tc } = await ok('mutation { createTestClock(input: { frozenTime: "2027-01-01T00:00:00Z" }) { id } }');
    const back = await gql('mutation($id: ID!) { advanceTestClock(id: $id, frozenTime: "2026-12-31T00:00:00Z") { id } }', { id: tc.id });
    expect(back.errors?.[0].extensions).toMatchObject({ code: 'invalid_state', param: 'frozenTime' });
    const restricted = (await rest('/v1/api-keys', { permissions: ['customers:read'] })).secret as string;
    expect((await gql('{ subscriptions { total } }', undefined, restricted)).errors?.[0].extensions?.code).toBe('permission_denied');
  });

  it('should batch Customer.subscriptions, BillingSubscription.invoices and BillingSubscription.customer: one statement each for a page', async () => {
    const p = await price(700);
    for (let i = 0; i < 3; i++) {
      const c = await customer(`subs-batch-${i}@example.com`);
      await ok('mutation($i: CreateSubscriptionInput!) { createSubscription(input: $i) { id } }', { i: { customerId: c.id, priceId: p.id } });
    }
    let before = app.sql.length;
    const byCustomer = await ok('{ customers(pageSize: 10, search: "subs-batch-") { nodes { email subscriptions(first: 2) { plan { unitAmount } invoices(first: 2) { total lineItems { amount } } } } } }');
    expect(byCustomer.customers.nodes).toHaveLength(3);
    for (const n of byCustomer.customers.nodes) expect(n.subscriptions).toEqual([{ plan: { unitAmount: 700 }, invoices: [{ total: 700, lineItems: [{ amount: 700 }] }] }]);
    let statements = app.sql.slice(before);
    expect(statements.filter((q) => /FROM [`"]?subscriptions\b/.test(q))).toHaveLength(1);
    expect(statements.filter((q) => /FROM [`"]?invoices\b/.test(q))).toHaveLength(1);
    // The plans of all the subscriptions: one statement too.
    expect(statements.filter((q) => /FROM [`"]?prices\b/.test(q))).toHaveLength(1);

    before = app.sql.length;
    // Active ones: the other tests' subscriptions here are canceled by the time this one runs.
    const listed = await ok('{ subscriptions(status: active, pageSize: 10) { nodes { customer { email } invoices(first: 5) { total } } } }');
    expect(listed.subscriptions.nodes.map((n: Json) => n.customer.email).sort()).toEqual(['subs-batch-0@example.com', 'subs-batch-1@example.com', 'subs-batch-2@example.com']);
    statements = app.sql.slice(before);
    expect(statements.filter((q) => /FROM [`"]?customers\b/.test(q))).toHaveLength(1);
    expect(statements.filter((q) => /FROM [`"]?invoices\b/.test(q))).toHaveLength(1);
    expect(statements.filter((q) => /FROM [`"]?subscriptions\b/.test(q))).toHaveLength(1);

    // `first` is checked as on every nested list.
    const tooMany = await gql('{ subscriptions { nodes { invoices(first: 0) { id } } } }');
    expect(tooMany.errors?.[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'first' });
  });

  it('should stream subscriptionUpdated for one subscription, or all', async () => {
    const p = await price(900);
    const c = await customer('gql-sub-live@example.com');
    const create = async () => (await ok('mutation($i: CreateSubscriptionInput!) { createSubscription(input: $i) { id } }', { i: { customerId: c.id, priceId: p.id } })).createSubscription.id as string;
    const watched = await create();
    const other = await create();
    const client = wsClient(app, key);
    const streams = watchStreams(app.server.services.bus);
    try {
      const results: Json[] = [];
      const done = new Promise<void>((resolve, reject) => {
        client.subscribe({ query: 'subscription($id: ID) { subscriptionUpdated(id: $id) { id status pausedAt plan { unitAmount } } }', variables: { id: watched } }, {
          next: (r) => {
            if (r.errors) reject(new Error(JSON.stringify(r.errors)));
            results.push(r.data as Json);
            if (results.length === 2) resolve();
          },
          error: reject,
          complete: () => reject(new Error('completed')),
        });
      });
      const all: Json[] = [];
      const sawAll = new Promise<void>((resolve, reject) => {
        client.subscribe({ query: 'subscription { subscriptionUpdated { id status } }' }, {
          next: (r) => {
            all.push(r.data as Json);
            if (all.length === 3) resolve();
          },
          error: reject,
          complete: () => reject(new Error('completed')),
        });
      });
      await waitFor(() => streams.opened() >= 2, { what: 'both subscriptions to open' });
      // The other subscription's event first: the filtered stream must not pass it.
      await ok('mutation($id: ID!) { pauseSubscription(id: $id) { id } }', { id: other });
      await ok('mutation($id: ID!) { pauseSubscription(id: $id) { id } }', { id: watched });
      await ok('mutation($id: ID!) { cancelSubscription(id: $id) { id } }', { id: watched });
      let deadline: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all([done, sawAll]), new Promise((_, reject) => { deadline = setTimeout(() => reject(new Error(`timed out: ${JSON.stringify({ results, all })}`)), 8000); })]);
      clearTimeout(deadline);
      expect(results.map((r) => [r.subscriptionUpdated.id, r.subscriptionUpdated.status])).toEqual([[watched, 'paused'], [watched, 'canceled']]);
      expect(results[0].subscriptionUpdated.plan).toEqual({ unitAmount: 900 });
      expect(all.map((r) => [r.subscriptionUpdated.id, r.subscriptionUpdated.status])).toEqual([[other, 'paused'], [watched, 'paused'], [watched, 'canceled']]);
    } finally {
      streams.stop();
      await client.dispose();
    }
  });
});
