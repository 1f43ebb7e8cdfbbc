import { startTestApp, type TestApp } from '../helpers/app';
import { FixedClock } from '../../src/core/clock';
import { DIALECT } from '../helpers/db';

/*
 * The lists' own filters (API.md §2, issue 37): several values comma-separated for a closed set
 * (`status=succeeded,failed`), the payments' currency, amount range, failure code, gateway,
 * invoice, subscription, checkout session, payment link and `metadata[key]=value`, refunds by
 * customer, the account's gateway transactions and test clocks. Each filtered list is compared
 * with the same filter applied in JS to the whole list, over REST and GraphQL, and with cursors.
 */
type Json = Record<string, any>;

let app: TestApp;
let key: string;
const clock = new FixedClock(new Date('2026-03-01T10:00:00.000Z'));

beforeAll(async () => {
  app = await startTestApp({ clock, runWorkers: false, env: { PUBLIC_URL: 'https://pay.example.com' } });
  key = (await app.createAccount({ rateLimitPerMinute: 100_000 })).testKey;
});
afterAll(() => app.stop());

const get = (path: string, k = key) => app.request('GET', path, { key: k });
const post = async (path: string, body: Json = {}, status = 201) => {
  clock.advance(1000);
  const res = await app.request('POST', path, { key, body });
  expect([path, res.status, res.body.error]).toEqual([path, status, null]);
  return res.body.data as Json;
};
const gql = (query: string, variables: Json = {}) => app.request('POST', '/graphql', { key, body: { query, variables } });
const card = (number = '4242424242424242') => ({ number, expMonth: 12, expYear: 2034, cvc: '123' });
const ids = (items: Json[]) => items.map((i) => i.id as string);

/** Every object of a REST list, walked by cursor 100 at a time. */
async function all(path: string): Promise<Json[]> {
  const out: Json[] = [];
  let after: string | undefined;
  for (;;) {
    const sep = path.includes('?') ? '&' : '?';
    const res = await get(`${path}${sep}pageSize=100${after ? `&startingAfter=${after}` : ''}`);
    expect([path, res.status]).toEqual([path, 200]);
    out.push(...res.body.data);
    if (!res.body.meta.hasMore) return out;
    after = out[out.length - 1].id;
  }
}

/** A refusal's status, code and param. */
async function refusal(path: string): Promise<[number, string, string]> {
  const res = await get(path);
  return [res.status, res.body.error?.code, res.body.error?.param];
}

describe(`list filters (${DIALECT})`, () => {
  let payments: Json[];
  let refunds: Json[];
  const made: Json = {};

  beforeAll(async () => {
    const gold = await post('/v1/customers', { email: 'gold@example.com' });
    const payer = await post('/v1/customers', { email: 'payer@example.com' });
    await post(`/v1/customers/${payer.id}/payment-methods`, { card: card(), setDefault: true });
    made.gold = gold.id;
    made.payer = payer.id;
    const pay = (body: Json) => post('/v1/payments', { paymentMethod: 'pm_card_visa', ...body });
    made.p1 = await pay({ amount: 1000, currency: 'eur', customerId: gold.id, metadata: { plan: 'gold', region: 'eu' } });
    made.p2 = await pay({ amount: 2500, currency: 'usd', paymentMethod: 'pm_card_declined', metadata: { plan: 'silver' } });
    made.p3 = await pay({ amount: 500, currency: 'eur', customerId: gold.id, paymentMethod: 'pm_card_insufficient_funds' });
    made.p4 = await pay({ amount: 7000, currency: 'gbp', captureMethod: 'manual', metadata: { plan: 'gold', 'odd "key"': 'x,y' } });
    made.p5 = await pay({ amount: 300, currency: 'usd' });
    expect([made.p1.status, made.p2.status, made.p3.status, made.p4.status]).toEqual(['succeeded', 'failed', 'failed', 'requires_capture']);

    const invoice = await post('/v1/invoices', { customerId: payer.id, currency: 'eur', lineItems: [{ description: 'Work', unitAmount: 4200 }] });
    made.invoice = (await post(`/v1/invoices/${invoice.id}/pay`, {}, 200));
    const link = await post('/v1/payment-links', { name: 'Donation', amount: 1500, currency: 'usd' });
    made.link = link;
    clock.advance(1000);
    expect((await app.request('POST', `/v1/public/payment-links/${link.slug}/pay`, { body: { card: card(), email: 'anon@example.com' } })).status).toBe(200);
    const session = await post('/v1/checkout-sessions', { mode: 'payment', amount: 2200, currency: 'eur' });
    made.session = session;
    clock.advance(1000);
    expect((await app.request('POST', `/v1/public/checkout-sessions/${session.id}/pay`, { body: { card: card() } })).status).toBe(200);
    const product = await post('/v1/products', { name: 'Plan' });
    const price = await post('/v1/prices', { productId: product.id, unitAmount: 900, currency: 'eur', recurring: { interval: 'month' } });
    made.subscription = await post('/v1/subscriptions', { customerId: payer.id, priceId: price.id });
    // A configured gateway takes over from the built-in simulator: the payments after it name it.
    made.gateway = await post('/v1/gateways', { name: 'Second', type: 'simulator' });
    made.p6 = await pay({ amount: 900, currency: 'eur', metadata: { plan: 'gold', region: 'us' } });
    await post(`/v1/payments/${made.p1.id}/refunds`, { amount: 100 });
    await post(`/v1/payments/${made.p5.id}/refunds`, { amount: 300 });
    await post(`/v1/payments/${made.invoice.latestPaymentId}/refunds`, { amount: 200 });
    payments = await all('/v1/payments');
    refunds = await all('/v1/refunds');
    expect(payments).toHaveLength(10);
    expect(refunds).toHaveLength(3);
  });

  /** The filtered REST list is exactly the whole list filtered in JS, in the same order, and counted so. */
  async function expectFiltered(path: string, query: string, keep: (item: Json) => boolean, whole: Json[]): Promise<string[]> {
    const expected = ids(whole.filter(keep));
    const res = await get(`${path}?${query}&pageSize=100`);
    expect([query, res.status, res.body.error]).toEqual([query, 200, null]);
    expect([query, ids(res.body.data)]).toEqual([query, expected]);
    expect([query, res.body.meta.total]).toEqual([query, expected.length]);
    return expected;
  }

  it('should filter payments by each filter, several values of a closed set or currency, and their combinations', async () => {
    const f = (query: string, keep: (p: Json) => boolean) => expectFiltered('/v1/payments', query, keep, payments);
    const p = made as Record<string, Json>;
    expect(await f('status=succeeded,failed', (x) => ['succeeded', 'failed'].includes(x.status))).toHaveLength(9);
    expect(await f('status=requires_capture', (x) => x.status === 'requires_capture')).toEqual([p.p4.id]);
    await f('currency=EUR,usd', (x) => ['EUR', 'USD'].includes(x.currency));
    await f('currency=gbp', (x) => x.currency === 'GBP');
    expect(await f('amountGte=500&amountLte=2500', (x) => x.amount >= 500 && x.amount <= 2500)).toContain(p.p2.id);
    await f('amountGte=2500', (x) => x.amount >= 2500);
    await f('amountLte=500', (x) => x.amount <= 500);
    expect(await f('failureCode=insufficient_funds', (x) => x.failureCode === 'insufficient_funds')).toEqual([p.p3.id]);
    const gateways = [...new Set(payments.map((x) => x.gatewayId).filter(Boolean))];
    expect(gateways).toContain(p.gateway.id);
    for (const g of gateways) await f(`gatewayId=${g}`, (x) => x.gatewayId === g);
    expect(await f(`invoiceId=${p.invoice.id}`, (x) => x.invoiceId === p.invoice.id)).toEqual([p.invoice.latestPaymentId]);
    expect(await f(`subscriptionId=${p.subscription.id}`, (x) => x.subscriptionId === p.subscription.id)).toHaveLength(1);
    expect(await f(`checkoutSessionId=${p.session.id}`, (x) => x.checkoutSessionId === p.session.id)).toHaveLength(1);
    expect(await f(`paymentLinkId=${p.link.id}`, (x) => x.paymentLinkId === p.link.id)).toHaveLength(1);
    expect(await f('metadata[plan]=gold', (x) => x.metadata.plan === 'gold')).toEqual([p.p6.id, p.p4.id, p.p1.id]);
    expect(await f('metadata[plan]=gold&metadata[region]=eu', (x) => x.metadata.plan === 'gold' && x.metadata.region === 'eu')).toEqual([p.p1.id]);
    expect(await f(`metadata[${encodeURIComponent('odd "key"')}]=${encodeURIComponent('x,y')}`, (x) => x.metadata['odd "key"'] === 'x,y')).toEqual([p.p4.id]);
    expect(await f('metadata[plan]=bronze', () => false)).toEqual([]);
    await f(`customerId=${p.gold}&status=failed`, (x) => x.customerId === p.gold && x.status === 'failed');
    // Sorted by amount, the filtered list keeps that order.
    const byAmount = [...payments].sort((a, b) => a.amount - b.amount || (a.id < b.id ? -1 : 1));
    await expectFiltered('/v1/payments', 'status=succeeded&currency=EUR&amountGte=1000&sortField=amount&sortDirection=asc',
      (x) => x.status === 'succeeded' && x.currency === 'EUR' && x.amount >= 1000, byAmount);
  });

  it('should page a filtered list by cursor, forwards and backwards, over exactly the filtered objects', async () => {
    const query = 'status=succeeded,requires_capture&currency=EUR,USD,GBP';
    const expected = ids(payments.filter((x) => ['succeeded', 'requires_capture'].includes(x.status)));
    expect(expected.length).toBeGreaterThan(4);
    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const res = await get(`/v1/payments?${query}&pageSize=2${after ? `&startingAfter=${after}` : ''}`);
      expect(res.body.meta.total).toBe(expected.length);
      seen.push(...ids(res.body.data));
      if (!res.body.meta.hasMore) break;
      after = seen[seen.length - 1];
    }
    expect(seen).toEqual(expected);
    const back = await get(`/v1/payments?${query}&pageSize=2&endingBefore=${expected[expected.length - 1]}`);
    expect(ids(back.body.data)).toEqual(expected.slice(-3, -1));
    // A cursor from outside the filter is still a place in the list.
    const failed = payments.find((x) => x.status === 'failed') as Json;
    const from = payments.indexOf(failed);
    const rest = ids(payments.slice(from + 1).filter((x) => ['succeeded', 'requires_capture'].includes(x.status)));
    expect(ids((await get(`/v1/payments?${query}&pageSize=100&startingAfter=${failed.id}`)).body.data)).toEqual(rest);
  });

  it('should filter refunds by customer (the payment\'s) and several statuses', async () => {
    const f = (query: string, keep: (r: Json) => boolean) => expectFiltered('/v1/refunds', query, keep, refunds);
    const byPayment = new Map(payments.map((x) => [x.id, x]));
    expect(await f(`customerId=${made.gold}`, (r) => byPayment.get(r.paymentId)?.customerId === made.gold)).toHaveLength(1);
    expect(await f(`customerId=${made.payer}`, (r) => byPayment.get(r.paymentId)?.customerId === made.payer)).toHaveLength(1);
    await f('status=succeeded,failed', (r) => ['succeeded', 'failed'].includes(r.status));
    await f(`customerId=${made.gold}&status=pending`, () => false);
  });

  it('should list the account\'s gateway transactions, by payment, refund, gateway and outcome', async () => {
    const calls = await all('/v1/gateway-transactions');
    expect(calls.length).toBeGreaterThanOrEqual(10);
    const f = (query: string, keep: (t: Json) => boolean) => expectFiltered('/v1/gateway-transactions', query, keep, calls);
    expect(await f(`paymentId=${made.p2.id}`, (t) => t.paymentId === made.p2.id)).toEqual(ids((await get(`/v1/payments/${made.p2.id}/gateway-transactions`)).body.data));
    const refundId = refunds[0].id;
    expect(await f(`refundId=${refundId}`, (t) => t.refundId === refundId)).not.toHaveLength(0);
    expect(await f('outcome=declined', (t) => t.outcome === 'declined')).not.toHaveLength(0);
    await f('outcome=succeeded,declined', (t) => ['succeeded', 'declined'].includes(t.outcome));
    await f(`gatewayId=${made.gateway.id}`, (t) => t.gatewayId === made.gateway.id);
    await expectFiltered(`/v1/payments/${made.p2.id}/gateway-transactions`, 'outcome=declined', (t) => t.outcome === 'declined', calls.filter((t) => t.paymentId === made.p2.id));
    expect(await refusal(`/v1/payments/${made.p2.id}/gateway-transactions?paymentId=${made.p1.id}`)).toEqual([400, 'unknown_parameter', 'paymentId']);
  });

  it('should take several statuses on the other lists', async () => {
    const invoices = await all('/v1/invoices');
    await expectFiltered('/v1/invoices', 'status=paid,void', (i) => ['paid', 'void'].includes(i.status), invoices);
    await expectFiltered('/v1/invoices', `status=paid&customerId=${made.payer}`, (i) => i.status === 'paid' && i.customerId === made.payer, invoices);
    const subscriptions = await all('/v1/subscriptions');
    await expectFiltered('/v1/subscriptions', 'status=active,past_due', (s) => ['active', 'past_due'].includes(s.status), subscriptions);
    await post('/v1/checkout-sessions', { mode: 'payment', amount: 100, currency: 'eur' });
    const sessions = await all('/v1/checkout-sessions');
    await expectFiltered('/v1/checkout-sessions', 'status=open,complete', (s) => ['open', 'complete'].includes(s.status), sessions);
    expect(await expectFiltered('/v1/checkout-sessions', 'status=complete', (s) => s.status === 'complete', sessions)).toEqual([made.session.id]);
    await expectFiltered('/v1/checkout-sessions', 'mode=payment,setup&status=open', (s) => ['payment', 'setup'].includes(s.mode) && s.status === 'open', sessions);
    await post(`/v1/payment-links`, { name: 'Off', amount: 100, currency: 'eur' }).then((l) => app.request('PATCH', `/v1/payment-links/${l.id}`, { key, body: { status: 'inactive' } }));
    const links = await all('/v1/payment-links');
    await expectFiltered('/v1/payment-links', 'status=active,inactive', () => true, links);
    await expectFiltered('/v1/payment-links', 'status=inactive', (l) => l.status === 'inactive', links);
    const prices = await all('/v1/prices');
    await expectFiltered('/v1/prices', 'type=one_time,recurring', () => true, prices);
    await expectFiltered('/v1/prices', 'type=recurring', (x) => x.type === 'recurring', prices);
    const gateways = await all('/v1/gateways');
    await expectFiltered('/v1/gateways', 'type=simulator,stripe', (g) => ['simulator', 'stripe'].includes(g.type), gateways);
    await expectFiltered('/v1/gateways', 'type=stripe', (g) => g.type === 'stripe', gateways);
  });

  it('should list test clocks, by page and cursor, in test mode only', async () => {
    const clocks = [];
    for (const at of ['2026-01-01T00:00:00Z', '2026-02-01T00:00:00Z', '2026-03-01T00:00:00Z']) clocks.push(await post('/v1/test-clocks', { frozenTime: at }));
    const listed = await all('/v1/test-clocks');
    expect(ids(listed)).toEqual(ids(clocks).reverse());
    expect(listed[0]).toEqual(clocks[2]);
    const page = await get(`/v1/test-clocks?pageSize=1&startingAfter=${clocks[2].id}`);
    expect([ids(page.body.data), page.body.meta.hasMore]).toEqual([[clocks[1].id], true]);
    const live = await app.createAccount();
    const res = await get('/v1/test-clocks', live.liveKey);
    expect([res.status, res.body.error.code]).toEqual([403, 'mode_mismatch']);
  });

  it('should refuse bad filter values with 400 naming the filter', async () => {
    expect(await refusal('/v1/payments?status=lost')).toEqual([400, 'invalid_parameter', 'status']);
    expect(await refusal('/v1/payments?status=succeeded,lost')).toEqual([400, 'invalid_parameter', 'status']);
    expect(await refusal('/v1/payments?status=')).toEqual([400, 'invalid_parameter', 'status']);
    expect(await refusal('/v1/payments?status=succeeded,')).toEqual([400, 'invalid_parameter', 'status']);
    expect(await refusal('/v1/payments?currency=EUR,EURO')).toEqual([400, 'invalid_parameter', 'currency']);
    expect(await refusal('/v1/payments?amountGte=ten')).toEqual([400, 'invalid_parameter', 'amountGte']);
    expect(await refusal('/v1/payments?amountLte=1.5')).toEqual([400, 'invalid_parameter', 'amountLte']);
    expect(await refusal('/v1/payments?amountGte=-1')).toEqual([400, 'invalid_parameter', 'amountGte']);
    expect(await refusal('/v1/payments?amountGte=10&amountLte=5')).toEqual([400, 'invalid_parameter', 'amountLte']);
    const long = 'k'.repeat(41);
    expect(await refusal(`/v1/payments?metadata[${long}]=x`)).toEqual([400, 'invalid_parameter', `metadata[${long}]`]);
    expect(await refusal('/v1/payments?metadata[]=x')).toEqual([400, 'invalid_parameter', 'metadata[]']);
    expect(await refusal(`/v1/payments?metadata[plan]=${'v'.repeat(501)}`)).toEqual([400, 'invalid_parameter', 'metadata[plan]']);
    expect(await refusal('/v1/payments?metadata=gold')).toEqual([400, 'invalid_parameter', 'metadata']);
    expect(await refusal('/v1/payments?metadata=gold&metadata[plan]=x')).toEqual([400, 'invalid_parameter', 'metadata']);
    expect(await refusal('/v1/payments?metadata[plan]=a&metadata[plan]=b')).toEqual([400, 'invalid_parameter', 'metadata[plan]']);
    expect(await refusal('/v1/refunds?status=refunded')).toEqual([400, 'invalid_parameter', 'status']);
    expect(await refusal('/v1/invoices?status=paid,open')).toEqual([400, 'invalid_parameter', 'status']);
    expect(await refusal('/v1/subscriptions?status=trialing')).toEqual([400, 'invalid_parameter', 'status']);
    expect(await refusal('/v1/checkout-sessions?mode=payment,refund')).toEqual([400, 'invalid_parameter', 'mode']);
    expect(await refusal('/v1/payment-links?status=deleted')).toEqual([400, 'invalid_parameter', 'status']);
    expect(await refusal('/v1/webhook-endpoints?status=enabled,gone')).toEqual([400, 'invalid_parameter', 'status']);
    expect(await refusal('/v1/gateway-transactions?outcome=lost')).toEqual([400, 'invalid_parameter', 'outcome']);
    expect(await refusal('/v1/prices?type=one_time,monthly')).toEqual([400, 'invalid_parameter', 'type']);
    expect(await refusal('/v1/gateways?type=paypal')).toEqual([400, 'invalid_parameter', 'type']);
    expect(await refusal(`/v1/payments?status=${Array(21).fill('failed').join(',')}`)).toEqual([400, 'invalid_parameter', 'status']);
    expect(await refusal('/v1/refunds?colour=red')).toEqual([400, 'unknown_parameter', 'colour']);
  });

  describe('GraphQL', () => {
    const PAGE = 'nodes { id } totalCount';

    it('should answer the same lists as REST for the same filters', async () => {
      const same = async (rest: string, field: string, args: string, variables: Json = {}, vars = '') => {
        const restIds = ids(await all(rest));
        const res = await gql(`query${vars ? `(${vars})` : ''} { list: ${field}(${args}, first: 100) { ${PAGE} } }`, variables);
        expect([field, args, res.body.errors]).toEqual([field, args, undefined]);
        expect([field, args, ids(res.body.data.list.nodes), res.body.data.list.totalCount]).toEqual([field, args, restIds, restIds.length]);
        return restIds;
      };
      expect(await same('/v1/payments?status=succeeded,failed', 'payments', 'statusIn: [succeeded, failed]')).toHaveLength(9);
      // status keeps its one-value type (a variable declared as one status still validates); statusIn takes several.
      await same('/v1/payments?status=failed', 'payments', 'status: failed');
      await same('/v1/payments?status=failed', 'payments', 'status: $s', { s: 'failed' }, '$s: PaymentStatus');
      const both = await gql('{ payments(status: failed, statusIn: [succeeded]) { totalCount } }');
      expect(both.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'statusIn' });
      await same('/v1/payments?currency=EUR,USD&amountGte=500&amountLte=2500', 'payments', 'currency: ["eur", "USD"], amountGte: 500, amountLte: 2500');
      await same('/v1/payments?failureCode=insufficient_funds', 'payments', 'failureCode: "insufficient_funds"');
      await same(`/v1/payments?gatewayId=${made.gateway.id}`, 'payments', `gatewayId: "${made.gateway.id}"`);
      await same(`/v1/payments?invoiceId=${made.invoice.id}`, 'payments', `invoiceId: "${made.invoice.id}"`);
      await same(`/v1/payments?subscriptionId=${made.subscription.id}`, 'payments', `subscriptionId: "${made.subscription.id}"`);
      await same(`/v1/payments?checkoutSessionId=${made.session.id}`, 'payments', `checkoutSessionId: "${made.session.id}"`);
      await same(`/v1/payments?paymentLinkId=${made.link.id}`, 'payments', `paymentLinkId: "${made.link.id}"`);
      expect(await same('/v1/payments?metadata[plan]=gold&metadata[region]=eu', 'payments', 'metadata: $m', { m: { plan: 'gold', region: 'eu' } }, '$m: JSONObject')).toEqual([made.p1.id]);
      await same('/v1/payments?metadata[plan]=gold', 'payments', 'metadata: { plan: "gold" }');
      await same(`/v1/refunds?customerId=${made.gold}`, 'refunds', `customerId: "${made.gold}"`);
      await same('/v1/refunds?status=succeeded,pending', 'refunds', 'statusIn: [succeeded, pending]');
      await same('/v1/invoices?status=paid,void', 'invoices', 'statusIn: [paid, void]');
      await same('/v1/subscriptions?status=active,past_due', 'subscriptions', 'statusIn: [active, past_due]');
      await same('/v1/checkout-sessions?status=open,complete&mode=payment', 'checkoutSessions', 'statusIn: [open, complete], mode: payment');
      await same('/v1/payment-links?status=active', 'paymentLinks', 'statusIn: [active]');
      await same('/v1/webhook-endpoints?status=enabled,disabled', 'webhookEndpoints', 'statusIn: [enabled, disabled]');
      await same('/v1/gateway-transactions?outcome=declined,succeeded', 'gatewayTransactions', 'outcome: [declined, succeeded]');
      await same(`/v1/gateway-transactions?refundId=${refunds[0].id}`, 'gatewayTransactions', `refundId: "${refunds[0].id}"`);
      await same(`/v1/payments/${made.p2.id}/gateway-transactions?outcome=declined`, 'gatewayTransactions', `paymentId: "${made.p2.id}", outcome: declined`);
      await same('/v1/test-clocks', 'testClocks', 'sortDirection: desc');
      await same('/v1/prices?type=recurring,one_time', 'prices', 'typeIn: [recurring, one_time]');
      await same('/v1/gateways?type=simulator', 'gateways', 'type: simulator');
    });

    it('should page a filtered connection by cursor', async () => {
      const expected = ids(payments.filter((x) => x.metadata.plan === 'gold'));
      const seen: string[] = [];
      let after: string | null = null;
      for (;;) {
        const res: Json = await gql('query($a: ID) { payments(metadata: { plan: "gold" }, first: 2, after: $a) { edges { cursor } pageInfo { hasNextPage endCursor } } }', { a: after });
        const page = res.body.data.payments;
        seen.push(...page.edges.map((e: Json) => e.cursor));
        if (!page.pageInfo.hasNextPage) break;
        after = page.pageInfo.endCursor;
      }
      expect(seen).toEqual(expected);
    });

    it('should refuse bad filter values naming the argument', async () => {
      const param = async (query: string) => (await gql(query)).body.errors?.[0]?.extensions;
      expect(await param('{ payments(amountGte: 10, amountLte: 5) { total } }')).toMatchObject({ code: 'invalid_parameter', param: 'amountLte' });
      expect(await param('{ payments(currency: ["EURO"]) { total } }')).toMatchObject({ code: 'invalid_parameter', param: 'currency' });
      expect(await param(`{ payments(metadata: { ${'k'.repeat(41)}: "x" }) { total } }`)).toMatchObject({ code: 'invalid_parameter', param: `metadata.${'k'.repeat(41)}` });
      expect(await param('{ payments(metadata: { plan: 1 }) { total } }')).toMatchObject({ code: 'invalid_parameter', param: 'metadata.plan' });
      expect(await param(`{ gatewayTransactions(paymentId: "${made.p1.id}", refundId: "re_x") { total } }`)).toMatchObject({ code: 'invalid_parameter', param: 'refundId' });
      expect(await param('{ gatewayTransactions(paymentId: "pay_nope") { total } }')).toMatchObject({ code: 'resource_not_found', param: 'paymentId' });
    });
  });
});
