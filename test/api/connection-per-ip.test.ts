import net from 'node:net';
import tls from 'node:tls';
import type https from 'node:https';
import { once } from 'node:events';
import { startTestApp, type TestApp } from '../helpers/app';
import { closedWithin } from '../helpers/sockets';
import { assertStaysTrue } from '../helpers/wait';

// Loopback addresses other than 127.0.0.1 are separate clients to the server (Linux routes all of 127/8).

/** An idle TCP socket from `localAddress` that never starts TLS (`closed` once it has closed). */
function idleSocket(url: string, localAddress: string, host = '127.0.0.1'): Promise<net.Socket> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port: Number(port), localAddress }, () => resolve(socket));
    socket.on('error', reject); // before connect; after it a reset is a close like any other
  });
}

/** One GET over a fresh TLS connection from `localAddress`: the status line, or the error. */
function tlsGet(app: TestApp, localAddress: string, path = '/health'): Promise<string> {
  const { port } = new URL(app.baseUrl);
  return new Promise((resolve, reject) => {
    let received = '';
    const tcp = net.connect({ host: '127.0.0.1', port: Number(port), localAddress });
    const socket = tls.connect({ socket: tcp, servername: 'localhost', ca: app.server.cert }, () => {
      expect(socket.authorized).toBe(true);
      socket.write(`GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
    });
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => (received ? resolve(received.split('\r\n')[0]) : reject(new Error('closed without an answer'))));
  });
}

/**
 * Watches the sockets a listener accepts from `address` (the server-side end, by the client's
 * port), and resolves `seen(n)` once n have reached its 'connection' event, let in or not.
 */
function watchAccepted(server: https.Server | net.Server, address: string) {
  const byPort = new Map<number, net.Socket>();
  const closed = new Map<net.Socket, Promise<unknown>>();
  let count = 0;
  const waiting: { n: number; resolve: () => void }[] = [];
  server.on('connection', (socket: net.Socket) => {
    if (!socket.remoteAddress?.endsWith(address)) return;
    byPort.set(socket.remotePort!, socket);
    // Listened to after the server's own 'close' listener: when this settles, the server has counted the close.
    closed.set(socket, once(socket, 'close'));
    count += 1;
    for (const w of waiting.filter((x) => count >= x.n)) w.resolve();
  });
  return {
    /** Resolves once the server has closed every socket from the address except those of `clients`. */
    async onlyOpen(clients: net.Socket[]): Promise<void> {
      const keep = new Set(clients.map((c) => byPort.get(c.localPort!)));
      await Promise.all([...closed].filter(([socket]) => !keep.has(socket)).map(([, p]) => p));
    },
    seen(n: number, limitMs = 20_000): Promise<void> {
      if (count >= n) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the server saw ${count} of ${n} connections from ${address}`)), limitMs);
        waiting.push({ n, resolve: () => { clearTimeout(timer); resolve(); } });
      });
    },
  };
}

/** Resolves once `n` of the sockets have closed, or after `limitMs` whatever the count. */
function closedCount(sockets: net.Socket[], n: number, limitMs: number): Promise<number> {
  const count = () => sockets.filter((s) => s.closed).length;
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      for (const s of sockets) s.off('close', check);
      resolve(count());
    };
    const check = () => {
      if (count() >= n) done();
    };
    const timer = setTimeout(done, limitMs);
    for (const s of sockets) s.on('close', check);
    check();
  });
}

describe('1,000 idle sockets from one address (issue 31, connection exhaustion)', () => {
  let app: TestApp;
  // MAX_CONNECTIONS and MAX_CONNECTIONS_PER_IP as they are by default (1000, 100). The handshake
  // timeout is the longest allowed, so that the sockets let in are still open when counted.
  beforeAll(async () => {
    app = await startTestApp({ env: { TLS_HANDSHAKE_TIMEOUT_MS: '10000' } });
  });
  afterAll(() => app.stop());

  it('should keep at most 100 of them open and close the rest at once, while another address is still served', async () => {
    expect(app.config.maxConnections).toBe(1000);
    const accepted = watchAccepted(app.server.httpsServer, '127.0.0.2');
    const sockets: net.Socket[] = [];
    const started = Date.now();
    try {
      // In batches of 100: 1,000 at once would overflow the listen backlog (511) and wait on SYN retries.
      for (let i = 0; i < 10; i += 1) sockets.push(...(await Promise.all(Array.from({ length: 100 }, () => idleSocket(app.baseUrl, '127.0.0.2')))));
      await accepted.seen(1000);

      // Without the per-address cap, these 1,000 fill every slot and this is reset.
      const health = await app.request('GET', '/health');
      expect(health.status).toBe(200);
      expect(await tlsGet(app, '127.0.0.1', '/health')).toBe('HTTP/1.1 200 OK');

      const closed = await closedCount(sockets, 900, 5_000);
      const open = sockets.length - closed;
      const elapsed = Date.now() - started;
      console.log(`of 1000 idle sockets from 127.0.0.2 (counted ${elapsed} ms after the first connect), the server kept ${open} open and closed ${closed}`);
      expect(open).toBeLessThanOrEqual(100);
      expect(open).toBe(app.config.maxConnectionsPerIp); // 100 by default; no fewer: the address is not refused outright
      expect(app.config.maxConnectionsPerIp).toBe(100);
      expect(app.logs.some((l) => l.includes('too many open connections from one address') && l.includes('"listener":"https"') && l.includes('"address":"127.0.0.2"'))).toBe(true);
    } finally {
      for (const s of sockets) s.destroy();
    }
  });
});

describe('MAX_CONNECTIONS_PER_IP', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { MAX_CONNECTIONS_PER_IP: '5', TLS_HANDSHAKE_TIMEOUT_MS: '10000' } });
  });
  afterAll(() => app.stop());

  it('should close an HTTPS connection beyond the cap from one address at once, serve another address, and take one again when a slot frees', async () => {
    const accepted = watchAccepted(app.server.httpsServer, '127.0.0.2');
    const held: net.Socket[] = [];
    try {
      for (let i = 0; i < 5; i += 1) held.push(await idleSocket(app.baseUrl, '127.0.0.2'));
      await accepted.seen(5);
      expect(held.some((s) => s.closed)).toBe(false);

      const sixth = await idleSocket(app.baseUrl, '127.0.0.2');
      const { afterMs, received } = await closedWithin(sixth, 2_000);
      expect(received).toBe('');
      expect(afterMs).toBeLessThan(1_000);

      // Another address is not held to 127.0.0.2's count.
      expect(await tlsGet(app, '127.0.0.3')).toBe('HTTP/1.1 200 OK');
      expect((await app.request('GET', '/health')).status).toBe(200);

      // One of the five goes: once the server has seen it close, 127.0.0.2 gets its slot back.
      held[0].destroy();
      await accepted.onlyOpen(held.slice(1));
      expect(await tlsGet(app, '127.0.0.2')).toBe('HTTP/1.1 200 OK');
      // That request's connection (Connection: close) gives its slot back too, once: four held,
      // one more let in, and the next one refused again.
      await accepted.onlyOpen(held.slice(1));
      held.push(await idleSocket(app.baseUrl, '127.0.0.2'));
      await accepted.seen(8);
      const over = await idleSocket(app.baseUrl, '127.0.0.2');
      expect((await closedWithin(over, 2_000)).afterMs).toBeLessThan(1_000);
      expect(held.slice(1).some((s) => s.closed)).toBe(false);
    } finally {
      for (const s of held) s.destroy();
    }
  });

  it('should cap the plain-HTTP listener per address too', async () => {
    const accepted = watchAccepted(app.server.httpServer, '127.0.0.4');
    const held: net.Socket[] = [];
    try {
      for (let i = 0; i < 5; i += 1) held.push(await idleSocket(app.httpUrl, '127.0.0.4'));
      await accepted.seen(5);
      const sixth = await idleSocket(app.httpUrl, '127.0.0.4');
      const { afterMs, received } = await closedWithin(sixth, 2_000);
      expect(received).toBe('');
      expect(afterMs).toBeLessThan(1_000);
      expect(held.some((s) => s.closed)).toBe(false);
      // Another address still gets its redirect.
      const other = await idleSocket(app.httpUrl, '127.0.0.5');
      const answer = closedWithin(other, 2_000);
      other.write('GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
      expect((await answer).received).toMatch(/^HTTP\/1\.1 301 /);
      expect(app.logs.some((l) => l.includes('too many open connections from one address') && l.includes('"listener":"http"'))).toBe(true);
    } finally {
      for (const s of held) s.destroy();
    }
  });
});

describe('a dual-stack listener', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp({ env: { HOST: '::', MAX_CONNECTIONS_PER_IP: '2', TLS_HANDSHAKE_TIMEOUT_MS: '10000' } });
  });
  afterAll(() => app.stop());

  it('should count ::ffff:127.0.0.2 and 127.0.0.2 as one address', async () => {
    const accepted = watchAccepted(app.server.httpsServer, '127.0.0.2');
    const held: net.Socket[] = [];
    try {
      // Over IPv4, and over IPv6 to the IPv4-mapped address: the same client.
      held.push(await idleSocket(app.baseUrl, '127.0.0.2'));
      held.push(await idleSocket(app.baseUrl, '::ffff:127.0.0.2', '::ffff:127.0.0.1'));
      await accepted.seen(2);
      const third = await idleSocket(app.baseUrl, '127.0.0.2');
      expect((await closedWithin(third, 2_000)).afterMs).toBeLessThan(1_000);
      const fourth = await idleSocket(app.baseUrl, '::ffff:127.0.0.2', '::ffff:127.0.0.1');
      expect((await closedWithin(fourth, 2_000)).afterMs).toBeLessThan(1_000);
      expect(held.some((s) => s.closed)).toBe(false);
      // Logged as the client's IPv4 address, the form request logs and rate limits use.
      expect(app.logs.some((l) => l.includes('too many open connections from one address') && l.includes('"address":"127.0.0.2"'))).toBe(true);
      // IPv6 loopback is another address.
      const { port } = new URL(app.baseUrl);
      const v6 = await new Promise<string>((resolve, reject) => {
        let received = '';
        const s = tls.connect({ host: '::1', port: Number(port), servername: 'localhost', ca: app.server.cert }, () =>
          s.write('GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'),
        );
        s.on('data', (c: Buffer) => (received += c.toString('latin1')));
        s.on('error', reject);
        s.on('close', () => resolve(received.split('\r\n')[0]));
      });
      expect(v6).toBe('HTTP/1.1 200 OK');
    } finally {
      for (const s of held) s.destroy();
    }
  });
});

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
    // Open past the handshake timeout (300 ms), well inside HEADERS_TIMEOUT_MS: the window is the test.
    await assertStaysTrue(() => !socket.destroyed, 700, 'the TLS connection open');
    expect(socket.destroyed).toBe(false);
    const answer = closedWithin(socket, 5_000);
    socket.write('GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    expect((await answer).received).toMatch(/^HTTP\/1\.1 200 /);
  });
});
