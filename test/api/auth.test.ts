import { startTestApp, type TestApp } from '../helpers/app';
import { waitFor } from '../helpers/wait';
import { MAX_ACTIVE_KEYS } from '../../src/modules/accounts/account.service';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

describe('API keys, modes and permissions', () => {
  it('should answer 401 missing_api_key without a key', async () => {
    const res = await app.request('GET', '/v1/customers');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('missing_api_key');
  });

  it('should answer 401 invalid_api_key for an unknown or malformed key', async () => {
    for (const key of ['sk_test_' + 'a'.repeat(43), 'not-a-key']) {
      const res = await app.request('GET', '/v1/customers', { key });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('invalid_api_key');
    }
  });

  it('should create keys shown once, list them without the secret, and refuse a revoked key', async () => {
    const created = await app.request('POST', '/v1/api-keys', { key: app.account.testKey, body: { name: 'ci', permissions: ['customers:read'] } });
    expect(created.status).toBe(201);
    expect(created.body.data.secret).toMatch(/^sk_test_[0-9A-Za-z]{43}$/);
    expect(created.body.data).toMatchObject({ object: 'api_key', livemode: false, permissions: ['customers:read'], revoked: false });

    const listed = await app.request('GET', '/v1/api-keys', { key: app.account.testKey });
    const entry = listed.body.data.find((k: { id: string }) => k.id === created.body.data.id);
    expect(entry).toBeDefined();
    expect(entry.secret).toBeUndefined();
    expect(listed.text).not.toContain(created.body.data.secret);

    const works = await app.request('GET', '/v1/customers', { key: created.body.data.secret });
    expect(works.status).toBe(200);

    const revoked = await app.request('DELETE', `/v1/api-keys/${created.body.data.id}`, { key: app.account.testKey });
    expect(revoked.status).toBe(200);
    expect(revoked.body.data.revoked).toBe(true);
    const refused = await app.request('GET', '/v1/customers', { key: created.body.data.secret });
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('invalid_api_key');
  });

  it('should look a busy key up once per cache period and drop a key revoked elsewhere within one period', async () => {
    const created = await app.request('POST', '/v1/api-keys', { key: app.account.testKey, body: { name: 'busy', permissions: ['customers:read'] } });
    const { id, secret } = created.body.data;
    expect((await app.request('GET', '/v1/customers', { key: secret })).status).toBe(200);
    app.sql.length = 0;
    for (let i = 0; i < 5; i++) expect((await app.request('GET', '/v1/customers', { key: secret })).status).toBe(200);
    expect(app.sql.filter((s) => s.includes('FROM api_keys k JOIN accounts'))).toHaveLength(0);

    // Another instance (or the CLI) revokes it: only the row changes under this process.
    await app.server.services.db.execute('UPDATE api_keys SET revoked_at = $1 WHERE id = $2', [new Date(), id]);
    // Refused once the cached lookup is older than a cache period: within one from now at most.
    const refused = await waitFor(async () => {
      const res = await app.request('GET', '/v1/customers', { key: secret });
      return res.status === 200 ? null : res;
    }, { timeoutMs: app.config.apiKeyCacheMs + 100, intervalMs: 50, what: 'the revoked key to be refused' });
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('invalid_api_key');
  });

  it('should store keys only as hashes', async () => {
    const rows = await app.server.services.db.select<{ key_hash: string }>('SELECT key_hash FROM api_keys');
    for (const row of rows) expect(row.key_hash).toMatch(/^[0-9a-f]{64}$/);
    const all = JSON.stringify(await app.server.services.db.select('SELECT * FROM api_keys'));
    expect(all).not.toContain(app.account.testKey);
    expect(all).not.toContain(app.account.liveKey);
  });

  it('should answer 403 permission_denied outside a restricted key permissions', async () => {
    const restricted = await app.request('POST', '/v1/api-keys', { key: app.account.testKey, body: { permissions: ['customers:read'] } });
    const key = restricted.body.data.secret;
    expect((await app.request('GET', '/v1/customers', { key })).status).toBe(200);
    const write = await app.request('POST', '/v1/customers', { key, body: { email: 'nope@example.com' } });
    expect(write.status).toBe(403);
    expect(write.body.error.code).toBe('permission_denied');
    const other = await app.request('GET', '/v1/products', { key });
    expect(other.status).toBe(403);
    const keys = await app.request('POST', '/v1/api-keys', { key, body: {} });
    expect(keys.status).toBe(403);
  });

  it('should let a write permission imply read', async () => {
    const res = await app.request('POST', '/v1/api-keys', { key: app.account.testKey, body: { permissions: ['customers:write'] } });
    expect((await app.request('GET', '/v1/customers', { key: res.body.data.secret })).status).toBe(200);
  });

  it('should refuse an invalid permission with 400 and the param', async () => {
    const res = await app.request('POST', '/v1/api-keys', { key: app.account.testKey, body: { permissions: ['everything'] } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_parameter', param: 'permissions[0]' });
  });

  it('should keep test and live objects apart (404 across modes)', async () => {
    const live = await app.request('POST', '/v1/customers', { key: app.account.liveKey, body: { email: 'live@example.com' } });
    expect(live.status).toBe(201);
    expect(live.body.data.livemode).toBe(true);
    const fromTest = await app.request('GET', `/v1/customers/${live.body.data.id}`, { key: app.account.testKey });
    expect(fromTest.status).toBe(404);
    const testList = await app.request('GET', '/v1/customers', { key: app.account.testKey });
    expect(testList.body.data.map((c: { id: string }) => c.id)).not.toContain(live.body.data.id);
    // The same e-mail may exist once per mode.
    const sameInTest = await app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'live@example.com' } });
    expect(sameInTest.status).toBe(201);
  });

  it('should keep accounts apart (404 for another account object, PATCH included)', async () => {
    const other = await app.createAccount();
    const mine = await app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'mine@example.com' } });
    const get = await app.request('GET', `/v1/customers/${mine.body.data.id}`, { key: other.testKey });
    expect(get.status).toBe(404);
    const patch = await app.request('PATCH', `/v1/customers/${mine.body.data.id}`, { key: other.testKey, body: { name: 'Mallory' } });
    expect(patch.status).toBe(404);
    const list = await app.request('GET', '/v1/customers', { key: other.testKey });
    expect(list.body.meta.total).toBe(0);
    const events = await app.request('GET', '/v1/events', { key: other.testKey });
    expect(events.body.meta.total).toBe(0);
  });

  it('should cap active keys per account (both modes) with 422 limit_exceeded, leaving the Idempotency-Key unused', async () => {
    const account = await app.createAccount();
    const accounts = app.server.services.accounts;
    // Two default keys; the rest in live mode: the cap counts both modes together.
    const made = [];
    for (let i = 2; i < MAX_ACTIVE_KEYS - 3; i++) made.push(await accounts.createKeyForAccount(account.accountId, 'live'));
    // Three places left, six asking at once: the count is taken under the account's lock.
    const racing = await Promise.all(Array.from({ length: 6 }, () => app.request('POST', '/v1/api-keys', { key: account.testKey, body: {} })));
    expect(racing.map((r) => r.status).sort()).toEqual([201, 201, 201, 422, 422, 422]);
    const over = await app.request('POST', '/v1/api-keys', { key: account.testKey, body: { name: 'one too many' }, headers: { 'Idempotency-Key': 'key-cap-1' } });
    expect(over.status).toBe(422);
    expect(over.body.error).toMatchObject({ code: 'limit_exceeded', message: `At most ${MAX_ACTIVE_KEYS} active API keys per account (both modes); revoke one first` });
    await expect(accounts.createKeyForAccount(account.accountId, 'test')).rejects.toMatchObject({ code: 'limit_exceeded' });
    // A revoked key no longer counts; the refused request's key was left unused, so it now runs.
    await accounts.revokeKeyById(made[0].id);
    const retried = await app.request('POST', '/v1/api-keys', { key: account.testKey, body: { name: 'one too many' }, headers: { 'Idempotency-Key': 'key-cap-1' } });
    expect(retried.status).toBe(201);
    expect(retried.headers['idempotent-replayed']).toBeUndefined();
    expect((await accounts.listKeysForAccount(account.accountId)).filter((k) => !k.revoked)).toHaveLength(MAX_ACTIVE_KEYS);
  });
});
