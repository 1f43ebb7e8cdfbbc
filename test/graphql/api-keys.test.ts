import { startTestApp, type TestApp } from '../helpers/app';

/** API keys over GraphQL: the same service as /v1/api-keys, so the same permissions and escalation rule. */

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app.stop());

const gql = (key: string, query: string, variables: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  app.request('POST', '/graphql', { key, body: { query, variables }, headers });

const CREATE = 'mutation($input: CreateApiKeyInput) { createApiKey(input: $input) { id livemode permissions keyHint revoked secret } }';
const REVOKE = 'mutation($id: ID!) { revokeApiKey(id: $id) { id revoked revokedAt } }';

describe('API keys over GraphQL', () => {
  it('should create a key shown once, list it without its secret, and revoke it', async () => {
    const { testKey } = await app.createAccount();
    const created = await gql(testKey, CREATE, { input: { name: 'ci', permissions: ['customers:read'] } });
    expect(created.body.errors).toBeUndefined();
    const key = created.body.data.createApiKey;
    expect(key).toMatchObject({ livemode: false, permissions: ['customers:read'], revoked: false, secret: expect.stringMatching(/^sk_test_[0-9A-Za-z]{43}$/) });
    expect(key.keyHint).toBe(`sk_test_…${key.secret.slice(-4)}`);

    const listed = await gql(testKey, '{ apiKeys(pageSize: 100) { total nodes { id permissions secret } } }');
    expect(listed.body.data.apiKeys.total).toBe(2);
    expect(listed.body.data.apiKeys.nodes).toContainEqual({ id: key.id, permissions: ['customers:read'], secret: null });
    expect(listed.text).not.toContain(key.secret);

    expect((await app.request('GET', '/v1/customers', { key: key.secret })).status).toBe(200);
    const revoked = await gql(testKey, REVOKE, { id: key.id });
    expect(revoked.body.data.revokeApiKey).toMatchObject({ id: key.id, revoked: true, revokedAt: expect.any(String) });
    expect((await app.request('GET', '/v1/customers', { key: key.secret })).status).toBe(401);
  });

  it('should replay a created key only to the key that created it, under its Idempotency-Key', async () => {
    const { testKey, liveKey } = await app.createAccount();
    const headers = { 'Idempotency-Key': 'gql-mint-once' };
    const first = await gql(testKey, CREATE, { input: { name: 'once' } }, headers);
    const secret = first.body.data.createApiKey.secret as string;
    const replay = await gql(testKey, CREATE, { input: { name: 'once' } }, headers);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    // The same answer; only the rate budget left (extensions.cost.remaining) is the retry's own.
    expect(replay.body).toEqual({ ...first.body, extensions: { cost: { ...first.body.extensions.cost, remaining: expect.any(Number) } } });
    const other = (await gql(testKey, CREATE, {})).body.data.createApiKey.secret as string;
    const stolen = await gql(other, CREATE, { input: { name: 'once' } }, headers);
    expect(stolen.body.errors[0].extensions.code).toBe('idempotency_key_reused');
    expect(stolen.text).not.toContain(secret);
    // Another mode is another scope.
    expect((await gql(liveKey, CREATE, { input: { name: 'once' } }, headers)).body.data.createApiKey.livemode).toBe(true);
  });

  it('should refuse to create a key with permissions the caller does not hold', async () => {
    const { testKey } = await app.createAccount();
    const limited = (await gql(testKey, CREATE, { input: { permissions: ['api_keys:write', 'customers:read'] } })).body.data.createApiKey.secret;
    const refused = await gql(limited, CREATE, { input: { permissions: ['customers:read', 'customers:write'] } });
    expect(refused.body.data.createApiKey).toBeNull();
    expect(refused.body.errors[0].extensions).toMatchObject({ code: 'permission_denied', param: 'permissions[1]' });
  });

  it('should refuse to revoke a key holding permissions the caller does not hold, and revoke nothing', async () => {
    const account = await app.createAccount();
    const mint = async (permissions: string[]) => (await gql(account.testKey, CREATE, { input: { permissions } })).body.data.createApiKey;
    const full = (await gql(account.testKey, '{ apiKeys { nodes { id permissions } } }')).body.data.apiKeys.nodes
      .find((k: { permissions: string[] }) => k.permissions[0] === '*');
    const keysOnly = await mint(['api_keys:write']);
    const refused = await gql(keysOnly.secret, REVOKE, { id: full.id });
    expect(refused.body.data.revokeApiKey).toBeNull();
    expect(refused.body.errors[0].message).toBe(`This API key cannot revoke ${full.id}: that key holds '*' (every permission), beyond this key's permissions`);
    expect(refused.body.errors[0].extensions.code).toBe('permission_denied');
    expect((await gql(account.testKey, '{ customers { total } }')).body.data).toEqual({ customers: { total: 0 } });

    const customersWriter = await mint(['api_keys:write', 'customers:write']);
    const reader = await mint(['customers:read']);
    const paymentsKey = await mint(['payments:read']);
    expect((await gql(customersWriter.secret, REVOKE, { id: reader.id })).body.data.revokeApiKey).toMatchObject({ id: reader.id, revoked: true });
    const notWithin = await gql(customersWriter.secret, REVOKE, { id: paymentsKey.id });
    expect(notWithin.body.errors[0].extensions.code).toBe('permission_denied');
    expect((await app.request('GET', '/v1/payments', { key: paymentsKey.secret })).status).toBe(200);
    // A "*" key revokes anything.
    for (const k of [paymentsKey, customersWriter, keysOnly]) {
      expect((await gql(account.testKey, REVOKE, { id: k.id })).body.data.revokeApiKey).toMatchObject({ id: k.id, revoked: true });
    }
  });

  it('should need api_keys:read to list and api_keys:write to revoke', async () => {
    const { testKey } = await app.createAccount();
    const customersOnly = (await gql(testKey, CREATE, { input: { permissions: ['customers:write'] } })).body.data.createApiKey;
    const list = await gql(customersOnly.secret, '{ apiKeys { total } }');
    expect(list.body.errors[0].extensions.code).toBe('permission_denied');
    const revoke = await gql(customersOnly.secret, REVOKE, { id: customersOnly.id });
    expect(revoke.body.errors[0].message).toBe("This API key does not have the 'api_keys:write' permission");
  });
});
