import { startTestApp, type TestApp, type TestAccount } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { FixedClock } from '../../src/core/clock';
import { monthlyRecurring } from '../../src/modules/dashboard/dashboard.service';

/**
 * The `dashboard` query's figures, each computed here by hand from the objects the test makes at
 * chosen instants (a fixed clock): the last hour's minutes and gateway calls, today's (UTC) volume
 * and refunds, and the active subscriptions' monthly recurring revenue with the unpaid invoices.
 */
const clock = new FixedClock(new Date('2026-11-27T12:30:20.000Z'));
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ clock });
});
afterAll(() => app.stop());

type Json = Record<string, any>;
const at = (iso: string) => clock.set(new Date(iso));
async function ok(res: Promise<{ status: number; body: Json }>, status = 200): Promise<Json> {
  const r = await res;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body.data;
}
const post = (key: string, path: string, body: Json, status = 201) => ok(app.request('POST', path, { key, body }), status);
const pay = (key: string, amount: number, currency: string, paymentMethod = 'pm_card_visa') =>
  app.request('POST', '/v1/payments', { key, body: { amount, currency, paymentMethod } }).then((r) => r.body.data ?? r.body.error);
const gql = (key: string, query: string) => app.request('POST', '/graphql', { key, body: { query } });

const DASHBOARD = `{ dashboard { livemode generatedAt
  payments { since perMinute { minute succeeded failed total } gateways { gatewayId gatewayType attempts succeeded rate } volumeToday { currency count amount } }
  refunds { count byCurrency { currency count amount } }
  subscriptions { active pastDue mrr { currency count amount } }
  invoices { unpaid amountDue { currency count amount } } } }`;

describe(`the dashboard query (${DIALECT})`, () => {
  it("should count the last hour's payments per minute and per gateway, today's volume and refunds, in the key's mode only", async () => {
    const { testKey, liveKey } = app.account;
    at('2026-11-26T23:50:00.000Z'); // yesterday: in no figure
    const yesterday = await pay(testKey, 4000, 'eur');
    await post(testKey, `/v1/payments/${yesterday.id}/refunds`, { amount: 1000 });
    at('2026-11-27T11:20:00.000Z'); // today, but over an hour before now
    await pay(testKey, 1500, 'eur');
    at('2026-11-27T12:00:30.000Z');
    const euros = await pay(testKey, 1000, 'eur');
    const declined = await pay(testKey, 700, 'eur', 'pm_card_declined');
    at('2026-11-27T12:30:10.000Z');
    await pay(testKey, 2500, 'usd');
    await post(testKey, `/v1/payments/${euros.id}/refunds`, { amount: 300 });
    at('2026-11-27T12:30:20.000Z');
    expect([yesterday.status, euros.status, declined.status]).toEqual(['succeeded', 'succeeded', 'failed']);

    const res = await gql(testKey, DASHBOARD);
    expect(res.body.errors).toBeUndefined();
    const d = res.body.data.dashboard;
    expect(d).toMatchObject({ livemode: false, generatedAt: '2026-11-27T12:30:20.000Z' });
    // 60 minutes, 11:31 to 12:30: the two of 12:00 (one failed) and the one of 12:30.
    expect(d.payments.since).toBe('2026-11-27T11:31:00.000Z');
    expect(d.payments.perMinute).toHaveLength(60);
    expect(d.payments.perMinute[0].minute).toBe('2026-11-27T11:31:00.000Z');
    expect(d.payments.perMinute[59].minute).toBe('2026-11-27T12:30:00.000Z');
    const busy = d.payments.perMinute.filter((m: Json) => m.total > 0);
    expect(busy).toEqual([
      { minute: '2026-11-27T12:00:00.000Z', succeeded: 1, failed: 1, total: 2 },
      { minute: '2026-11-27T12:30:00.000Z', succeeded: 1, failed: 0, total: 1 },
    ]);
    // Three charge calls since 11:30:20 (the refund's call is no charge): two authorised.
    expect(d.payments.gateways).toEqual([{ gatewayId: 'gw_builtin_simulator', gatewayType: 'simulator', attempts: 3, succeeded: 2, rate: 2 / 3 }]);
    // Succeeded since midnight UTC: 1500 + 1000 EUR, 2500 USD (the declined 700 is no volume).
    expect(d.payments.volumeToday).toEqual([{ currency: 'EUR', count: 2, amount: 2500 }, { currency: 'USD', count: 1, amount: 2500 }]);
    expect(d.refunds).toEqual({ count: 1, byCurrency: [{ currency: 'EUR', count: 1, amount: 300 }] });

    const live = (await gql(liveKey, DASHBOARD)).body.data.dashboard;
    expect(live.livemode).toBe(true);
    // The live mode has none of the test mode's objects.
    expect(live.payments.perMinute.filter((m: Json) => m.total > 0)).toEqual([]);
    expect(live.payments.gateways).toEqual([]);
    expect(live.payments.volumeToday).toEqual([]);
    expect(live.refunds).toEqual({ count: 0, byCurrency: [] });
  });

  it('should sum active subscriptions into monthly recurring revenue per currency, and count past-due ones and sent invoices', async () => {
    at('2026-11-27T12:30:20.000Z');
    const account: TestAccount = await app.createAccount();
    const key = account.testKey;
    const price = async (unitAmount: number, currency: string, interval: string, intervalCount = 1) => {
      const product = await post(key, '/v1/products', { name: `Plan ${unitAmount}` });
      return post(key, '/v1/prices', { productId: product.id, unitAmount, currency, recurring: { interval, intervalCount } });
    };
    const customer = async (card: string | null) => {
      const c = await post(key, '/v1/customers', { email: `dash-${Math.random().toString(36).slice(2)}@example.com` });
      if (card) await post(key, `/v1/customers/${c.id}/payment-methods`, { card: { number: card, expMonth: 12, expYear: 2040, cvc: '123' } });
      return c;
    };
    const subscribe = (body: Json) => post(key, '/v1/subscriptions', body);
    const [monthly, yearly, weekly, bimonthly] = [await price(1000, 'eur', 'month'), await price(12000, 'eur', 'year'), await price(100, 'usd', 'week'), await price(3000, 'usd', 'month', 2)];
    const paying = await customer('4242424242424242');
    const invoiced = await customer(null);
    const failing = await customer('4000000000000341');
    const subs = [
      await subscribe({ customerId: paying.id, priceId: monthly.id, quantity: 2 }), // 2000 EUR a month, paid
      await subscribe({ customerId: paying.id, priceId: yearly.id }), // 12000 / 12 = 1000 EUR a month, paid
      await subscribe({ customerId: invoiced.id, priceId: weekly.id, quantity: 3, collectionMethod: 'send_invoice' }), // 300 × 52 / 12 = 1300 USD; 300 due
      await subscribe({ customerId: invoiced.id, priceId: bimonthly.id, collectionMethod: 'send_invoice' }), // 3000 / 2 = 1500 USD; 3000 due
      await subscribe({ customerId: failing.id, priceId: monthly.id }), // declined: past_due, 1000 EUR due, no MRR
    ];
    expect(subs.map((s) => s.status)).toEqual(['active', 'active', 'active', 'active', 'past_due']);

    const d = (await gql(key, DASHBOARD)).body.data.dashboard;
    expect(d.subscriptions).toEqual({
      active: 4,
      pastDue: 1,
      mrr: [{ currency: 'EUR', count: 2, amount: 3000 }, { currency: 'USD', count: 2, amount: 2800 }],
    });
    expect(d.invoices).toEqual({ unpaid: 3, amountDue: [{ currency: 'EUR', count: 1, amount: 1000 }, { currency: 'USD', count: 2, amount: 3300 }] });
    // Another account's and the other mode's subscriptions are not counted.
    expect((await gql(account.liveKey, DASHBOARD)).body.data.dashboard.subscriptions).toEqual({ active: 0, pastDue: 0, mrr: [] });
  });

  it('should answer a section the key cannot read as null with a permission_denied error, and the others in full', async () => {
    const restricted = await post(app.account.testKey, '/v1/api-keys', { name: 'dashboard', permissions: ['payments:read', 'invoices:read'] });
    const res = await gql(restricted.secret, DASHBOARD);
    const d = res.body.data.dashboard;
    expect(d.payments.perMinute).toHaveLength(60);
    expect(d.invoices).toEqual({ unpaid: 0, amountDue: [] });
    expect([d.refunds, d.subscriptions]).toEqual([null, null]);
    const denied = res.body.errors.map((e: Json) => [e.path.join('.'), e.extensions.code]).sort();
    expect(denied).toEqual([['dashboard.refunds', 'permission_denied'], ['dashboard.subscriptions', 'permission_denied']]);
  });

  it("should leave out of each window what was made after it ends (a clock ahead of this one's): the next minute, tomorrow", async () => {
    const account: TestAccount = await app.createAccount();
    const key = account.testKey;
    at('2026-11-27T12:30:40.000Z'); // this minute: in every figure
    const now = await pay(key, 1100, 'eur');
    at('2026-11-27T12:31:00.000Z'); // the next minute: in today's volume only
    const nextMinute = await pay(key, 2200, 'eur');
    at('2026-11-28T00:00:00.000Z'); // tomorrow
    const tomorrow = await pay(key, 3300, 'usd');
    await post(key, `/v1/payments/${tomorrow.id}/refunds`, { amount: 300 });
    at('2026-11-27T12:30:50.000Z');
    expect([now.status, nextMinute.status, tomorrow.status]).toEqual(['succeeded', 'succeeded', 'succeeded']);

    const d = (await gql(key, DASHBOARD)).body.data.dashboard;
    expect(d.payments.perMinute.filter((m: Json) => m.total > 0)).toEqual([{ minute: '2026-11-27T12:30:00.000Z', succeeded: 1, failed: 0, total: 1 }]);
    expect(d.payments.gateways).toEqual([{ gatewayId: 'gw_builtin_simulator', gatewayType: 'simulator', attempts: 1, succeeded: 1, rate: 1 }]);
    // The next minute is still today; tomorrow is not.
    expect(d.payments.volumeToday).toEqual([{ currency: 'EUR', count: 2, amount: 3300 }]);
    expect(d.refunds).toEqual({ count: 0, byCurrency: [] });
  });

  it('should round monthly recurring revenue once per currency, from day, week, month and year prices', () => {
    expect(monthlyRecurring([
      { currency: 'EUR', interval: 'day', intervalCount: 1, count: 1, amount: 100 }, // 100 × 365 / 12 = 3041.67
      { currency: 'EUR', interval: 'week', intervalCount: 2, count: 2, amount: 1000 }, // 1000 × 52 / 24 = 2166.67
      { currency: 'JPY', interval: 'year', intervalCount: 1, count: 1, amount: 1000 }, // 83.33
    ])).toEqual([{ currency: 'EUR', count: 3, amount: 5208 }, { currency: 'JPY', count: 1, amount: 83 }]);
  });
});
