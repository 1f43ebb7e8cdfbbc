import crypto from 'node:crypto';
import https from 'node:https';
import type net from 'node:net';
import { performance } from 'node:perf_hooks';
import tls from 'node:tls';
import { FORBIDDEN_ADDRESS_CODE, checkWebhookUrlSyntax, destinationPolicy, safeLookup } from '../../core/network/address-policy';

export const DEFAULT_DELIVERY_TIMEOUT_MS = 10_000;
export const MAX_RESPONSE_BYTES = 64 * 1024;
export const WEBHOOK_USER_AGENT = 'Payorch-Webhooks/1.0';
const MAX_ERROR_LENGTH = 200;
// Idle keep-alive sockets are dropped after this; the receiver's own Keep-Alive hint wins when shorter.
const IDLE_SOCKET_MS = 15_000;

export interface DeliveryOutcome {
  delivered: boolean;
  statusCode: number | null;
  /** Time to the response status line (or to the failure). */
  latencyMs: number;
  /** Short (≤ 200 characters) and never the receiver's body. */
  error: string | null;
  /** From the receiver's Retry-After, on a failed delivery. */
  retryAfterMs: number | null;
  /** The receiver answered 410 Gone. */
  gone: boolean;
}

export interface DeliverWebhookOptions {
  url: string;
  body: string;
  headers: Record<string, string>;
  /** Covers connect, TLS, request and response; default 10 s. */
  timeoutMs?: number;
  /** The endpoint's mode: live mode never reaches private addresses and only ports 443 and 8443. */
  livemode: boolean;
  /** WEBHOOK_ALLOW_PRIVATE; applies to test mode only. */
  allowPrivate: boolean;
  /** Extra trusted CA certificates (PEM), added to Node's bundled roots. */
  ca?: string | Buffer;
  /** Replaces the c-ares resolver underneath the address policy (tests); the policy still applies. */
  lookup?: net.LookupFunction;
}

const agents = new Map<string, https.Agent>();

/** Node's bundled roots plus the configured CA bundle. */
export function trustedCas(ca: string | Buffer): Array<string | Buffer> {
  return [...tls.rootCertificates, ca];
}

function agentOptions(ca: string | Buffer | undefined, keepAlive: boolean): https.AgentOptions {
  const options: https.AgentOptions = { keepAlive, timeout: IDLE_SOCKET_MS, scheduling: 'lifo' };
  // One secure context per CA bundle: parsing ~150 roots on every connection would be wasted work.
  if (ca !== undefined) options.secureContext = tls.createSecureContext({ ca: trustedCas(ca) });
  return options;
}

/** The pool key of each CA bundle seen (a service has one): hashed once, not per delivery. */
const caKeys = new Map<string | Buffer, string>();
const MAX_CA_KEYS = 16;

function caKeyOf(ca: string | Buffer): string {
  let key = caKeys.get(ca);
  if (key === undefined) {
    key = crypto.createHash('sha256').update(ca).digest('hex');
    if (caKeys.size >= MAX_CA_KEYS) caKeys.clear();
    caKeys.set(ca, key);
  }
  return key;
}

/**
 * Pooled per (CA, policy) so a socket opened under one policy is never reused under the other.
 * Within an agent, keep-alive sockets are pooled per receiver (host and port), each endpoint's
 * kept apart from the others'.
 */
function pooledAgent(ca: string | Buffer | undefined, allowPrivate: boolean): https.Agent {
  const caKey = ca === undefined ? 'default' : caKeyOf(ca);
  const key = `${allowPrivate ? 'private' : 'public'}:${caKey}`;
  let agent = agents.get(key);
  if (!agent) {
    agent = new https.Agent(agentOptions(ca, true));
    agents.set(key, agent);
  }
  return agent;
}

/** Destroys the pooled keep-alive agents (shutdown, tests). */
export function closeDeliveryAgents(): void {
  for (const agent of agents.values()) agent.destroy();
  agents.clear();
  caKeys.clear();
}

/** Retry-After as delay-seconds or an HTTP date, in milliseconds from `nowMs`; null when absent or invalid. */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number = Date.now()): number | null {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return null;
  if (/^\d+$/.test(text)) {
    const seconds = Number(text);
    return Number.isSafeInteger(seconds * 1000) ? seconds * 1000 : null;
  }
  // Only a date-looking value: Date.parse accepts bare numbers like "1.5" as years.
  if (!/[a-z]/i.test(text)) return null;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - nowMs);
}

function shorten(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > MAX_ERROR_LENGTH ? `${oneLine.slice(0, MAX_ERROR_LENGTH - 1)}…` : oneLine;
}

function describeNetworkError(err: NodeJS.ErrnoException): string {
  const code = err.code ?? '';
  if (code === FORBIDDEN_ADDRESS_CODE) return shorten(`destination address not allowed: ${err.message}`);
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'EPIPE':
      return 'connection reset';
    case 'ENOTFOUND':
      return 'host not found';
    case 'EAI_AGAIN':
      return 'DNS lookup failed';
    case 'ETIMEOUT':
      return 'DNS lookup timed out';
    case 'ETIMEDOUT':
      return 'connect timed out';
    case 'ENETUNREACH':
    case 'EHOSTUNREACH':
      return 'network unreachable';
  }
  if (code.startsWith('HPE_')) return 'invalid HTTP response';
  if (/CERT|SELF_SIGNED|SIGNATURE|TLS|SSL|ISSUER/.test(code)) return shorten(`TLS error: ${code}`);
  return shorten(code ? `${code}: ${err.message}` : err.message || 'network error');
}

function outcomeForStatus(statusCode: number, retryAfter: string | string[] | undefined, latencyMs: number): DeliveryOutcome {
  const delivered = statusCode >= 200 && statusCode < 300;
  let error: string | null = null;
  if (statusCode >= 300 && statusCode < 400) error = 'redirect not followed';
  else if (!delivered) error = `HTTP ${statusCode}`;
  return {
    delivered,
    statusCode,
    latencyMs,
    error,
    retryAfterMs: delivered ? null : parseRetryAfter(retryAfter),
    gone: statusCode === 410,
  };
}

function failure(error: string, latencyMs = 0): DeliveryOutcome {
  return { delivered: false, statusCode: null, latencyMs, error: shorten(error), retryAfterMs: null, gone: false };
}

/**
 * One POST of a signed event to a receiver. Never throws: every failure is an outcome.
 * 2xx is delivered; redirects are not followed; at most 64 KiB of the answer is read and dropped.
 */
export function deliverWebhook(opts: DeliverWebhookOptions): Promise<DeliveryOutcome> {
  const policy = destinationPolicy(opts.livemode, opts.allowPrivate);
  const checked = checkWebhookUrlSyntax(opts.url, policy);
  if (!checked.ok) return Promise.resolve(failure(`destination not allowed: ${checked.reason}`));
  const url = checked.url;
  const timeoutMs = opts.timeoutMs !== undefined && Number.isFinite(opts.timeoutMs) && opts.timeoutMs > 0 ? opts.timeoutMs : DEFAULT_DELIVERY_TIMEOUT_MS;

  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(opts.headers)) headers[name.toLowerCase()] = value;
  headers['content-type'] = 'application/json';
  headers['user-agent'] = WEBHOOK_USER_AGENT;
  headers['content-length'] = String(Buffer.byteLength(opts.body));

  // A test lookup gets a one-shot agent so its sockets never join the shared pool.
  const agent = opts.lookup ? new https.Agent(agentOptions(opts.ca, false)) : pooledAgent(opts.ca, policy.allowPrivate);
  const lookup = safeLookup(policy.allowPrivate, opts.lookup);

  return new Promise<DeliveryOutcome>((resolve) => {
    const started = performance.now();
    const elapsed = (): number => Math.round(performance.now() - started);
    let settled = false;
    let statusOutcome: DeliveryOutcome | null = null;
    let req: ReturnType<typeof https.request> | undefined;

    const finish = (outcome: DeliveryOutcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(outcome);
      if (opts.lookup) agent.destroy();
    };

    // Once the status has arrived it decides the outcome, even if the body then stalls.
    const timer = setTimeout(() => {
      finish(statusOutcome ?? failure('timeout', elapsed()));
      req?.destroy();
    }, timeoutMs);

    try {
      req = https.request(
        {
          protocol: 'https:',
          hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
          port: url.port || 443,
          path: `${url.pathname}${url.search}`,
          method: 'POST',
          headers,
          agent,
          lookup,
        },
        (res) => {
          statusOutcome = outcomeForStatus(res.statusCode ?? 0, res.headers['retry-after'], elapsed());
          const outcome = statusOutcome;
          let received = 0;
          res.on('data', (chunk: Buffer) => {
            received += chunk.length;
            if (received > MAX_RESPONSE_BYTES) {
              // Stop reading; the socket is not reusable anyway.
              res.destroy();
              finish(outcome);
            }
          });
          res.on('end', () => finish(outcome));
          res.on('error', () => finish(outcome));
          res.on('aborted', () => finish(outcome));
        },
      );
    } catch (err) {
      // Synchronous refusals, e.g. a header value with a newline.
      finish(failure(describeNetworkError(err as NodeJS.ErrnoException), elapsed()));
      return;
    }
    req.on('error', (err: NodeJS.ErrnoException) => finish(statusOutcome ?? failure(describeNetworkError(err), elapsed())));
    req.end(opts.body);
  });
}
