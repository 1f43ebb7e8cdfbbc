import tls from 'node:tls';
import { startTestApp, type TestApp } from '../helpers/app';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ env: { HEADERS_TIMEOUT_MS: '500', REQUEST_TIMEOUT_MS: '1000' } });
});
afterAll(() => app.stop());

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
  for (let i = 0; i < 50; i++) {
    const lines = app.logs.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    const access = lines.find((l) => l.msg === 'request' && l.path === path && l.status === status);
    if (access) return lines.filter((l) => l.requestId === access.requestId);
    await wait(50);
  }
  throw new Error(`no access line for ${path} with status ${status}:\n${app.logs.join('')}`);
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
    const socket = await partialPost(path, bodyStart);
    await wait(100);
    socket.destroy();
    const lines = await linesOf(path, 499);
    expect(lines).toEqual([expect.objectContaining({ level: 'info', msg: 'request', clientGone: 'client_aborted' })]);
    expect(JSON.stringify(lines)).not.toContain('stack');
    await wait(100);
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
    await wait(100);
    expect(app.logs.join('')).not.toMatch(/"status":500|"level":"error"/);
    expectNoPlainText();
  });
});
