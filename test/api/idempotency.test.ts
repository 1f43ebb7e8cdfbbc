import { createHash } from 'node:crypto';
import { FixedClock } from '../../src/core/clock';
import { canonicalJson } from '../../src/modules/idempotency/idempotency.service';
import { startTestApp, type TestApp } from '../helpers/app';
import { spawnBeside, type SpawnedInstance } from '../helpers/spawn';

/** A GraphQL answer's text with its `extensions.cost.remaining` left out: the budget left is each request's own, a replay's too. */
const withoutBudget = (text: string) => text.replace(/("cost":\{"requested":\d+,"actual":\d+),"remaining":\d+\}/, '$1}');

const clock = new FixedClock(new Date('2026-11-01T10:00:00.000Z'));
let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp({ clock });
  key = app.account.testKey;
});
afterAll(() => app.stop());

const create = (idem: string, body: unknown, path = '/v1/customers') =>
  app.request('POST', path, { key, body, headers: { 'Idempotency-Key': idem } });

describe('idempotency', () => {
  it('should replay the first outcome byte for byte with Idempotent-Replayed', async () => {
    const first = await create('idem-replay', { email: 'replay@example.com', metadata: { a: '1', b: '2' } });
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    clock.advance(1000);
    // Same JSON with keys in another order is the same request.
    const again = await create('idem-replay', { metadata: { b: '2', a: '1' }, email: 'replay@example.com' }, '/api/v1/customers');
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    const list = await app.request('GET', '/v1/customers?search=replay@', { key });
    expect(list.body.meta.total).toBe(1);
  });

  it('should not use up a key on a request refused by validation: the corrected retry runs', async () => {
    const first = await create('idem-400', { email: 'bad' });
    expect(first.status).toBe(400);
    expect(first.body.error.param).toBe('email');
    const fixed = await create('idem-400', { email: 'fixed@example.com' });
    expect(fixed.status).toBe(201);
    expect(fixed.headers['idempotent-replayed']).toBeUndefined();
    const again = await create('idem-400', { email: 'fixed@example.com' });
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(fixed.text);
  });

  it('should not use up a key on a request whose parent does not exist: the retry after creating it runs', async () => {
    const body = { productId: 'prod_notyet', unitAmount: 500, currency: 'USD' };
    const missing = await create('idem-404', body, '/v1/prices');
    expect(missing.status).toBe(404);
    const product = await app.request('POST', '/v1/products', { key, body: { name: 'Later' } });
    const retry = await create('idem-404', { ...body, productId: product.body.data.id }, '/v1/prices');
    expect(retry.status).toBe(201);
    expect(retry.body.data.productId).toBe(product.body.data.id);
  });

  it('should not use up a key on a request refused for lack of permission', async () => {
    const readOnly = await app.request('POST', '/v1/api-keys', { key, body: { permissions: ['customers:read'] } });
    const refused = await app.request('POST', '/v1/customers', { key: readOnly.body.data.secret, body: { email: 'perm403@example.com' }, headers: { 'Idempotency-Key': 'idem-403' } });
    expect(refused.status).toBe(403);
    const allowed = await create('idem-403', { email: 'perm403@example.com' });
    expect(allowed.status).toBe(201);
  });

  it('should refuse the same key with a different request with 409 idempotency_key_reused', async () => {
    await create('idem-reuse', { email: 'reuse1@example.com' });
    const other = await create('idem-reuse', { email: 'reuse2@example.com' });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    const otherPath = await create('idem-reuse', { name: 'Same key, other operation' }, '/v1/products');
    expect(otherPath.status).toBe(409);
    expect(otherPath.body.error.code).toBe('idempotency_key_reused');
  });

  it('should keep a keyed fingerprint without the CVC, so a stored row gives no card data back', async () => {
    const card = { number: '4000056655665556', expMonth: 3, expYear: 2031, cvc: '987' };
    const body = { amount: 700, currency: 'usd', paymentMethod: 'card', card };
    const first = await create('idem-card', body, '/v1/payments');
    expect(first.status).toBe(201);
    const [row] = await app.server.services.db.select<{ request_hash: string }>("SELECT request_hash FROM idempotency_keys WHERE idempotency_key = 'idem-card'");
    // Not the unkeyed hash of the request, which anyone could test guesses of digits against.
    const plain = createHash('sha256').update(`POST /v1/payments\n${canonicalJson(body)}`).digest('hex');
    expect(row.request_hash).not.toBe(plain);
    expect(row.request_hash).toMatch(/^[0-9a-f]{64}$/);
    // The CVC is not part of it: only a different CVC is still the same request.
    const again = await create('idem-card', { ...body, card: { ...card, cvc: '123' } }, '/v1/payments');
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
  });

  it('should leave out only the card\'s CVC: a cvc anywhere else in the body is part of the request', async () => {
    const body = { amount: 710, currency: 'usd', paymentMethod: 'pm_card_visa', metadata: { cvc: 'x' } };
    const first = await create('idem-metadata-cvc', body, '/v1/payments');
    expect(first.status).toBe(201);
    const other = await create('idem-metadata-cvc', { ...body, metadata: { cvc: 'y' } }, '/v1/payments');
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    // The saved-card route's card is a card too: its CVC alone does not make another request.
    const customer = (await app.request('POST', '/v1/customers', { key, body: { email: 'cvc-saved@example.com' } })).body.data;
    const card = { number: '4242424242424242', expMonth: 4, expYear: 2032, cvc: '111' };
    const path = `/v1/customers/${customer.id}/payment-methods`;
    const saved = await create('idem-saved-cvc', { card }, path);
    expect(saved.status).toBe(201);
    const sameCard = await create('idem-saved-cvc', { card: { ...card, cvc: '222' } }, path);
    expect(sameCard.headers['idempotent-replayed']).toBe('true');
    expect(sameCard.text).toBe(saved.text);
  });

  it("should not replay one API key's answer to another key of the account", async () => {
    const created = await create('idem-perm', { email: 'perm@example.com' });
    expect(created.status).toBe(201);
    const narrow = await app.request('POST', '/v1/api-keys', { key, body: { permissions: ['customers:write'] } });
    const other = await app.request('POST', '/v1/customers', { key: narrow.body.data.secret, body: { email: 'perm@example.com' }, headers: { 'Idempotency-Key': 'idem-perm' } });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('idempotency_key_reused');
    expect(other.text).not.toContain('perm@example.com');
  });

  it('should answer keys stored before fingerprints were keyed (marked legacy) from their stored response', async () => {
    const first = await create('idem-legacy', { email: 'legacy@example.com' });
    await app.server.services.db.execute("UPDATE idempotency_keys SET request_hash = 'legacy' WHERE idempotency_key = 'idem-legacy'");
    const again = await create('idem-legacy', { email: 'legacy@example.com' });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
  });

  it('should scope keys by account and mode', async () => {
    await create('idem-scope', { email: 'scope@example.com' });
    const live = await app.request('POST', '/v1/customers', { key: app.account.liveKey, body: { email: 'scope@example.com' }, headers: { 'Idempotency-Key': 'idem-scope' } });
    expect(live.status).toBe(201);
    expect(live.headers['idempotent-replayed']).toBeUndefined();
  });

  it('should create exactly one customer from 20 concurrent first uses of a key', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => create('idem-concurrent', { email: 'concurrent@example.com' })));
    const created = results.filter((r) => r.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    for (const r of results) {
      if (r.status === 201) expect(r.text).toBe(created[0].text);
      else expect(r.body.error.code).toBe('idempotency_key_in_use');
    }
    const list = await app.request('GET', '/v1/customers?search=concurrent@', { key });
    expect(list.body.meta.total).toBe(1);
  });

  it('should release the key after a 5xx so a retry runs', async () => {
    const service = app.server.services.customers;
    const original = service.create;
    service.create = async () => {
      throw new Error('database hiccup');
    };
    try {
      const failed = await create('idem-5xx', { email: 'retry@example.com' });
      expect(failed.status).toBe(500);
    } finally {
      service.create = original;
    }
    const retried = await create('idem-5xx', { email: 'retry@example.com' });
    expect(retried.status).toBe(201);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
  });

  it('should release the key after a GraphQL internal error (HTTP 200) so a retry runs', async () => {
    const customers = app.server.services.customers as unknown as { create: (...a: unknown[]) => Promise<unknown> };
    const real = customers.create;
    customers.create = async () => {
      throw new Error('database went away');
    };
    const mutation = { query: 'mutation { createCustomer(input: { email: "gql-retry@example.com" }) { id email } }' };
    const send = () => app.request('POST', '/graphql', { key, body: mutation, headers: { 'Idempotency-Key': 'idem-gql-500' } });
    try {
      const failed = await send();
      expect(failed.status).toBe(200);
      expect(failed.body.errors[0].extensions.code).toBe('internal_error');
    } finally {
      customers.create = real;
    }
    const retried = await send();
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    expect(retried.body.data.createCustomer.email).toBe('gql-retry@example.com');
    const replayed = await send();
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    // The same answer; only the budget left (extensions.cost.remaining) is the replay's own.
    expect(withoutBudget(replayed.text)).toBe(withoutBudget(retried.text));
  });

  it('should refuse a malformed Idempotency-Key with 400', async () => {
    const res = await create('x'.repeat(256), { email: 'long@example.com' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_parameter', param: 'Idempotency-Key' });
    // Sent but empty (or only spaces, which HTTP trims) is not "no key": nothing is created.
    for (const empty of ['', '   ']) {
      const blank = await create(empty, { email: 'blank-key@example.com' });
      expect(blank.status).toBe(400);
      expect(blank.body.error).toMatchObject({ code: 'invalid_parameter', param: 'Idempotency-Key' });
    }
    const customers = await app.request('GET', '/v1/customers?search=blank-key', { key });
    expect(customers.body.meta.total).toBe(0);
  });

  it('should keep keys 24 h, then purge them and accept the key afresh', async () => {
    await create('idem-ttl', { email: 'ttl1@example.com' });
    clock.advance(23 * 3_600_000);
    expect((await create('idem-ttl', { email: 'ttl2@example.com' })).status).toBe(409);
    clock.advance(2 * 3_600_000);
    const purged = await app.server.services.idempotency.purgeExpired();
    expect(purged).toBeGreaterThanOrEqual(1);
    const rows = await app.server.services.db.select("SELECT * FROM idempotency_keys WHERE idempotency_key = 'idem-ttl'");
    expect(rows).toHaveLength(0);
    expect((await create('idem-ttl', { email: 'ttl2@example.com' })).status).toBe(201);
  });
});

describe('idempotency across two instances on one database', () => {
  let other: SpawnedInstance;
  beforeAll(async () => {
    // The spawned instance reads the system clock; expiry decisions must agree.
    clock.set(new Date());
    other = await spawnBeside(app);
  }, 90_000);
  afterAll(async () => {
    await other?.stop();
  });

  it('should create exactly one customer when both instances get the same key at once', async () => {
    const body = { email: 'twoinstances@example.com' };
    const headers = { 'Idempotency-Key': 'idem-two-instances' };
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? other.request.bind(other) : app.request.bind(app))('POST', '/v1/customers', { key, body, headers }),
      ),
    );
    const ok = results.filter((r) => r.status === 201);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    for (const r of results) if (r.status !== 201) expect(r.body.error.code).toBe('idempotency_key_in_use');
    for (const r of ok) expect(r.text).toBe(ok[0].text);
    const list = await app.request('GET', '/v1/customers?search=twoinstances', { key });
    expect(list.body.meta.total).toBe(1);
    const replay = await other.request('POST', '/v1/customers', { key, body, headers });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.text).toBe(ok[0].text);
  });
});
