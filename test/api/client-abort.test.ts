import type { IncomingMessage } from 'node:http';
import tls from 'node:tls';
import { startTestApp, type TestApp } from '../helpers/app';
import { assertStaysTrue, waitFor } from '../helpers/wait';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ env: { HEADERS_TIMEOUT_MS: '500', REQUEST_TIMEOUT_MS: '1000' } });
});
afterAll(() => app.stop());

/**
 * Resolves once the server is reading the body of the next request to `path`: its handler got it
 * and the body parser has started consuming it (the request stream flows); rejects after 5 s.
 */
function bodyBeingRead(path: string): Promise<void> {
  const server = app.server.httpsServer;
  let onRequest!: (req: IncomingMessage) => void;
  let timer: NodeJS.Timeout | undefined;
  return new Promise<void>((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`the server did not start reading the body of ${path}`)), 5_000);
    onRequest = (req) => {
      if (req.url !== path) return;
      server.off('request', onRequest);
      if (req.readableFlowing) resolve();
      else req.once('resume', () => resolve());
    };
    server.on('request', onRequest);
  }).finally(() => {
    clearTimeout(timer);
    server.off('request', onRequest);
  });
}

/** No 500 and no error logged for this while: what the server might still log after the access line. */
const NOTHING_MORE_LOGGED_MS = 100;
const noErrorLogged = () => !/"status":500|"level":"error"/.test(app.logs.join(''));

/** Sends a request's headers and the start of a 100-byte body that never comes whole. */
async function partialPost(path: string, bodyStart: string): Promise<tls.TLSSocket> {
  const { port } = new URL(app.baseUrl);
  const socket = tls.connect({ host: '127.0.0.1', port: Number(port), servername: 'localhost', ca: app.server.cert });
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('secureConnect', resolve));
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${app.account.testKey}\r\n` +
      `Content-Type: application/json\r\nContent-Length: 100\r\n\r\n${bodyStart}`,
  );
  return socket;
}

/** The JSON log lines of one request (its access line and anything logged under its id). */
async function linesOf(path: string, status: number): Promise<Record<string, unknown>[]> {
  const found = await waitFor(() => {
    const lines = app.logs.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    const access = lines.find((l) => l.msg === 'request' && l.path === path && l.status === status);
    return access ? lines.filter((l) => l.requestId === access.requestId) : null;
  }, { timeoutMs: 2_500, intervalMs: 25, what: `an access line for ${path} with status ${status}` }).catch(() => null);
  if (!found) throw new Error(`no access line for ${path} with status ${status}:\n${app.logs.join('')}`);
  return found;
}

describe('a client that goes away mid-body', () => {
  let stderr: jest.SpyInstance;
  let consoleError: jest.SpyInstance;
  beforeEach(() => {
    app.logs.length = 0;
    stderr = jest.spyOn(process.stderr, 'write');
    consoleError = jest.spyOn(console, 'error');
  });
  afterEach(() => jest.restoreAllMocks());

  function expectNoPlainText(): void {
    // Koa's default error handler prints plain text to stderr; every line must be pino's JSON.
    expect(consoleError).not.toHaveBeenCalled();
    expect(stderr).not.toHaveBeenCalled();
  }

  it.each([
    ['/v1/customers', '{"email":'],
    ['/graphql', '{"query":'],
  ])('should log an abort on %s as the client\'s (499), not a 500 with a stack', async (path, bodyStart) => {
    const reading = bodyBeingRead(path);
    const socket = await partialPost(path, bodyStart);
    await reading; // the client goes away mid-body, not before the server got to it
    socket.destroy();
    const lines = await linesOf(path, 499);
    expect(lines).toEqual([expect.objectContaining({ level: 'info', msg: 'request', clientGone: 'client_aborted' })]);
    expect(JSON.stringify(lines)).not.toContain('stack');
    await assertStaysTrue(noErrorLogged, NOTHING_MORE_LOGGED_MS, 'no 500 or error in the log');
    expect(app.logs.join('')).not.toMatch(/"status":500|"level":"error"/);
    expectNoPlainText();
  });

  it('should log a body not sent within REQUEST_TIMEOUT_MS as a timeout (408), not a 500', async () => {
    const socket = await partialPost('/v1/customers', '{"email":');
    const received: Buffer[] = [];
    socket.on('data', (c: Buffer) => received.push(c));
    await new Promise((resolve) => socket.once('close', resolve));
    expect(Buffer.concat(received).toString()).toMatch(/^HTTP\/1\.1 408 /);
    const lines = await linesOf('/v1/customers', 408);
    expect(lines).toEqual([expect.objectContaining({ level: 'info', msg: 'request', clientGone: 'request_timeout' })]);
    await assertStaysTrue(noErrorLogged, NOTHING_MORE_LOGGED_MS, 'no 500 or error in the log');
    expect(app.logs.join('')).not.toMatch(/"status":500|"level":"error"/);
    expectNoPlainText();
  });
});
