import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { spawnBeside, type SpawnedInstance } from '../helpers/spawn';
import { waitFor } from '../helpers/wait';

/**
 * Traces (issue 38): an instance started with OTEL_EXPORTER_OTLP_ENDPOINT exports its spans over
 * OTLP/HTTP (JSON) to the receiver here, a plain HTTP server; one started without it exports
 * nothing. The instances run in their own processes (`payorch start`), as tracing must start
 * before koa, pg and graphql are loaded.
 */

interface OtlpValue { stringValue?: string; intValue?: string | number; boolValue?: boolean; arrayValue?: { values?: OtlpValue[] } }
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: Array<{ key: string; value: OtlpValue }>;
}
interface ExportRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<{ key: string; value: OtlpValue }> };
    scopeSpans?: Array<{ spans?: OtlpSpan[] }>;
  }>;
}

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Record<string, unknown>;
  serviceName: unknown;
}

const plain = (v: OtlpValue): unknown =>
  v.arrayValue ? (v.arrayValue.values ?? []).map(plain) : v.stringValue ?? (v.intValue === undefined ? v.boolValue : Number(v.intValue));
const attributeMap = (list: Array<{ key: string; value: OtlpValue }> = []) => Object.fromEntries(list.map((a) => [a.key, plain(a.value)]));

/** An OTLP/HTTP collector in this process: keeps every body posted to /v1/traces as received. */
class OtlpReceiver {
  readonly bodies: string[] = [];
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') this.bodies.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  spans(): Span[] {
    return this.bodies.flatMap((body) => ((JSON.parse(body) as ExportRequest).resourceSpans ?? []).flatMap((rs) => {
      const serviceName = attributeMap(rs.resource?.attributes)['service.name'];
      return (rs.scopeSpans ?? []).flatMap((ss) => (ss.spans ?? []).map((s) => ({
        traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId || undefined, name: s.name, attributes: attributeMap(s.attributes), serviceName,
      })));
    }));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const CARD_NUMBER = '4242424242424242';
const card = { number: CARD_NUMBER, expMonth: 12, expYear: 2034, cvc: '123' };

let app: TestApp;
let key: string;
let failing: { id: string };
let working: { id: string };
let receiver: OtlpReceiver;
let receiverUrl: string;
const instances: SpawnedInstance[] = [];

beforeAll(async () => {
  app = await startTestApp();
  key = app.account.liveKey;
  const gateway = async (name: string, settings: Record<string, unknown> = {}) =>
    (await app.request('POST', '/v1/gateways', { key, body: { name, type: 'simulator', settings } })).body.data as { id: string };
  // The first gateway is down: every payment tries it, then charges the second.
  failing = await gateway('Down', { outage: true });
  working = await gateway('Up');
  const routed = await app.request('PUT', '/v1/routing', {
    key,
    body: { rules: [{ name: 'down-then-up', strategy: 'priority', gateways: [{ gatewayId: failing.id }, { gatewayId: working.id }] }], fallback: [], maxAttempts: 2 },
  });
  expect(routed.status).toBe(200);
  receiver = new OtlpReceiver();
  receiverUrl = await receiver.start();
});

afterAll(async () => {
  for (const instance of instances) await instance.stop();
  await receiver?.close();
  await app?.stop();
});

async function spawn(env: Record<string, string>): Promise<SpawnedInstance> {
  const instance = await spawnBeside(app, env);
  instances.push(instance);
  return instance;
}

const logLines = (instance: SpawnedInstance) =>
  instance.output.join('').split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);

describe('traces', () => {
  let traced: SpawnedInstance;
  beforeAll(async () => {
    // Batches sent every 50 ms: the test waits for the spans, not for the default 5 s.
    traced = await spawn({ OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl, OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_SERVICE_NAME: 'payorch-tracing-test' });
  });

  it("should export a payment's trace: the request with its id, its route, routing, each gateway attempt and the writes", async () => {
    const res = await traced.request('POST', '/v1/payments', { key, body: { amount: 1500, currency: 'usd', paymentMethod: 'card', card } });
    expect(res.status).toBe(201);
    expect(res.body.data.attempts.map((a: { gateway: string; outcome: string }) => [a.gateway, a.outcome])).toEqual([[failing.id, 'retryable_error'], [working.id, 'succeeded']]);
    const requestId = res.headers['x-request-id'] as string;
    const paymentId = res.body.data.id as string;

    // The server span ends last, once the answer is written.
    const server = await waitFor(() => receiver.spans().find((s) => s.attributes['payorch.request_id'] === requestId), { what: 'the request\'s server span' });
    const trace = () => receiver.spans().filter((s) => s.traceId === server.traceId);
    await waitFor(() => trace().filter((s) => s.name === 'payment.settle').length === 1, { what: 'the settling write\'s span' });
    const spans = trace();
    const named = (name: string) => spans.filter((s) => s.name === name);
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const ancestors = (s: Span): string[] => (s.parentSpanId && byId.has(s.parentSpanId) ? [s.parentSpanId, ...ancestors(byId.get(s.parentSpanId) as Span)] : []);

    expect(server.serviceName).toBe('payorch-tracing-test');
    expect(server.parentSpanId).toBeUndefined();
    expect(server.name).toBe('POST /v1/payments');
    expect(server.attributes).toMatchObject({ 'http.route': '/v1/payments', 'http.response.status_code': 201 });

    const [route] = named('router - /v1/payments');
    expect(route).toBeDefined();
    expect(route.parentSpanId).toBe(server.spanId);
    expect(route.attributes).toMatchObject({ 'koa.type': 'router', 'http.route': '/v1/payments' });

    const [create] = named('payment.create');
    expect(create.attributes).toMatchObject({ 'payorch.payment.id': paymentId, 'payorch.payment.status': 'succeeded', 'payorch.mode': 'live' });
    expect(ancestors(create)).toContain(route.spanId);

    const [routing] = named('routing.decide');
    expect(routing.parentSpanId).toBe(create.spanId);
    expect(routing.attributes).toMatchObject({ 'payorch.routing.rule': 'down-then-up', 'payorch.routing.gateways': [failing.id, working.id], 'payorch.routing.max_attempts': 2 });

    const attempts = named('gateway.charge').sort((a, b) => Number(a.attributes['payorch.attempt']) - Number(b.attributes['payorch.attempt']));
    expect(attempts.map((a) => [a.parentSpanId, a.attributes['payorch.gateway.id'], a.attributes['payorch.gateway.type'], a.attributes['payorch.gateway.outcome']])).toEqual([
      [create.spanId, failing.id, 'simulator', 'retryable_error'],
      [create.spanId, working.id, 'simulator', 'succeeded'],
    ]);

    const writes = [...named('payment.insert_pending'), ...named('payment.settle')];
    expect(writes.map((w) => [w.parentSpanId, w.attributes['payorch.payment.id']])).toEqual([[create.spanId, paymentId], [create.spanId, paymentId]]);
    if (DIALECT === 'postgres') {
      // Each write's statement, from the pg instrumentation, under the write (through its group commit).
      expect(writes.map((w) => w.attributes['db.system.name'])).toEqual(['postgresql', 'postgresql']);
      for (const write of writes) {
        const statements = spans.filter((s) => s.attributes['db.system'] === 'postgresql' || s.attributes['db.system.name'] === 'postgresql')
          .filter((s) => s !== write && ancestors(s).includes(write.spanId));
        expect(statements.length).toBeGreaterThan(0);
      }
      // Statement texts without their string literals (Sequelize inlines values: the routing
      // configuration's read names the account and mode in quotes).
      const texts = spans.map((s) => s.attributes['db.query.text']).filter((t): t is string => typeof t === 'string');
      expect(texts.some((t) => t.includes('routing_configs') && t.includes("'?'"))).toBe(true);
      expect(texts.filter((t) => t.replace(/'\?'/g, '').includes("'"))).toEqual([]);
    } else {
      // SQLite has no driver instrumentation: each write (one transaction) is a span, its statements are not.
      expect(writes.map((w) => w.attributes['db.system.name'])).toEqual(['sqlite', 'sqlite']);
    }

    // The request's log line names its trace.
    const access = await waitFor(() => logLines(traced).find((l) => l.msg === 'request' && l.requestId === requestId), { what: 'the access log line' });
    expect(access.traceId).toBe(server.traceId);
    expect(access.spanId).toBe(server.spanId);
  });

  it('should never export a card number, even one a client put in a path', async () => {
    const res = await traced.request('POST', '/v1/payments', { key, body: { amount: 700, currency: 'usd', paymentMethod: 'card', card } });
    expect(res.status).toBe(201);
    // GraphQL, the card written into the document itself (the instrumentation records the
    // document with its literal values replaced).
    const mutation = `mutation { createPayment(input: { amount: 800, currency: "usd", paymentMethod: "card", card: { number: "${CARD_NUMBER}", expMonth: 12, expYear: 2034, cvc: "123" } }) { id status } }`;
    const graphql = await traced.request('POST', '/graphql', { key, body: { query: mutation } });
    expect(graphql.body.data.createPayment.status).toBe('succeeded');
    const graphqlId = graphql.headers['x-request-id'] as string;
    const graphqlServer = await waitFor(() => receiver.spans().find((s) => s.attributes['payorch.request_id'] === graphqlId), { what: 'the GraphQL request\'s server span' });
    await waitFor(() => receiver.spans().some((s) => s.traceId === graphqlServer.traceId && s.name === 'payment.create'), { what: 'the GraphQL payment\'s span' });
    expect(graphqlServer.name).toBe('POST /graphql');
    const documents = receiver.spans().filter((s) => s.traceId === graphqlServer.traceId && typeof s.attributes['graphql.source'] === 'string');
    expect(documents.length).toBeGreaterThan(0);

    const lost = await traced.request('GET', `/v1/payments/${CARD_NUMBER}`, { key });
    expect(lost.status).toBe(404);
    const lostId = lost.headers['x-request-id'] as string;
    const server = await waitFor(() => receiver.spans().find((s) => s.attributes['payorch.request_id'] === lostId), { what: 'the 404\'s server span' });
    expect(JSON.stringify(server.attributes)).toContain('[redacted-card]');
    for (const body of receiver.bodies) expect(body).not.toContain(CARD_NUMBER);
  });

  it('should say where traces go at start', () => {
    expect(logLines(traced).find((l) => l.msg === 'traces exported over OTLP/HTTP')).toMatchObject({ endpoint: `${receiverUrl}/v1/traces` });
  });
});

describe('OTEL_NODE_DISABLED_INSTRUMENTATIONS', () => {
  it('should leave out the instrumentations it names and keep the service\'s own spans', async () => {
    // What an operator trades for CPU (bench/README.md): no route span, no statement spans.
    const instance = await spawn({ OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl, OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_NODE_DISABLED_INSTRUMENTATIONS: 'koa,pg' });
    const res = await instance.request('POST', '/v1/payments', { key, body: { amount: 1200, currency: 'usd', paymentMethod: 'card', card } });
    expect(res.status).toBe(201);
    const requestId = res.headers['x-request-id'];
    const server = await waitFor(() => receiver.spans().find((s) => s.attributes['payorch.request_id'] === requestId), { what: 'the request\'s server span' });
    await waitFor(() => receiver.spans().some((s) => s.traceId === server.traceId && s.name === 'payment.settle'), { what: 'the settling write\'s span' });
    const spans = receiver.spans().filter((s) => s.traceId === server.traceId);
    expect(server.name).toBe('POST /v1/payments');
    expect(spans.map((s) => s.name)).toEqual(expect.arrayContaining(['payment.create', 'routing.decide', 'gateway.charge', 'payment.insert_pending', 'payment.settle']));
    expect(spans.filter((s) => s.name.startsWith('router - ') || s.name.startsWith('pg.') || s.attributes['db.system'] === 'postgresql')).toEqual([]);
    await instance.stop();
  });
});

describe('stopping', () => {
  it('should send the spans still buffered when the instance stops', async () => {
    // Batches every minute: nothing goes out before the stop.
    const instance = await spawn({ OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl, OTEL_BSP_SCHEDULE_DELAY: '60000' });
    const res = await instance.request('POST', '/v1/payments', { key, body: { amount: 1100, currency: 'usd', paymentMethod: 'card', card } });
    expect(res.status).toBe(201);
    const requestId = res.headers['x-request-id'];
    const serverSpan = () => receiver.spans().find((s) => s.attributes['payorch.request_id'] === requestId);
    expect(serverSpan()).toBeUndefined();
    expect(await instance.stop()).toBe(0);
    expect(serverSpan()).toBeDefined();
    expect(receiver.spans().filter((s) => s.traceId === serverSpan()?.traceId).map((s) => s.name)).toEqual(expect.arrayContaining(['payment.create', 'payment.settle']));
  });
});

describe('without OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  it('should trace nothing: no exporter, no trace ids in the log', async () => {
    const exported = receiver.bodies.length;
    const untraced = await spawn({ OTEL_SERVICE_NAME: 'payorch-untraced' });
    const res = await untraced.request('POST', '/v1/payments', { key, body: { amount: 900, currency: 'usd', paymentMethod: 'card', card } });
    expect(res.status).toBe(201);
    const requestId = res.headers['x-request-id'];
    // Its access line is written: every line it wrote by then is there to look at.
    await waitFor(() => logLines(untraced).some((l) => l.msg === 'request' && l.requestId === requestId), { what: 'the access log line' });
    const lines = logLines(untraced);
    expect(lines.filter((l) => 'traceId' in l || 'spanId' in l)).toEqual([]);
    expect(lines.find((l) => l.msg === 'traces exported over OTLP/HTTP')).toBeUndefined();
    await untraced.stop();
    expect(receiver.spans().filter((s) => s.serviceName === 'payorch-untraced')).toEqual([]);
    expect(receiver.bodies.slice(exported).every((b) => !b.includes('payorch-untraced'))).toBe(true);
  });
});
