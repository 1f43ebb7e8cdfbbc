import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { startTestApp, type TestApp, type TestAccount } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { parseExposition, queryableNames, seriesOf, valueOf, type Exposition } from '../helpers/metrics';
import { ReceiverHarness, makeCertificate } from '../unit/webhooks/receiver-harness';
import { JOBS, runJob, type Job } from '../../workers/jobs';

/**
 * Issue 38, metrics: GET /metrics in Prometheus's text format, on a port of its own or behind a
 * bearer token on the HTTPS listener, never by default; each series read back by name, labels and
 * value.
 */

const TOKEN = 'metrics-token-0123456789abcdef';
const SIMULATOR = 'gw_builtin_simulator';
const card = (number: string) => ({ number, expMonth: 12, expYear: 2034, cvc: '123' });

/** A plain-HTTP request (the METRICS_PORT listener). */
function plain(method: string, url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('metrics off by default', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.stop());

  it('should serve no /metrics (404, with a token or without), open no listener and record nothing when neither METRICS_PORT nor METRICS_TOKEN is set', async () => {
    for (const headers of [{}, { authorization: `Bearer ${TOKEN}` }] as Array<Record<string, string>>) {
      const res = await app.request('GET', '/metrics', { headers });
      expect([res.status, res.body?.error?.code]).toEqual([404, 'route_not_found']);
    }
    expect(app.server.metricsUrl).toBeUndefined();
    const { metrics } = app.server.services;
    expect(metrics.enabled).toBe(false);
    const paid = await app.request('POST', '/v1/payments', { key: app.account.testKey, body: { amount: 500, currency: 'usd', paymentMethod: 'pm_card_visa' } });
    expect(paid.body.data.status).toBe('succeeded');
    // Nothing recorded, and no process metrics collected either.
    expect(parseExposition(await metrics.exposition()).samples).toEqual([]);
  });
});

describe('metrics on a port of their own', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { METRICS_PORT: '0' } });
  });
  afterAll(() => app.stop());

  it('should serve GET /metrics over plain HTTP on 127.0.0.1 with the process and event-loop metrics, and nothing else there or on HTTPS', async () => {
    expect(app.server.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const url = app.server.metricsUrl!;
    const res = await plain('GET', url);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    const exposition = parseExposition(res.text);
    expect(exposition.types.get('payorch_nodejs_eventloop_lag_seconds')).toBe('gauge');
    expect(exposition.types.get('payorch_nodejs_eventloop_lag_p99_seconds')).toBe('gauge');
    expect(valueOf(exposition, 'payorch_nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(valueOf(exposition, 'payorch_process_cpu_seconds_total')).toBeGreaterThan(0);

    expect((await plain('GET', url.replace(/\/metrics$/, '/v1/payments'))).status).toBe(404);
    expect((await plain('POST', url)).status).toBe(405);
    expect((await plain('HEAD', url)).status).toBe(200);
    // Without METRICS_TOKEN the HTTPS listener does not serve them.
    expect((await app.request('GET', '/metrics')).status).toBe(404);
  });
});

describe('metrics behind a token', () => {
  let app: TestApp;
  let rx: ReceiverHarness;

  beforeAll(async () => {
    const tls = await makeCertificate();
    rx = new ReceiverHarness(tls);
    await rx.start();
    app = await startTestApp({ env: { METRICS_TOKEN: TOKEN, METRICS_PORT: '0', WEBHOOK_CA_FILE: tls.caFile } });
  });
  afterAll(async () => {
    await app?.stop();
    await rx?.stop();
  });

  async function scrape(): Promise<Exposition> {
    const res = await app.request('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    return parseExposition(res.text);
  }

  /** How much each of `series` moved while `act` ran. */
  async function delta(series: Array<[string, Record<string, string>]>, act: () => Promise<unknown>): Promise<number[]> {
    const before = await scrape();
    await act();
    const after = await scrape();
    return series.map(([name, labels]) => valueOf(after, name, labels) - valueOf(before, name, labels));
  }

  const merchant = () => app.createAccount();
  const req = async (account: TestAccount, method: string, p: string, body?: unknown) => {
    const res = await app.request(method, p, { key: account.testKey, body });
    if (res.status >= 300) throw new Error(`${method} ${p} answered ${res.status}: ${res.text}`);
    return res.body.data;
  };

  it('should refuse /metrics without the token or with a wrong one, on the HTTPS listener and on METRICS_PORT', async () => {
    const missing = await app.request('GET', '/metrics');
    expect([missing.status, missing.body.error.code]).toEqual([401, 'missing_api_key']);
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="metrics"');
    for (const authorization of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `Basic ${TOKEN}`, `Bearer ${app.account.testKey}`]) {
      const wrong = await app.request('GET', '/metrics', { headers: { authorization } });
      expect([wrong.status, wrong.body.error.code]).toEqual([401, 'invalid_api_key']);
      expect(wrong.text).not.toContain('payorch_');
    }
    expect((await app.request('POST', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(405);
    const ok = await app.request('GET', '/metrics', { headers: { authorization: `bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');

    const url = app.server.metricsUrl!;
    expect((await plain('GET', url)).status).toBe(401);
    expect((await plain('GET', url, { authorization: `Bearer ${TOKEN}x` })).status).toBe(401);
    expect((await plain('GET', url, { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
  });

  it('should count payments and refunds by status and gateway, and each gateway call by outcome, with no account, object id or card number in the output', async () => {
    const m = await merchant();
    let paymentId = '';
    let refundId = '';
    const moved = await delta(
      [
        ['payorch_payments_total', { status: 'succeeded', gateway: SIMULATOR }],
        ['payorch_payments_total', { status: 'failed', gateway: SIMULATOR }],
        ['payorch_refunds_total', { status: 'pending', gateway: SIMULATOR }],
        ['payorch_refunds_total', { status: 'succeeded', gateway: SIMULATOR }],
        ['payorch_gateway_calls_total', { gateway: SIMULATOR, gateway_type: 'simulator', operation: 'charge', outcome: 'succeeded' }],
        ['payorch_gateway_calls_total', { gateway: SIMULATOR, gateway_type: 'simulator', operation: 'charge', outcome: 'declined' }],
        ['payorch_gateway_calls_total', { gateway: SIMULATOR, gateway_type: 'simulator', operation: 'refund', outcome: 'succeeded' }],
        ['payorch_gateway_call_duration_seconds_count', { gateway: SIMULATOR, operation: 'charge' }],
        ['payorch_gateway_call_duration_seconds_count', { gateway: SIMULATOR, operation: 'refund' }],
      ],
      async () => {
        const paid = await req(m, 'POST', '/v1/payments', { amount: 2500, currency: 'eur', paymentMethod: 'card', card: card('4242424242424242') });
        expect(paid.status).toBe('succeeded');
        paymentId = paid.id;
        expect((await req(m, 'POST', '/v1/payments', { amount: 900, currency: 'eur', paymentMethod: 'card', card: card('4000000000000002') })).status).toBe('failed');
        const refund = await req(m, 'POST', '/v1/refunds', { paymentId, amount: 1000 });
        expect(refund.status).toBe('succeeded');
        refundId = refund.id;
      },
    );
    expect(moved).toEqual([1, 1, 1, 1, 1, 1, 1, 2, 1]);

    const res = await app.request('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } });
    for (const secret of [m.accountId, app.account.accountId, m.testKey, paymentId, refundId, '4242424242424242', '4000000000000002', '424242']) {
      expect(res.text).not.toContain(secret);
    }
  });

  it('should time each request under its route template and status, one count per request, and leave the scrapes out', async () => {
    const m = await merchant();
    const paid = await req(m, 'POST', '/v1/payments', { amount: 700, currency: 'usd', paymentMethod: 'pm_card_visa' });
    const get = (p: string) => app.request('GET', p, { key: m.testKey });
    const moved = await delta(
      [
        ['payorch_http_request_duration_seconds_count', { method: 'GET', route: '/v1/payments/:id', status: '200' }],
        ['payorch_http_request_duration_seconds_count', { method: 'GET', route: '/v1/payments/:id', status: '404' }],
        ['payorch_http_request_duration_seconds_count', { method: 'POST', route: '/v1/payments', status: '201' }],
        ['payorch_http_request_duration_seconds_count', { method: 'GET', route: '(unmatched)', status: '404' }],
        ['payorch_http_request_duration_seconds_count', { method: 'GET', route: '/checkout/:id', status: '404' }],
        ['payorch_http_request_duration_seconds_count', { method: 'GET', route: '/health', status: '200' }],
      ],
      async () => {
        expect((await get(`/v1/payments/${paid.id}`)).status).toBe(200);
        expect((await get(`/v1/payments/${paid.id}`)).status).toBe(200);
        // The same route under the other prefix is the same template.
        expect((await get(`/api/v1/payments/${paid.id}`)).status).toBe(200);
        expect((await get('/v1/payments/pay_doesnotexist')).status).toBe(404);
        expect((await app.request('POST', '/v1/payments', { key: m.testKey, body: { amount: 300, currency: 'usd', paymentMethod: 'pm_card_visa' } })).status).toBe(201);
        expect((await get('/v1/no-such-thing/at-all')).status).toBe(404);
        expect((await app.request('GET', '/checkout/cs_doesnotexist')).status).toBe(404);
        expect((await app.request('GET', '/health')).status).toBe(200);
      },
    );
    expect(moved).toEqual([3, 1, 1, 1, 1, 1]);

    const exposition = await scrape();
    const routes = new Set(seriesOf(exposition, 'payorch_http_request_duration_seconds_count').map((s) => s.labels.route));
    expect(routes.has('/metrics')).toBe(false);
    for (const route of routes) expect(route).not.toMatch(/pay_|cs_|no-such-thing/);
    // The buckets are cumulative and end at +Inf with the count.
    const labels = { method: 'GET', route: '/v1/payments/:id', status: '200' };
    const buckets = seriesOf(exposition, 'payorch_http_request_duration_seconds_bucket', labels);
    expect(buckets.at(-1)).toMatchObject({ labels: { ...labels, le: '+Inf' }, value: valueOf(exposition, 'payorch_http_request_duration_seconds_count', labels) });
    expect(buckets.map((b) => b.value)).toEqual([...buckets.map((b) => b.value)].sort((a, b) => a - b));
  });

  it('should count rate-limit refusals by budget, under the route the refused request asked for', async () => {
    const limited = await app.createAccount({ rateLimitPerMinute: 2 });
    const moved = await delta(
      [
        ['payorch_rate_limit_refusals_total', { budget: 'account' }],
        ['payorch_http_request_duration_seconds_count', { method: 'GET', route: '/v1/customers', status: '429' }],
      ],
      async () => {
        const statuses = [];
        for (let i = 0; i < 3; i++) statuses.push((await app.request('GET', '/v1/customers', { key: limited.testKey })).status);
        expect(statuses).toEqual([200, 200, 429]);
      },
    );
    expect(moved).toEqual([1, 1]);

    // A GraphQL document costing more than the budget has left.
    const costly = await app.createAccount({ rateLimitPerMinute: 3 });
    const [graphqlCost, account] = await delta(
      [['payorch_rate_limit_refusals_total', { budget: 'graphql_cost' }], ['payorch_rate_limit_refusals_total', { budget: 'account' }]],
      async () => {
        const res = await app.request('POST', '/graphql', { key: costly.testKey, body: { query: '{ customers(first: 100) { nodes { payments(first: 5) { id } } } }' } });
        expect(res.body.errors[0].extensions.code).toBe('rate_limited');
      },
    );
    expect([graphqlCost, account]).toEqual([1, 0]);
  });

  it('should count public pays refused by the caps on failed attempts, by cap and page', async () => {
    const m = await merchant();
    const session = await req(m, 'POST', '/v1/checkout-sessions', { mode: 'payment', amount: 700, currency: 'eur' });
    const pay = () => app.request('POST', `/v1/public/checkout-sessions/${session.id}/pay`, { body: { card: card('4000000000000002') } });
    const [refusals] = await delta([['payorch_public_pay_refusals_total', { cap: 'session', page: 'checkout_session' }]], async () => {
      for (let i = 0; i < 5; i++) expect((await pay()).body.data).toMatchObject({ status: 'failed' });
      const refused = await pay();
      expect([refused.status, refused.body.error.code]).toEqual([429, 'too_many_attempts']);
    });
    expect(refusals).toBe(1);
  });

  it("should show each called gateway's circuit: closed, then open after five gateway errors", async () => {
    const m = await merchant();
    const gateway = await req(m, 'POST', '/v1/gateways', { name: 'Sim', type: 'simulator' });
    const pay = (paymentMethod: string) => req(m, 'POST', '/v1/payments', { amount: 400, currency: 'usd', paymentMethod });
    expect((await pay('pm_card_visa')).gatewayId).toBe(gateway.id);
    const circuit = async () => {
      const exposition = await scrape();
      return Object.fromEntries(seriesOf(exposition, 'payorch_gateway_circuit_state', { gateway: gateway.id }).map((s) => [s.labels.state, s.value]));
    };
    expect(await circuit()).toEqual({ closed: 1, open: 0, half_open: 0 });
    for (let i = 0; i < 5; i++) expect((await pay('pm_card_gateway_error')).failureCode).toBe('gateway_error');
    expect(await circuit()).toEqual({ closed: 0, open: 1, half_open: 0 });
    // The built-in simulator has no circuit.
    expect(seriesOf(await scrape(), 'payorch_gateway_circuit_state', { gateway: SIMULATOR })).toEqual([]);
  });

  it('should show the webhook queue at scrape time and count deliveries by result, timing those sent', async () => {
    const m = await merchant();
    const ok = rx.route('metrics-ok');
    const failing = rx.route('metrics-500', [], () => 500);
    for (const route of [ok, failing]) {
      const endpoint = await req(m, 'POST', '/v1/webhook-endpoints', { url: route.url, events: ['customer.created'] });
      route.setSecret(endpoint.secret);
    }
    const { deliveries } = app.server.services.webhooks;
    const queue = (e: Exposition) => [valueOf(e, 'payorch_webhook_queue_depth', { state: 'due' }), valueOf(e, 'payorch_webhook_queue_depth', { state: 'scheduled' })];
    expect(queue(await scrape())).toEqual([0, 0]);
    await req(m, 'POST', '/v1/customers', { email: 'queued@example.com' });
    const queued = await scrape();
    expect(queue(queued)).toEqual([2, 0]);
    expect(valueOf(queued, 'payorch_webhook_queue_oldest_due_seconds')).toBeGreaterThanOrEqual(0);

    const before = queued;
    const results = await deliveries.deliverDue();
    expect(results.map((r) => r.status).sort()).toEqual(['delivered', 'pending']);
    const after = await scrape();
    const moved = (name: string, labels: Record<string, string>) => valueOf(after, name, labels) - valueOf(before, name, labels);
    expect(moved('payorch_webhook_deliveries_total', { result: 'delivered' })).toBe(1);
    expect(moved('payorch_webhook_deliveries_total', { result: 'retrying' })).toBe(1);
    expect(moved('payorch_webhook_delivery_duration_seconds_count', { outcome: 'delivered' })).toBe(1);
    expect(moved('payorch_webhook_delivery_duration_seconds_count', { outcome: 'failed' })).toBe(1);
    // The failed one waits for its retry.
    expect(queue(after)).toEqual([0, 1]);
    expect(valueOf(after, 'payorch_webhook_queue_oldest_due_seconds')).toBe(0);
  });

  it('should show the mail outbox at scrape time and count sends by result', async () => {
    const m = await merchant();
    const customer = await req(m, 'POST', '/v1/customers', { email: 'billing@example.com', name: 'Ada' });
    const invoice = await req(m, 'POST', '/v1/invoices', { customerId: customer.id, currency: 'usd', lineItems: [{ description: 'Consulting', unitAmount: 15000 }] });
    const outbox = (e: Exposition) => [valueOf(e, 'payorch_mail_outbox_depth', { state: 'due' }), valueOf(e, 'payorch_mail_outbox_depth', { state: 'scheduled' })];
    expect(outbox(await scrape())).toEqual([0, 0]);
    await req(m, 'POST', `/v1/invoices/${invoice.id}/send`);
    const before = await scrape();
    expect(outbox(before)).toEqual([1, 0]);
    expect((await app.server.services.mail.sendDue()).map((r) => r.status)).toEqual(['sent']);
    const after = await scrape();
    expect(outbox(after)).toEqual([0, 0]);
    expect(valueOf(after, 'payorch_mail_sends_total', { result: 'sent' }) - valueOf(before, 'payorch_mail_sends_total', { result: 'sent' })).toBe(1);
    expect(after.samples.map((s) => JSON.stringify(s)).join('\n')).not.toContain('billing@example.com');
  });

  it('should time each job run by outcome (the billing run is bill-subscriptions) and add up what the runs reported', async () => {
    const billing = JOBS.find((j) => j.name === 'bill-subscriptions')!;
    const broken: Job = { name: 'metrics-test-broken', schedule: '* * * * *', run: async () => { throw new Error('broken on purpose'); } };
    const counting: Job = { name: 'metrics-test-counting', schedule: '* * * * *', run: async () => ({ done: 3, skipped: 0 }) };
    const moved = await delta(
      [
        ['payorch_job_duration_seconds_count', { job_name: 'bill-subscriptions', outcome: 'ok' }],
        ['payorch_job_duration_seconds_count', { job_name: 'metrics-test-broken', outcome: 'error' }],
        ['payorch_job_duration_seconds_count', { job_name: 'metrics-test-counting', outcome: 'ok' }],
        ['payorch_job_items_total', { job_name: 'metrics-test-counting', item: 'done' }],
        ['payorch_job_items_total', { job_name: 'metrics-test-counting', item: 'skipped' }],
      ],
      async () => {
        await runJob(app.server.services, billing);
        await runJob(app.server.services, broken);
        await runJob(app.server.services, counting);
        await runJob(app.server.services, counting);
      },
    );
    expect(moved).toEqual([1, 1, 2, 6, 0]);
  });

  it(`should show the database pool (${DIALECT}) and replica lag only once the replicas' monitor sets it`, async () => {
    const exposition = await scrape();
    const pool = DIALECT === 'postgres' ? 'primary' : 'sqlite_writer';
    expect(valueOf(exposition, 'payorch_db_pool_max_connections', { pool })).toBe(DIALECT === 'postgres' ? 10 : 1);
    const used = valueOf(exposition, 'payorch_db_pool_connections', { pool, state: 'used' });
    const idle = valueOf(exposition, 'payorch_db_pool_connections', { pool, state: 'idle' });
    expect(used).toBeGreaterThanOrEqual(0);
    expect(used + idle).toBeLessThanOrEqual(DIALECT === 'postgres' ? 10 : 1);
    expect(valueOf(exposition, 'payorch_db_pool_waiting', { pool })).toBe(0);

    const { metrics } = app.server.services;
    expect(seriesOf(exposition, 'payorch_db_replica_lag_seconds')).toEqual([]);
    metrics.setReplicaLag('replica-a', 1.25);
    expect(valueOf(await scrape(), 'payorch_db_replica_lag_seconds', { replica: 'replica-a' })).toBe(1.25);
    metrics.forgetReplica('replica-a');
    expect(seriesOf(await scrape(), 'payorch_db_replica_lag_seconds')).toEqual([]);
  });

  it('should expose every metric the Grafana dashboard in docs/ queries', async () => {
    const dashboard = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'grafana-dashboard.json'), 'utf8'));
    const expressions: string[] = [];
    const walk = (node: unknown) => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object') {
        for (const [k, v] of Object.entries(node)) {
          if ((k === 'expr' || k === 'query') && typeof v === 'string') expressions.push(v);
          else walk(v);
        }
      }
    };
    walk(dashboard);
    expect(expressions.length).toBeGreaterThanOrEqual(15);
    const used = new Set(expressions.flatMap((e) => [...e.matchAll(/\bpayorch_[a-zA-Z0-9_]+/g)].map((m) => m[0])));
    const exposed = queryableNames(await scrape());
    expect([...used].filter((name) => !exposed.has(name))).toEqual([]);
    // Every family of series the service has is on the dashboard.
    const families = [...exposed].filter((n) => !n.startsWith('payorch_nodejs_') && !n.startsWith('payorch_process_') && !/_(bucket|sum|count)$/.test(n));
    const shown = new Set([...used].map((n) => n.replace(/_(bucket|sum|count)$/, '')));
    expect(families.filter((n) => !shown.has(n))).toEqual([]);
    expect(used.has('payorch_nodejs_eventloop_lag_p99_seconds')).toBe(true);
  });
});
