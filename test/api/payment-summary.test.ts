import { FixedClock } from '../../src/core/clock';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';

/**
 * `GET /v1/payments/summary` (API.md §2), a money test: payments in several currencies,
 * statuses, gateways and days, a manual capture taken in part, partial refunds made days after
 * their payment; the endpoint's rows against the same sums made here, in JavaScript, from the
 * objects the API answered (each payment's status, currency, gateway, creation and captured
 * amount; each refund's amount, creation and gateway).
 */
const DAY1 = '2031-03-01';
const DAY2 = '2031-03-02';
const DAY3 = '2031-03-03';
const DAY4 = '2031-03-04';
const clock = new FixedClock(new Date(`${DAY1}T09:00:00.000Z`));
let app: TestApp;
let key: string;

type Json = Record<string, any>;
interface Fact { currency: string; status: string; gatewayId: string | null; createdAt: string; amountCaptured: number; id: string }
interface RefundFact { amount: number; createdAt: string; gatewayId: string | null; paymentId: string; status: string }
const payments: Fact[] = [];
const refunds: RefundFact[] = [];

const at = (iso: string) => clock.set(new Date(iso));
async function pay(body: Json, k = key): Promise<Json> {
  const res = await app.request('POST', '/v1/payments', { key: k, body: { paymentMethod: 'pm_card_visa', ...body } });
  expect(res.status).toBe(201);
  return res.body.data;
}
async function refund(paymentId: string, amount: number): Promise<void> {
  const res = await app.request('POST', '/v1/refunds', { key, body: { paymentId, amount } });
  expect([res.status, res.body.data?.status]).toEqual([201, 'succeeded']);
  refunds.push({ amount, createdAt: res.body.data.createdAt, gatewayId: res.body.data.gatewayId, paymentId, status: res.body.data.status });
}
const summary = (query: string, k = key) => app.request('GET', `/v1/payments/summary?${query}`, { key: k });

/** The rows the endpoint should answer, summed here from the facts. */
function expected(from: string, to: string, groups: string[]): Json[] {
  const inWindow = (t: string) => t >= new Date(from).toISOString() && t < new Date(to).toISOString();
  const rows = new Map<string, Json>();
  const add = (fields: Json, count: number, amount: number, refunded: number) => {
    const group: Json = { currency: fields.currency };
    if (groups.includes('status')) group.status = fields.status;
    if (groups.includes('gateway')) group.gateway = fields.gateway;
    if (groups.includes('day')) group.day = fields.day;
    const k = JSON.stringify(group);
    const row = rows.get(k) ?? { ...group, count: 0, amount: 0, amountRefunded: 0, net: 0 };
    row.count += count;
    row.amount += amount;
    row.amountRefunded += refunded;
    row.net = row.amount - row.amountRefunded;
    rows.set(k, row);
  };
  const byId = new Map(payments.map((p) => [p.id, p]));
  for (const p of payments.filter((x) => inWindow(x.createdAt))) {
    add({ currency: p.currency, status: p.status, gateway: p.gatewayId, day: p.createdAt.slice(0, 10) }, 1, p.status === 'succeeded' ? p.amountCaptured : 0, 0);
  }
  for (const r of refunds.filter((x) => x.status === 'succeeded' && inWindow(x.createdAt))) {
    const p = byId.get(r.paymentId)!;
    add({ currency: p.currency, status: p.status, gateway: r.gatewayId ?? p.gatewayId, day: r.createdAt.slice(0, 10) }, 0, 0, r.amount);
  }
  const order = ['day', 'currency', 'status', 'gateway'];
  return [...rows.values()].sort((a, b) => {
    for (const f of order) {
      if (a[f] === b[f]) continue;
      if (a[f] == null) return 1;
      if (b[f] == null) return -1;
      return a[f] < b[f] ? -1 : 1;
    }
    return 0;
  });
}

beforeAll(async () => {
  app = await startTestApp({ clock });
  key = app.account.testKey;
  // Two gateways: payments with metadata route=b go to B, the rest to A.
  const gw = async (name: string) => (await app.request('POST', '/v1/gateways', { key, body: { name, type: 'simulator' } })).body.data.id as string;
  const [a, b] = [await gw('A'), await gw('B')];
  const routing = await app.request('PUT', '/v1/routing', {
    key, body: { rules: [{ name: 'b', when: { metadata: { route: 'b' } }, strategy: 'priority', gateways: [{ gatewayId: b }] }], fallback: [a], maxAttempts: 1 },
  });
  expect(routing.status).toBe(200);

  const seeded: Json[] = [];
  at(`${DAY1}T09:00:00.000Z`);
  const eur1 = await pay({ amount: 1000, currency: 'EUR' });
  const eur2 = await pay({ amount: 2000, currency: 'EUR', metadata: { route: 'b' } });
  seeded.push(eur1, eur2, await pay({ amount: 500, currency: 'USD' }), await pay({ amount: 300, currency: 'JPY', metadata: { route: 'b' } }));
  seeded.push(await pay({ amount: 700, currency: 'EUR', paymentMethod: 'pm_card_declined' }));
  // A manual capture taken in part: 3000 of 5000 counts.
  const manual = await pay({ amount: 5000, currency: 'EUR', captureMethod: 'manual', metadata: { route: 'b' } });
  at(`${DAY1}T15:00:00.000Z`);
  const captured = await app.request('POST', `/v1/payments/${manual.id}/capture`, { key, body: { amount: 3000 } });
  expect(captured.body.data).toMatchObject({ status: 'succeeded', amountCaptured: 3000 });
  // Authorised and never captured, and one voided: counted, no money.
  seeded.push(await pay({ amount: 800, currency: 'EUR', captureMethod: 'manual' }));
  const voided = await pay({ amount: 900, currency: 'USD', captureMethod: 'manual' });
  expect((await app.request('POST', `/v1/payments/${voided.id}/cancel`, { key })).status).toBe(200);
  // The day's last millisecond, and the next day's first.
  at(`${DAY1}T23:59:59.999Z`);
  seeded.push(await pay({ amount: 111, currency: 'EUR' }));
  at(`${DAY2}T00:00:00.000Z`);
  seeded.push(await pay({ amount: 222, currency: 'EUR' }));
  at(`${DAY2}T10:00:00.000Z`);
  seeded.push(await pay({ amount: 1500, currency: 'EUR', metadata: { route: 'b' } }), await pay({ amount: 200, currency: 'USD' }));
  await refund(eur1.id, 300);
  // Refunds on a later day than their payments.
  at(`${DAY3}T08:00:00.000Z`);
  await refund(eur2.id, 500);
  await refund(manual.id, 1000);
  await refund(eur1.id, 100);
  seeded.push(await pay({ amount: 4000, currency: 'USD', metadata: { route: 'b' } }));
  at(`${DAY4}T08:00:00.000Z`);
  await refund(eur2.id, 1500);

  // The facts as the API tells them now (statuses after capture and cancel).
  for (const p of [...seeded, eur1, eur2, manual, voided].filter((x, i, all) => all.findIndex((y) => y.id === x.id) === i)) {
    const now = (await app.request('GET', `/v1/payments/${p.id}`, { key })).body.data;
    payments.push({ id: now.id, currency: now.currency, status: now.status, gatewayId: now.gatewayId, createdAt: now.createdAt, amountCaptured: now.amountCaptured });
  }
  expect(new Set(payments.map((p) => p.status))).toEqual(new Set(['succeeded', 'failed', 'requires_capture', 'canceled']));
  expect(new Set(payments.map((p) => p.gatewayId))).toEqual(new Set([a, b]));

  // Another account's payment in the same window: never counted here.
  const other = await app.createAccount();
  at(`${DAY2}T12:00:00.000Z`);
  await pay({ amount: 99_999, currency: 'EUR' }, other.testKey);
});
afterAll(() => app.stop());

describe(`GET /v1/payments/summary (${DIALECT})`, () => {
  it.each([
    [`${DAY1}`, `${DAY4}`, ['currency', 'status', 'gateway', 'day']],
    [`${DAY1}`, `${DAY4}`, []],
    [`${DAY1}`, `${DAY2}`, ['status']],
    [`${DAY2}`, `${DAY4}`, ['currency', 'gateway']],
    [`${DAY3}`, '2031-03-05', ['day']],
    [`${DAY1}T12:00:00Z`, `${DAY2}T00:00:00.001Z`, ['status', 'day']],
    [`${DAY2}T01:00:00+02:00`, `${DAY3}T09:00:00+01:00`, ['gateway', 'status']],
  ])('should sum [%s, %s) grouped by %j as the seeded payments and refunds add up', async (from, to, groups) => {
    const res = await summary(`from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}${groups.length ? `&groupBy=${groups.join(',')}` : ''}`);
    expect(res.status).toBe(200);
    const want = expected(from, to, groups);
    expect(want.length).toBeGreaterThan(0);
    expect(res.body.data).toEqual(want);
  });

  it('should count a partial capture at what was captured, and a refund on its own day even when its payment is outside the window', async () => {
    const rows = (await summary(`from=${DAY3}&to=${DAY4}&groupBy=currency`)).body.data;
    // Only refunds of day-1 payments, and one USD payment of 4000, fall on day 3.
    expect(rows).toEqual([
      { currency: 'EUR', count: 0, amount: 0, amountRefunded: 1600, net: -1600 },
      { currency: 'USD', count: 1, amount: 4000, amountRefunded: 0, net: 4000 },
    ]);
    const day1 = (await summary(`from=${DAY1}&to=${DAY2}&groupBy=status`)).body.data as Json[];
    // EUR succeeded: 1000 + 2000 + 3000 (of 5000 authorised) + 111.
    expect(day1.find((r) => r.currency === 'EUR' && r.status === 'succeeded')).toEqual({ currency: 'EUR', status: 'succeeded', count: 4, amount: 6111, amountRefunded: 0, net: 6111 });
    expect(day1.find((r) => r.currency === 'EUR' && r.status === 'requires_capture')).toMatchObject({ count: 1, amount: 0 });
    expect(day1.find((r) => r.currency === 'USD' && r.status === 'canceled')).toMatchObject({ count: 1, amount: 0 });
  });

  it('should answer the same rows under /api/v1, and none for a window without payments or refunds', async () => {
    const v1 = await summary(`from=${DAY1}&to=${DAY4}&groupBy=gateway`);
    const api = await app.request('GET', `/api/v1/payments/summary?from=${DAY1}&to=${DAY4}&groupBy=gateway`, { key });
    expect(api.body).toEqual(v1.body);
    expect((await summary('from=2020-01-01&to=2020-02-01')).body).toEqual({ data: [], error: null });
  });

  it.each([
    ['to=2031-03-02', 400, 'missing_parameter', 'from'],
    ['from=2031-03-01', 400, 'missing_parameter', 'to'],
    ['from=2031-03-02&to=2031-03-01', 400, 'invalid_parameter', 'to'],
    ['from=2031-03-01&to=2031-03-01', 400, 'invalid_parameter', 'to'],
    ['from=yesterday&to=2031-03-01', 400, 'invalid_parameter', 'from'],
    ['from=2031-02-30&to=2031-03-01', 400, 'invalid_parameter', 'from'],
    ['from=2031-03-01&to=2031-03-02&groupBy=currency,colour', 400, 'invalid_parameter', 'groupBy'],
    ['from=2030-01-01&to=2031-03-02&groupBy=day', 400, 'invalid_parameter', 'to'],
    ['from=2031-03-01&to=2031-03-02&groupBy=day&groupBy=status', 400, 'invalid_parameter', 'groupBy'],
    ['from=2031-03-01&to=2031-03-02&page=2', 400, 'unknown_parameter', 'page'],
  ])('should refuse %s with %i %s naming %s', async (query, status, code, param) => {
    const res = await summary(query);
    expect([res.status, res.body.error?.code, res.body.error?.param]).toEqual([status, code, param]);
  });

  it('should sum two years by status, but refuse a key without payments:read', async () => {
    expect((await summary(`from=2030-01-01&to=2032-01-01&groupBy=status`)).status).toBe(200);
    const reader = await app.request('POST', '/v1/api-keys', { key, body: { permissions: ['refunds:read'] } });
    const res = await summary(`from=${DAY1}&to=${DAY2}`, reader.body.data.secret);
    expect([res.status, res.body.error.code, res.body.error.message]).toEqual([403, 'permission_denied', "This API key does not have the 'payments:read' permission"]);
  });

  it('should answer the same rows over GraphQL', async () => {
    const res = await app.request('POST', '/graphql', {
      key,
      body: {
        query: 'query($from: DateTime!, $to: DateTime!) { paymentSummary(from: $from, to: $to, groupBy: [status, day]) { currency status gateway day count amount amountRefunded net } }',
        variables: { from: `${DAY1}T00:00:00.000Z`, to: `${DAY4}T00:00:00.000Z` },
      },
    });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.paymentSummary).toEqual(expected(DAY1, DAY4, ['status', 'day']).map((r) => ({ ...r, gateway: null })));
    const bad = await app.request('POST', '/graphql', { key, body: { query: `{ paymentSummary(from: "${DAY2}T00:00:00Z", to: "${DAY1}T00:00:00Z") { count } }` } });
    expect(bad.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'to' });
  });
});
