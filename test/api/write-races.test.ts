import { startTestApp, type TestApp } from '../helpers/app';
import type { HttpResponse } from '../helpers/http';
import { MAX_ENDPOINTS } from '../../src/modules/webhooks/endpoint.service';

// Concurrent writes of one kind over real HTTPS: no 5xx, and the final state is one that some
// order of the same writes, one at a time, would have left. The races are PostgreSQL's (SQLite
// runs one writer at a time), but a check made outside the writing transaction races on both.

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const N = 20;
const times = <T>(n: number, fn: (i: number) => Promise<T>) => Promise.all(Array.from({ length: n }, (_, i) => fn(i)));
const card = { number: '4242424242424242', expMonth: 12, expYear: 2034, cvc: '123' };

function expectNo5xx(responses: HttpResponse[]): void {
  const failed = responses.filter((r) => r.status >= 500).map((r) => `${r.status} ${r.text}`);
  expect(failed).toEqual([]);
}

async function freshKey(): Promise<string> {
  return (await app.createAccount()).liveKey;
}

async function gateway(key: string, name = 'Sim'): Promise<string> {
  const res = await app.request('POST', '/v1/gateways', { key, body: { name, type: 'simulator' } });
  expect(res.status).toBe(201);
  return res.body.data.id;
}

describe('concurrent writes', () => {
  it('should take 20 concurrent identical PUT /v1/routing without a 5xx', async () => {
    const key = await freshKey();
    const gw = await gateway(key);
    const body = { rules: [{ name: 'all', strategy: 'priority', gateways: [{ gatewayId: gw }] }], fallback: [gw], maxAttempts: 2 };
    const puts = await times(N, () => app.request('PUT', '/v1/routing', { key, body }));
    expectNo5xx(puts);
    expect(puts.map((r) => r.status)).toEqual(Array(N).fill(200));
    const got = await app.request('GET', '/v1/routing', { key });
    expect(got.body.data).toMatchObject({ fallback: [gw], maxAttempts: 2, rules: [{ name: 'all' }] });
  });

  it('should leave exactly one of 20 competing rule sets', async () => {
    const key = await freshKey();
    const gw = await gateway(key);
    const puts = await times(N, (i) => app.request('PUT', '/v1/routing', { key, body: { rules: [], fallback: [gw], maxAttempts: 1 + (i % 5) } }));
    expectNo5xx(puts);
    const got = (await app.request('GET', '/v1/routing', { key })).body.data;
    // The stored set is what one of the PUTs answered, update time included.
    expect(puts.some((r) => r.body.data.maxAttempts === got.maxAttempts && r.body.data.updatedAt === got.updatedAt)).toBe(true);
  });

  it('should take 20 concurrent identical PUT /v1/fx-rates without a 5xx', async () => {
    const key = await freshKey();
    const rates = [{ from: 'EUR', to: 'USD', rate: '1.1' }, { from: 'GBP', to: 'USD', rate: '1.27' }];
    // A table to replace first: replacing existing rows is where DELETE-then-INSERT collided.
    expect((await app.request('PUT', '/v1/fx-rates', { key, body: { rates } })).status).toBe(200);
    const puts = await times(N, () => app.request('PUT', '/v1/fx-rates', { key, body: { rates } }));
    expectNo5xx(puts);
    expect(puts.map((r) => r.status)).toEqual(Array(N).fill(200));
    const got = await app.request('GET', '/v1/fx-rates', { key });
    expect(got.body.data.rates.map((r: { from: string; to: string; rate: string }) => [r.from, r.to, r.rate])).toEqual([['EUR', 'USD', '1.1'], ['GBP', 'USD', '1.27']]);
  });

  it('should leave one whole table of 20 competing PUT /v1/fx-rates, never a mix', async () => {
    const key = await freshKey();
    const tableOf = (i: number) => [{ from: 'EUR', to: 'USD', rate: `1.${i}` }, { from: i % 2 ? 'GBP' : 'CHF', to: 'USD', rate: `2.${i}` }];
    const puts = await times(N, (i) => app.request('PUT', '/v1/fx-rates', { key, body: { rates: tableOf(i) } }));
    expectNo5xx(puts);
    const got = (await app.request('GET', '/v1/fx-rates', { key })).body.data.rates as Array<{ from: string; to: string; rate: string }>;
    const shown = got.map((r) => `${r.from}${r.to}=${r.rate}`).sort();
    const tables = Array.from({ length: N }, (_, i) => tableOf(i).map((r) => `${r.from}${r.to}=${r.rate}`).sort());
    expect(tables).toContainEqual(shown);
  });

  it('should apply 20 concurrent gateway setting changes one at a time, and delete a gateway once', async () => {
    const key = await freshKey();
    const gw = await gateway(key);
    const patches = await times(N, (i) => app.request('PATCH', `/v1/gateways/${gw}`, { key, body: { settings: { latencyMs: i } } }));
    expectNo5xx(patches);
    expect(patches.map((r) => r.status)).toEqual(Array(N).fill(200));
    const got = (await app.request('GET', `/v1/gateways/${gw}`, { key })).body.data;
    expect(patches.some((r) => r.body.data.settings.latencyMs === got.settings.latencyMs && r.body.data.updatedAt === got.updatedAt)).toBe(true);

    const deletes = await times(N, () => app.request('DELETE', `/v1/gateways/${gw}`, { key }));
    expectNo5xx(deletes);
    // As one after another: the first deletes it, the rest find no such gateway.
    expect(deletes.filter((r) => r.status === 200)).toHaveLength(1);
    expect(deletes.filter((r) => r.status === 404)).toHaveLength(N - 1);
  });

  it('should make exactly one of 20 concurrently saved first cards the default', async () => {
    const key = await freshKey();
    const customer = (await app.request('POST', '/v1/customers', { key, body: { email: 'first-card@example.com' } })).body.data;
    await gateway(key);
    const saves = await times(N, () => app.request('POST', `/v1/customers/${customer.id}/payment-methods`, { key, body: { card } }));
    expectNo5xx(saves);
    expect(saves.map((r) => r.status)).toEqual(Array(N).fill(201));
    const defaults = saves.filter((r) => r.body.data.isDefault);
    expect(defaults).toHaveLength(1);
    const after = (await app.request('GET', `/v1/customers/${customer.id}`, { key })).body.data;
    expect(after.defaultPaymentMethodId).toBe(defaults[0].body.data.id);
    const events = await app.server.services.db.select<{ id: string }>(
      "SELECT id FROM events WHERE type = 'customer.updated' AND data LIKE $1", [`%${customer.id}%`],
    );
    expect(events).toHaveLength(1);
  });

  it('should leave the last of 20 concurrent setDefault saves as the default, and say so in its answer', async () => {
    const key = await freshKey();
    const customer = (await app.request('POST', '/v1/customers', { key, body: { email: 'set-default@example.com' } })).body.data;
    await gateway(key);
    const saves = await times(N, () => app.request('POST', `/v1/customers/${customer.id}/payment-methods`, { key, body: { card, setDefault: true } }));
    expectNo5xx(saves);
    const after = (await app.request('GET', `/v1/customers/${customer.id}`, { key })).body.data;
    expect(saves.map((r) => r.body.data.id)).toContain(after.defaultPaymentMethodId);
    // One customer.updated per save; the last one written is the customer as it now is.
    const rows = await app.server.services.db.select<{ data: string }>(
      "SELECT data FROM events WHERE type = 'customer.updated' AND data LIKE $1", [`%${customer.id}%`],
    );
    expect(rows).toHaveLength(N);
    const reported = rows.map((r) => JSON.parse(r.data).object).find((c: { defaultPaymentMethodId: string }) => c.defaultPaymentMethodId === after.defaultPaymentMethodId);
    expect(reported).toMatchObject({ defaultPaymentMethodId: after.defaultPaymentMethodId, updatedAt: after.updatedAt });
    const listed = await app.request('GET', `/v1/customers/${customer.id}/payment-methods?pageSize=100`, { key });
    expect(listed.body.data.filter((m: { isDefault: boolean }) => m.isDefault).map((m: { id: string }) => m.id)).toEqual([after.defaultPaymentMethodId]);
  });

  it('should revoke a key once when 20 revocations race: every answer shows the same revocation', async () => {
    const key = await freshKey();
    const made = await app.request('POST', '/v1/api-keys', { key, body: { name: 'to revoke' } });
    expect(made.status).toBe(201);
    const revokes = await times(N, () => app.request('DELETE', `/v1/api-keys/${made.body.data.id}`, { key }));
    expectNo5xx(revokes);
    expect(revokes.map((r) => r.status)).toEqual(Array(N).fill(200));
    const listed = (await app.request('GET', '/v1/api-keys?pageSize=100', { key })).body.data.find((k: { id: string }) => k.id === made.body.data.id);
    expect(listed.revokedAt).not.toBeNull();
    expect(new Set(revokes.map((r) => r.body.data.revokedAt))).toEqual(new Set([listed.revokedAt]));
  });

  it(`should never let 20 concurrent creates pass the cap of ${MAX_ENDPOINTS} webhook endpoints`, async () => {
    // Test mode: a live endpoint may not name a loopback address, whatever WEBHOOK_ALLOW_PRIVATE says.
    const key = (await app.createAccount()).testKey;
    const creates = await times(N, (i) => app.request('POST', '/v1/webhook-endpoints', { key, body: { url: `https://127.0.0.1:9/hook/${i}`, events: ['*'] } }));
    expectNo5xx(creates);
    expect(creates.filter((r) => r.status === 201)).toHaveLength(MAX_ENDPOINTS);
    const refused = creates.filter((r) => r.status !== 201);
    expect(refused.map((r) => r.body.error.code)).toEqual(Array(N - MAX_ENDPOINTS).fill('limit_exceeded'));
    const listed = await app.request('GET', '/v1/webhook-endpoints?pageSize=100', { key });
    expect(listed.body.data).toHaveLength(MAX_ENDPOINTS);
  });

  it('should keep every key of 20 concurrent product and price metadata patches', async () => {
    const key = await freshKey();
    const product = (await app.request('POST', '/v1/products', { key, body: { name: 'Plan' } })).body.data;
    const price = (await app.request('POST', '/v1/prices', { key, body: { productId: product.id, unitAmount: 500, currency: 'usd' } })).body.data;
    const keys = Array.from({ length: N }, (_, i) => `k${i}`);
    for (const path of [`/v1/products/${product.id}`, `/v1/prices/${price.id}`]) {
      const patches = await times(N, (i) => app.request('PATCH', path, { key, body: { metadata: { [keys[i]]: 'v' } } }));
      expectNo5xx(patches);
      expect(patches.map((r) => r.status)).toEqual(Array(N).fill(200));
      // Each merge starts from the one before it: none is lost.
      expect(Object.keys((await app.request('GET', path, { key })).body.data.metadata).sort()).toEqual([...keys].sort());
    }
  });
});

describe('deleting a gateway while the routing rules are replaced', () => {
  it('should never leave rules naming a deleted gateway', async () => {
    const key = await freshKey();
    const keeper = await gateway(key, 'Keeper');
    const outcomes = new Set<string>();
    for (let round = 0; round < 20; round++) {
      const doomed = await gateway(key, `Doomed ${round}`);
      const rules = { rules: [{ name: 'r', strategy: 'priority', gateways: [{ gatewayId: doomed }] }], fallback: [keeper] };
      const [put, del] = await Promise.all([
        app.request('PUT', '/v1/routing', { key, body: rules }),
        app.request('DELETE', `/v1/gateways/${doomed}`, { key }),
      ]);
      expectNo5xx([put, del]);
      outcomes.add(`${put.status}/${del.status}`);
      // One of them wins: the rules name it and the delete is refused, or it is gone and the rules are refused.
      expect([put.status, del.status].sort()).not.toEqual([200, 200]);
      const named = (await app.request('GET', '/v1/routing', { key })).body.data.rules.flatMap((r: { gateways: Array<{ gatewayId: string }> }) => r.gateways.map((g) => g.gatewayId));
      for (const id of named) expect((await app.request('GET', `/v1/gateways/${id}`, { key })).status).toBe(200);
    }
    expect([...outcomes].every((o) => o === '200/409' || o === '400/200')).toBe(true);
  });
});
