import net from 'node:net';
import tls from 'node:tls';
import { startTestApp, type TestApp } from '../helpers/app';

// Loopback addresses other than 127.0.0.1 are separate clients to the server (Linux routes all of 127/8).

/** An idle TCP socket from `localAddress` that never starts TLS (`closed` once it has closed). */
function idleSocket(url: string, localAddress: string, host = '127.0.0.1'): Promise<net.Socket> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port: Number(port), localAddress }, () => resolve(socket));
    socket.on('error', reject); // before connect; after it a reset is a close like any other
  });
}

/** Resolves with how long the server took to close the socket; rejects past `limitMs`. */
function closedWithin(socket: net.Socket, limitMs: number): Promise<{ afterMs: number; received: string }> {
  const started = Date.now();
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', () => undefined); // a reset is a close too
  return new Promise((resolve, reject) => {
    if (socket.destroyed) return resolve({ afterMs: 0, received });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for more than ${limitMs} ms`));
    }, limitMs);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({ afterMs: Date.now() - started, received });
    });
  });
}

describe('TLS_HANDSHAKE_TIMEOUT_MS', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { TLS_HANDSHAKE_TIMEOUT_MS: '300' } });
  });
  afterAll(() => app.stop());

  it('should close a socket that never starts TLS, or stalls in its handshake, within the handshake timeout, and only then', async () => {
    expect(app.config.headersTimeoutMs).toBe(10_000); // the handshake no longer gets the header timeout
    const idle = await idleSocket(app.baseUrl, '127.0.0.2');
    const { afterMs } = await closedWithin(idle, 5_000);
    console.log(`an idle TCP socket was closed by the server after ${afterMs} ms (TLS_HANDSHAKE_TIMEOUT_MS=300)`);
    expect(afterMs).toBeGreaterThanOrEqual(250);
    expect(afterMs).toBeLessThan(1_500);

    // The first bytes of a TLS record (a ClientHello's header), then nothing.
    const stalled = await idleSocket(app.baseUrl, '127.0.0.2');
    stalled.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00]));
    const stalledClose = await closedWithin(stalled, 5_000);
    expect(stalledClose.afterMs).toBeLessThan(1_500);

    // It applies to the handshake only: a connection past it is held to HEADERS_TIMEOUT_MS.
    const { port } = new URL(app.baseUrl);
    const socket = await new Promise<tls.TLSSocket>((resolve, reject) => {
      const s = tls.connect({ host: '127.0.0.1', port: Number(port), servername: 'localhost', ca: app.server.cert }, () => resolve(s));
      s.once('error', reject);
    });
    // Past the handshake timeout, well inside HEADERS_TIMEOUT_MS.
    await new Promise((r) => setTimeout(r, 700));
    expect(socket.destroyed).toBe(false);
    const answer = closedWithin(socket, 5_000);
    socket.write('GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    expect((await answer).received).toMatch(/^HTTP\/1\.1 200 /);
  });
});
