import dns from 'node:dns';
import net from 'node:net';
import { performance } from 'node:perf_hooks';

/**
 * DNS for endpoint hosts through c-ares (`dns.promises.Resolver`), never `dns.lookup`: lookup runs
 * getaddrinfo on libuv's thread pool, which sqlite3 shares, and has no timeout, so a dead DNS
 * server could stall the database. Each lookup has a deadline and holds one of a fixed number of
 * resolver channels, so a slow DNS server can neither hold callers forever nor pile up queries.
 *
 * c-ares reads /etc/resolv.conf but not /etc/hosts; `localhost` names are answered here as
 * loopback (RFC 6761), which only a policy allowing private addresses lets anyone reach.
 */

export const DEFAULT_DNS_TIMEOUT_MS = 5_000;
export const DEFAULT_DNS_CONCURRENCY = 16;

export interface HostResolverOptions {
  /** Whole lookup, queueing for a channel included; default 5 s. */
  timeoutMs?: number;
  /** Lookups in flight at once; the rest wait their turn (within their deadline). Default 16. */
  maxConcurrent?: number;
  /** DNS servers ("127.0.0.1:5353"); default: the system's (tests point it at their own). */
  servers?: string[];
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

const LOOPBACK: ResolvedAddress[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];

function dnsError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

// c-ares answers these when a name has no record of that family: not a failure of the lookup.
const NO_RECORDS = new Set<string>([dns.NODATA, dns.NOTFOUND]);

/** `localhost` and `*.localhost` always mean loopback (RFC 6761): the policy and the resolver agree through this. */
export function isLocalhostName(hostname: string): boolean {
  const name = hostname.replace(/\.$/, '').toLowerCase();
  return name === 'localhost' || name.endsWith('.localhost');
}

export class HostResolver {
  readonly timeoutMs: number;
  private readonly maxChannels: number;
  private readonly servers: string[] | undefined;
  private channels = 0;
  private readonly idle: dns.promises.Resolver[] = [];
  private readonly waiting: Array<(channel: dns.promises.Resolver) => void> = [];

  constructor(options: HostResolverOptions = {}) {
    this.timeoutMs = options.timeoutMs !== undefined && options.timeoutMs > 0 ? options.timeoutMs : DEFAULT_DNS_TIMEOUT_MS;
    this.maxChannels = Math.max(1, Math.floor(options.maxConcurrent ?? DEFAULT_DNS_CONCURRENCY));
    this.servers = options.servers;
  }

  /**
   * Every A and AAAA address of `hostname` (IPv4 first), or `family`'s only. Rejects with ENOTFOUND
   * (no address), ETIMEOUT (deadline passed) or EAI_AGAIN (the DNS server failed).
   */
  async resolve(hostname: string, family: 0 | 4 | 6 = 0): Promise<ResolvedAddress[]> {
    const literal = net.isIP(hostname);
    if (literal !== 0) return family === 0 || family === literal ? [{ address: hostname, family: literal as 4 | 6 }] : [];
    if (isLocalhostName(hostname)) return LOOPBACK.filter((r) => family === 0 || r.family === family);

    const deadline = performance.now() + this.timeoutMs;
    const channel = await this.acquire(hostname, deadline);
    // A channel handed over as this lookup's deadline passes (the releasing lookup's timer fired
    // first): no query is sent that could not be answered before its deadline.
    if (deadline - performance.now() < MIN_QUERY_MS) {
      this.release(channel);
      throw dnsError(dns.TIMEOUT, `DNS lookup of ${hostname} timed out after ${this.timeoutMs} ms (waiting for a resolver)`);
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      const expired = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          channel.cancel();
          reject(dnsError(dns.TIMEOUT, `DNS lookup of ${hostname} timed out after ${this.timeoutMs} ms`));
        }, Math.max(0, deadline - performance.now()));
      });
      const queries: Array<Promise<ResolvedAddress[]>> = [];
      if (family !== 6) queries.push(channel.resolve4(hostname).then((list) => list.map((address) => ({ address, family: 4 as const }))));
      if (family !== 4) queries.push(channel.resolve6(hostname).then((list) => list.map((address) => ({ address, family: 6 as const }))));
      // A cancelled query rejects after the deadline has answered: nobody waits for it.
      for (const query of queries) query.catch(() => undefined);
      const settled = await Promise.race([Promise.allSettled(queries), expired]);
      const records: ResolvedAddress[] = [];
      for (const result of settled) {
        if (result.status === 'fulfilled') records.push(...result.value);
        else if (!NO_RECORDS.has((result.reason as NodeJS.ErrnoException).code ?? '')) {
          // Half an answer is not enough to judge a host by: fail the whole lookup.
          const code = (result.reason as NodeJS.ErrnoException).code ?? 'error';
          if (code === dns.TIMEOUT) throw dnsError(dns.TIMEOUT, `DNS lookup of ${hostname} timed out`);
          throw dnsError('EAI_AGAIN', `DNS lookup of ${hostname} failed (${code})`);
        }
      }
      if (records.length === 0) throw dnsError('ENOTFOUND', `no address for ${hostname}`);
      return records;
    } finally {
      clearTimeout(timer);
      this.release(channel);
    }
  }

  /** Resolves to the addresses only (registration-time checks). */
  addresses = async (hostname: string): Promise<string[]> => (await this.resolve(hostname)).map((r) => r.address);

  /** A `net.LookupFunction` over this resolver, for `https.request({ lookup })`. */
  lookup: net.LookupFunction = (hostname, options, callback) => {
    const family = options?.family === 4 || options?.family === 'IPv4' ? 4 : options?.family === 6 || options?.family === 'IPv6' ? 6 : 0;
    this.resolve(hostname, family).then(
      (records) => {
        if (options?.all) callback(null, records);
        else callback(null, records[0].address, records[0].family);
      },
      (err: NodeJS.ErrnoException) => (options?.all ? callback(err, []) : callback(err, '', 0)),
    );
  };

  /** An idle channel, a new one while fewer than maxConcurrent exist, or the next one released. */
  private acquire(hostname: string, deadline: number): Promise<dns.promises.Resolver> {
    const idle = this.idle.pop();
    if (idle) return Promise.resolve(idle);
    if (this.channels < this.maxChannels) {
      this.channels += 1;
      // Two tries per server inside the deadline; the deadline itself cancels whatever is left.
      const channel = new dns.promises.Resolver({ timeout: Math.max(50, Math.floor(this.timeoutMs / 2)), tries: 2 });
      if (this.servers) channel.setServers(this.servers);
      return Promise.resolve(channel);
    }
    return new Promise((resolve, reject) => {
      const take = (c: dns.promises.Resolver): void => {
        clearTimeout(timer);
        resolve(c);
      };
      const timer = setTimeout(() => {
        const at = this.waiting.indexOf(take);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(dnsError(dns.TIMEOUT, `DNS lookup of ${hostname} timed out after ${this.timeoutMs} ms (waiting for a resolver)`));
      }, Math.max(0, deadline - performance.now()));
      this.waiting.push(take);
    });
  }

  private release(channel: dns.promises.Resolver): void {
    const next = this.waiting.shift();
    if (next) next(channel);
    else this.idle.push(channel);
  }
}

/** A lookup with less time than this left when it gets a channel is timed out rather than sent. */
const MIN_QUERY_MS = 5;

/** The process's resolver for endpoint hosts (registration and delivery). */
export const defaultHostResolver = new HostResolver();
