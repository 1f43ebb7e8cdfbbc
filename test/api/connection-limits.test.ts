import net from 'node:net';
import tls from 'node:tls';
import { startTestApp, type TestApp } from '../helpers/app';
import { closedWithin } from '../helpers/sockets';
import { waitFor } from '../helpers/wait';

/** A raw TLS connection to the test server, trusting only its certificate. */
function tlsSocket(app: TestApp): Promise<tls.TLSSocket> {
  const { port } = new URL(app.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port: Number(port), servername: 'localhost', ca: app.server.cert }, () => resolve(socket));
    socket.once('error', reject);
  });
}

function tcpSocket(url: string): Promise<net.Socket> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port: Number(port) }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** The connections a listener holds open now, as it counts them against MAX_CONNECTIONS. */
function openConnections(server: net.Server): Promise<number> {
  return new Promise((resolve, reject) => server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
}

/** Waits until the listener holds `n` connections (it has accepted, or seen the close of, the client's sockets). */
async function holding(server: net.Server, n: number): Promise<void> {
  await waitFor(async () => (await openConnections(server)) === n, { timeoutMs: 5_000, intervalMs: 10, what: `the listener to hold ${n} connections` });
}

describe('slow and idle clients', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { HEADERS_TIMEOUT_MS: '600', REQUEST_TIMEOUT_MS: '1200', KEEP_ALIVE_TIMEOUT_MS: '400' } });
  });
  afterAll(() => app.stop());

  it('should close a TLS connection whose headers trickle in, within the header timeout', async () => {
    const socket = await tlsSocket(app);
    socket.write('GET /health HTTP/1.1\r\nHost: localhost\r\n');
    // One header byte at a time, never the blank line that ends them.
    const drip = setInterval(() => {
      if (!socket.destroyed) socket.write('X');
    }, 100);
    try {
      const { afterMs } = await closedWithin(socket, 6_000);
      expect(afterMs).toBeLessThan(3_000);
    } finally {
      clearInterval(drip);
    }
  });

  it('should close a connection that stalls in the middle of its body, within the request timeout', async () => {
    const socket = await tlsSocket(app);
    socket.write(
      'POST /v1/customers HTTP/1.1\r\nHost: localhost\r\n' +
        `Authorization: Bearer ${app.account.testKey}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"email":`,
    );
    const { afterMs } = await closedWithin(socket, 6_000);
    expect(afterMs).toBeLessThan(4_000);
    // The customer was never created: the body never arrived whole.
    const list = await app.request('GET', '/v1/customers', { key: app.account.testKey });
    expect(list.body.meta.total).toBe(0);
  });

  it('should close a TLS connection that never sends a request', async () => {
    const socket = await tlsSocket(app);
    const { afterMs } = await closedWithin(socket, 6_000);
    expect(afterMs).toBeLessThan(3_000);
  });

  it('should close a TCP connection that never starts the TLS handshake', async () => {
    const socket = await tcpSocket(app.baseUrl);
    const { afterMs } = await closedWithin(socket, 6_000);
    expect(afterMs).toBeLessThan(3_000);
  });

  it('should close an idle keep-alive connection after the keep-alive timeout', async () => {
    const socket = await tlsSocket(app);
    const closed = closedWithin(socket, 6_000);
    socket.write('GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n');
    const { afterMs, received } = await closed;
    expect(received).toMatch(/^HTTP\/1\.1 200 /);
    expect(afterMs).toBeLessThan(3_000);
  });

  it('should close a plain-HTTP connection whose headers never end', async () => {
    const socket = await tcpSocket(app.httpUrl);
    socket.write('GET / HTTP/1.1\r\nHost: localhost\r\n');
    const { afterMs } = await closedWithin(socket, 6_000);
    expect(afterMs).toBeLessThan(3_000);
  });
});

describe('connection cap', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { MAX_CONNECTIONS: '2' } });
  });
  afterAll(() => app.stop());

  it('should refuse an HTTPS connection beyond MAX_CONNECTIONS at once, and take one again when a slot frees', async () => {
    const held = [await tlsSocket(app), await tlsSocket(app)];
    // The third is closed by the server before its handshake completes.
    const third = tlsSocket(app).then((s) => {
      s.destroy();
      return 'handshake completed';
    });
    await expect(third).rejects.toThrow();
    held[0].destroy();
    await holding(app.server.httpsServer, 1); // a slot is free once the server has seen the close
    const again = await tlsSocket(app);
    expect(again.authorized).toBe(true);
    again.destroy();
    held[1].destroy();
    await waitFor(() => app.logs.some((l) => l.includes('too many open connections') && l.includes('"listener":"https"') && l.includes('"level":"warn"')), {
      timeoutMs: 2_000, what: 'the refusal in the log',
    });
  });

  it('should refuse a plain-HTTP connection beyond MAX_CONNECTIONS at once', async () => {
    const held = [await tcpSocket(app.httpUrl), await tcpSocket(app.httpUrl)];
    await holding(app.server.httpServer, 2); // the server has accepted both
    const third = await tcpSocket(app.httpUrl);
    const { afterMs, received } = await closedWithin(third, 2_000);
    expect(received).toBe('');
    expect(afterMs).toBeLessThan(1_000);
    for (const s of held) s.destroy();
  });
});
