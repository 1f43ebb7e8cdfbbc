import { startTestApp, type TestApp } from '../helpers/app';
import { mulberry32 } from '../../src/modules/routing/rng';

let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp({ routingRng: mulberry32(42) });
  key = app.account.liveKey;
});
afterAll(() => app.stop());

const gateway = async (name: string, extra: Record<string, unknown> = {}) =>
  (await app.request('POST', '/v1/gateways', { key, body: { name, type: 'simulator', ...extra } })).body.data;
const card = { number: '4242424242424242', expMonth: 12, expYear: 2034, cvc: '123' };
const pay = (body: Record<string, unknown> = {}) =>
  app.request('POST', '/v1/payments', { key, body: { amount: 1000, currency: 'usd', paymentMethod: 'card', card, ...body } });

describe('gateway configuration', () => {
  it('should keep credentials write-only and encrypted at rest', async () => {
    const secretKey = 'sk_test_' + 'S3cr3tCredential'.repeat(2);
    const res = await app.request('POST', '/v1/gateways', { key, body: { name: 'Stripe EU', type: 'stripe', credentials: { secretKey }, currencies: ['eur'] } });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ object: 'gateway', type: 'stripe', credentialsSet: true, currencies: ['EUR'], enabled: true, livemode: true });
    expect(res.text).not.toContain(secretKey);
    const rows = await app.server.services.db.select<{ credentials_sealed: string }>('SELECT credentials_sealed FROM gateways WHERE id = $1', [res.body.data.id]);
    expect(rows[0].credentials_sealed).toMatch(/^v1\./);
    expect(rows[0].credentials_sealed).not.toContain('S3cr3t');
    const fetched = await app.request('GET', `/v1/gateways/${res.body.data.id}`, { key });
    expect(fetched.text).not.toContain(secretKey);
    await app.request('DELETE', `/v1/gateways/${res.body.data.id}`, { key });
  });

  it('should keep a simulator gateway\'s credentials write-only and sealed too', async () => {
    const apiKey = 'sim_' + 'Wr1teOnlyS3cret'.repeat(2);
    const res = await app.request('POST', '/v1/gateways', { key, body: { name: 'Sim with key', type: 'simulator', credentials: { apiKey } } });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ type: 'simulator', credentialsSet: true });
    expect(res.text).not.toContain(apiKey);
    const [row] = await app.server.services.db.select<{ credentials_sealed: string }>('SELECT credentials_sealed FROM gateways WHERE id = $1', [res.body.data.id]);
    expect(row.credentials_sealed).toMatch(/^v1\./);
    expect(row.credentials_sealed).not.toContain('Wr1teOnly');
    expect((await app.request('GET', `/v1/gateways/${res.body.data.id}`, { key })).text).not.toContain(apiKey);
    const notText = await app.request('POST', '/v1/gateways', { key, body: { name: 'Sim', type: 'simulator', credentials: { apiKey: 5 } } });
    expect(notText.status).toBe(400);
    await app.request('DELETE', `/v1/gateways/${res.body.data.id}`, { key });
  });

  it('should validate type and credentials with the param', async () => {
    const badType = await app.request('POST', '/v1/gateways', { key, body: { name: 'x', type: 'paypal' } });
    expect(badType.body.error).toMatchObject({ code: 'invalid_parameter', param: 'type' });
    const badCreds = await app.request('POST', '/v1/gateways', { key, body: { name: 'x', type: 'stripe', credentials: { secretKey: 'nope' } } });
    expect(badCreds.status).toBe(400);
    expect(badCreds.body.error.param).toMatch(/^credentials/);
    const missing = await app.request('POST', '/v1/gateways', { key, body: { name: 'x', type: 'stripe', credentials: {} } });
    expect(missing.body.error).toMatchObject({ code: 'missing_parameter', param: 'credentials.secretKey' });
    const unknown = await app.request('POST', '/v1/gateways', { key, body: { name: 'x', type: 'simulator', settings: { bogus: 1 } } });
    expect(unknown.body.error).toMatchObject({ code: 'unknown_parameter', param: 'settings.bogus' });
    // A value of the wrong type is invalid, not missing.
    const wrongType = await app.request('POST', '/v1/gateways', { key, body: { name: 'x', type: 'simulator', settings: { outage: 'yes' } } });
    expect(wrongType.body.error).toMatchObject({ code: 'invalid_parameter', param: 'settings.outage' });
    expect(wrongType.body.error.message).not.toMatch(/Missing/);
    const twice = await app.request('POST', '/v1/gateways', { key, body: { name: 'x', type: 'simulator', currencies: ['usd', 'USD', 'eur'] } });
    expect(twice.body.data.currencies).toEqual(['USD', 'EUR']);
  });

  it('should refuse to delete a gateway the routing rules name, over REST and GraphQL', async () => {
    const g = await gateway('Named');
    await app.request('PUT', '/v1/routing', { key, body: { rules: [], fallback: [g.id], maxAttempts: 1 } });
    const rest = await app.request('DELETE', `/v1/gateways/${g.id}`, { key });
    expect(rest.status).toBe(409);
    expect(rest.body.error.code).toBe('gateway_in_use');
    const graph = await app.request('POST', '/graphql', { key, body: { query: 'mutation($id: ID!) { deleteGateway(id: $id) { id } }', variables: { id: g.id } } });
    expect(graph.body.errors[0].extensions.code).toBe('gateway_in_use');
    await app.request('PUT', '/v1/routing', { key, body: { rules: [], fallback: [], maxAttempts: 3 } });
    expect((await app.request('DELETE', `/v1/gateways/${g.id}`, { key })).status).toBe(200);
  });

  it('should enable, disable and delete gateways', async () => {
    const g = await gateway('Toggle');
    const off = await app.request('PATCH', `/v1/gateways/${g.id}`, { key, body: { enabled: false } });
    expect(off.body.data.enabled).toBe(false);
    const del = await app.request('DELETE', `/v1/gateways/${g.id}`, { key });
    expect(del.status).toBe(200);
    expect((await app.request('GET', `/v1/gateways/${g.id}`, { key })).status).toBe(404);
  });
});

describe('routing', () => {
  let a: { id: string };
  let b: { id: string };
  let eurOnly: { id: string };
  beforeAll(async () => {
    a = await gateway('A');
    b = await gateway('B');
    eurOnly = await gateway('EUR only', { currencies: ['EUR'] });
  });

  it('should refuse rules naming unknown gateways with the param', async () => {
    const res = await app.request('PUT', '/v1/routing', {
      key,
      body: { rules: [{ name: 'r', strategy: 'priority', gateways: [{ gatewayId: a.id }, { gatewayId: 'gw_nope' }] }], fallback: [], maxAttempts: 2 },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe('rules[0].gateways[1].gatewayId');
  });

  it('should route by the first matching rule, then the fallback, and simulate without charging', async () => {
    const put = await app.request('PUT', '/v1/routing', {
      key,
      body: {
        rules: [
          { name: 'big-usd', when: { currency: ['USD'], amountGte: 5000 }, strategy: 'priority', gateways: [{ gatewayId: b.id }] },
          { name: 'eur', when: { currency: ['EUR'] }, strategy: 'priority', gateways: [{ gatewayId: eurOnly.id }] },
        ],
        fallback: [a.id],
        maxAttempts: 3,
      },
    });
    expect(put.status).toBe(200);
    const got = await app.request('GET', '/v1/routing', { key });
    expect(got.body.data.rules).toHaveLength(2);
    // What GET returned goes back as is (its object, livemode and updatedAt are read-only).
    const echoed = await app.request('PUT', '/v1/routing', { key, body: got.body.data });
    expect(echoed.status).toBe(200);
    expect(echoed.body.data.rules).toEqual(got.body.data.rules);
    const typo = await app.request('PUT', '/v1/routing', { key, body: { ...got.body.data, fallbacks: [] } });
    expect(typo.body.error).toMatchObject({ code: 'unknown_parameter', param: 'fallbacks' });
    const big = await app.request('POST', '/v1/routing/simulate', { key, body: { amount: 9000, currency: 'usd' } });
    expect(big.body.data).toMatchObject({ rule: 'big-usd', gateways: [b.id, a.id] });
    const small = await app.request('POST', '/v1/routing/simulate', { key, body: { amount: 100, currency: 'usd' } });
    expect(small.body.data).toMatchObject({ rule: null, gateways: [a.id] });
    const eur = await app.request('POST', '/v1/routing/simulate', { key, body: { amount: 100, currency: 'eur' } });
    expect(eur.body.data.gateways).toEqual([eurOnly.id, a.id]);
    // A brand no rule could name is refused, as PUT /v1/routing refuses it; case is ignored.
    const badBrand = await app.request('POST', '/v1/routing/simulate', { key, body: { amount: 100, currency: 'usd', cardBrand: 'foo' } });
    expect(badBrand.status).toBe(400);
    expect(badBrand.body.error).toMatchObject({ code: 'invalid_parameter', param: 'cardBrand' });
    expect((await app.request('POST', '/v1/routing/simulate', { key, body: { amount: 100, currency: 'usd', cardBrand: ' Visa ' } })).status).toBe(200);
    const paid = await pay({ amount: 9000 });
    expect(paid.body.data).toMatchObject({ status: 'succeeded', gatewayId: b.id });
  });

  it('should move to the next gateway on a retryable failure but never after a decline', async () => {
    await app.request('PUT', '/v1/routing', {
      key,
      body: { rules: [{ name: 'all', strategy: 'priority', gateways: [{ gatewayId: a.id }, { gatewayId: b.id }] }], fallback: [], maxAttempts: 3 },
    });
    const retried = await pay({ card: { ...card, number: '4000000000000119' } });
    expect(retried.body.data.status).toBe('failed');
    expect(retried.body.data.attempts.map((x: { gateway: string; outcome: string }) => [x.gateway, x.outcome])).toEqual([
      [a.id, 'retryable_error'], [b.id, 'retryable_error'],
    ]);
    const declined = await pay({ card: { ...card, number: '4000000000000002' } });
    expect(declined.body.data.attempts).toHaveLength(1);
    expect(declined.body.data.failureCode).toBe('card_declined');
    await app.request('PATCH', `/v1/gateways/${a.id}`, { key, body: { settings: { outage: true } } });
    const failover = await pay();
    expect(failover.body.data).toMatchObject({ status: 'succeeded', gatewayId: b.id });
    expect(failover.body.data.attempts.map((x: { outcome: string }) => x.outcome)).toEqual(['retryable_error', 'succeeded']);
    const txs = await app.request('GET', `/v1/payments/${failover.body.data.id}/gateway-transactions`, { key });
    expect(txs.body.meta.total).toBe(2);
  });

  it('should skip a gateway whose circuit is open after repeated errors', async () => {
    // A is in outage since the previous test; keep failing it until the breaker opens.
    for (let i = 0; i < 6; i++) await pay();
    const sim = await app.request('POST', '/v1/routing/simulate', { key, body: { amount: 1000, currency: 'usd' } });
    expect(sim.body.data.gateways).toEqual([b.id]);
    expect(sim.body.data.skipped).toEqual(expect.arrayContaining([expect.objectContaining({ gatewayId: a.id, reason: 'circuit_open' })]));
    const res = await pay();
    expect(res.body.data.attempts).toHaveLength(1);
    expect(res.body.data.gatewayId).toBe(b.id);
    await app.request('PATCH', `/v1/gateways/${a.id}`, { key, body: { settings: { outage: false } } });
  });

  it("should never open the built-in simulator's circuit: gateway-error test cards do not stop later test payments", async () => {
    const a = await app.createAccount();
    const testPay = (paymentMethod: string) =>
      app.request('POST', '/v1/payments', { key: a.testKey, body: { amount: 500, currency: 'usd', paymentMethod } });
    for (let i = 0; i < 8; i++) expect((await testPay('pm_card_gateway_error')).body.data).toMatchObject({ status: 'failed', failureCode: 'gateway_error' });
    // Five consecutive errors would open a configured gateway's circuit; test mode's last resort has none.
    const sim = await app.request('POST', '/v1/routing/simulate', { key: a.testKey, body: { amount: 500, currency: 'usd' } });
    expect(sim.body.data).toMatchObject({ gateways: ['gw_builtin_simulator'], skipped: [], usesBuiltinSimulator: true });
    expect((await testPay('pm_card_visa')).body.data).toMatchObject({ status: 'succeeded', gatewayId: 'gw_builtin_simulator' });
  });

  it('should honour maxAttempts', async () => {
    const c = await gateway('C', { settings: { outage: true } });
    const d = await gateway('D', { settings: { outage: true } });
    await app.request('PUT', '/v1/routing', {
      key,
      body: { rules: [{ name: 'two', strategy: 'priority', gateways: [{ gatewayId: c.id }, { gatewayId: d.id }, { gatewayId: b.id }] }], fallback: [], maxAttempts: 2 },
    });
    const res = await pay();
    expect(res.body.data.status).toBe('failed');
    expect(res.body.data.attempts).toHaveLength(2);
  });

  it('should split weighted traffic by weight', async () => {
    // Fresh gateways: A's circuit may still be cooling down from the outage above.
    const heavy = await gateway('Heavy');
    const light = await gateway('Light');
    await app.request('PUT', '/v1/routing', {
      key,
      body: { rules: [{ name: 'w', strategy: 'weighted', gateways: [{ gatewayId: heavy.id, weight: 70 }, { gatewayId: light.id, weight: 30 }] }], fallback: [], maxAttempts: 1 },
    });
    let first = 0;
    const n = 300;
    for (let i = 0; i < n; i++) {
      const sim = await app.request('POST', '/v1/routing/simulate', { key, body: { amount: 1000, currency: 'usd' } });
      if (sim.body.data.gateways[0] === heavy.id) first++;
    }
    expect(first / n).toBeGreaterThan(0.6);
    expect(first / n).toBeLessThan(0.8);
  });

  it('should answer 422 no_gateway_available in live mode when every gateway is disabled', async () => {
    await app.request('PUT', '/v1/routing', { key, body: { rules: [], fallback: [], maxAttempts: 3 } });
    const all = await app.request('GET', '/v1/gateways?pageSize=100', { key });
    for (const g of all.body.data) await app.request('PATCH', `/v1/gateways/${g.id}`, { key, body: { enabled: false } });
    const res = await pay();
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('no_gateway_available');
  });

  it('should fall back to the built-in simulator in test mode whenever no configured gateway is eligible', async () => {
    const k = (await app.createAccount()).testKey;
    const testPay = (currency: string, paymentMethod = 'pm_card_visa') =>
      app.request('POST', '/v1/payments', { key: k, body: { amount: 700, currency, paymentMethod } });
    const simulate = async (currency: string) => (await app.request('POST', '/v1/routing/simulate', { key: k, body: { amount: 700, currency } })).body.data;
    const eur = (await app.request('POST', '/v1/gateways', { key: k, body: { name: 'EUR only', type: 'simulator', currencies: ['EUR'] } })).body.data;
    // The configured gateway when it is eligible ...
    expect((await testPay('eur')).body.data).toMatchObject({ status: 'succeeded', gatewayId: eur.id });
    // ... the simulator when it does not take the currency ...
    expect(await simulate('usd')).toMatchObject({ gateways: ['gw_builtin_simulator'], usesBuiltinSimulator: true });
    expect((await testPay('usd')).body.data).toMatchObject({ status: 'succeeded', gatewayId: 'gw_builtin_simulator' });
    // ... when its circuit is open (listed as skipped) ...
    await app.request('PATCH', `/v1/gateways/${eur.id}`, { key: k, body: { settings: { outage: true } } });
    for (let i = 0; i < 5; i++) expect((await testPay('eur')).body.data.attempts[0].gateway).toBe(eur.id);
    expect(await simulate('eur')).toMatchObject({
      gateways: ['gw_builtin_simulator'], usesBuiltinSimulator: true, skipped: [{ gatewayId: eur.id, reason: 'circuit_open' }],
    });
    expect((await testPay('eur')).body.data).toMatchObject({ status: 'succeeded', gatewayId: 'gw_builtin_simulator' });
    // ... and when it is disabled.
    await app.request('PATCH', `/v1/gateways/${eur.id}`, { key: k, body: { enabled: false, settings: { outage: false } } });
    expect((await testPay('eur')).body.data).toMatchObject({ status: 'succeeded', gatewayId: 'gw_builtin_simulator' });
  });

  it('should not fall back for a saved card whose own gateway cannot take the payment, in test mode either', async () => {
    const k = (await app.createAccount()).testKey;
    const g = (await app.request('POST', '/v1/gateways', { key: k, body: { name: 'Cards', type: 'simulator' } })).body.data;
    const cid = (await app.request('POST', '/v1/customers', { key: k, body: { email: 'saved-fallback@example.com' } })).body.data.id;
    const saved = await app.request('POST', `/v1/customers/${cid}/payment-methods`, {
      key: k, body: { card: { number: '4242424242424242', expMonth: 1, expYear: 2033, cvc: '123' } },
    });
    expect(saved.body.data.gatewayId).toBe(g.id);
    await app.request('PATCH', `/v1/gateways/${g.id}`, { key: k, body: { enabled: false } });
    // The simulator holds no token for this card: nothing can charge it.
    const res = await app.request('POST', '/v1/payments', { key: k, body: { amount: 700, currency: 'usd', paymentMethod: saved.body.data.id } });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('no_gateway_available');
  });
});
