import { MAX_BODY_BYTES } from '../../src/http/body';
import { startTestApp, type TestApp } from '../helpers/app';
import { closed, connect as connectTo, openSocket, run, wsClient } from '../helpers/graphql-ws';
import { assertStaysTrue, waitFor } from '../helpers/wait';

/**
 * graphql-ws connections that end early, arrive at once or go wrong: a socket closed while its
 * key is checked is not counted and not re-checked, a message is no larger than a request body,
 * failed logins sent at once are all counted, and whatever fails is logged as JSON.
 */

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({
    env: {
      GRAPHQL_WS_MAX_SOCKETS_PER_KEY: '2', GRAPHQL_WS_FAILED_CONNECTS_PER_MINUTE: '6',
      // Every connection looks its key up, and an open socket re-checks it every 50 ms.
      API_KEY_CACHE_MS: '0', GRAPHQL_WS_KEY_RECHECK_MS: '50',
    },
  });
});
afterAll(() => app.stop());
afterEach(() => jest.restoreAllMocks());

const connect = (key: string | null, extraParams?: Record<string, unknown>) => connectTo(app, key, extraParams);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A key check that takes a while, as on a busy database: a socket can close while it runs. */
function slowKeyChecks(ms: number): jest.SpyInstance {
  const { accounts } = app.server.services;
  const authenticate = accounts.authenticate.bind(accounts);
  return jest.spyOn(accounts, 'authenticate').mockImplementation(async (key) => {
    await sleep(ms);
    return authenticate(key);
  });
}

/** Nothing written to the console or straight to stdout/stderr: every line goes through pino (app.logs). */
function watchConsole(): () => void {
  const spies = [
    ...(['log', 'info', 'warn', 'error', 'debug'] as const).map((m) => jest.spyOn(console, m)),
    jest.spyOn(process.stdout, 'write'), jest.spyOn(process.stderr, 'write'),
  ];
  return () => {
    for (const spy of spies) expect(spy).not.toHaveBeenCalled();
  };
}

const logLines = () => app.logs.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, any>);

describe('graphql-ws connections', () => {
  it('should not count a socket closed while its key is checked, nor keep re-checking its key', async () => {
    const { testKey: key } = await app.createAccount();
    const authenticate = slowKeyChecks(100);
    // Four times: connect, send the key, and drop the connection at once.
    for (let i = 0; i < 4; i++) {
      const socket = openSocket(app);
      socket.on('error', () => undefined);
      await new Promise<void>((resolve) => socket.on('open', () => {
        socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${key}` } }), () => {
          socket.terminate();
          resolve();
        });
      }));
    }
    // One address's checks run one at a time: the first socket's key is checked; those closed
    // while they waited their turn are not checked at all.
    await waitFor(() => authenticate.mock.calls.length >= 1, { what: 'the first key check to start' });
    await Promise.allSettled(authenticate.mock.results.map((r) => r.value));
    await waitFor(async () => {
      const settled = authenticate.mock.calls.length;
      await Promise.allSettled(authenticate.mock.results.map((r) => r.value));
      return settled === authenticate.mock.calls.length;
    }, { what: 'the key checks to end' });
    const checks = authenticate.mock.calls.length;
    expect(checks).toBeGreaterThanOrEqual(1);
    expect(checks).toBeLessThanOrEqual(4);
    // Eight re-check periods: nothing re-checks a dropped socket's key.
    await assertStaysTrue(() => authenticate.mock.calls.length === checks, 400, "no re-check of a dropped socket's key");
    // None of them holds one of the key's two places.
    const [first, second] = [await connect(key), await connect(key)];
    expect([first.outcome, second.outcome]).toEqual(['ack', 'ack']);
    await Promise.all([first, second].map((c) => closed(c.socket)));
  });

  it('should close a socket whose message is over 1 MiB with 1009 before reading it, log it as JSON and go on serving', async () => {
    const { testKey: key } = await app.createAccount();
    const noConsole = watchConsole();
    app.logs.length = 0;
    const socket = openSocket(app);
    socket.on('error', () => undefined); // the server may close while the client still writes
    const code = await new Promise<number>((resolve) => {
      socket.on('open', () => socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${key}`, pad: 'x'.repeat(MAX_BODY_BYTES) } })));
      socket.on('message', () => resolve(0)); // an acknowledgement: the message was read
      socket.on('close', (c) => resolve(c));
    });
    expect(code).toBe(1009);
    await waitFor(() => app.logs.length > 0, { timeoutMs: 1_000, what: 'the warning to be logged' });
    expect(logLines()).toContainEqual(expect.objectContaining({ level: 'warn', wsError: 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH' }));
    noConsole();
    // A message just under the limit is read, and the server goes on.
    const near = await connect(key, { pad: 'x'.repeat(MAX_BODY_BYTES - 200) });
    expect(near.outcome).toBe('ack');
    await closed(near.socket);
  });

  it('should log a connection check that fails as one JSON line and close with 4500, printing nothing', async () => {
    const { testKey: key } = await app.createAccount();
    const noConsole = watchConsole();
    app.logs.length = 0;
    jest.spyOn(app.server.services.limiter, 'consume').mockRejectedValue(new Error('redis went away'));
    const refused = await connect(key);
    expect(refused.outcome).toEqual({ code: 4500, reason: 'Internal server error; retry later' });
    expect(logLines()).toContainEqual(expect.objectContaining({
      level: 'error', msg: 'graphql-ws connection check failed', err: expect.objectContaining({ message: 'redis went away' }),
    }));
    noConsole();
  });

  it('should answer an operation whose check fails with internal_error under a logged request id, keeping the socket, printing nothing', async () => {
    const { testKey: key } = await app.createAccount();
    const client = wsClient(app, key);
    expect((await run(client, '{ customers { total } }')).data).toEqual({ customers: { total: 0 } });
    const noConsole = watchConsole();
    app.logs.length = 0;
    const consume = jest.spyOn(app.server.services.limiter, 'consume').mockRejectedValue(new Error('redis went away'));
    const failed = await run(client, '{ customers { total } }');
    expect(failed.errors).toEqual([expect.objectContaining({
      message: 'An internal error occurred; quote the requestId to support',
      extensions: { code: 'internal_error', requestId: expect.stringMatching(/^ws_/) },
    })]);
    const logged = logLines().filter((l) => l.requestId === failed.errors![0].extensions.requestId);
    expect(logged).toEqual([expect.objectContaining({ level: 'error', err: expect.objectContaining({ message: 'redis went away' }) })]);
    noConsole();
    consume.mockRestore();
    expect((await run(client, '{ customers { total } }')).data).toEqual({ customers: { total: 0 } });
    await client.dispose();
  });

  // Last: it turns this test process's address away for the rest of the minute.
  it('should count failed logins sent at once, letting no more than the limit reach the key check', async () => {
    const authenticate = slowKeyChecks(100);
    const bad = 'sk_test_' + 'z'.repeat(43);
    const outcomes = (await Promise.all(Array.from({ length: 15 }, () => connect(bad)))).map((c) => c.outcome as { code: number });
    const refused = outcomes.filter((o) => o.code === 4403).length;
    expect(refused).toBeGreaterThan(0);
    expect(refused).toBeLessThanOrEqual(6);
    expect(outcomes.filter((o) => o.code === 4429)).toHaveLength(15 - refused);
    // Only this test's logins: a socket of an earlier test may still re-check its own key meanwhile.
    expect(authenticate.mock.calls.filter(([k]) => k === bad).length).toBeLessThanOrEqual(6);
  });
});
