import dgram from 'node:dgram';
import dns from 'node:dns';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { HostResolver } from '../../../src/core/network/host-resolver';
import { checkWebhookUrl } from '../../../src/core/network/address-policy';
import { deliverWebhook } from '../../../src/modules/webhooks/http-delivery';

/**
 * A DNS server on 127.0.0.1 for the resolver under test: it answers A queries for names listed in
 * `answers` (after `delayMs`), answers AAAA with no records, and never answers anything else.
 */
class TestDnsServer {
  private readonly socket = dgram.createSocket('udp4');
  /** Every query name received, in order (retries included). */
  readonly queried: string[] = [];
  /** When each of `queried` arrived (performance.now()). */
  readonly queriedAt: number[] = [];
  answers = new Map<string, string>();
  delayMs = 0;

  async start(): Promise<string> {
    this.socket.on('message', (packet, from) => this.onQuery(packet, from));
    await new Promise<void>((resolve) => this.socket.bind(0, '127.0.0.1', resolve));
    return `127.0.0.1:${(this.socket.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }

  private onQuery(packet: Buffer, from: dgram.RemoteInfo): void {
    const labels: string[] = [];
    let at = 12;
    while (packet[at] !== 0) {
      labels.push(packet.subarray(at + 1, at + 1 + packet[at]).toString('ascii'));
      at += 1 + packet[at];
    }
    const questionEnd = at + 5;
    const qtype = packet.readUInt16BE(at + 1);
    const name = labels.join('.').toLowerCase();
    this.queried.push(name);
    this.queriedAt.push(performance.now());
    const address = this.answers.get(name);
    if (address === undefined) return; // silent: the resolver has to give up by itself
    const header = Buffer.alloc(12);
    header.writeUInt16BE(packet.readUInt16BE(0), 0); // id
    header.writeUInt16BE(0x8180, 2); // response, recursion desired and available, no error
    header.writeUInt16BE(1, 4);
    const answer: Buffer[] = [];
    if (qtype === 1) {
      header.writeUInt16BE(1, 6);
      const rr = Buffer.alloc(16);
      rr.writeUInt16BE(0xc00c, 0); // the name: pointer to the question
      rr.writeUInt16BE(1, 2); // A
      rr.writeUInt16BE(1, 4); // IN
      rr.writeUInt32BE(60, 6); // TTL
      rr.writeUInt16BE(4, 10);
      address.split('.').forEach((octet, i) => rr.writeUInt8(Number(octet), 12 + i));
      answer.push(rr);
    }
    const reply = Buffer.concat([header, packet.subarray(12, questionEnd), ...answer]);
    setTimeout(() => this.socket.send(reply, from.port, from.address), this.delayMs);
  }
}

let server: TestDnsServer;
let servers: string[];

beforeEach(async () => {
  server = new TestDnsServer();
  servers = [await server.start()];
});

afterEach(() => server.stop());

async function rejection(promise: Promise<unknown>): Promise<NodeJS.ErrnoException> {
  try {
    await promise;
  } catch (err) {
    return err as NodeJS.ErrnoException;
  }
  throw new Error('expected a rejection');
}

describe('HostResolver', () => {
  it('should resolve through the given DNS server with c-ares, an empty AAAA answer being no failure', async () => {
    server.answers.set('hooks.example.com', '93.184.216.34');
    const resolver = new HostResolver({ servers, timeoutMs: 2_000 });
    await expect(resolver.resolve('hooks.example.com')).resolves.toEqual([{ address: '93.184.216.34', family: 4 }]);
    await expect(resolver.addresses('Hooks.Example.COM')).resolves.toEqual(['93.184.216.34']);
    expect(server.queried).toContain('hooks.example.com');
  });

  it('should time out a lookup the DNS server never answers, at its deadline', async () => {
    const resolver = new HostResolver({ servers, timeoutMs: 300 });
    const started = performance.now();
    const err = await rejection(resolver.resolve('silent.example.com'));
    const elapsed = performance.now() - started;
    expect(err.code).toBe(dns.TIMEOUT);
    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed).toBeLessThan(2_000);
    expect(server.queried).toContain('silent.example.com');
  });

  it('should never have more lookups in flight than maxConcurrent, and time out the queued ones too', async () => {
    const resolver = new HostResolver({ servers, timeoutMs: 400, maxConcurrent: 2 });
    const names = ['n0.example.com', 'n1.example.com', 'n2.example.com', 'n3.example.com', 'n4.example.com'];
    const asked = performance.now();
    const errors = await Promise.all(names.map((name) => rejection(resolver.resolve(name))));
    expect(errors.map((e) => e.code)).toEqual(names.map(() => dns.TIMEOUT));
    // While the two lookups holding a channel were in flight (until their deadline), no other
    // reached the server; the rest waited and expired. (On a loaded machine a queued lookup may
    // still be handed a freed channel with a few ms left and send its query then: never before.)
    const early = new Set(server.queried.filter((_, i) => server.queriedAt[i] - asked < 350));
    expect(early.size).toBe(2);
  });

  it('should run queued lookups once a channel is free', async () => {
    server.delayMs = 100;
    for (const name of ['a.example.com', 'b.example.com', 'c.example.com']) server.answers.set(name, '93.184.216.34');
    const resolver = new HostResolver({ servers, timeoutMs: 3_000, maxConcurrent: 1 });
    const started = performance.now();
    const results = await Promise.all(['a.example.com', 'b.example.com', 'c.example.com'].map((name) => resolver.addresses(name)));
    expect(results).toEqual([['93.184.216.34'], ['93.184.216.34'], ['93.184.216.34']]);
    // One at a time: three answers each 100 ms late.
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('should answer localhost names as loopback and IP literals as themselves, without DNS', async () => {
    const resolver = new HostResolver({ servers, timeoutMs: 300 });
    await expect(resolver.addresses('localhost')).resolves.toEqual(['127.0.0.1', '::1']);
    await expect(resolver.resolve('api.localhost.', 6)).resolves.toEqual([{ address: '::1', family: 6 }]);
    await expect(resolver.addresses('93.184.216.34')).resolves.toEqual(['93.184.216.34']);
    expect(server.queried).toEqual([]);
  });

  it('should report a timed-out registration check as a DNS timeout', async () => {
    const resolver = new HostResolver({ servers, timeoutMs: 200 });
    await expect(checkWebhookUrl('https://silent.example.com/hooks', { livemode: true, allowPrivate: false, resolve: resolver.addresses })).resolves.toEqual({
      ok: false,
      reason: 'URL host could not be resolved (DNS timed out)',
    });
  });

  it('should fail a delivery whose host lookup times out, without connecting', async () => {
    const resolver = new HostResolver({ servers, timeoutMs: 200 });
    const outcome = await deliverWebhook({ url: 'https://silent.example.com/hooks', body: '{}', headers: {}, livemode: true, allowPrivate: false, lookup: resolver.lookup });
    expect(outcome).toMatchObject({ delivered: false, statusCode: null, error: 'DNS lookup timed out' });
    expect(outcome.latencyMs).toBeLessThan(2_000);
  });
});
