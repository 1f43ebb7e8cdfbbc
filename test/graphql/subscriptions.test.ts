import WebSocket from 'ws';
import { GraphQLError } from 'graphql';
import { createClient, type Client } from 'graphql-ws';
import { startTestApp, type TestApp } from '../helpers/app';
import { spawnBeside, type SpawnedInstance } from '../helpers/spawn';
import { DIALECT } from '../helpers/db';
import { waitFor, watchStreams } from '../helpers/wait';

// PostgreSQL instances fan out through LISTEN/NOTIFY; on SQLite the cross-process path is Redis.
const REDIS_ENV: Record<string, string> = DIALECT === 'sqlite' ? { REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' } : {};

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ env: { ...REDIS_ENV, GRAPHQL_WS_KEY_RECHECK_MS: '200' } });
});
afterAll(() => app.stop());

function wsClient(baseUrl: string, ca: string, key: string | null): Client {
  class TrustingWebSocket extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, { ca, servername: 'localhost' } as WebSocket.ClientOptions);
    }
  }
  return createClient({
    url: `${baseUrl.replace('https:', 'wss:')}/graphql`,
    webSocketImpl: TrustingWebSocket,
    connectionParams: key ? { authorization: `Bearer ${key}` } : {},
    retryAttempts: 0,
    lazy: true,
  });
}

/**
 * Collects the first `n` results of a subscription on the test app (`client` must be connected
 * to it), with a deadline: `start` runs once the subscription's event stream is open there.
 */
async function take<T>(client: Client, query: string, n: number, start: () => Promise<unknown>, timeoutMs = 8000): Promise<T[]> {
  const results: T[] = [];
  const streams = watchStreams(app.server.services.bus);
  const iterator = client.iterate<T>({ query });
  const collected = (async () => {
    for await (const r of iterator) {
      if (r.errors) throw new Error(JSON.stringify(r.errors));
      results.push(r.data as T);
      if (results.length >= n) break;
    }
  })();
  let ended = false;
  void collected.then(() => (ended = true), () => (ended = true));
  try {
    // Open: from now on the subscription sees every event committed (refused: it has ended).
    await waitFor(() => streams.opened() >= 1 || ended, { what: 'the subscription to start' });
  } finally {
    streams.stop();
  }
  await start();
  let deadline: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      collected,
      new Promise((_, reject) => {
        deadline = setTimeout(() => reject(new Error(`timed out with ${results.length} results`)), timeoutMs);
      }),
    ]);
  } finally {
    // A pending deadline kept the jest worker alive after the file's tests had finished.
    clearTimeout(deadline);
  }
  await iterator.return?.();
  return results;
}

describe('GraphQL subscriptions over graphql-ws', () => {
  it('should refuse a connection without a valid key, saying why and where the key goes', async () => {
    for (const [key, reason] of [
      [null, 'Forbidden: no API key; send connectionParams {"authorization": "Bearer sk_..."}'],
      ['sk_test_' + 'q'.repeat(43), 'Forbidden: the API key in connectionParams.authorization is invalid or revoked'],
    ] as const) {
      const client = wsClient(app.baseUrl, app.server.cert, key);
      const outcome = await new Promise<unknown>((resolve) => {
        client.subscribe({ query: 'subscription { events { id } }' }, { next: () => resolve('data'), error: (e) => resolve(e), complete: () => resolve('complete') });
      });
      expect(outcome).toMatchObject({ code: 4403, reason });
      await client.dispose();
    }
  });

  it("should stream only the account and mode's events of the requested types", async () => {
    const other = await app.createAccount();
    const client = wsClient(app.baseUrl, app.server.cert, app.account.testKey);
    const results = await take<{ events: { type: string; livemode: boolean; data: { object: { email: string } } } }>(
      client,
      'subscription { events(types: ["customer.created"]) { id type livemode data } }',
      2,
      async () => {
        await app.request('POST', '/v1/customers', { key: other.testKey, body: { email: 'other-account@example.com' } });
        await app.request('POST', '/v1/customers', { key: app.account.liveKey, body: { email: 'live-mode@example.com' } });
        await app.request('POST', '/v1/products', { key: app.account.testKey, body: { name: 'not a customer event' } });
        await app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'mine-1@example.com' } });
        await app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'mine-2@example.com' } });
      },
    );
    expect(results.map((r) => r.events.data.object.email)).toEqual(['mine-1@example.com', 'mine-2@example.com']);
    for (const r of results) expect(r.events).toMatchObject({ type: 'customer.created', livemode: false });
    await client.dispose();
  });

  it('should refuse unknown event types and wildcards in events(types:) as REST refuses them for webhook endpoints', async () => {
    const rest = await app.request('POST', '/v1/webhook-endpoints', { key: app.account.testKey, body: { url: 'https://127.0.0.1:9/types', events: ['payment.*'] } });
    expect(rest.status).toBe(400);
    expect(rest.body.error).toMatchObject({ code: 'invalid_parameter', param: 'events[0]' });
    const client = wsClient(app.baseUrl, app.server.cert, app.account.testKey);
    const refusal = (query: string, variables?: Record<string, unknown>) => new Promise<Array<{ message: string; extensions: Record<string, unknown> }>>((resolve, reject) => {
      const accepted = setTimeout(() => reject(new Error(`accepted, not refused: ${query}`)), 3000);
      const refused = (errors: unknown) => {
        clearTimeout(accepted);
        resolve(errors as never);
      };
      // A document the schema refuses is an `error`; variables refused on coercion come as a result with errors.
      const next = (result: { errors?: unknown }) => (result.errors ? refused(result.errors) : reject(new Error('streamed')));
      client.subscribe({ query, variables }, { next, error: refused, complete: () => reject(new Error('completed')) });
    });
    try {
      for (const types of ['"payment.*"', '"*"', '"payment.refunded"', '["customer.created", "payment.*"]']) {
        const [error] = await refusal(`subscription { events(types: ${types}) { id } }`);
        expect([types, error.extensions]).toEqual([types, { code: 'invalid_parameter', param: expect.stringMatching(/^types(\[\d\])?$/), requestId: expect.stringMatching(/^ws_/) }]);
      }
      const [viaVariable] = await refusal('subscription($types: [String!]) { events(types: $types) { id } }', { types: ['customer.created', 'payment.*'] });
      expect(viaVariable.extensions).toMatchObject({ code: 'invalid_parameter', param: 'types[1]' });
    } finally {
      await client.dispose();
    }
    // Known types, as REST writes them, still stream.
    const other = wsClient(app.baseUrl, app.server.cert, app.account.testKey);
    const results = await take<{ events: { type: string } }>(other, 'subscription { events(types: ["payment.succeeded"]) { type } }', 1, () =>
      app.request('POST', '/v1/payments', { key: app.account.testKey, body: { amount: 1234, currency: 'usd', paymentMethod: 'pm_card_visa' } }));
    expect(results[0].events.type).toBe('payment.succeeded');
    await other.dispose();
  });

  it('should stream typed payments and customers', async () => {
    const client = wsClient(app.baseUrl, app.server.cert, app.account.testKey);
    const payments = await take<{ paymentUpdated: { id: string; status: string; amount: number } }>(
      client,
      'subscription { paymentUpdated { id status amount } }',
      1,
      () => app.request('POST', '/v1/payments', { key: app.account.testKey, body: { amount: 4321, currency: 'usd', paymentMethod: 'pm_card_visa' } }),
    );
    expect(payments[0].paymentUpdated).toMatchObject({ status: 'succeeded', amount: 4321 });
    const customers = await take<{ customerUpdated: { email: string } }>(
      client,
      'subscription { customerUpdated { email } }',
      1,
      () => app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'typed@example.com' } }),
    );
    expect(customers[0].customerUpdated.email).toBe('typed@example.com');
    await client.dispose();
  });

  it('should close an open subscription with 4403 once its key is revoked', async () => {
    const created = await app.request('POST', '/v1/api-keys', { key: app.account.testKey, body: {} });
    const client = wsClient(app.baseUrl, app.server.cert, created.body.data.secret);
    const closed = new Promise<{ code: number; reason: string }>((resolve) => client.on('closed', (event) => resolve(event as { code: number; reason: string })));
    const subscribed = new Promise<void>((resolve) => client.on('connected', () => resolve()));
    client.subscribe({ query: 'subscription { events { id } }' }, { next: () => undefined, error: () => undefined, complete: () => undefined });
    await subscribed;
    await app.request('DELETE', `/v1/api-keys/${created.body.data.id}`, { key: app.account.testKey });
    expect(await closed).toMatchObject({ code: 4403, reason: 'Forbidden: the API key of this connection was revoked' });
    await client.dispose();
  });

  it('should refuse a subscription outside the key permissions', async () => {
    const restricted = await app.request('POST', '/v1/api-keys', { key: app.account.testKey, body: { permissions: ['customers:read'] } });
    const client = wsClient(app.baseUrl, app.server.cert, restricted.body.data.secret);
    const outcome = await new Promise<unknown>((resolve) => {
      client.subscribe({ query: 'subscription { paymentUpdated { id } }' }, { next: (v) => resolve(v), error: (e) => resolve(e), complete: () => resolve('complete') });
    });
    expect(JSON.stringify(outcome)).toContain('permission');
    // The same error mapping as over HTTP: the REST code.
    expect((outcome as { errors?: Array<{ extensions?: { code?: string } }> }).errors?.[0]?.extensions?.code).toBe('permission_denied');
    // As over HTTP, every error names the request it belongs to.
    expect((outcome as { errors: Array<{ extensions: { requestId?: string } }> }).errors[0].extensions.requestId).toMatch(/^ws_[0-9a-f]{24}$/);
    await client.dispose();
  });

  it('should refuse a card number sent as a number as invalid_parameter, over WebSocket and HTTP, logging no card data', async () => {
    const query = 'mutation($i: CreatePaymentInput!) { createPayment(input: $i) { id } }';
    const variables = { i: { amount: 1000, currency: 'usd', paymentMethod: 'card', card: { number: 4242424242424242, expMonth: 12, expYear: 2030, cvc: 987 } } };
    const client = wsClient(app.baseUrl, app.server.cert, app.account.testKey);
    const logsBefore = app.logs.length;
    try {
      const outcome = await new Promise<unknown>((resolve) => {
        client.subscribe({ query, variables }, { next: resolve, error: resolve, complete: () => resolve('complete') });
      });
      const errors = (Array.isArray(outcome) ? outcome : (outcome as { errors: unknown[] }).errors) as Array<{ message: string; extensions: { code: string } }>;
      expect(errors[0].extensions.code).toBe('invalid_parameter');
      expect(JSON.stringify(outcome)).not.toMatch(/4242424242424242|(?<![0-9A-Za-z])987(?![0-9A-Za-z])/);
      const overHttp = await app.request('POST', '/graphql', { key: app.account.testKey, body: { query, variables } });
      expect(overHttp.body.errors[0].extensions.code).toBe('invalid_parameter');
      expect(overHttp.text).not.toMatch(/4242424242424242|(?<![0-9A-Za-z])987(?![0-9A-Za-z])/);
      // Neither transport logs the client's own mistake, whose message quotes the values.
      const logged = app.logs.slice(logsBefore).join('');
      expect(logged).not.toContain('4242424242424242');
      expect(logged).not.toContain('cannot represent');
    } finally {
      await client.dispose();
    }
  });

  it('should answer a failure inside the server with internal_error and a request id it logged the failure under', async () => {
    const bus = app.server.services.bus as unknown as { stream: (...a: unknown[]) => unknown };
    const stream = bus.stream;
    bus.stream = () => {
      throw new Error('event bus exploded: detail-only-for-the-log');
    };
    const client = wsClient(app.baseUrl, app.server.cert, app.account.testKey);
    try {
      const outcome = await new Promise<{ errors?: Array<{ message: string; extensions: { code?: string; requestId?: string } }> }>((resolve, reject) => {
        client.subscribe({ query: 'subscription { paymentUpdated { id } }' }, { next: (v) => resolve(v as never), error: reject, complete: () => reject(new Error('completed')) });
      });
      const [error] = outcome.errors ?? [];
      expect(error.extensions.code).toBe('internal_error');
      expect(JSON.stringify(outcome)).not.toContain('detail-only-for-the-log');
      const requestId = error.extensions.requestId as string;
      expect(requestId).toMatch(/^ws_[0-9a-f]{24}$/);
      const logged = app.logs.filter((line) => line.includes(requestId));
      expect(logged.join('')).toContain('detail-only-for-the-log');
    } finally {
      bus.stream = stream;
      await client.dispose();
    }
  });

  it('should answer failures on our side as internal_error, never as the client\'s error with our message', async () => {
    const payments = app.server.services.payments as unknown as { retrieve: (...a: unknown[]) => Promise<unknown> };
    const retrieve = payments.retrieve;
    const bus = app.server.services.bus as unknown as { stream: (...a: unknown[]) => unknown };
    const stream = bus.stream;
    const client = wsClient(app.baseUrl, app.server.cert, app.account.testKey);
    const overHttp = async (query: string) => (await app.request('POST', '/graphql', { key: app.account.testKey, body: { query } })).body;
    try {
      // A value the resolver returned that its type refuses (output coercion).
      payments.retrieve = async () => ({ id: 'pay_x', amount: 'not-a-number-from-our-db' });
      const coercion = await overHttp('{ payment(id: "pay_x") { id amount } }');
      expect(coercion.errors[0].extensions.code).toBe('internal_error');
      expect(JSON.stringify(coercion)).not.toContain('not-a-number-from-our-db');
      expect(app.logs.filter((l) => l.includes(coercion.errors[0].extensions.requestId)).join('')).toContain('cannot represent');
      // A GraphQLError thrown by a resolver (a library's, say) with internals in its message.
      payments.retrieve = async () => {
        throw new GraphQLError('connection to 10.0.0.5:5432 refused');
      };
      const thrown = await overHttp('{ payment(id: "pay_x") { id } }');
      expect(thrown.errors[0].extensions.code).toBe('internal_error');
      expect(JSON.stringify(thrown)).not.toContain('10.0.0.5');
      // A subscription stream failing with a GraphQLError, over WebSocket.
      bus.stream = () => ({
        [Symbol.asyncIterator]: () => ({
          next: async () => {
            throw new GraphQLError('redis at 10.0.0.7 said NOAUTH');
          },
          return: async () => ({ done: true, value: undefined }),
        }),
      });
      const broke = await new Promise<unknown>((resolve) => {
        client.subscribe({ query: 'subscription { paymentUpdated { id } }' }, { next: resolve, error: resolve, complete: () => resolve('complete') });
      });
      const errors = (Array.isArray(broke) ? broke : (broke as { errors: unknown[] }).errors) as Array<{ extensions: { code: string } }>;
      expect(errors[0].extensions.code).toBe('internal_error');
      expect(JSON.stringify(broke)).not.toContain('10.0.0.7');
    } finally {
      payments.retrieve = retrieve;
      bus.stream = stream;
      await client.dispose();
    }
  });

  it('should refuse documents too large or too deep to check, over HTTP and WebSocket, without a 500 or a closed socket', async () => {
    // A flat chain of fragments, each spreading the next: small text, deep recursion in validation.
    const chain = ['{ customers { nodes { ...F0 } } }'];
    for (let i = 0; i < 2000; i++) chain.push(`fragment F${i} on Customer { payments { customer { ${i < 1999 ? `...F${i + 1}` : 'id'} } } }`);
    const deepList = `{ customers(pageSize: ${'['.repeat(4000)}1${']'.repeat(4000)}) { total } }`;
    const tooDeep = '{ customers { nodes { payments { nodes { customer { payments { nodes { customer { payments { nodes { id } } } } } } } } } } }';
    const overHttp = async (query: string) => app.request('POST', '/graphql', { key: app.account.testKey, body: { query } });
    for (const query of [chain.join('\n'), deepList]) {
      const res = await overHttp(query);
      expect(res.status).toBe(400);
      expect(res.body.errors[0].extensions.code).toBe('query_too_complex');
    }
    expect((await overHttp(tooDeep)).body.errors[0].extensions.code).toBe('query_too_complex');
    const client = wsClient(app.baseUrl, app.server.cert, app.account.testKey);
    const closed: number[] = [];
    client.on('closed', (event) => closed.push((event as { code: number }).code));
    try {
      const overWs = (query: string) => new Promise<Array<{ extensions: { code: string } }>>((resolve, reject) => {
        client.subscribe({ query }, { next: (v) => resolve((v as { errors: never }).errors), error: (e) => (Array.isArray(e) ? resolve(e as never) : reject(e)), complete: () => reject(new Error('completed')) });
      });
      for (const query of [chain.join('\n'), deepList]) expect((await overWs(query))[0].extensions.code).toBe('query_too_complex');
      expect((await overWs(tooDeep))[0].extensions.code).toBe('query_too_complex');
      expect(closed).toEqual([]);
    } finally {
      await client.dispose();
    }
  });

  it('should answer an invalid subscription document with invalid_parameter, keeping the socket open', async () => {
    const client = wsClient(app.baseUrl, app.server.cert, app.account.testKey);
    const closed: number[] = [];
    client.on('closed', (event) => closed.push((event as { code: number }).code));
    const outcome = await new Promise<unknown>((resolve) => {
      client.subscribe({ query: 'subscription { events { id ' }, { next: (v) => resolve(v), error: (e) => resolve(e), complete: () => resolve('complete') });
    });
    expect(Array.isArray(outcome)).toBe(true);
    expect((outcome as Array<{ extensions?: { code?: string } }>)[0].extensions?.code).toBe('invalid_parameter');
    expect((outcome as Array<{ extensions: { requestId?: string } }>)[0].extensions.requestId).toMatch(/^ws_[0-9a-f]{24}$/);
    // Which operation to run is the client's to say, too.
    const ambiguous = await new Promise<unknown>((resolve) => {
      client.subscribe({ query: 'subscription A { events { id } } subscription B { events { id } }' }, { next: resolve, error: resolve, complete: () => resolve('complete') });
    });
    expect((ambiguous as Array<{ extensions?: { code?: string } }>)[0].extensions?.code).toBe('invalid_parameter');
    const unknownField = await new Promise<unknown>((resolve) => {
      client.subscribe({ query: 'subscription { nope { id } }' }, { next: (v) => resolve(v), error: (e) => resolve(e), complete: () => resolve('complete') });
    });
    expect((unknownField as Array<{ extensions?: { code?: string } }>)[0].extensions?.code).toBe('invalid_parameter');
    expect(closed).toEqual([]);
    await client.dispose();
  });

  describe('across instances', () => {
    let other: SpawnedInstance;
    beforeAll(async () => {
      other = await spawnBeside(app, REDIS_ENV);
    }, 90_000);
    afterAll(async () => {
      await other?.stop();
    });

    // The subscriber is on the test app, where its stream is seen to open; the writer is the
    // other instance (its own process): the same fan-out, either way round.
    it('should deliver an event written through one instance to a subscriber on another', async () => {
      const client = wsClient(app.baseUrl, app.server.cert, app.account.testKey);
      const results = await take<{ events: { type: string; data: { object: { email: string } } } }>(
        client,
        'subscription { events(types: ["customer.created"]) { type data } }',
        1,
        () => other.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'cross-instance@example.com' } }),
      );
      expect(results[0].events.data.object.email).toBe('cross-instance@example.com');
      await client.dispose();
    });

    it('should deliver events too big for one notification, and several committed together', async () => {
      const metadata = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, 'v'.repeat(400)]));
      const client = wsClient(app.baseUrl, app.server.cert, app.account.testKey);
      const results = await take<{ events: { data: { object: { email: string; metadata: Record<string, string> } } } }>(
        client,
        'subscription { events(types: ["customer.created"]) { data } }',
        3,
        () =>
          Promise.all([
            other.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'big@example.com', metadata } }),
            other.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'batch-1@example.com' } }),
            other.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: 'batch-2@example.com' } }),
          ]),
      );
      const emails = results.map((r) => r.events.data.object.email).sort();
      expect(emails).toEqual(['batch-1@example.com', 'batch-2@example.com', 'big@example.com']);
      const big = results.find((r) => r.events.data.object.email === 'big@example.com')!;
      expect(big.events.data.object.metadata).toEqual(metadata);
      await client.dispose();
    });
  });
});
