import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import type { HttpResponse, RequestOptions } from '../helpers/http';
import { API_ROUTES, apiDocument } from '../../rest/routes';
import type { RouteSpec } from '../../rest/route-table';

type Json = Record<string, any>;

/**
 * Checks answers against an OpenAPI document: the route must be in it, with the status answered,
 * and the body must be valid against that status's schema (ajv, JSON Schema 2020-12).
 */
class ContractChecker {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly validators = new Map<string, ValidateFunction>();
  readonly failures: string[] = [];
  readonly seen = new Map<RouteSpec, Set<number>>();

  constructor(
    private readonly document: Json,
    private readonly table: readonly RouteSpec[],
  ) {
    addFormats(this.ajv);
  }

  routeOf(method: string, url: string): RouteSpec | undefined {
    const path = new URL(url, 'https://x').pathname.replace(/^\/(api\/)?v1(?=\/)/, '');
    return this.table.find((r) => r.method === method && new RegExp(`^${r.path.replace(/\{\w+\}/g, '[^/]+')}$`).test(path));
  }

  check(method: string, url: string, res: Pick<HttpResponse, 'status' | 'headers' | 'body'>): void {
    const what = `${method} ${url} → ${res.status}`;
    const route = this.routeOf(method, url);
    if (!route) return void this.failures.push(`${what}: no such route in the table`);
    this.seen.set(route, (this.seen.get(route) ?? new Set()).add(res.status));
    const operation = this.document.paths?.[route.path]?.[method.toLowerCase()];
    if (!operation) return void this.failures.push(`${what}: ${route.method} ${route.path} is missing from the document`);
    let response = operation.responses?.[String(res.status)];
    if (response?.$ref) response = this.document.components?.responses?.[String(response.$ref).replace('#/components/responses/', '')];
    if (!response) return void this.failures.push(`${what}: status ${res.status} is not documented (${Object.keys(operation.responses ?? {}).join(', ')})`);
    const type = String(res.headers['content-type'] ?? '').split(';')[0];
    const media = response.content?.[type];
    if (!media) return void this.failures.push(`${what}: content type ${type} is not documented`);
    if (type !== 'application/json') return;
    const key = `${route.method} ${route.path} ${res.status}`;
    let validate = this.validators.get(key);
    if (!validate) {
      validate = this.ajv.compile({ ...media.schema, components: this.document.components });
      this.validators.set(key, validate);
    }
    if (!validate(res.body)) {
      this.failures.push(`${what}: body does not match the document: ${this.ajv.errorsText(validate.errors)} in ${JSON.stringify(res.body).slice(0, 400)}`);
    } else if (res.status >= 400 && !(operation['x-error-codes'] ?? []).includes((res.body as Json).error.code)) {
      this.failures.push(`${what}: error code ${(res.body as Json).error.code} is not among the operation's x-error-codes`);
    }
  }
}

const card = (number: string) => ({ number, expMonth: 12, expYear: 2040, cvc: '123' });
const GOOD = '4242424242424242';
/** Saved without trouble, declined at every charge (a subscription goes past due). */
const FAILS_AT_CHARGE = '4000000000000341';

let app: TestApp;
let key: string;
let checker: ContractChecker;

beforeAll(async () => {
  app = await startTestApp({ env: { PUBLIC_URL: 'https://pay.example.com' } });
  key = app.account.testKey;
  checker = new ContractChecker(apiDocument(), API_ROUTES);
});
afterAll(() => app?.stop());

async function call(method: string, path: string, opts: RequestOptions = {}): Promise<HttpResponse> {
  const res = await app.request(method, path, opts);
  checker.check(method, path, res);
  return res;
}
/** A call that must succeed with `status`: its data. */
async function ok(method: string, path: string, body?: unknown, status = 200, withKey = true): Promise<Json> {
  const res = await call(method, path, { key: withKey ? key : undefined, body });
  if (res.status !== status) throw new Error(`${method} ${path}: expected ${status}, got ${res.status}: ${res.text.slice(0, 500)}`);
  return res.body?.data;
}
const unique = () => Math.random().toString(36).slice(2, 10);

describe(`the OpenAPI document against the service's answers (${DIALECT})`, () => {
  it('should describe every route of the table', () => {
    const doc = apiDocument() as Json;
    const missing = API_ROUTES.filter((r) => !doc.paths[r.path]?.[r.method.toLowerCase()]).map((r) => `${r.method} ${r.path}`);
    expect(missing).toEqual([]);
  });

  it('should fail an answer of a route the document lacks', () => {
    const doc = structuredClone(apiDocument()) as Json;
    delete doc.paths['/customers/{id}'];
    const strict = new ContractChecker(doc, API_ROUTES);
    strict.check('GET', '/v1/customers/cus_1', { status: 404, headers: { 'content-type': 'application/json' }, body: {} });
    expect(strict.failures).toEqual([expect.stringContaining('GET /customers/{id} is missing from the document')]);
    strict.check('GET', '/v1/customers', { status: 200, headers: { 'content-type': 'application/json' }, body: { data: [{ id: 'cus_1' }], meta: { total: 1, page: 1, pageSize: 20 }, error: null } });
    expect(strict.failures[1]).toMatch(/body does not match the document/);
    // A code of the status that this operation does not list (GET answers no missing_parameter).
    strict.check('GET', '/v1/customers?x=1', { status: 400, headers: { 'content-type': 'application/json' }, body: { data: null, error: { code: 'missing_parameter', message: 'm', requestId: 'req_1' } } });
    expect(strict.failures[2]).toMatch(/error code missing_parameter is not among the operation's x-error-codes/);
  });

  it('should answer every route with a success its document describes', async () => {
    // The document itself, without a key.
    const doc = await call('GET', '/v1/openapi.json');
    expect([doc.status, doc.body.openapi, doc.headers['content-type']]).toEqual([200, '3.1.0', 'application/json; charset=utf-8']);
    expect(doc.body).toEqual(apiDocument());

    await ok('GET', '/v1/account');
    await ok('PATCH', '/v1/account', { invoicePrefix: 'CT' });

    const apiKey = await ok('POST', '/v1/api-keys', { name: 'reader', permissions: ['customers:read'] }, 201);
    await ok('GET', '/v1/api-keys');
    await ok('DELETE', `/v1/api-keys/${apiKey.id}`);

    const customer = await ok('POST', '/v1/customers', { email: `c-${unique()}@example.com`, name: 'Ada' }, 201);
    await ok('GET', '/v1/customers?pageSize=5');
    await ok('GET', `/v1/customers/${customer.id}`);
    await ok('PATCH', `/v1/customers/${customer.id}`, { metadata: { crm: '1' } });
    const creditor = await ok('POST', '/v1/customers', { email: `cr-${unique()}@example.com` }, 201);
    await ok('POST', `/v1/customers/${creditor.id}/balance-transactions`, { currency: 'EUR', amount: 500, description: 'Goodwill' }, 201);
    await ok('GET', `/v1/customers/${creditor.id}/balance-transactions`);

    const product = await ok('POST', '/v1/products', { name: 'Pro' }, 201);
    await ok('GET', '/v1/products');
    await ok('GET', `/v1/products/${product.id}`);
    await ok('PATCH', `/v1/products/${product.id}`, { description: 'The pro plan' });
    const monthly = await ok('POST', '/v1/prices', { productId: product.id, unitAmount: 1500, currency: 'EUR', recurring: { interval: 'month' } }, 201);
    const bigger = await ok('POST', '/v1/prices', { productId: product.id, unitAmount: 3000, currency: 'EUR', recurring: { interval: 'month' } }, 201);
    await ok('GET', '/v1/prices');
    await ok('GET', `/v1/prices/${monthly.id}`);
    await ok('PATCH', `/v1/prices/${monthly.id}`, { nickname: 'Monthly' });

    await ok('GET', '/v1/routing');
    await ok('PUT', '/v1/routing', { rules: [], fallback: [], maxAttempts: 3 });
    await ok('POST', '/v1/routing/simulate', { amount: 1000, currency: 'EUR' });
    await ok('GET', '/v1/fx-rates');
    await ok('PUT', '/v1/fx-rates', { rates: [{ from: 'USD', to: 'EUR', rate: '0.9' }] });

    const payment = await ok('POST', '/v1/payments', { amount: 2000, currency: 'EUR', paymentMethod: 'card', card: card(GOOD) }, 201);
    expect(payment.status).toBe('succeeded');
    await ok('GET', '/v1/payments');
    await ok('GET', `/v1/payments/${payment.id}`);
    await ok('PATCH', `/v1/payments/${payment.id}`, { description: 'Order 1' });
    await ok('GET', `/v1/payments/${payment.id}/gateway-transactions`);
    await ok('GET', `/v1/gateway-transactions?paymentId=${payment.id}&outcome=succeeded,declined`);
    await ok('GET', '/v1/payments?metadata[order]=1&status=succeeded,failed&currency=EUR&amountGte=1');
    const refund = await ok('POST', `/v1/payments/${payment.id}/refunds`, { amount: 100 }, 201);
    await ok('GET', `/v1/payments/${payment.id}/refunds`);
    await ok('POST', '/v1/refunds', { paymentId: payment.id, amount: 100 }, 201);
    await ok('GET', '/v1/refunds');
    await ok('GET', `/v1/refunds/${refund.id}`);
    const authorized = await ok('POST', '/v1/payments', { amount: 2000, currency: 'EUR', paymentMethod: 'pm_card_visa', captureMethod: 'manual' }, 201);
    expect(authorized.status).toBe('requires_capture');
    await ok('POST', `/v1/payments/${authorized.id}/capture`, { amount: 1500 });
    const voided = await ok('POST', '/v1/payments', { amount: 2000, currency: 'EUR', paymentMethod: 'pm_card_visa', captureMethod: 'manual' }, 201);
    await ok('POST', `/v1/payments/${voided.id}/cancel`);
    await ok('GET', '/v1/payments/summary?from=2000-01-01&to=2100-01-01&groupBy=status,gateway');

    const exported = await ok('POST', '/v1/exports', { resource: 'payments', format: 'csv', filters: { status: 'succeeded' } }, 201);
    const exportedLines = await ok('POST', '/v1/exports', { resource: 'refunds', format: 'jsonl' }, 201);
    await app.server.services.exports.runDue(app.server.services.clock.now());
    await ok('GET', '/v1/exports');
    await ok('GET', `/v1/exports/${exported.id}`);
    for (const [made, type] of [[exported, 'text/csv; charset=utf-8'], [exportedLines, 'application/x-ndjson']] as Array<[Json, string]>) {
      const file = await call('GET', `/v1/exports/${made.id}/file`, { key });
      expect([file.status, file.headers['content-type']]).toEqual([200, type]);
    }

    await ok('POST', `/v1/customers/${customer.id}/payment-methods`, { card: card(GOOD), setDefault: true }, 201);
    await ok('GET', `/v1/customers/${customer.id}/payment-methods`);

    const endpoint = await ok('POST', '/v1/webhook-endpoints', { url: 'https://127.0.0.1:9/hook', events: ['customer.created'] }, 201);
    await ok('GET', '/v1/webhook-endpoints');
    await ok('GET', `/v1/webhook-endpoints/${endpoint.id}`);
    await ok('PATCH', `/v1/webhook-endpoints/${endpoint.id}`, { description: 'CRM' });
    await ok('POST', `/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, { overlapSeconds: 0 });
    await ok('POST', `/v1/webhook-endpoints/${endpoint.id}/test`, {});
    await ok('GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`);
    const events = await ok('GET', '/v1/events');
    await ok('GET', `/v1/events/${events[0].id}`);
    await ok('POST', `/v1/events/${events[0].id}/resend`, {});
    await ok('DELETE', `/v1/webhook-endpoints/${endpoint.id}`);

    const session = await ok('POST', '/v1/checkout-sessions', { mode: 'payment', amount: 4900, currency: 'EUR' }, 201);
    await ok('GET', '/v1/checkout-sessions');
    await ok('GET', `/v1/checkout-sessions/${session.id}`);
    await ok('GET', `/v1/public/checkout-sessions/${session.id}`, undefined, 200, false);
    await ok('POST', `/v1/public/checkout-sessions/${session.id}/pay`, { card: card(GOOD), email: `p-${unique()}@example.com` }, 200, false);
    const other = await ok('POST', '/v1/checkout-sessions', { mode: 'payment', amount: 100, currency: 'EUR' }, 201);
    await ok('POST', `/v1/checkout-sessions/${other.id}/expire`);

    const link = await ok('POST', '/v1/payment-links', { name: 'Donation', amount: 1000, currency: 'EUR' }, 201);
    await ok('GET', '/v1/payment-links');
    await ok('GET', `/v1/payment-links/${link.id}`);
    await ok('GET', `/v1/public/payment-links/${link.slug}`, undefined, 200, false);
    await ok('POST', `/v1/public/payment-links/${link.slug}/pay`, { card: card(GOOD), email: `l-${unique()}@example.com` }, 200, false);
    await ok('PATCH', `/v1/payment-links/${link.id}`, { status: 'inactive' });

    const vat = await ok('POST', '/v1/tax-rates', { displayName: 'VAT', percentage: 19, inclusive: false, country: 'DE' }, 201);
    await ok('GET', '/v1/tax-rates?active=true');
    await ok('GET', `/v1/tax-rates/${vat.id}`);
    await ok('PATCH', `/v1/tax-rates/${vat.id}`, { description: 'Standard rate' });
    const lines = [{ description: 'Consulting', quantity: 2, unitAmount: 5000 }];
    const invoice = await ok('POST', '/v1/invoices', { customerId: customer.id, currency: 'EUR', lineItems: lines, defaultTaxRateIds: [vat.id] }, 201);
    await ok('GET', '/v1/invoices');
    await ok('PATCH', `/v1/invoices/${invoice.id}`, { memo: 'Thanks' });
    await ok('POST', `/v1/invoices/${invoice.id}/send`);
    await ok('GET', `/v1/invoices/${invoice.id}`);
    const pdf = await call('GET', `/v1/invoices/${invoice.id}/pdf`, { key });
    expect([pdf.status, pdf.headers['content-type']]).toEqual([200, 'application/pdf']);
    await ok('GET', `/v1/public/invoices/${invoice.id}`, undefined, 200, false);
    await ok('POST', `/v1/public/invoices/${invoice.id}/pay`, { card: card(GOOD) }, 200, false);
    const toCharge = await ok('POST', '/v1/invoices', { customerId: customer.id, currency: 'EUR', lineItems: lines }, 201);
    await ok('POST', `/v1/invoices/${toCharge.id}/send`);
    await ok('POST', `/v1/invoices/${toCharge.id}/pay`, {});
    const outOfBand = await ok('POST', '/v1/invoices', { customerId: customer.id, currency: 'EUR', lineItems: lines }, 201);
    await ok('POST', `/v1/invoices/${outOfBand.id}/send`);
    await ok('POST', `/v1/invoices/${outOfBand.id}/mark-paid`);
    const toVoid = await ok('POST', '/v1/invoices', { customerId: customer.id, currency: 'EUR', lineItems: lines }, 201);
    await ok('POST', `/v1/invoices/${toVoid.id}/void`);

    const sub = await ok('POST', '/v1/subscriptions', { customerId: customer.id, priceId: monthly.id }, 201);
    expect(sub.status).toBe('active');
    await ok('GET', '/v1/subscriptions');
    await ok('GET', `/v1/subscriptions/${sub.id}`);
    await ok('POST', `/v1/subscriptions/${sub.id}/preview-proration`, { priceId: bigger.id });
    await ok('PATCH', `/v1/subscriptions/${sub.id}`, { quantity: 2 });
    await ok('GET', `/v1/subscriptions/${sub.id}/upcoming-invoice`);
    await ok('GET', `/v1/subscriptions/${sub.id}/invoices`);
    await ok('GET', `/v1/subscriptions/${sub.id}/payments`);
    await ok('GET', `/v1/subscriptions/${sub.id}/gateway-transactions`);
    await ok('POST', `/v1/subscriptions/${sub.id}/pause`);
    await ok('POST', `/v1/subscriptions/${sub.id}/resume`);
    await ok('POST', `/v1/subscriptions/${sub.id}/cancel`, { atPeriodEnd: true });
    const debtor = await ok('POST', '/v1/customers', { email: `d-${unique()}@example.com` }, 201);
    await ok('POST', `/v1/customers/${debtor.id}/payment-methods`, { card: card(FAILS_AT_CHARGE), setDefault: true }, 201);
    const pastDue = await ok('POST', '/v1/subscriptions', { customerId: debtor.id, priceId: monthly.id }, 201);
    expect(pastDue.status).toBe('past_due');
    await ok('POST', `/v1/subscriptions/${pastDue.id}/retry-payment`);

    const clock = await ok('POST', '/v1/test-clocks', { frozenTime: '2026-01-31T00:00:00Z' }, 201);
    await ok('GET', `/v1/test-clocks/${clock.id}`);
    await ok('GET', '/v1/test-clocks');
    await ok('POST', `/v1/test-clocks/${clock.id}/advance`, { frozenTime: '2026-02-01T00:00:00Z' });

    // Last: a configured gateway takes over from the built-in simulator.
    const gateway = await ok('POST', '/v1/gateways', { name: 'Sim', type: 'simulator' }, 201);
    await ok('GET', '/v1/gateways');
    await ok('GET', `/v1/gateways/${gateway.id}`);
    await ok('PATCH', `/v1/gateways/${gateway.id}`, { enabled: false });
    await ok('DELETE', `/v1/gateways/${gateway.id}`);

    expect(checker.failures).toEqual([]);
  });

  it('should answer every route with a 4xx its document describes, refusing a key without the permission the table declares', async () => {
    // A key with one unrelated permission: every authenticated route answers 403 naming the one it declares.
    const [unrelatedToAccount, unrelatedToOthers] = await Promise.all([
      ok('POST', '/v1/api-keys', { permissions: ['customers:read'] }, 201),
      ok('POST', '/v1/api-keys', { permissions: ['account:read'] }, 201),
    ]);
    const wrongPermission: string[] = [];
    for (const r of API_ROUTES) {
      const path = `/v1${r.path.replace(/\{\w+\}/g, 'x_nope')}`;
      if (r.public) {
        const res = await call(r.method, r.kind === 'document' ? `${path}?unknown=1` : path, { body: r.example });
        expect([path, res.status]).toEqual([path, r.kind === 'document' ? 400 : 404]);
        continue;
      }
      const probe = r.permission!.startsWith('account:') ? unrelatedToAccount : unrelatedToOthers;
      const res = await call(r.method, path, { key: probe.secret, body: r.example });
      if (res.status !== 403 || res.body.error.code !== 'permission_denied' || !res.body.error.message.includes(`'${r.permission}'`)) {
        wrongPermission.push(`${r.method} ${r.path} declares ${r.permission}: ${res.status} ${res.body?.error?.message}`);
      }
    }
    expect(wrongPermission).toEqual([]);

    // A few more refusals of the kinds the document lists.
    expect((await call('GET', '/v1/customers/cus_nope', { key })).status).toBe(404);
    expect((await call('POST', '/v1/customers', { key, body: { email: 'not-an-address' } })).status).toBe(400);
    expect((await call('GET', '/v1/payments?status=lost', { key })).status).toBe(400);
    expect((await call('GET', '/v1/payments')).status).toBe(401);
    expect((await call('POST', '/v1/invoices/in_nope/send', { key, body: { extra: 1 } })).status).toBe(400);
    expect((await call('GET', '/v1/payments/summary?from=2026-01-02&to=2026-01-01', { key })).status).toBe(400);
    const queued = await ok('POST', '/v1/exports', { resource: 'customers', format: 'csv' }, 201);
    expect((await call('GET', `/v1/exports/${queued.id}/file`, { key })).status).toBe(409);
    const debtor = await ok('POST', '/v1/customers', { email: `credit-${unique()}@example.com` }, 201);
    expect((await call('POST', `/v1/customers/${debtor.id}/balance-transactions`, { key, body: { currency: 'EUR', amount: -1, description: 'More than there is' } })).status).toBe(422);
    expect(checker.failures).toEqual([]);
  });

  it('should have seen every route of the table answer a success and a 4xx', () => {
    const lacking = API_ROUTES.flatMap((r) => {
      const statuses = [...(checker.seen.get(r) ?? [])];
      const gaps = [];
      if (!statuses.some((s) => s >= 200 && s < 300)) gaps.push('success');
      if (!statuses.some((s) => s >= 400 && s < 500)) gaps.push('4xx');
      return gaps.length ? [`${r.method} ${r.path}: no ${gaps.join(', no ')}`] : [];
    });
    expect(lacking).toEqual([]);
  });
});
