import { startTestApp, type TestApp } from '../helpers/app';

/** A GraphQL answer's text with its `extensions.cost.remaining` left out: the budget left is each request's own, a replay's too. */
const withoutBudget = (text: string) => text.replace(/("cost":\{"requested":\d+,"actual":\d+),"remaining":\d+\}/, '$1}');

let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp();
  key = app.account.testKey;
});
afterAll(() => app.stop());

const gql = (query: string, variables: Record<string, unknown> = {}, k = key, headers: Record<string, string> = {}) =>
  app.request('POST', '/graphql', { key: k, body: { query, variables }, headers });

describe('permissions cannot be escalated or bypassed', () => {
  it('should refuse to mint a key with permissions the caller does not hold', async () => {
    const limited = await app.request('POST', '/v1/api-keys', { key, body: { permissions: ['api_keys:write', 'customers:read'] } });
    const k = limited.body.data.secret;
    const full = await app.request('POST', '/v1/api-keys', { key: k, body: {} });
    expect(full.status).toBe(403);
    expect(full.body.error).toMatchObject({ code: 'permission_denied', param: 'permissions[0]' });
    const wider = await app.request('POST', '/v1/api-keys', { key: k, body: { permissions: ['customers:write'] } });
    expect(wider.status).toBe(403);
    const narrower = await app.request('POST', '/v1/api-keys', { key: k, body: { permissions: ['customers:read'] } });
    expect(narrower.status).toBe(201);
  });

  it('should refuse to revoke a key holding permissions the caller does not hold, and revoke nothing', async () => {
    const account = await app.createAccount();
    const [full] = await app.server.services.accounts.listKeysForAccount(account.accountId);
    expect(full).toMatchObject({ livemode: false, permissions: ['*'] });
    const mint = async (permissions: string[]) => (await app.request('POST', '/v1/api-keys', { key: account.testKey, body: { permissions } })).body.data;
    const keysOnly = await mint(['api_keys:write']);
    const refused = await app.request('DELETE', `/v1/api-keys/${full.id}`, { key: keysOnly.secret });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({
      code: 'permission_denied', message: `This API key cannot revoke ${full.id}: that key holds '*' (every permission), beyond this key's permissions`,
    });
    // The full key still works, and is still listed active.
    const listed = await app.request('GET', '/v1/api-keys', { key: account.testKey });
    expect(listed.status).toBe(200);
    expect(listed.body.data.find((k: { id: string }) => k.id === full.id)).toMatchObject({ revoked: false, revokedAt: null });

    // write covers read; what the target holds beyond the caller's is named.
    const customersWriter = await mint(['api_keys:write', 'customers:write']);
    const reader = await mint(['customers:read']);
    const wider = await mint(['customers:write', 'payments:read']);
    const revoked = await app.request('DELETE', `/v1/api-keys/${reader.id}`, { key: customersWriter.secret });
    expect(revoked.status).toBe(200);
    expect(revoked.body.data).toMatchObject({ id: reader.id, revoked: true });
    expect((await app.request('GET', '/v1/customers', { key: reader.secret })).status).toBe(401);
    const notWithin = await app.request('DELETE', `/v1/api-keys/${wider.id}`, { key: customersWriter.secret });
    expect(notWithin.status).toBe(403);
    expect(notWithin.body.error.message).toBe(`This API key cannot revoke ${wider.id}: that key holds 'payments:read', beyond this key's permissions`);
    expect((await app.request('GET', '/v1/payments', { key: wider.secret })).status).toBe(200);

    // A key may revoke itself; a "*" key revokes anything.
    expect((await app.request('DELETE', `/v1/api-keys/${keysOnly.id}`, { key: keysOnly.secret })).status).toBe(200);
    expect((await app.request('GET', '/v1/api-keys', { key: keysOnly.secret })).status).toBe(401);
    for (const k of [wider, customersWriter]) {
      expect((await app.request('DELETE', `/v1/api-keys/${k.id}`, { key: account.testKey })).body.data).toMatchObject({ id: k.id, revoked: true });
    }
  });

  it('should not let GraphQL nesting read customers without customers:read', async () => {
    const c = await app.request('POST', '/v1/customers', { key, body: { email: 'nested@example.com', phone: '+1 555 0100' } });
    await app.request('POST', '/v1/payments', { key, body: { amount: 100, currency: 'usd', paymentMethod: 'pm_card_visa', customerId: c.body.data.id } });
    const paymentsOnly = (await app.request('POST', '/v1/api-keys', { key, body: { permissions: ['payments:read'] } })).body.data.secret;
    const res = await gql('{ payments { nodes { id customer { email phone } } } }', {}, paymentsOnly);
    expect(res.text).not.toContain('nested@example.com');
    expect(res.body.errors[0].extensions.code).toBe('permission_denied');
  });
});

describe('secrets in stored idempotent responses', () => {
  it('should keep a new key secret sealed at rest and replay it only to the key that created it', async () => {
    const headers = { 'Idempotency-Key': 'mint-once' };
    const first = await app.request('POST', '/v1/api-keys', { key, body: { name: 'ci' }, headers });
    const secret = first.body.data.secret as string;
    const rows = await app.server.services.db.select<{ response_body: string }>("SELECT response_body FROM idempotency_keys WHERE idempotency_key = 'mint-once'");
    expect(rows[0].response_body).not.toContain(secret);
    const replay = await app.request('POST', '/v1/api-keys', { key, body: { name: 'ci' }, headers });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.text).toBe(first.text);
    const otherKey = (await app.request('POST', '/v1/api-keys', { key, body: {} })).body.data.secret;
    const stolen = await app.request('POST', '/v1/api-keys', { key: otherKey, body: { name: 'ci' }, headers });
    expect(stolen.status).toBe(409);
    expect(stolen.text).not.toContain(secret);
  });
});

describe('webhook secrets in stored idempotent responses', () => {
  it('should keep a webhook secret sealed at rest', async () => {
    const headers = { 'Idempotency-Key': 'hook-once' };
    const created = await app.request('POST', '/v1/webhook-endpoints', { key, body: { url: 'https://127.0.0.1:9/hook', events: ['*'] }, headers });
    expect(created.status).toBe(201);
    const secret = created.body.data.secret as string;
    expect(secret).toMatch(/^whsec_/);
    const rows = await app.server.services.db.select<{ response_body: string }>("SELECT response_body FROM idempotency_keys WHERE idempotency_key = 'hook-once'");
    expect(rows[0].response_body).not.toContain(secret);
    await app.request('DELETE', `/v1/webhook-endpoints/${created.body.data.id}`, { key });
  });
});

describe('GraphQL input hygiene and idempotency', () => {
  it('should never echo card numbers or CVCs in GraphQL input errors', async () => {
    const res = await gql('mutation($i: CreatePaymentInput!) { createPayment(input: $i) { id } }', {
      i: { amount: 100, currency: 'usd', paymentMethod: 'card', card: { number: '4242424242424242', expMonth: 12, expYear: 2030, cvc: 987 } },
    });
    expect(res.body.errors[0].extensions.code).toBe('invalid_parameter');
    expect(res.text).not.toContain('4242424242424242');
    expect(res.text).not.toMatch(/(?<![0-9A-Za-z])987(?![0-9A-Za-z])/);
  });

  it('should honour Idempotency-Key on GraphQL mutations', async () => {
    const q = 'mutation { createPayment(input: { amount: 777, currency: "usd", paymentMethod: "pm_card_visa", description: "gql-idem" }) { id } }';
    const first = await gql(q, {}, key, { 'Idempotency-Key': 'gql-pay-1' });
    const again = await gql(q, {}, key, { 'Idempotency-Key': 'gql-pay-1' });
    expect(again.headers['idempotent-replayed']).toBe('true');
    // The same answer; only the budget left (extensions.cost.remaining) is the replay's own.
    expect(withoutBudget(again.text)).toBe(withoutBudget(first.text));
    const list = await app.request('GET', '/v1/payments?search=gql-idem', { key });
    expect(list.body.meta.total).toBe(1);
  });
});

describe('gateway configuration guards', () => {
  it('should refuse a Stripe base URL in live mode and require credentials when it changes', async () => {
    const live = await app.request('POST', '/v1/gateways', {
      key: app.account.liveKey,
      body: { name: 'x', type: 'stripe', credentials: { secretKey: 'sk_live_abcdefghijklmnop' }, settings: { baseUrl: 'https://169.254.169.254/' } },
    });
    expect(live.status).toBe(400);
    expect(live.body.error.param).toBe('settings.baseUrl');
    const test = await app.request('POST', '/v1/gateways', {
      key, body: { name: 'fake', type: 'stripe', credentials: { secretKey: 'sk_test_abcdefghijklmnop' }, settings: { baseUrl: 'https://93.184.216.34:9/' } },
    });
    expect(test.status).toBe(201);
    const moved = await app.request('PATCH', `/v1/gateways/${test.body.data.id}`, { key, body: { settings: { baseUrl: 'https://93.184.216.35:9/' } } });
    expect(moved.status).toBe(400);
    expect(moved.body.error.param).toBe('credentials');
    // Out of the way again: test mode charges through the built-in simulator when no gateway is usable.
    await app.request('DELETE', `/v1/gateways/${test.body.data.id}`, { key });
  });

  it('should refuse to save a live card on the built-in test simulator', async () => {
    const c = await app.request('POST', '/v1/customers', { key: app.account.liveKey, body: { email: 'livecard@example.com' } });
    const res = await app.request('POST', `/v1/customers/${c.body.data.id}/payment-methods`, {
      key: app.account.liveKey,
      body: { gatewayId: 'gw_builtin_simulator', card: { number: '4242424242424242', expMonth: 1, expYear: 2032, cvc: '123' } },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.param).toBe('gatewayId');
  });
});

describe('refund safety', () => {
  it('should give the reserved amount back when the gateway cannot be reached', async () => {
    const p = (await app.request('POST', '/v1/payments', { key, body: { amount: 1000, currency: 'usd', paymentMethod: 'pm_card_visa' } })).body.data;
    const gateways = app.server.services.gateways;
    const original = gateways.connector.bind(gateways);
    gateways.connector = async () => {
      throw new Error('credentials cannot be unsealed');
    };
    try {
      const r = await app.request('POST', '/v1/refunds', { key, body: { paymentId: p.id, amount: 600 } });
      expect(r.status).toBe(201);
      expect(r.body.data).toMatchObject({ status: 'failed', failureCode: 'gateway_unavailable' });
    } finally {
      gateways.connector = original;
    }
    const after = await app.request('GET', `/v1/payments/${p.id}`, { key });
    expect(after.body.data.amountRefunded).toBe(0);
    const retry = await app.request('POST', '/v1/refunds', { key, body: { paymentId: p.id, amount: 600 } });
    expect(retry.body.data.status).toBe('succeeded');
  });

  it('should refuse a paymentId in the body of the per-payment refund route', async () => {
    const res = await app.request('POST', '/v1/payments/pay_x/refunds', { key, body: { paymentId: 'pay_y' } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'unknown_parameter', param: 'paymentId' });
  });
});

describe('search', () => {
  it('should treat LIKE wildcards in customer search as plain characters', async () => {
    await app.request('POST', '/v1/customers', { key, body: { email: 'under_score@example.com' } });
    await app.request('POST', '/v1/customers', { key, body: { email: 'underXscore@example.com' } });
    const res = await app.request('GET', '/v1/customers?search=under_score', { key });
    expect(res.body.data.map((c: { email: string }) => c.email)).toEqual(['under_score@example.com']);
  });

  it('should match payment metadata values, not keys', async () => {
    await app.request('POST', '/v1/payments', { key, body: { amount: 100, currency: 'usd', paymentMethod: 'pm_card_visa', metadata: { order_ref: 'zq-991' } } });
    expect((await app.request('GET', '/v1/payments?search=zq-991', { key })).body.meta.total).toBe(1);
    expect((await app.request('GET', '/v1/payments?search=order_ref', { key })).body.meta.total).toBe(0);
  });
});

describe('required fields left out', () => {
  it('should answer missing_parameter naming the field, whatever kind of schema it has (an option list, a number)', async () => {
    const gateway = await app.request('POST', '/v1/gateways', { key, body: { name: 'no type' } });
    expect(gateway.status).toBe(400);
    expect(gateway.body.error).toMatchObject({ code: 'missing_parameter', param: 'type' });
    const created = (await app.request('POST', '/v1/gateways', { key, body: { name: 'typed', type: 'simulator' } })).body.data;
    const routing = await app.request('PUT', '/v1/routing', {
      key, body: { rules: [{ name: 'no strategy', gateways: [{ gatewayId: created.id }] }], fallback: [], maxAttempts: 1 },
    });
    expect(routing.status).toBe(400);
    expect(routing.body.error).toMatchObject({ code: 'missing_parameter', param: 'rules[0].strategy' });
    const fx = await app.request('PUT', '/v1/fx-rates', { key, body: { rates: [{ from: 'eur', to: 'usd' }] } });
    expect(fx.status).toBe(400);
    expect(fx.body.error).toMatchObject({ code: 'missing_parameter', param: 'rates[0].rate' });
  });

  it('should still answer invalid_parameter for a field that is there with a wrong value', async () => {
    const gateway = await app.request('POST', '/v1/gateways', { key, body: { name: 'odd type', type: 'paypal' } });
    expect(gateway.body.error).toMatchObject({ code: 'invalid_parameter', param: 'type' });
    const nulled = await app.request('POST', '/v1/gateways', { key, body: { name: 'null type', type: null } });
    expect(nulled.body.error).toMatchObject({ code: 'invalid_parameter', param: 'type' });
    // A refinement pointing at a key is about that key's value, not a missing field.
    const metadata = await app.request('POST', '/v1/payments', {
      key, body: { amount: 100, currency: 'usd', paymentMethod: 'pm_card_visa', metadata: { ['k'.repeat(41)]: 'v' } },
    });
    expect(metadata.body.error).toMatchObject({ code: 'invalid_parameter' });
  });

  it('should say what is wrong with a search that is too long', async () => {
    const res = await app.request('GET', `/v1/payments?search=${'a'.repeat(201)}`, { key });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_parameter', param: 'search' });
    expect(res.body.error.message).toMatch(/at most 200 characters/);
  });
});

describe('input the database cannot store', () => {
  it('should answer 400, never 500, for NUL characters in bodies, ids and queries', async () => {
    const body = await app.request('POST', '/v1/customers', { key, body: { email: 'nul@example.com', name: 'a\u0000b' } });
    expect(body.status).toBe(400);
    expect(body.body.error).toMatchObject({ code: 'invalid_parameter', param: 'name' });
    // The same answer on both databases.
    for (const path of ['/v1/customers/cus_%00x', '/v1/payments/pay_%00x', '/v1/webhook-endpoints/we_%00x', '/v1/events/evt_%00/resend', '/v1/payments/pay_%00/refunds']) {
      const res = await app.request(path.endsWith('resend') || path.endsWith('refunds') ? 'POST' : 'GET', path, { key, body: path.endsWith('refunds') ? {} : undefined });
      expect([path, res.status, res.body.error?.code]).toEqual([path, 400, 'invalid_parameter']);
    }
    const query = await app.request('GET', '/v1/payments?search=%00', { key });
    expect(query.status).toBe(400);
    const gqlId = await gql('query($id: ID!) { customer(id: $id) { id } }', { id: 'cus_\u0000x' });
    expect(gqlId.status).toBe(400);
    expect(gqlId.body.errors[0].extensions.code).toBe('invalid_parameter');
  });
});

describe('a card number where no card number belongs', () => {
  it('should not echo it in error answers, stored Idempotency-Key answers or the access log', async () => {
    const pan = '4000056655665556';
    const logsBefore = app.logs.length;
    const byPath = await app.request('GET', `/v1/customers/${pan}`, { key });
    expect(byPath.status).toBe(404);
    const byField = await app.request('POST', '/v1/payments', {
      key, body: { amount: 100, currency: 'usd', paymentMethod: 'pm_card_visa', customerId: pan }, headers: { 'Idempotency-Key': 'pan-as-customer' },
    });
    expect(byField.status).toBe(404);
    const byName = await app.request('POST', '/v1/customers', { key, body: { email: 'pan@example.com', [pan]: 'x' }, headers: { 'Idempotency-Key': 'pan-as-field' } });
    expect(byName.body.error.code).toBe('unknown_parameter');
    const byGraphQL = await app.request('POST', '/graphql', { key, body: { query: `{ customer(id: "${pan}") { id } }` } });
    expect(byGraphQL.body.errors[0].extensions.code).toBe('resource_not_found');
    for (const res of [byPath, byField, byName, byGraphQL]) expect(res.text).not.toContain(pan);
    // Refused before the operation started: nothing is kept under those keys, the card number least of all.
    const stored = await app.server.services.db.select<{ request_hash: string }>(
      "SELECT request_hash FROM idempotency_keys WHERE idempotency_key IN ('pan-as-customer', 'pan-as-field')",
    );
    expect(stored).toEqual([]);
    expect(app.logs.slice(logsBefore).join('')).not.toContain(pan);
  });
});

describe('error answers quoting long caller text', () => {
  it('should cut what they quote at 1,000 characters, leaving no part of a card number at the cut', async () => {
    const pan = '4000056655665556';
    const long = await app.request('POST', '/v1/customers', { key, body: { email: 'long@example.com', ['1 '.repeat(50_000)]: 'x' } });
    expect(long.status).toBe(400);
    expect(long.body.error.code).toBe('unknown_parameter');
    expect(long.body.error.message.length).toBeLessThanOrEqual(1001);
    expect(long.body.error.param.length).toBeLessThanOrEqual(1001);
    // "Unknown parameter: '" puts the card number across the 1,000th character of the message.
    const straddling = await app.request('POST', '/v1/customers', { key, body: { email: 'long@example.com', [`${'x'.repeat(975)}${pan}`]: 'x' } });
    expect(straddling.body.error.message).toMatch(/x…$/);
    expect(straddling.body.error.param).toContain('[redacted-card]');
    expect(straddling.text).not.toMatch(/4000|5556/);
  });
});

describe('input that would break the walks over it', () => {
  const deep = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;

  it('should answer 400 invalid_parameter, never 500, for a body nested thousands of levels deep', async () => {
    const rawBody = `{"email":"deep@example.com","metadata":${deep(5000)}}`;
    const plain = await app.request('POST', '/v1/customers', { key, rawBody });
    expect(plain.status).toBe(400);
    expect(plain.body.error).toMatchObject({ code: 'invalid_parameter', param: 'body' });
    // With a key the request is fingerprinted before any service runs.
    const keyed = await app.request('POST', '/v1/customers', { key, rawBody, headers: { 'Idempotency-Key': 'deep-body' } });
    expect(keyed.status).toBe(400);
    const graphql = await app.request('POST', '/graphql', {
      key, rawBody: `{"query":"mutation($m: JSONObject) { createCustomer(input: { email: \\"deep@example.com\\", metadata: $m }) { id } }","variables":{"m":${deep(5000)}}}`,
    });
    expect(graphql.status).toBe(400);
    expect(graphql.body.errors[0].extensions.code).toBe('invalid_parameter');
    // Ordinary nesting still passes through to validation.
    const shallow = await app.request('POST', '/v1/customers', { key, rawBody: `{"email":"deep@example.com","metadata":${deep(3)}}` });
    expect(shallow.body.error.param).toMatch(/^metadata/);
  });

  it('should refuse input nested too deep that reaches a service without a body (GraphQL over WebSocket, say)', async () => {
    let value: unknown = 'x';
    for (let i = 0; i < 5000; i++) value = { a: value };
    const failure = await app.server.services.customers.create(
      { accountId: app.account.accountId, mode: 'test', permissions: ['*'], requestId: 'req_deep', clock: app.server.services.clock },
      { email: 'deep@example.com', metadata: value },
    ).catch((e: unknown) => e);
    expect(failure).toMatchObject({ code: 'invalid_parameter' });
  });

  it('should refuse a "__proto__" key as invalid_parameter naming it, not as malformed JSON, in a body or GraphQL variables', async () => {
    const rest = await app.request('POST', '/v1/customers', { key, rawBody: '{"email":"proto@example.com","metadata":{"__proto__":{"admin":"1"}}}' });
    expect({ status: rest.status, code: rest.body.error.code, param: rest.body.error.param }).toEqual({ status: 400, code: 'invalid_parameter', param: 'metadata.__proto__' });
    expect(rest.body.error.message).toMatch(/__proto__/);
    const top = await app.request('POST', '/v1/customers', { key, rawBody: '{"__proto__":{"email":"x@example.com"}}' });
    expect({ status: top.status, code: top.body.error.code, param: top.body.error.param }).toEqual({ status: 400, code: 'invalid_parameter', param: '__proto__' });
    const graphql = await app.request('POST', '/graphql', {
      key,
      rawBody: '{"query":"mutation($m: JSON) { createCustomer(input: {email: \\"proto@example.com\\", metadata: $m}) { id } }","variables":{"m":{"__proto__":{"admin":"1"}}}}',
    });
    expect(graphql.status).toBeLessThan(500);
    expect(graphql.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'm.__proto__' });
  });

  it('should answer 400 malformed_json, never 500, for a compressed body that does not decompress', async () => {
    for (const encoding of ['gzip', 'deflate', 'br']) {
      const res = await app.request('POST', '/v1/customers', { key, rawBody: 'definitely not compressed', headers: { 'content-encoding': encoding } });
      expect({ encoding, status: res.status, code: res.body?.error?.code, text: res.status === 400 ? '' : res.text }).toEqual({ encoding, status: 400, code: 'malformed_json', text: '' });
    }
  });
});

describe('webhook endpoint limits and logs', () => {
  it('should cap webhook endpoints per account and mode with 422 limit_exceeded', async () => {
    const other = await app.createAccount();
    const ids: string[] = [];
    for (let i = 0; i < 16; i++) {
      const res = await app.request('POST', '/v1/webhook-endpoints', { key: other.testKey, body: { url: `https://127.0.0.1:9/h${i}`, events: ['*'] } });
      expect(res.status).toBe(201);
      ids.push(res.body.data.id);
    }
    const over = await app.request('POST', '/v1/webhook-endpoints', { key: other.testKey, body: { url: 'https://127.0.0.1:9/h16', events: ['*'] } });
    expect(over.status).toBe(422);
    expect(over.body.error.code).toBe('limit_exceeded');
    await app.request('DELETE', `/v1/webhook-endpoints/${ids[0]}`, { key: other.testKey });
    const log = await app.request('GET', `/v1/webhook-endpoints/${ids[0]}/deliveries`, { key: other.testKey });
    expect(log.status).toBe(200);
    const again = await app.request('POST', '/v1/webhook-endpoints', { key: other.testKey, body: { url: 'https://127.0.0.1:9/h17', events: ['*'] } });
    expect(again.status).toBe(201);
  });
});
