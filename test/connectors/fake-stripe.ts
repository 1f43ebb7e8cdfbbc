import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';
import { generate } from 'selfsigned';

/** One request as the fake saw it. */
export interface RecordedRequest {
  method: string;
  path: string;
  pathname: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  rawBody: string;
  /** Decoded form pairs in the order sent. */
  formPairs: Array<[string, string]>;
  form: Record<string, string>;
}

export interface FakeResponse {
  status: number;
  body?: unknown;
  /** Sent verbatim instead of JSON (e.g. an HTML error page from a proxy). */
  rawBody?: string;
  headers?: Record<string, string>;
}

/**
 * 'hang' never answers (for timeouts); 'reset' drops the connection without answering; a promise
 * answers when it settles (a gateway answering late).
 */
export type FakeAnswer = FakeResponse | 'hang' | 'reset';
export type FakeHandler = (req: RecordedRequest) => FakeAnswer | Promise<FakeAnswer>;

let tlsMaterial: Promise<{ cert: string; key: string }> | null = null;

/** One certificate per test file: generating it is the slow part. */
function certificate(): Promise<{ cert: string; key: string }> {
  tlsMaterial ??= generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }] }],
  } as never).then((p: { cert: string; private: string }) => ({ cert: p.cert, key: p.private }));
  return tlsMaterial;
}

/**
 * A local HTTPS server standing in for api.stripe.com; records requests, answers via `handler`.
 * `start({ http: true })` serves plain http instead, like a local Stripe emulator.
 */
export class FakeStripe {
  readonly requests: RecordedRequest[] = [];
  handler: FakeHandler = () => ({ status: 500, body: { error: { type: 'api_error', message: 'no handler' } } });

  private constructor(
    private readonly server: http.Server,
    readonly baseUrl: string,
    readonly ca: string,
  ) {}

  static async start(opts: { http?: boolean } = {}): Promise<FakeStripe> {
    const { cert, key } = await certificate();
    let fake: FakeStripe | null = null;
    const listener: http.RequestListener = (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      const answerRequest = async () => {
        const rawBody = Buffer.concat(chunks).toString('utf8');
        const url = new URL(req.url ?? '/', 'https://127.0.0.1');
        const formPairs = [...new URLSearchParams(rawBody).entries()];
        const recorded: RecordedRequest = {
          method: req.method ?? '',
          path: req.url ?? '',
          pathname: url.pathname,
          query: url.searchParams,
          headers: req.headers,
          rawBody,
          formPairs,
          form: Object.fromEntries(formPairs),
        };
        fake!.requests.push(recorded);
        let answer: FakeAnswer;
        try {
          answer = await fake!.handler(recorded);
        } catch (err) {
          answer = { status: 599, body: { error: { type: 'fake_assertion', message: (err as Error).message } } };
        }
        if (answer === 'hang') return;
        if (answer === 'reset') {
          req.socket.destroy();
          return;
        }
        const text = answer.rawBody ?? JSON.stringify(answer.body ?? {});
        res.writeHead(answer.status, {
          'content-type': answer.rawBody ? 'text/html' : 'application/json',
          'request-id': `req_fake_${fake!.requests.length}`,
          ...(answer.headers ?? {}),
        });
        res.end(text);
      };
      // A failure past the handler (writing the answer) fails this request, not the test run.
      req.on('end', () => {
        answerRequest().catch(() => req.socket.destroy());
      });
    };
    const server = opts.http ? http.createServer(listener) : https.createServer({ cert, key }, listener);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    fake = new FakeStripe(server, `${opts.http ? 'http' : 'https'}://127.0.0.1:${port}`, cert);
    return fake;
  }

  reset(handler?: FakeHandler): void {
    this.requests.length = 0;
    if (handler) this.handler = handler;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

// ---- a Stripe-like backend for the contract suite ----------------------------------------

const DECLINES: Record<string, { code: string; decline_code?: string; message: string; status?: number }> = {
  '4000000000000002': { code: 'card_declined', decline_code: 'generic_decline', message: 'Your card was declined.' },
  '4000000000009995': { code: 'card_declined', decline_code: 'insufficient_funds', message: 'Your card has insufficient funds.' },
  '4000000000000069': { code: 'expired_card', message: 'Your card has expired.' },
  '4000000000000341': { code: 'card_declined', decline_code: 'generic_decline', message: 'Your card was declined.' },
};
const GATEWAY_ERROR_CARDS = new Set(['4000000000000119']);
/** Stripe's own test PaymentMethods (docs.stripe.com/testing); ours, such as `pm_card_declined`, are unknown to Stripe. */
const TOKENS: Record<string, string> = {
  pm_card_visa: '4242424242424242',
  pm_card_mastercard: '5555555555554444',
  pm_card_visa_chargeDeclined: '4000000000000002',
  pm_card_visa_chargeDeclinedInsufficientFunds: '4000000000009995',
  pm_card_chargeDeclinedProcessingError: '4000000000000119',
  pm_card_threeDSecure2Required: '4000000000003220',
  pm_card_authenticationRequired: '4000002760003184',
  pm_card_authenticationRequiredOnSetup: '4000002500003155',
};

/**
 * Stripe's 3-D Secure test cards (docs.stripe.com/testing#regulatory-cards): each asks for
 * authentication when the customer is there; off session, 0003155 goes through when saved (it
 * was authenticated at setup) and the others are declined `authentication_required`; 0001629 is
 * declined once authenticated.
 */
const THREE_D_SECURE: Record<string, { offSession: 'declined' | 'saved_succeeds'; afterAuthentication: 'succeeded' | 'declined' }> = {
  '4000000000003220': { offSession: 'declined', afterAuthentication: 'succeeded' },
  '4000002760003184': { offSession: 'declined', afterAuthentication: 'succeeded' },
  '4000002500003155': { offSession: 'saved_succeeds', afterAuthentication: 'succeeded' },
  '4000008400001629': { offSession: 'declined', afterAuthentication: 'declined' },
};

/** The host of the fake's 3-D Secure pages (nothing answers there; the test completes or fails authentication). */
export const FAKE_3DS_PAGE = 'https://hooks.stripe.test/3d_secure_2/hosted';

const unexpectedState = (intent: Record<string, unknown>, action: string): FakeResponse => ({
  status: 400,
  body: {
    error: {
      type: 'invalid_request_error', code: 'payment_intent_unexpected_state', payment_intent: intent,
      message: `You cannot ${action} this PaymentIntent because it has a status of ${String(intent.status)}.`,
    },
  },
});

/**
 * Emulates the parts of Stripe test mode the connector uses: test cards and tokens, stored
 * idempotent answers (replayed with `Idempotent-Replayed: true`, as they were first given),
 * PaymentIntent search and retrieval, manual capture (`capture_method=manual`, capture, cancel),
 * 3-D Secure (`requires_action` until the test calls completeAuthentication or
 * failAuthentication), refunds, payment methods attached to customers.
 */
export class StripeLikeBackend {
  readonly intents = new Map<string, Record<string, unknown>>();
  readonly refunds = new Map<string, Record<string, unknown>>();
  private readonly methods = new Map<string, { number: string; expYear: number; customer: string | null }>();
  /** The card behind each PaymentIntent waiting for 3-D Secure. */
  private readonly authenticating = new Map<string, string>();
  private readonly answers = new Map<string, FakeResponse>();
  /** PaymentIntents actually created per idempotency key (replays excluded). */
  readonly chargeCounts = new Map<string, number>();
  /** The status new refunds get (Stripe answers `pending` for some cards and settles later). */
  refundStatus: 'succeeded' | 'pending' = 'succeeded';
  private seq = 0;

  constructor(private readonly secretKey: string, private readonly now: () => Date = () => new Date()) {}

  /** Answers at once (a FakeHandler may also answer later, this one never does). */
  readonly handle = (req: RecordedRequest): FakeResponse => {
    if (req.headers.authorization !== `Bearer ${this.secretKey}`) {
      return { status: 401, body: { error: { type: 'invalid_request_error', message: 'Invalid API Key provided.' } } };
    }
    if (req.method === 'GET') return this.get(req);
    const key = String(req.headers['idempotency-key'] ?? '');
    const replay = key ? this.answers.get(`${req.pathname}\u0000${key}`) : undefined;
    if (replay) return { ...replay, headers: { 'idempotent-replayed': 'true' } };
    const answer = this.post(req);
    // Like our simulator, server errors are not remembered: nothing happened. A copy, so a replay
    // answers what the first call answered even after the PaymentIntent moved on.
    if (key && answer.status < 500) this.answers.set(`${req.pathname}\u0000${key}`, structuredClone(answer));
    return answer;
  };

  /** The customer passed the 3-D Secure challenge of PaymentIntent `id`. */
  completeAuthentication(id: string): void {
    const intent = this.waiting(id);
    const number = this.authenticating.get(id)!;
    this.authenticating.delete(id);
    intent.next_action = null;
    if (THREE_D_SECURE[number].afterAuthentication === 'declined') {
      Object.assign(intent, { status: 'requires_payment_method', last_payment_error: { type: 'card_error', code: 'card_declined', decline_code: 'generic_decline', message: 'Your card was declined.' } });
    } else {
      this.authorise(intent);
    }
  }

  /** The customer failed (or abandoned) the 3-D Secure challenge of PaymentIntent `id`. */
  failAuthentication(id: string): void {
    const intent = this.waiting(id);
    this.authenticating.delete(id);
    Object.assign(intent, {
      status: 'requires_payment_method', next_action: null,
      last_payment_error: {
        type: 'invalid_request_error', code: 'payment_intent_authentication_failure',
        message: 'The provided PaymentMethod has failed authentication. You can provide payment_method_data or a new PaymentMethod to attempt to fulfill this PaymentIntent again.',
      },
    });
  }

  /** Stripe voids an authorisation left uncaptured too long (7 days for cards). */
  expireAuthorization(id: string): void {
    const intent = this.intents.get(id);
    if (intent?.status !== 'requires_capture') throw new Error(`${id} is not waiting for capture`);
    Object.assign(intent, { status: 'canceled', cancellation_reason: 'automatic', amount_capturable: 0 });
  }

  private waiting(id: string): Record<string, unknown> {
    const intent = this.intents.get(id);
    if (intent?.status !== 'requires_action') throw new Error(`${id} is not waiting for authentication`);
    return intent;
  }

  /** The card accepted the payment: authorised (manual capture) or captured at once. */
  private authorise(intent: Record<string, unknown>): void {
    if (intent.capture_method === 'manual') Object.assign(intent, { status: 'requires_capture', amount_capturable: intent.amount });
    else Object.assign(intent, { status: 'succeeded', amount_received: intent.amount });
  }

  private id(prefix: string): string {
    this.seq++;
    return `${prefix}_fake${String(this.seq).padStart(6, '0')}`;
  }

  private post(req: RecordedRequest): FakeResponse {
    const f = req.form;
    switch (req.pathname) {
      case '/v1/payment_intents': {
        const key = String(req.headers['idempotency-key']);
        this.chargeCounts.set(key, (this.chargeCounts.get(key) ?? 0) + 1);
        let number: string;
        let expYear: number;
        if (f['payment_method_data[card][number]']) {
          number = f['payment_method_data[card][number]'];
          expYear = Number(f['payment_method_data[card][exp_year]']);
        } else if (TOKENS[f.payment_method]) {
          number = TOKENS[f.payment_method];
          expYear = 2099;
        } else {
          const method = this.methods.get(f.payment_method);
          if (!method) return { status: 400, body: { error: { type: 'invalid_request_error', code: 'resource_missing', param: 'payment_method', message: `No such PaymentMethod: '${f.payment_method}'` } } };
          if (method.customer && method.customer !== f.customer) {
            return { status: 400, body: { error: { type: 'invalid_request_error', message: 'The provided PaymentMethod belongs to another customer.' } } };
          }
          number = method.number;
          expYear = method.expYear;
        }
        if (GATEWAY_ERROR_CARDS.has(number)) return { status: 402, body: { error: { type: 'card_error', code: 'processing_error', message: 'An error occurred while processing your card. Try again in a little bit.' } } };
        const intent: Record<string, unknown> = {
          id: this.id('pi'), object: 'payment_intent', amount: Number(f.amount), currency: f.currency,
          created: this.seq, metadata: this.metadata(f), status: 'succeeded', last_payment_error: null,
          capture_method: f.capture_method ?? 'automatic', amount_capturable: 0, amount_received: 0,
          next_action: null, cancellation_reason: null,
        };
        this.intents.set(intent.id as string, intent);
        const threeDS = THREE_D_SECURE[number];
        const offSessionDecline = threeDS && f.off_session === 'true' && !(threeDS.offSession === 'saved_succeeds' && f.customer)
          ? { code: 'authentication_required', decline_code: 'authentication_required', message: 'Your card was declined. This transaction requires authentication.' }
          : undefined;
        const decline = expYear < this.now().getUTCFullYear()
          ? { code: 'invalid_expiry_year', message: "Your card's expiration year is invalid." }
          : DECLINES[number] ?? offSessionDecline;
        if (decline) {
          const error = { type: 'card_error', ...decline };
          Object.assign(intent, { status: 'requires_payment_method', last_payment_error: error });
          return { status: 402, body: { error: { ...error, payment_intent: intent } } };
        }
        if (threeDS && f.off_session !== 'true') {
          // Stripe sends the customer to its page only with a return_url; without one, only its SDKs can authenticate.
          const nextAction = f.return_url
            ? { type: 'redirect_to_url', redirect_to_url: { url: `${FAKE_3DS_PAGE}?payment_intent=${String(intent.id)}`, return_url: f.return_url } }
            : { type: 'use_stripe_sdk', use_stripe_sdk: { type: 'three_d_secure_redirect' } };
          Object.assign(intent, { status: 'requires_action', next_action: nextAction });
          this.authenticating.set(intent.id as string, number);
          return { status: 200, body: intent };
        }
        this.authorise(intent);
        return { status: 200, body: intent };
      }
      case '/v1/refunds': {
        const intent = this.intents.get(f.payment_intent);
        if (!intent) return { status: 400, body: { error: { type: 'invalid_request_error', code: 'resource_missing', message: 'No such payment_intent' } } };
        if (intent.status !== 'succeeded') return { status: 400, body: { error: { type: 'invalid_request_error', code: 'charge_not_refundable', message: 'Not refundable' } } };
        const refund = { id: this.id('re'), object: 'refund', amount: Number(f.amount), currency: intent.currency, payment_intent: intent.id, status: this.refundStatus, metadata: this.metadata(f) };
        this.refunds.set(refund.id, refund);
        return { status: 200, body: refund };
      }
      case '/v1/payment_methods': {
        const id = this.id('pm');
        const number = f['card[number]'];
        this.methods.set(id, { number, expYear: Number(f['card[exp_year]']), customer: null });
        return { status: 200, body: { id, object: 'payment_method', type: 'card', card: { brand: number.startsWith('5') ? 'mastercard' : 'visa', last4: number.slice(-4), exp_month: Number(f['card[exp_month]']), exp_year: Number(f['card[exp_year]']) } } };
      }
      case '/v1/customers': {
        const id = this.id('cus');
        const method = this.methods.get(f.payment_method);
        if (!method) return { status: 400, body: { error: { type: 'invalid_request_error', code: 'resource_missing', message: 'No such PaymentMethod' } } };
        method.customer = id;
        return { status: 200, body: { id, object: 'customer' } };
      }
      default: {
        const action = /^\/v1\/payment_intents\/([^/]+)\/(capture|cancel)$/.exec(req.pathname);
        if (action) return action[2] === 'capture' ? this.capture(action[1], f) : this.cancel(action[1], f);
        return { status: 404, body: { error: { type: 'invalid_request_error', message: 'Unrecognized request URL' } } };
      }
    }
  }

  private missingIntent(id: string): FakeResponse {
    return { status: 404, body: { error: { type: 'invalid_request_error', code: 'resource_missing', param: 'intent', message: `No such payment_intent: '${id}'` } } };
  }

  private capture(id: string, f: Record<string, string>): FakeResponse {
    const intent = this.intents.get(id);
    if (!intent) return this.missingIntent(id);
    if (intent.status !== 'requires_capture') return unexpectedState(intent, 'capture');
    const capturable = intent.amount_capturable as number;
    const amount = f.amount_to_capture === undefined ? capturable : Number(f.amount_to_capture);
    if (amount > capturable) {
      return { status: 400, body: { error: { type: 'invalid_request_error', code: 'amount_too_large', param: 'amount_to_capture', message: `The amount to capture (${amount}) is greater than the amount capturable (${capturable}).`, payment_intent: intent } } };
    }
    Object.assign(intent, { status: 'succeeded', amount_received: amount, amount_capturable: 0 });
    return { status: 200, body: intent };
  }

  private cancel(id: string, f: Record<string, string>): FakeResponse {
    const intent = this.intents.get(id);
    if (!intent) return this.missingIntent(id);
    if (!['requires_payment_method', 'requires_capture', 'requires_confirmation', 'requires_action', 'processing'].includes(intent.status as string)) {
      return unexpectedState(intent, 'cancel');
    }
    this.authenticating.delete(id);
    Object.assign(intent, { status: 'canceled', cancellation_reason: f.cancellation_reason ?? null, amount_capturable: 0, next_action: null });
    return { status: 200, body: intent };
  }

  private get(req: RecordedRequest): FakeResponse {
    if (req.pathname === '/v1/payment_intents/search') {
      const match = /^metadata\['payorch_idempotency_key'\]:'((?:[^'\\]|\\.)*)'$/.exec(req.query.get('query') ?? '');
      if (!match) return { status: 400, body: { error: { type: 'invalid_request_error', message: 'Invalid query' } } };
      const key = match[1].replace(/\\(.)/g, '$1');
      const data = [...this.intents.values()].filter((pi) => (pi.metadata as Record<string, string>).payorch_idempotency_key === key);
      return { status: 200, body: { object: 'search_result', data, has_more: false } };
    }
    if (req.pathname === '/v1/refunds') {
      const data = [...this.refunds.values()].filter((r) => r.payment_intent === req.query.get('payment_intent'));
      return { status: 200, body: { object: 'list', data, has_more: false } };
    }
    const retrieve = /^\/v1\/payment_intents\/([^/]+)$/.exec(req.pathname);
    if (retrieve) {
      const intent = this.intents.get(retrieve[1]);
      return intent ? { status: 200, body: intent } : this.missingIntent(retrieve[1]);
    }
    return { status: 404, body: { error: { type: 'invalid_request_error', message: 'Unrecognized request URL' } } };
  }

  private metadata(form: Record<string, string>): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(form)) {
      const m = /^metadata\[(.+)\]$/.exec(k);
      if (m) out[m[1]] = v;
    }
    return out;
  }
}
