import { startTestApp, type TestApp } from '../helpers/app';
import { simulatorChargeCount } from '../../src/connectors/simulator/simulator.state';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ serviceOptions: { gatewayTimeoutMs: 150 } });
});
afterAll(() => app.stop());

describe('a gateway that answers after our timeout', () => {
  it('should settle the payment from the same key and never charge twice or fail over', async () => {
    const key = app.account.liveKey;
    const slow = (await app.request('POST', '/v1/gateways', { key, body: { name: 'Slow', type: 'simulator', settings: { latencyMs: 250 } } })).body.data;
    const spare = (await app.request('POST', '/v1/gateways', { key, body: { name: 'Spare', type: 'simulator' } })).body.data;
    await app.request('PUT', '/v1/routing', {
      key,
      body: { rules: [{ name: 'slow-first', strategy: 'priority', gateways: [{ gatewayId: slow.id }, { gatewayId: spare.id }] }], fallback: [], maxAttempts: 2 },
    });
    const res = await app.request('POST', '/v1/payments', {
      key,
      body: { amount: 1500, currency: 'usd', paymentMethod: 'card', card: { number: '4242424242424242', expMonth: 1, expYear: 2035, cvc: '123' } },
    });
    expect(res.status).toBe(201);
    const p = res.body.data;
    expect(p.status).toBe('succeeded');
    expect(p.gatewayId).toBe(slow.id);
    expect(p.attempts).toHaveLength(1);
    expect(simulatorChargeCount(slow.id, `${p.id}_a1`)).toBe(1);
    expect(simulatorChargeCount(spare.id, `${p.id}_a2`)).toBe(0);
    const txs = await app.request('GET', `/v1/payments/${p.id}/gateway-transactions`, { key });
    const kinds = txs.body.data.map((t: { kind: string; outcome: string }) => `${t.kind}:${t.outcome}`);
    expect(kinds).toContain('charge:timeout');
    expect(kinds.length).toBeGreaterThanOrEqual(2);
  });
});
