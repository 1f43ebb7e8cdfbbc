import http from 'node:http';
import https from 'node:https';
import { isIPv4, type LookupFunction } from 'node:net';
import { GatewayConfigError } from '../config-error';
import { checkWebhookUrlSyntax, safeLookup } from '../../core/network/address-policy';
import type {
  CancelRequest,
  CaptureRequest,
  ChargeRequest,
  Gateway,
  GatewayResult,
  RefundRequest,
  SaveCardRequest,
  SaveCardResult,
  StatusRequest,
  StatusResult,
} from '../connector';
import {
  elapsedMs,
  safeMessage,
  summarizeCancelRequest,
  summarizeCaptureRequest,
  summarizeChargeRequest,
  summarizeRefundRequest,
  summarizeSaveCardRequest,
  summarizeStatusRequest,
} from '../redaction';
import {
  STRIPE_API_VERSION,
  captureForm,
  chargeForm,
  chargeSearchPath,
  customerForm,
  encodeForm,
  encodeSavedToken,
  isStripeId,
  isStripeTestKey,
  mapCancelAnswer,
  mapCaptureAnswer,
  mapChargeAnswer,
  mapChargeSearchAnswer,
  mapCustomerAnswer,
  mapIntentLookup,
  mapPaymentMethodAnswer,
  mapRefundAnswer,
  mapRefundListAnswer,
  paymentIntentPath,
  paymentMethodForm,
  refundForm,
  refundListPath,
  stripeTestPaymentMethod,
  toStripeAmount,
  type FormFields,
  type Mapped,
  type StripeAnswer,
} from './stripe.transformers';

export interface StripeSettings {
  baseUrl?: string;
}

export interface StripeGatewayOptions {
  gatewayId: string;
  credentials: { secretKey: string };
  settings?: StripeSettings;
  /** Extra CA to trust (tests point baseUrl at a local HTTPS fake). */
  httpsAgentOptions?: { ca?: string | Buffer };
  /** Whole-exchange deadline; past it the outcome is `timeout` (default 10 000 ms). */
  timeoutMs?: number;
  /**
   * GATEWAY_ALLOW_PRIVATE_BASE_URL: a base URL other than Stripe's may reach loopback and private
   * addresses (a local emulator). Otherwise each connection is checked against the webhook
   * address policy when it is made, so a name cannot be pointed inside later (DNS rebinding).
   */
  allowPrivateAddresses?: boolean;
  /** Replaces DNS under that policy (tests); the policy still applies. */
  lookup?: LookupFunction;
}

export const STRIPE_DEFAULT_BASE_URL = 'https://api.stripe.com';
const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_RESPONSE_BYTES = 1_000_000;
/** Refund look-ups page through at most this many pages of 100 before giving up. */
const MAX_REFUND_PAGES = 10;

type Exchange =
  | { kind: 'answer'; answer: StripeAnswer }
  | { kind: 'timeout' }
  /**
   * The connection failed. `sent`: the whole request had been handed to the network (or an
   * answer had begun), so Stripe may have acted on it: as uncertain as a timeout.
   */
  | { kind: 'connection'; message: string; sent: boolean };

/** 127.0.0.0/8, [::1] and `localhost`: a Stripe emulator on the developer's own machine. */
function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  if (host === 'localhost' || host === '[::1]') return true;
  return isIPv4(host) && host.startsWith('127.');
}

/**
 * Why the connector will not send to `baseUrl`, or null. Stripe is https only; plain http is
 * for a local emulator: a loopback host, and never with a live key (it would cross in clear).
 * Payorch's live mode refuses any base URL before this (gateway settings).
 */
export function stripeBaseUrlProblem(baseUrl: string, secretKey: string): string | null {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return 'must be an https URL';
  }
  if (url.protocol === 'https:') return null;
  if (url.protocol !== 'http:') return 'must be an https URL';
  if (!isLoopbackHost(url.hostname)) {
    return 'must be an https URL; http is only allowed to a loopback address (127.0.0.1, [::1], localhost), for a local Stripe emulator';
  }
  if (!isStripeTestKey(secretKey)) return 'http is only allowed with a Stripe test key (sk_test_…)';
  return null;
}

/**
 * Keep-alive agents shared by every connector with the same trust roots and address policy
 * (connectors may be built per request): a socket opened without the policy never serves a
 * connector held to it.
 */
const agents = new Map<string, https.Agent>();

function agentFor(ca: string | Buffer | undefined, guarded: boolean): https.Agent {
  const key = `${guarded ? 'guarded' : 'open'}:${ca === undefined ? '' : ca.toString()}`;
  let agent = agents.get(key);
  if (!agent) {
    agent = new https.Agent({ keepAlive: true, ...(ca === undefined ? {} : { ca }) });
    agents.set(key, agent);
  }
  return agent;
}

/** Within this, a charge repeated under its Idempotency-Key gets Stripe's stored answer (Stripe keeps keys 24 h). */
export const STRIPE_CHARGE_REPLAY_WINDOW_MS = 23 * 3600_000;

/** For a local emulator over http (loopback only, see stripeBaseUrlProblem). */
const loopbackAgent = new http.Agent({ keepAlive: true });

/**
 * Stripe connector over its REST API with node's `https` (no SDK). Every call carries our
 * idempotency key as `Idempotency-Key`, so a repeat after a timeout returns Stripe's first answer.
 *
 * A charge is a PaymentIntent created and confirmed at once; its id is the reference.
 * Authorise and capture: `capture: false` sends `capture_method=manual`; Stripe's
 * `requires_capture` answers `succeeded` with `captured: false`, `capture()` posts
 * `amount_to_capture` to `/v1/payment_intents/{id}/capture`, `cancel()` posts to `…/cancel`.
 * 3-D Secure: a `returnUrl` goes as `return_url`, and `requires_action` with a `redirect_to_url`
 * next action answers `requires_action` with that page as `nextAction`; once the customer is
 * back, `status()` with the reference reads the PaymentIntent (succeeded, authorised, or declined
 * `authentication_failed`). Repeating `charge()` under its key would only replay the first
 * answer. Without a `returnUrl` a saved card goes `off_session`, and a card that wants
 * authentication is declined `authentication_required` (see chargeForm and mapPaymentIntent in
 * stripe.transformers.ts for every status).
 */
export class StripeGateway implements Gateway {
  readonly type = 'stripe';
  /** Stripe replays a key's stored answer for 24 h; an hour less leaves room for clock skew and the attempt's lag behind the payment's creation. */
  readonly chargeReplayWindowMs = STRIPE_CHARGE_REPLAY_WINDOW_MS;
  private readonly secretKey: string;
  private readonly baseUrl: URL;
  private readonly agent: http.Agent;
  private readonly timeoutMs: number;
  /** Why no connection may be made to the base URL (a literal private address), or null. */
  private readonly refusedDestination: string | null;
  /** The policy's DNS check at connect time; undefined for Stripe itself or when private addresses are allowed. */
  private readonly lookup: LookupFunction | undefined;

  constructor(opts: StripeGatewayOptions) {
    this.secretKey = opts.credentials.secretKey;
    const baseUrl = opts.settings?.baseUrl ?? STRIPE_DEFAULT_BASE_URL;
    // Checked here too, not only when settings are saved: the secret and card data go there.
    const problem = stripeBaseUrlProblem(baseUrl, this.secretKey);
    if (problem) throw new GatewayConfigError('settings.baseUrl', `Invalid 'settings.baseUrl': ${problem}`);
    this.baseUrl = new URL(baseUrl);
    // A base URL saved while private addresses were allowed is refused per call once they are not
    // (a gateway failure routing moves past), never by failing to build the connector.
    const guarded = !opts.allowPrivateAddresses && baseUrl !== STRIPE_DEFAULT_BASE_URL;
    const syntax = guarded ? checkWebhookUrlSyntax(baseUrl, { allowPrivate: false, ports: null }) : null;
    this.refusedDestination = syntax && !syntax.ok ? `destination not allowed: ${syntax.reason}` : null;
    this.lookup = guarded ? safeLookup(false, opts.lookup) : opts.lookup;
    this.agent = this.baseUrl.protocol === 'http:'
      ? loopbackAgent
      // An injected lookup (tests) gets its own agent, so its sockets never join the shared pool.
      : opts.lookup ? new https.Agent({ keepAlive: false, ...(opts.httpsAgentOptions?.ca ? { ca: opts.httpsAgentOptions.ca } : {}) })
        : agentFor(opts.httpsAgentOptions?.ca, guarded);
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  async charge(r: ChargeRequest): Promise<GatewayResult> {
    const started = performance.now();
    const summary = { ...summarizeChargeRequest(r), endpoint: 'POST /v1/payment_intents' };
    const testMethod = r.source.kind === 'token' ? stripeTestPaymentMethod(r.source.token) : null;
    if (testMethod && !isStripeTestKey(this.secretKey)) {
      // Stripe's test PaymentMethods do not exist for a live key: say so instead of a 404.
      return {
        outcome: 'declined', reference: null, declineCode: 'invalid_token',
        message: 'Test tokens can only be charged through a Stripe gateway with a test key (sk_test_…).',
        response: { sent: false }, latencyMs: elapsedMs(started), request: summary,
      };
    }
    const converted = toStripeAmount(r.amount, r.currency);
    if ('refused' in converted) return this.refusedAmount(converted.refused, summary, started);
    const { fields, droppedMetadataKeys } = chargeForm(r, converted.amount);
    const request = {
      ...summary,
      ...(testMethod ? { stripePaymentMethod: testMethod } : {}),
      ...(converted.amount !== r.amount ? { stripeAmount: converted.amount } : {}),
      ...(droppedMetadataKeys.length > 0 ? { droppedMetadataKeys } : {}),
    };
    const mapped = this.settle(await this.send('POST', '/v1/payment_intents', fields, r.idempotencyKey), mapChargeAnswer);
    return { ...mapped, latencyMs: elapsedMs(started), request };
  }

  /**
   * `POST /v1/payment_intents/{ref}/capture` with `amount_to_capture` (Stripe's units; the rest of
   * the authorisation is released) under our idempotency key. See mapCaptureAnswer.
   */
  async capture(r: CaptureRequest): Promise<GatewayResult> {
    const started = performance.now();
    const converted = toStripeAmount(r.amount, r.currency);
    const request = {
      ...summarizeCaptureRequest(r),
      endpoint: 'POST /v1/payment_intents/{id}/capture',
      ...('amount' in converted && converted.amount !== r.amount ? { stripeAmount: converted.amount } : {}),
    };
    if (!isStripeId(r.chargeReference)) return this.unknownReference(request, started);
    // Only a partial capture can hit this (the charge's own amount was sent): final, as no other
    // gateway can capture this authorisation.
    if ('refused' in converted) return { ...this.refusedAmount(converted.refused, request, started), outcome: 'declined' };
    const exchange = await this.send('POST', paymentIntentPath(r.chargeReference, 'capture'), captureForm(converted.amount), r.idempotencyKey);
    return { ...this.settle(exchange, mapCaptureAnswer), latencyMs: elapsedMs(started), request };
  }

  /** `POST /v1/payment_intents/{ref}/cancel` under our idempotency key. See mapCancelAnswer. */
  async cancel(r: CancelRequest): Promise<GatewayResult> {
    const started = performance.now();
    const request = { ...summarizeCancelRequest(r), endpoint: 'POST /v1/payment_intents/{id}/cancel' };
    if (!isStripeId(r.chargeReference)) return this.unknownReference(request, started);
    const exchange = await this.send('POST', paymentIntentPath(r.chargeReference, 'cancel'), [], r.idempotencyKey);
    return { ...this.settle(exchange, mapCancelAnswer), latencyMs: elapsedMs(started), request };
  }

  /** A reference that cannot be a Stripe id: nothing is sent. */
  private unknownReference(request: Record<string, unknown>, started: number): GatewayResult {
    return {
      outcome: 'declined', reference: null, declineCode: 'charge_not_found',
      message: 'The charge reference is not a Stripe PaymentIntent id.', response: { sent: false }, latencyMs: elapsedMs(started), request,
    };
  }

  async refund(r: RefundRequest): Promise<GatewayResult> {
    const started = performance.now();
    const converted = toStripeAmount(r.amount, r.currency);
    const request = {
      ...summarizeRefundRequest(r),
      endpoint: 'POST /v1/refunds',
      ...('amount' in converted && converted.amount !== r.amount ? { stripeAmount: converted.amount } : {}),
    };
    if ('refused' in converted) return this.refusedAmount(converted.refused, request, started);
    const mapped = this.settle(await this.send('POST', '/v1/refunds', refundForm(r, converted.amount), r.idempotencyKey), mapRefundAnswer);
    return { ...mapped, latencyMs: elapsedMs(started), request };
  }

  /** An amount Stripe cannot represent exactly: nothing is sent; another gateway may take it. */
  private refusedAmount(message: string, request: Record<string, unknown>, started: number): GatewayResult {
    return { outcome: 'retryable_error', reference: null, declineCode: 'invalid_amount', message, response: { sent: false }, latencyMs: elapsedMs(started), request };
  }

  /**
   * Creates the PaymentMethod, then a Stripe customer holding it: Stripe lets an unattached
   * PaymentMethod be used once only. The token is `cus_…:pm_…`, opaque to callers.
   */
  async saveCard(r: SaveCardRequest): Promise<SaveCardResult> {
    const started = performance.now();
    const request = { ...summarizeSaveCardRequest(r), endpoint: 'POST /v1/payment_methods, POST /v1/customers' };
    const method = this.settle(await this.send('POST', '/v1/payment_methods', paymentMethodForm(r), r.idempotencyKey), mapPaymentMethodAnswer);
    if (method.outcome !== 'succeeded' || !method.reference) {
      return { ...method, reference: null, token: null, latencyMs: elapsedMs(started), request };
    }
    const customerKey = `${r.idempotencyKey}:customer`;
    const customer = this.settle(await this.send('POST', '/v1/customers', customerForm(method.reference, customerKey), customerKey), mapCustomerAnswer);
    const response = { paymentMethod: method.response, customer: customer.response };
    if (customer.outcome !== 'succeeded' || !customer.reference) {
      return { ...customer, reference: null, token: null, response, latencyMs: elapsedMs(started), request };
    }
    const token = encodeSavedToken(customer.reference, method.reference);
    return {
      outcome: 'succeeded', reference: method.reference, token, declineCode: null, message: null,
      response, latencyMs: elapsedMs(started), request,
    };
  }

  /**
   * Charges: with `chargeReference`, the PaymentIntent itself (`GET /v1/payment_intents/{id}`, no
   * lag); without it, a PaymentIntent search on our key (Stripe's search index lags writes by up
   * to about a minute, so right after a timeout prefer repeating `charge()` with the same key).
   * Captures and cancels: read from the PaymentIntent `chargeReference` names (see
   * mapIntentLookup for when "it did not happen" is definitive).
   * Refunds: listed through `chargeReference`; without it Stripe cannot find them.
   */
  async status(r: StatusRequest): Promise<StatusResult> {
    const started = performance.now();
    const request = summarizeStatusRequest(r);
    const done = (mapped: Mapped, found: boolean, definitive?: boolean): StatusResult =>
      ({ ...mapped, found, ...(definitive !== undefined ? { definitive } : {}), latencyMs: elapsedMs(started), request });
    // A failed look-up is "cannot tell", never a decline: only `not_found` says the object is absent.
    const unknown = (mapped: Mapped): StatusResult =>
      done(mapped.outcome === 'declined' || mapped.outcome === 'retryable_error' ? { ...mapped, outcome: 'retryable_error', declineCode: 'status_unavailable' } : mapped, false);
    const notFound = (): StatusResult => done({
      outcome: 'declined', reference: null, declineCode: 'not_found',
      message: `No ${r.kind} was made with this idempotency key.`, response: { found: false },
    }, false);

    if (r.chargeReference && (r.kind === 'charge' || r.kind === 'capture' || r.kind === 'cancel')) {
      if (!isStripeId(r.chargeReference)) {
        return done({ outcome: 'declined', reference: null, declineCode: 'not_found', message: 'The charge reference is not a Stripe PaymentIntent id.', response: { sent: false } }, false, true);
      }
      const exchange = await this.send('GET', paymentIntentPath(r.chargeReference), null, null);
      if (exchange.kind !== 'answer') return unknown(this.transportFailure(exchange));
      const lookup = mapIntentLookup(exchange.answer, r.kind);
      if (lookup.state === 'found') return done(lookup.mapped, true);
      if (lookup.state === 'absent') return done(lookup.mapped, false, lookup.definitive);
      return unknown(lookup.mapped);
    }

    if (r.kind === 'charge') {
      const exchange = await this.send('GET', chargeSearchPath(r.idempotencyKey), null, null);
      if (exchange.kind !== 'answer') return unknown(this.transportFailure(exchange));
      const lookup = mapChargeSearchAnswer(exchange.answer);
      if (lookup.found) return done(lookup.mapped, true);
      return lookup.mapped ? unknown(lookup.mapped) : notFound();
    }

    if (!r.chargeReference) {
      return done({
        outcome: 'timeout', reference: null, declineCode: 'status_unavailable',
        message: `Stripe ${r.kind === 'refund' ? 'refunds' : `${r.kind}s`} can only be looked up through their charge reference.`, response: {},
      }, false);
    }
    let cursor: string | null = null;
    for (let page = 0; page < MAX_REFUND_PAGES; page++) {
      const exchange = await this.send('GET', refundListPath(r.chargeReference, cursor), null, null);
      if (exchange.kind !== 'answer') return unknown(this.transportFailure(exchange));
      const lookup = mapRefundListAnswer(exchange.answer, r.idempotencyKey);
      if (lookup.found) return done(lookup.mapped, true);
      if (lookup.mapped) return unknown(lookup.mapped);
      if (!lookup.nextCursor) return notFound();
      cursor = lookup.nextCursor;
    }
    return done({
      outcome: 'timeout', reference: null, declineCode: 'status_unavailable',
      message: 'Too many refunds on this charge to look through.', response: {},
    }, false);
  }

  private settle(exchange: Exchange, map: (a: StripeAnswer) => Mapped): Mapped {
    return exchange.kind === 'answer' ? map(exchange.answer) : this.transportFailure(exchange);
  }

  private transportFailure(exchange: Exclude<Exchange, { kind: 'answer' }>): Mapped {
    if (exchange.kind === 'timeout') {
      return {
        outcome: 'timeout', reference: null, declineCode: 'timeout',
        message: `Stripe did not answer within ${this.timeoutMs} ms.`, response: { transport: 'timeout' },
      };
    }
    if (exchange.sent) {
      return {
        outcome: 'timeout', reference: null, declineCode: 'timeout',
        message: safeMessage(`The connection to Stripe failed after the request was sent: ${exchange.message}`),
        response: { transport: 'connection_lost' },
      };
    }
    return {
      outcome: 'retryable_error', reference: null, declineCode: 'gateway_unavailable',
      message: safeMessage(`Could not reach Stripe: ${exchange.message}`), response: { transport: 'connection_error' },
    };
  }

  /** One HTTPS (or loopback http) exchange; never rejects. The deadline covers connecting, sending and reading. */
  private send(method: 'GET' | 'POST', path: string, form: FormFields | null, idempotencyKey: string | null): Promise<Exchange> {
    // Joined, not resolved: a base URL with a path (a proxy's `/stripe`) keeps it.
    const url = new URL(`${this.baseUrl.pathname.replace(/\/+$/, '')}${path}`, this.baseUrl.origin);
    const body = form ? encodeForm(form) : null;
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.secretKey}`,
      'Stripe-Version': STRIPE_API_VERSION,
      Accept: 'application/json',
    };
    if (body !== null) {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      headers['Content-Length'] = String(Buffer.byteLength(body));
    }
    if (idempotencyKey) headers['Idempotency-Key'] = idempotencyKey;
    // Nothing is sent: as certain as a refused connection.
    if (this.refusedDestination) return Promise.resolve({ kind: 'connection', message: this.refusedDestination, sent: false });

    return new Promise<Exchange>((resolve) => {
      let finished = false;
      // Set once the request is fully written to the socket: a failure after that is uncertain.
      let sent = false;
      const finish = (exchange: Exchange) => {
        if (finished) return;
        finished = true;
        clearTimeout(timer);
        resolve(exchange);
      };
      const request = url.protocol === 'http:' ? http.request : https.request;
      const req = request(url, { method, headers, agent: this.agent, ...(this.lookup ? { lookup: this.lookup } : {}) }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_RESPONSE_BYTES) {
            req.destroy(new Error('response too large'));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = null;
          try {
            parsed = text ? JSON.parse(text) : null;
          } catch {
            parsed = null;
          }
          const requestId = res.headers['request-id'];
          finish({
            kind: 'answer',
            answer: {
              status: res.statusCode ?? 0,
              body: parsed,
              requestId: typeof requestId === 'string' ? requestId : null,
              idempotentReplayed: res.headers['idempotent-replayed'] === 'true',
            },
          });
        });
        res.on('error', (err) => finish({ kind: 'connection', message: err.message, sent: true }));
      });
      const timer = setTimeout(() => {
        finish({ kind: 'timeout' });
        req.destroy();
      }, this.timeoutMs);
      req.on('finish', () => {
        sent = true;
      });
      req.on('response', () => {
        sent = true;
      });
      req.on('error', (err) => finish({ kind: 'connection', message: err.message, sent }));
      if (body !== null) req.write(body);
      req.end();
    });
  }
}
