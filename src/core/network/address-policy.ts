import dns from 'node:dns';
import net from 'node:net';
import { defaultHostResolver, isLocalhostName } from './host-resolver';

/**
 * SSRF policy for outgoing webhook calls: which destination addresses a delivery may reach.
 *
 * IPv4 is a deny list (IANA special-purpose registry). IPv6 is an allow list: only global unicast
 * 2000::/3 may be reached, minus its special blocks, plus the forms that embed an IPv4 address
 * (mapped, translated, compatible, NAT64 64:ff9b::/96, 6to4 2002::/16), which are judged by the
 * IPv4 address inside them.
 */

export type ForbiddenAddressClass =
  | 'invalid'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'shared'
  | 'multicast'
  | 'broadcast'
  | 'documentation'
  | 'benchmarking'
  | 'reserved';

interface Range {
  base: bigint;
  prefix: number;
  label: ForbiddenAddressClass;
}

// Order matters only for the label reported: the narrower block comes first.
const IPV4_FORBIDDEN: ReadonlyArray<[string, ForbiddenAddressClass]> = [
  ['255.255.255.255/32', 'broadcast'],
  ['0.0.0.0/8', 'unspecified'], // "this network"
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'shared'], // carrier-grade NAT
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'], // includes cloud metadata 169.254.169.254
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'], // IETF protocol assignments (DS-Lite, NAT64 discovery)
  ['192.0.2.0/24', 'documentation'], // TEST-NET-1
  ['192.88.99.0/24', 'reserved'], // deprecated 6to4 relay anycast
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'], // TEST-NET-2
  ['203.0.113.0/24', 'documentation'], // TEST-NET-3
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'], // future use
];

// Checked before the 2000::/3 allow list so the label is precise.
const IPV6_FORBIDDEN: ReadonlyArray<[string, ForbiddenAddressClass]> = [
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['64:ff9b:1::/48', 'private'], // local-use NAT64 (RFC 8215)
  ['100::/64', 'reserved'], // discard-only
  ['2001:db8::/32', 'documentation'],
  ['3fff::/20', 'documentation'], // RFC 9637
  ['2001:2::/48', 'benchmarking'],
  ['2001::/23', 'reserved'], // IETF protocol assignments: Teredo, ORCHID, AMT, AS112 …
  ['fc00::/7', 'private'], // unique local
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'private'], // deprecated site-local
  ['ff00::/8', 'multicast'],
];

const IPV4_MAPPED: Range = cidr6('::ffff:0:0/96', 'reserved');
const IPV4_TRANSLATED: Range = cidr6('::ffff:0:0:0/96', 'reserved');
const IPV4_COMPATIBLE: Range = cidr6('::/96', 'reserved');
const NAT64_WELL_KNOWN: Range = cidr6('64:ff9b::/96', 'reserved');
const SIX_TO_FOUR: Range = cidr6('2002::/16', 'reserved');
const GLOBAL_UNICAST: Range = cidr6('2000::/3', 'reserved');

const v4Ranges: Range[] = IPV4_FORBIDDEN.map(([c, label]) => cidr4(c, label));
const v6Ranges: Range[] = IPV6_FORBIDDEN.map(([c, label]) => cidr6(c, label));

function cidr4(text: string, label: ForbiddenAddressClass): Range {
  const [addr, bits] = text.split('/');
  return { base: BigInt(parseIPv4(addr) as number), prefix: Number(bits), label };
}

function cidr6(text: string, label: ForbiddenAddressClass): Range {
  const [addr, bits] = text.split('/');
  return { base: parseIPv6(addr) as bigint, prefix: Number(bits), label };
}

function inRange(value: bigint, range: Range, width: 32 | 128): boolean {
  const shift = BigInt(width - range.prefix);
  return value >> shift === range.base >> shift;
}

/** Dotted-quad IPv4 to an unsigned 32-bit integer; null for anything else (no shorthand forms). */
export function parseIPv4(text: string): number | null {
  if (!net.isIPv4(text)) return null;
  const parts = text.split('.').map(Number);
  return ((parts[0] << 24) | (parts[1] << 16) | (parts[2] << 8) | parts[3]) >>> 0;
}

/** IPv6 (with optional trailing dotted quad, zone stripped) to a 128-bit integer; null if invalid. */
export function parseIPv6(text: string): bigint | null {
  const address = text.replace(/%.*$/, '');
  if (!net.isIPv6(address)) return null;
  let head = address;
  const tail: number[] = [];
  const lastColon = head.lastIndexOf(':');
  const last = head.slice(lastColon + 1);
  if (last.includes('.')) {
    const v4 = parseIPv4(last);
    if (v4 === null) return null;
    tail.push(v4 >>> 16, v4 & 0xffff);
    head = head.slice(0, lastColon + 1);
    // "::1.2.3.4" leaves "::", "a::1.2.3.4" leaves "a::", "a:b:…:f:1.2.3.4" leaves a trailing ":".
    if (head.endsWith(':') && !head.endsWith('::')) head = head.slice(0, -1);
  }
  const groupsNeeded = 8 - tail.length;
  let groups: number[];
  const hex = (s: string): number[] => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const gap = head.indexOf('::');
  if (gap >= 0) {
    const left = hex(head.slice(0, gap));
    const right = hex(head.slice(gap + 2));
    const zeros = groupsNeeded - left.length - right.length;
    if (zeros < 0) return null;
    groups = [...left, ...new Array<number>(zeros).fill(0), ...right];
  } else {
    groups = hex(head);
  }
  groups = [...groups, ...tail];
  if (groups.length !== 8 || groups.some((g) => !Number.isInteger(g) || g < 0 || g > 0xffff)) return null;
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n);
}

function classifyIPv4(value: number): ForbiddenAddressClass | null {
  const v = BigInt(value);
  for (const range of v4Ranges) if (inRange(v, range, 32)) return range.label;
  return null;
}

function classifyIPv6(value: bigint, zoned: boolean): ForbiddenAddressClass | null {
  for (const range of v6Ranges) if (inRange(value, range, 128)) return range.label;
  const low32 = Number(value & 0xffffffffn);
  if (inRange(value, IPV4_MAPPED, 128) || inRange(value, IPV4_TRANSLATED, 128) || inRange(value, NAT64_WELL_KNOWN, 128)) {
    return classifyIPv4(low32);
  }
  // IPv4-compatible (deprecated): report the embedded class when there is one, refuse either way.
  if (inRange(value, IPV4_COMPATIBLE, 128)) return classifyIPv4(low32) ?? 'reserved';
  if (inRange(value, SIX_TO_FOUR, 128)) return classifyIPv4(Number((value >> 80n) & 0xffffffffn));
  if (!inRange(value, GLOBAL_UNICAST, 128)) return 'reserved';
  // A zone only makes sense for scoped (non-global) addresses; refuse rather than guess.
  return zoned ? 'reserved' : null;
}

/** The reason an address may not be reached, or null when it is a public unicast address. */
export function forbiddenAddressClass(ip: string): ForbiddenAddressClass | null {
  const v4 = parseIPv4(ip);
  if (v4 !== null) return classifyIPv4(v4);
  const v6 = parseIPv6(ip);
  if (v6 !== null) return classifyIPv6(v6, ip.includes('%'));
  return 'invalid';
}

/** True for anything that is not a public unicast IPv4/IPv6 address, including unparsable input. */
export function isForbiddenAddress(ip: string): boolean {
  return forbiddenAddressClass(ip) !== null;
}

export type ResolveHost = (host: string) => Promise<string[]>;

export type UrlCheckResult = { ok: true } | { ok: false; reason: string };

/** The only ports a live-mode endpoint URL may name. */
export const LIVE_WEBHOOK_PORTS: readonly number[] = [443, 8443];

/** What an endpoint of one mode may reach. */
export interface DestinationPolicy {
  /** Private, loopback, link-local … destinations are allowed. */
  allowPrivate: boolean;
  /** The ports a URL may name; null for any. */
  ports: readonly number[] | null;
}

/**
 * The policy of a mode. WEBHOOK_ALLOW_PRIVATE (`allowPrivate`) is a process-wide switch for
 * development: it only ever applies to test mode, so a live endpoint always gets the strict policy.
 */
export function destinationPolicy(livemode: boolean, allowPrivate: boolean): DestinationPolicy {
  if (livemode) return { allowPrivate: false, ports: LIVE_WEBHOOK_PORTS };
  return { allowPrivate, ports: null };
}

export interface UrlCheckOptions {
  /** The endpoint's mode: live mode ignores allowPrivate and allows only LIVE_WEBHOOK_PORTS. */
  livemode: boolean;
  /** WEBHOOK_ALLOW_PRIVATE. */
  allowPrivate: boolean;
  /** All A and AAAA addresses of a name; defaults to the c-ares resolver (host-resolver.ts). */
  resolve?: ResolveHost;
}

export const defaultResolveHost: ResolveHost = (host) => defaultHostResolver.addresses(host);

/** The hostname of a parsed URL without IPv6 brackets, or null when it is a name. */
export function literalAddressOf(url: URL): string | null {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return net.isIP(host) ? host : null;
}

/** The port a URL connects to (URL drops an explicit :443 from https URLs). */
function portOf(url: URL): number {
  return url.port === '' ? 443 : Number(url.port);
}

/** The parts of the URL rules that need no DNS: https, no credentials, the port, a literal address. */
export function checkWebhookUrlSyntax(rawUrl: string, policy: DestinationPolicy): { ok: true; url: URL } | { ok: false; reason: string } {
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return { ok: false, reason: 'URL is not valid' };
  }
  if (url.protocol !== 'https:') return { ok: false, reason: 'URL must use https' };
  if (url.username !== '' || url.password !== '') return { ok: false, reason: 'URL must not contain credentials' };
  if (url.hostname === '') return { ok: false, reason: 'URL must have a host' };
  if (policy.ports !== null && !policy.ports.includes(portOf(url))) {
    return { ok: false, reason: `URL port must be ${policy.ports.join(' or ')} in live mode` };
  }
  if (policy.allowPrivate) return { ok: true, url };
  const literal = literalAddressOf(url);
  if (literal !== null) {
    const cls = forbiddenAddressClass(literal);
    if (cls !== null) return { ok: false, reason: `URL host is a ${cls} address` };
  } else if (isLocalhostName(url.hostname)) {
    return { ok: false, reason: 'URL host is a loopback address' };
  }
  return { ok: true, url };
}

/**
 * Registration-time check of a webhook URL. Unless the mode's policy allows private addresses,
 * every address a name resolves to must be public; delivery re-checks at connect time (see
 * safeLookup) against DNS rebinding.
 */
export async function checkWebhookUrl(rawUrl: string, opts: UrlCheckOptions): Promise<UrlCheckResult> {
  const policy = destinationPolicy(opts.livemode, opts.allowPrivate);
  const syntax = checkWebhookUrlSyntax(rawUrl, policy);
  if (!syntax.ok) return syntax;
  if (policy.allowPrivate || literalAddressOf(syntax.url) !== null) return { ok: true };
  let addresses: string[];
  try {
    addresses = await (opts.resolve ?? defaultResolveHost)(syntax.url.hostname);
  } catch (err) {
    const timedOut = (err as NodeJS.ErrnoException).code === dns.TIMEOUT;
    return { ok: false, reason: timedOut ? 'URL host could not be resolved (DNS timed out)' : 'URL host could not be resolved' };
  }
  if (addresses.length === 0) return { ok: false, reason: 'URL host could not be resolved' };
  for (const address of addresses) {
    const cls = forbiddenAddressClass(address);
    if (cls !== null) return { ok: false, reason: `URL host resolves to a ${cls} address` };
  }
  return { ok: true };
}

export const FORBIDDEN_ADDRESS_CODE = 'EFORBIDDENADDRESS';

export class ForbiddenAddressError extends Error {
  readonly code = FORBIDDEN_ADDRESS_CODE;
  constructor(readonly hostname: string, readonly addressClass: ForbiddenAddressClass) {
    super(`destination ${hostname} resolves to a ${addressClass} address`);
    this.name = 'ForbiddenAddressError';
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `lookup` for `https.request({ lookup })` that refuses, at connect time, any resolution containing
 * a forbidden address (error code EFORBIDDENADDRESS). Node skips `lookup` for IP-literal hosts:
 * callers check those themselves. `baseLookup` defaults to the c-ares resolver (never dns.lookup,
 * see host-resolver.ts); tests replace it. `allowPrivate` is the mode's (destinationPolicy).
 */
export function safeLookup(allowPrivate: boolean, baseLookup: net.LookupFunction = defaultHostResolver.lookup): net.LookupFunction {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => {
    // Resolve everything, whatever was asked, so no forbidden address hides behind the first one.
    baseLookup(hostname, { ...options, all: true }, (err, result) => {
      if (err) return callback(err, options?.all ? [] : '', undefined);
      const records: dns.LookupAddress[] = Array.isArray(result)
        ? result
        : [{ address: result, family: net.isIPv6(result) ? 6 : 4 }];
      if (records.length === 0) {
        const notFound: NodeJS.ErrnoException = Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' });
        return callback(notFound, options?.all ? [] : '', undefined);
      }
      if (!allowPrivate) {
        for (const record of records) {
          const cls = forbiddenAddressClass(record.address);
          if (cls !== null) return callback(new ForbiddenAddressError(hostname, cls), options?.all ? [] : '', undefined);
        }
      }
      if (options?.all) return callback(null, records);
      return callback(null, records[0].address, records[0].family);
    });
  };
}
