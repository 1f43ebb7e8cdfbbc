import { Writable } from 'node:stream';
import { ConfigError, loadConfig } from '../../src/config';
import { EventBus, type PublishedEvent } from '../../src/core/event-bus';
import { createLogger } from '../../src/logger';
import { Metrics } from '../../src/observability/metrics';
import { parseExposition, seriesOf, valueOf } from '../helpers/metrics';

function capture(): { warnings: () => Array<Record<string, unknown>>; stream: Writable } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return { stream, warnings: () => text.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.level === 'warn' || l.level === 40) };
}

const event = (type: string, object: Record<string, unknown>): PublishedEvent => ({
  id: `evt_${Math.random().toString(36).slice(2)}`, object: 'event', type, createdAt: new Date().toISOString(), livemode: false, accountId: 'acct_secret123', data: { object },
});

const scrape = async (metrics: Metrics) => parseExposition(await metrics.exposition());
const instances: Metrics[] = [];
const enabled = (logger?: ReturnType<typeof createLogger>) => {
  const metrics = new Metrics(true, logger);
  instances.push(metrics);
  return metrics;
};
afterEach(() => {
  for (const m of instances.splice(0)) m.close();
});

describe('Metrics', () => {
  it('should keep the series of two instances in one process apart (a registry each)', async () => {
    const a = enabled();
    const b = enabled();
    a.observeHttp('GET', '/v1/payments/:id', 200, 0.002);
    a.observeHttp('GET', '/v1/payments/:id', 200, 0.003);
    b.observeHttp('GET', '/v1/payments/:id', 200, 0.004);
    const labels = { method: 'GET', route: '/v1/payments/:id', status: '200' };
    expect(valueOf(await scrape(a), 'payorch_http_request_duration_seconds_count', labels)).toBe(2);
    expect(valueOf(await scrape(b), 'payorch_http_request_duration_seconds_count', labels)).toBe(1);
  });

  it('should count the payments and refunds committed on this instance by status and gateway, not the events other instances committed', async () => {
    const bus = new EventBus();
    const metrics = enabled();
    metrics.watch({}, bus);
    bus.publish(event('payment.succeeded', { id: 'pay_1', status: 'succeeded', gatewayId: 'gw_a' }));
    bus.publish(event('payment.failed', { id: 'pay_2', status: 'failed', gatewayId: null }));
    bus.publish(event('payment.updated', { id: 'pay_1', status: 'succeeded', gatewayId: 'gw_a' }));
    bus.publish(event('refund.created', { id: 're_1', status: 'pending', gatewayId: 'gw_a' }));
    bus.publish(event('customer.created', { id: 'cus_1', email: 'a@example.com' }));
    // Another instance's commit, delivered here for its streams: counted there, not here.
    bus.deliverLocal(event('payment.succeeded', { id: 'pay_3', status: 'succeeded', gatewayId: 'gw_a' }));
    const e = await scrape(metrics);
    expect(seriesOf(e, 'payorch_payments_total').map((s) => [s.labels, s.value])).toEqual(expect.arrayContaining([
      [{ status: 'succeeded', gateway: 'gw_a' }, 1],
      [{ status: 'failed', gateway: 'none' }, 1],
    ]));
    expect(seriesOf(e, 'payorch_payments_total')).toHaveLength(2);
    expect(seriesOf(e, 'payorch_refunds_total').map((s) => [s.labels, s.value])).toEqual([[{ status: 'pending', gateway: 'gw_a' }, 1]]);
    const text = await metrics.exposition();
    for (const secret of ['acct_secret123', 'pay_1', 're_1', 'a@example.com']) expect(text).not.toContain(secret);

    // Closed (the services shut down), it stops listening.
    metrics.close();
    bus.publish(event('payment.succeeded', { id: 'pay_4', status: 'succeeded', gatewayId: 'gw_a' }));
    expect(valueOf(await scrape(metrics), 'payorch_payments_total', { status: 'succeeded', gateway: 'gw_a' })).toBe(1);
  });

  it("should read an outbox's two gauges with one read per scrape, at scrape time", async () => {
    const metrics = enabled();
    let reads = 0;
    const now = new Date('2026-11-29T10:00:00.000Z');
    metrics.watch({
      now: () => now,
      webhookQueue: async (at) => {
        reads += 1;
        expect(at).toBe(now);
        return { due: 3, scheduled: 4, oldestDueAt: new Date(now.getTime() - 12_500) };
      },
    });
    expect(reads).toBe(0);
    const e = await scrape(metrics);
    expect(reads).toBe(1);
    expect([valueOf(e, 'payorch_webhook_queue_depth', { state: 'due' }), valueOf(e, 'payorch_webhook_queue_depth', { state: 'scheduled' })]).toEqual([3, 4]);
    expect(valueOf(e, 'payorch_webhook_queue_oldest_due_seconds')).toBe(12.5);
    await scrape(metrics);
    expect(reads).toBe(2);
  });

  it('should leave out the depth (and give NaN as the age) of a scrape-time read that failed, keep the other series, and log the failure at most once a minute', async () => {
    const out = capture();
    const metrics = enabled(createLogger('info', out.stream));
    let down = true;
    metrics.watch({
      mailOutbox: async () => {
        if (down) throw new Error('database unreachable');
        return { due: 1, scheduled: 0, oldestDueAt: null };
      },
    });
    metrics.observeHttp('GET', '/health', 200, 0.001);
    for (let i = 0; i < 2; i++) {
      const e = await scrape(metrics);
      expect(seriesOf(e, 'payorch_mail_outbox_depth')).toEqual([]);
      expect(valueOf(e, 'payorch_mail_outbox_oldest_due_seconds')).toBeNaN();
      expect(valueOf(e, 'payorch_http_request_duration_seconds_count', { method: 'GET', route: '/health', status: '200' })).toBe(1);
    }
    expect(out.warnings()).toHaveLength(1);
    expect(out.warnings()[0]).toMatchObject({ source: 'mail outbox', msg: expect.stringContaining('scrape-time read failed') });
    down = false;
    expect(valueOf(await scrape(metrics), 'payorch_mail_outbox_depth', { state: 'due' })).toBe(1);
  });

  it('should record nothing and register nothing when disabled', async () => {
    const bus = new EventBus();
    const metrics = new Metrics(false);
    metrics.watch({ dbPools: () => [{ pool: 'primary', max: 10, used: 1, idle: 1, waiting: 0 }] }, bus);
    metrics.observeHttp('GET', '/health', 200, 0.001);
    metrics.observeGatewayCall('gw_a', 'simulator', 'charge', 'succeeded', 0.01);
    metrics.setReplicaLag('replica-a', 1);
    bus.publish(event('payment.succeeded', { status: 'succeeded', gatewayId: 'gw_a' }));
    expect((await metrics.exposition()).trim()).toBe('');
  });
});

describe('metrics configuration', () => {
  const refusal = (env: NodeJS.ProcessEnv) => {
    try {
      loadConfig(env);
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      return (e as Error).message;
    }
    throw new Error('accepted');
  };

  it('should expose nothing unless METRICS_PORT or METRICS_TOKEN is set, and bind the metrics port to 127.0.0.1 by default', () => {
    expect(loadConfig({})).toMatchObject({ metricsPort: undefined, metricsToken: undefined, metricsHost: '127.0.0.1' });
    expect(loadConfig({ METRICS_PORT: '9464', METRICS_HOST: '10.0.0.5', METRICS_TOKEN: 'a-long-enough-token' })).toMatchObject({
      metricsPort: 9464, metricsHost: '10.0.0.5', metricsToken: 'a-long-enough-token',
    });
  });

  it('should refuse a short or spaced token without echoing it, and a metrics port that is PORT or HTTP_PORT', () => {
    for (const token of ['s3cret', 'a token with spaces in it']) {
      const message = refusal({ METRICS_TOKEN: token });
      expect(message).toBe('Invalid configuration: METRICS_TOKEN must be 16 to 256 printable characters without spaces (a bearer token)');
    }
    expect(refusal({ METRICS_PORT: '8443' })).toBe('Invalid configuration: METRICS_PORT must differ from PORT and HTTP_PORT (got "8443")');
    expect(refusal({ METRICS_PORT: '9000', HTTP_PORT: '9000' })).toContain('METRICS_PORT must differ from PORT and HTTP_PORT');
    expect(loadConfig({ METRICS_PORT: '0', PORT: '0' }).metricsPort).toBe(0);
  });
});
