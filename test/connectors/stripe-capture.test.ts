import type { CardData, ChargeRequest, Gateway, GatewayResult } from '../../src/connectors/connector';
import { createGateway } from '../../src/connectors/registry';
import { FAKE_3DS_PAGE, FakeStripe, StripeLikeBackend, type FakeAnswer, type FakeResponse, type RecordedRequest } from './fake-stripe';

/*
 * The Stripe connector's authorise/capture and 3-D Secure, against the Stripe-like backend of
 * fake-stripe.ts (stateful PaymentIntents) and, for mappings of single answers, canned replies.
 */

const SECRET = 'sk_test_51FakeCaptureKey';
const PAN_3DS = '4000000000003220';
const PAN = '4242424242424242';
const CVC = '735';
let fake: FakeStripe;
let backend: StripeLikeBackend;

beforeAll(async () => {
  fake = await FakeStripe.start();
});

afterAll(async () => {
  await fake.close();
});

beforeEach(() => {
  backend = new StripeLikeBackend(SECRET);
  fake.reset(backend.handle);
});

function stripe(timeoutMs = 3000): Gateway {
  return createGateway('stripe', {
    gatewayId: 'gw_stripe_capture',
    credentials: { secretKey: SECRET },
    settings: { baseUrl: fake.baseUrl },
    httpsAgentOptions: { ca: fake.ca },
    timeoutMs,
    allowPrivateAddresses: true, // the fake listens on loopback
  });
}

const card = (number: string): CardData => ({ number, expMonth: 12, expYear: 2099, cvc: CVC });

let seq = 0;
function charge(overrides: Partial<ChargeRequest> = {}): ChargeRequest {
  seq++;
  return {
    idempotencyKey: `pay_cap${seq}_0`, paymentId: `pay_cap${seq}`, amount: 2500, currency: 'EUR',
    source: { kind: 'card', card: card(PAN) }, ...overrides,
  };
}

const captureOf = (reference: string, amount: number, currency = 'EUR', key = `cap_${reference}_${amount}`) =>
  ({ idempotencyKey: key, paymentId: 'pay_x', chargeReference: reference, amount, currency });
const cancelOf = (reference: string, key = `cancel_${reference}`) => ({ idempotencyKey: key, paymentId: 'pay_x', chargeReference: reference });
const statusOf = (kind: 'charge' | 'capture' | 'cancel', reference: string | null, key = 'k_status') =>
  ({ idempotencyKey: key, kind, objectId: 'pay_x', chargeReference: reference });

/** Authorises 2500 EUR (or `overrides`) with manual capture and returns its reference. */
async function authorised(gateway: Gateway, overrides: Partial<ChargeRequest> = {}): Promise<string> {
  const result = await gateway.charge(charge({ capture: false, ...overrides }));
  expect(result).toMatchObject({ outcome: 'succeeded', captured: false });
  return result.reference!;
}

const lastRequest = (): RecordedRequest => fake.requests[fake.requests.length - 1];
const intentOf = (reference: string) => backend.intents.get(reference)!;

function expectNoCardData(result: GatewayResult): void {
  const text = JSON.stringify({ request: result.request, response: result.response, message: result.message, nextAction: result.nextAction });
  expect(text).not.toContain(PAN);
  expect(text).not.toContain(PAN_3DS);
  expect(text).not.toMatch(new RegExp(`(?<![0-9])${CVC}(?![0-9])`));
  expect(text).not.toMatch(/"cvc"/i);
}

/** Runs the backend on each request, but answers with `override` where it returns one (the backend still acted). */
function interpose(override: (req: RecordedRequest) => FakeAnswer | undefined, { before = false } = {}): void {
  fake.reset((req) => {
    if (before) {
      const early = override(req);
      if (early !== undefined) return early;
    }
    const answered = backend.handle(req);
    return (before ? undefined : override(req)) ?? answered;
  });
}

describe('stripe connector: authorise only', () => {
  it('should send capture_method=manual and answer a requires_capture PaymentIntent as succeeded, captured: false', async () => {
    const result = await stripe().charge(charge({ capture: false }));
    const [req] = fake.requests;
    expect(req.formPairs.slice(0, 5)).toEqual([
      ['amount', '2500'], ['currency', 'eur'], ['confirm', 'true'], ['payment_method_types[]', 'card'], ['capture_method', 'manual'],
    ]);
    expect(req.form.off_session).toBeUndefined();
    expect(result).toMatchObject({ outcome: 'succeeded', captured: false, declineCode: null });
    expect(result.nextAction).toBeUndefined();
    expect(result.response).toMatchObject({ status: 'requires_capture', captureMethod: 'manual', amountCapturable: 2500, amountReceived: 0 });
    expect(result.request).toMatchObject({ capture: false, source: { kind: 'card', last4: '4242' } });
    expect(intentOf(result.reference!).status).toBe('requires_capture');
    expectNoCardData(result);
  });

  it('should capture at once without capture_method when capture is absent or true', async () => {
    for (const capture of [undefined, true]) {
      const result = await stripe().charge(charge({ capture }));
      expect(lastRequest().form.capture_method).toBeUndefined();
      expect(result).toMatchObject({ outcome: 'succeeded' });
      expect(result.captured).toBeUndefined();
      expect('capture' in result.request).toBe(capture !== undefined);
      expect('returnUrl' in result.request).toBe(false);
    }
  });

  it('should answer a canceled authorisation as declined capture_failed, with the reason, and any other canceled PaymentIntent as processing_error', async () => {
    const canceled = (captureMethod: string) => () => ({
      status: 200,
      body: { id: 'pi_c', object: 'payment_intent', status: 'canceled', capture_method: captureMethod, cancellation_reason: 'automatic', amount: 2500, currency: 'eur' },
    });
    fake.reset(canceled('manual'));
    const result = await stripe().charge(charge());
    expect(result).toMatchObject({ outcome: 'declined', declineCode: 'capture_failed', reference: 'pi_c', message: expect.stringContaining('automatic') });
    fake.reset(canceled('automatic'));
    expect(await stripe().charge(charge())).toMatchObject({ outcome: 'declined', declineCode: 'processing_error', reference: 'pi_c' });
  });
});

describe('stripe connector: capture', () => {
  it('should capture the whole authorisation with amount_to_capture and our key', async () => {
    const gateway = stripe();
    const reference = await authorised(gateway);
    const result = await gateway.capture(captureOf(reference, 2500, 'EUR', 'cap_full_1'));
    const req = lastRequest();
    expect(req.method).toBe('POST');
    expect(req.path).toBe(`/v1/payment_intents/${reference}/capture`);
    expect(req.headers['idempotency-key']).toBe('cap_full_1');
    expect(req.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(req.rawBody).toBe('amount_to_capture=2500');
    expect(result).toMatchObject({ outcome: 'succeeded', reference, declineCode: null });
    expect(result.response).toMatchObject({ status: 'succeeded', amountReceived: 2500, amountCapturable: 0 });
    expect(result.request).toEqual({
      operation: 'capture', idempotencyKey: 'cap_full_1', paymentId: 'pay_x', chargeReference: reference, amount: 2500, currency: 'EUR',
      endpoint: 'POST /v1/payment_intents/{id}/capture',
    });
    expect(intentOf(reference)).toMatchObject({ status: 'succeeded', amount_received: 2500 });
  });

  it('should capture part of an authorisation, the amount converted to Stripe units (ISK has two decimals there)', async () => {
    const gateway = stripe();
    const reference = await authorised(gateway, { amount: 5000, currency: 'ISK' });
    expect(intentOf(reference).amount).toBe(500000);
    const result = await gateway.capture(captureOf(reference, 3000, 'ISK'));
    expect(lastRequest().form).toEqual({ amount_to_capture: '300000' });
    expect(result).toMatchObject({ outcome: 'succeeded', request: { amount: 3000, stripeAmount: 300000 } });
    expect(intentOf(reference)).toMatchObject({ status: 'succeeded', amount_received: 300000 });
  });

  it('should not send a partial capture Stripe cannot represent, and say so as final', async () => {
    const gateway = stripe();
    const reference = await authorised(gateway, { amount: 2000, currency: 'KWD' });
    const before = fake.requests.length;
    const result = await gateway.capture(captureOf(reference, 1005, 'KWD'));
    expect(fake.requests).toHaveLength(before);
    expect(result).toMatchObject({ outcome: 'declined', declineCode: 'invalid_amount', reference: null });
  });

  it('should replay a capture repeated with its key, and refuse a second capture under another key', async () => {
    const gateway = stripe();
    const reference = await authorised(gateway);
    const first = await gateway.capture(captureOf(reference, 1000, 'EUR', 'cap_once'));
    const again = await gateway.capture(captureOf(reference, 1000, 'EUR', 'cap_once'));
    expect(again).toMatchObject({ outcome: 'succeeded', reference: first.reference, response: { idempotentReplayed: true } });
    const other = await gateway.capture(captureOf(reference, 1000, 'EUR', 'cap_twice'));
    expect(other).toMatchObject({ outcome: 'declined', declineCode: 'capture_failed', reference });
    expect(other.response).toMatchObject({ httpStatus: 400, errorCode: 'payment_intent_unexpected_state', intentStatus: 'succeeded' });
    expect(intentOf(reference).amount_received).toBe(1000);
  });

  it('should refuse a capture after a cancel as capture_failed', async () => {
    const gateway = stripe();
    const reference = await authorised(gateway);
    expect(await gateway.cancel(cancelOf(reference))).toMatchObject({ outcome: 'succeeded' });
    const result = await gateway.capture(captureOf(reference, 2500));
    expect(result).toMatchObject({ outcome: 'declined', declineCode: 'capture_failed', response: { intentStatus: 'canceled' } });
    expect(intentOf(reference)).toMatchObject({ status: 'canceled', amount_received: 0 });
  });

  it('should refuse to capture an authorisation Stripe let expire, and report the charge as voided', async () => {
    const gateway = stripe();
    const reference = await authorised(gateway);
    backend.expireAuthorization(reference);
    expect(await gateway.capture(captureOf(reference, 2500))).toMatchObject({ outcome: 'declined', declineCode: 'capture_failed' });
    expect(await gateway.status(statusOf('charge', reference))).toMatchObject({ found: true, outcome: 'declined', declineCode: 'capture_failed' });
    // Void already: a cancel has nothing left to do, and says so as done.
    expect(await gateway.cancel(cancelOf(reference))).toMatchObject({ outcome: 'succeeded', reference });
  });

  it('should refuse a capture above the authorised amount as capture_failed', async () => {
    const gateway = stripe();
    const reference = await authorised(gateway);
    const result = await gateway.capture(captureOf(reference, 2600));
    expect(result).toMatchObject({ outcome: 'declined', declineCode: 'capture_failed', response: { errorCode: 'amount_too_large' } });
    expect(intentOf(reference).status).toBe('requires_capture');
  });

  it('should answer charge_not_found for a PaymentIntent Stripe does not know, and send nothing for a reference that is no Stripe id', async () => {
    const gateway = stripe();
    expect(await gateway.capture(captureOf('pi_nope', 100))).toMatchObject({ outcome: 'declined', declineCode: 'charge_not_found', reference: null });
    expect(await gateway.cancel(cancelOf('pi_nope'))).toMatchObject({ outcome: 'declined', declineCode: 'charge_not_found' });
    fake.requests.length = 0;
    for (const reference of ['..', 'pi_1/../../v1/refunds', 'pi 1']) {
      expect(await gateway.capture(captureOf(reference, 100))).toMatchObject({ outcome: 'declined', declineCode: 'charge_not_found', response: { sent: false } });
      expect(await gateway.cancel(cancelOf(reference))).toMatchObject({ outcome: 'declined', declineCode: 'charge_not_found' });
      expect(await gateway.status(statusOf('capture', reference))).toMatchObject({ found: false, declineCode: 'not_found' });
    }
    expect(fake.requests).toHaveLength(0);
  });

  it.each([
    ['HTTP 500', 'timeout', 'gateway_error', { status: 500, body: { error: { type: 'api_error', message: 'Something went wrong.' } } }],
    ['HTTP 409', 'timeout', 'gateway_error', { status: 409, body: { error: { type: 'idempotency_error', message: 'in progress' } } }],
    ['HTTP 429', 'retryable_error', 'rate_limited', { status: 429, body: { error: { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests.' } } }],
    ['HTTP 401', 'retryable_error', 'gateway_unavailable', { status: 401, body: { error: { type: 'invalid_request_error', message: 'Invalid API Key provided.' } } }],
    ['an HTML 404 from a proxy', 'declined', 'processing_error', { status: 404, rawBody: '<html>not here</html>' }],
  ])('should map %s on capture and cancel to %s %s, as for a charge', async (_label, outcome, code, response) => {
    fake.reset(() => response as FakeResponse);
    expect(await stripe().capture(captureOf('pi_123', 100))).toMatchObject({ outcome, declineCode: code });
    expect(await stripe().cancel(cancelOf('pi_123'))).toMatchObject({ outcome, declineCode: code });
  });
});

describe('stripe connector: cancel', () => {
  it('should POST the cancel with our key and no body, and answer succeeded once canceled', async () => {
    const gateway = stripe();
    const reference = await authorised(gateway);
    const result = await gateway.cancel(cancelOf(reference, 'cancel_1'));
    const req = lastRequest();
    expect(req.path).toBe(`/v1/payment_intents/${reference}/cancel`);
    expect(req.headers['idempotency-key']).toBe('cancel_1');
    expect(req.rawBody).toBe('');
    expect(result).toMatchObject({ outcome: 'succeeded', reference, declineCode: null, response: { status: 'canceled' } });
    expect(result.request).toEqual({ operation: 'cancel', idempotencyKey: 'cancel_1', paymentId: 'pay_x', chargeReference: reference, endpoint: 'POST /v1/payment_intents/{id}/cancel' });
    expect(intentOf(reference)).toMatchObject({ status: 'canceled', amount_capturable: 0 });
  });

  it('should cancel a charge waiting for 3-D Secure', async () => {
    const gateway = stripe();
    const pending = await gateway.charge(charge({ source: { kind: 'card', card: card(PAN_3DS) }, returnUrl: 'https://shop.example/back' }));
    expect(pending.outcome).toBe('requires_action');
    expect(await gateway.cancel(cancelOf(pending.reference!))).toMatchObject({ outcome: 'succeeded' });
    expect(intentOf(pending.reference!).status).toBe('canceled');
  });

  it('should refuse to cancel a captured charge', async () => {
    const gateway = stripe();
    const captured = await gateway.charge(charge());
    const result = await gateway.cancel(cancelOf(captured.reference!));
    expect(result).toMatchObject({ outcome: 'declined', declineCode: 'processing_error', response: { intentStatus: 'succeeded' } });
    expect(intentOf(captured.reference!).status).toBe('succeeded');
  });
});

describe('stripe connector: 3-D Secure', () => {
  const returnUrl = 'https://pay.example/3ds/return?session=cs_1';

  it('should send return_url and answer requires_action with the redirect page and the PaymentIntent as reference', async () => {
    const result = await stripe().charge(charge({ source: { kind: 'card', card: card(PAN_3DS) }, returnUrl }));
    const [req] = fake.requests;
    expect(req.form.return_url).toBe(returnUrl);
    expect(req.form.off_session).toBeUndefined();
    expect(result).toMatchObject({
      outcome: 'requires_action', declineCode: 'authentication_required',
      nextAction: { type: 'redirect_to_url', url: `${FAKE_3DS_PAGE}?payment_intent=${result.reference}` },
    });
    expect(result.reference).toMatch(/^pi_/);
    expect(result.captured).toBeUndefined();
    expect(result.request).toMatchObject({ returnUrl });
    // The page's URL (at Stripe it carries the client secret) stays out of the stored response.
    expect(result.response).toMatchObject({ status: 'requires_action', nextActionType: 'redirect_to_url' });
    expect(JSON.stringify(result.response)).not.toContain(FAKE_3DS_PAGE);
    expectNoCardData(result);
  });

  it('should read the charge by its reference once the customer authenticated: captured, or authorised when manual', async () => {
    const gateway = stripe();
    for (const capture of [undefined, false]) {
      const pending = await gateway.charge(charge({ source: { kind: 'token', token: 'pm_card_threeDSecure2Required' }, returnUrl, capture }));
      expect(pending.outcome).toBe('requires_action');
      expect(await gateway.status(statusOf('charge', pending.reference))).toMatchObject({ found: true, outcome: 'requires_action', nextAction: pending.nextAction });
      backend.completeAuthentication(pending.reference!);
      fake.requests.length = 0;
      const status = await gateway.status(statusOf('charge', pending.reference));
      expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual([`GET /v1/payment_intents/${pending.reference}`]);
      expect(status).toMatchObject({ found: true, outcome: 'succeeded', reference: pending.reference, declineCode: null });
      expect(status.captured).toBe(capture === false ? false : undefined);
      expect(status.nextAction).toBeUndefined();
    }
  });

  it('should report a failed challenge as authentication_failed', async () => {
    const gateway = stripe();
    const pending = await gateway.charge(charge({ source: { kind: 'card', card: card(PAN_3DS) }, returnUrl }));
    backend.failAuthentication(pending.reference!);
    const status = await gateway.status(statusOf('charge', pending.reference));
    expect(status).toMatchObject({ found: true, outcome: 'declined', declineCode: 'authentication_failed', reference: pending.reference });
    expect(status.response).toMatchObject({ status: 'requires_payment_method', stripeDeclineCode: 'payment_intent_authentication_failure' });
  });

  it('should report the card decline that follows a passed challenge', async () => {
    const gateway = stripe();
    const pending = await gateway.charge(charge({ source: { kind: 'card', card: card('4000008400001629') }, returnUrl }));
    backend.completeAuthentication(pending.reference!);
    expect(await gateway.status(statusOf('charge', pending.reference))).toMatchObject({ found: true, outcome: 'declined', declineCode: 'card_declined' });
  });

  it('should decline authentication_required when Stripe gives no page to send the customer to (no return URL)', async () => {
    const result = await stripe().charge(charge({ source: { kind: 'card', card: card(PAN_3DS) } }));
    expect(fake.requests[0].form.return_url).toBeUndefined();
    expect(fake.requests[0].form.off_session).toBeUndefined();
    expect(result).toMatchObject({ outcome: 'declined', declineCode: 'authentication_required', response: { status: 'requires_action', nextActionType: 'use_stripe_sdk' } });
    expect(result.nextAction).toBeUndefined();
  });

  it('should charge a saved card off session without a return URL (declined authentication_required), on session with one', async () => {
    const gateway = stripe();
    const saved = await gateway.saveCard({ idempotencyKey: 'pm_3ds_save', card: card(PAN_3DS) });
    const offSession = await gateway.charge(charge({ source: { kind: 'token', token: saved.token! } }));
    expect(lastRequest().form).toMatchObject({ off_session: 'true' });
    expect(offSession).toMatchObject({ outcome: 'declined', declineCode: 'authentication_required' });
    const onSession = await gateway.charge(charge({ source: { kind: 'token', token: saved.token! }, returnUrl }));
    expect(lastRequest().form.off_session).toBeUndefined();
    expect(lastRequest().form.return_url).toBe(returnUrl);
    expect(onSession.outcome).toBe('requires_action');
  });

  it.each([
    ['a javascript: URL', 'javascript:alert(1)'],
    ['no URL at all', null],
  ])('should not pass on a redirect with %s', async (_label, url) => {
    fake.reset(() => ({
      status: 200,
      body: { id: 'pi_x', object: 'payment_intent', status: 'requires_action', amount: 2500, currency: 'eur', next_action: { type: 'redirect_to_url', redirect_to_url: { url } } },
    }));
    const result = await stripe().charge(charge({ returnUrl }));
    expect(result).toMatchObject({ outcome: 'declined', declineCode: 'authentication_required' });
    expect(result.nextAction).toBeUndefined();
  });
});

describe('stripe connector: status of captures and cancels', () => {
  it('should say a capture happened when the PaymentIntent has succeeded with money received', async () => {
    const gateway = stripe();
    const reference = await authorised(gateway);
    expect(await gateway.status(statusOf('capture', reference))).toMatchObject({ found: false, outcome: 'declined', declineCode: 'not_found', definitive: false });
    await gateway.capture(captureOf(reference, 2000));
    fake.requests.length = 0;
    const status = await gateway.status(statusOf('capture', reference));
    expect(fake.requests.map((r) => `${r.method} ${r.path}`)).toEqual([`GET /v1/payment_intents/${reference}`]);
    expect(status).toMatchObject({ found: true, outcome: 'succeeded', reference, response: { amountReceived: 2000 } });
    // Captured, it can no longer be canceled.
    expect(await gateway.status(statusOf('cancel', reference))).toMatchObject({ found: false, declineCode: 'not_found', definitive: true });
  });

  it('should say a cancel happened, and that no capture can follow it', async () => {
    const gateway = stripe();
    const reference = await authorised(gateway);
    expect(await gateway.status(statusOf('cancel', reference))).toMatchObject({ found: false, declineCode: 'not_found', definitive: false });
    await gateway.cancel(cancelOf(reference));
    expect(await gateway.status(statusOf('cancel', reference))).toMatchObject({ found: true, outcome: 'succeeded', reference });
    expect(await gateway.status(statusOf('capture', reference))).toMatchObject({ found: false, outcome: 'declined', declineCode: 'not_found', definitive: true });
  });

  it('should take succeeded as captured unless amount_received says nothing was received', async () => {
    const succeeded = (extra: Record<string, unknown>) => () => ({ status: 200, body: { id: 'pi_1', object: 'payment_intent', status: 'succeeded', ...extra } });
    fake.reset(succeeded({}));
    expect(await stripe().status(statusOf('capture', 'pi_1'))).toMatchObject({ found: true, outcome: 'succeeded', reference: 'pi_1' });
    fake.reset(succeeded({ amount_received: 0 }));
    expect(await stripe().status(statusOf('capture', 'pi_1'))).toMatchObject({ found: false, outcome: 'timeout', declineCode: 'status_unavailable' });
  });

  it('should answer not_found, definitive, for a PaymentIntent Stripe does not know', async () => {
    for (const kind of ['charge', 'capture', 'cancel'] as const) {
      expect(await stripe().status(statusOf(kind, 'pi_unknown'))).toMatchObject({ found: false, outcome: 'declined', declineCode: 'not_found', definitive: true });
    }
  });

  it('should say it cannot tell for a capture or cancel without its charge reference, without calling Stripe', async () => {
    for (const kind of ['capture', 'cancel'] as const) {
      expect(await stripe().status(statusOf(kind, null))).toMatchObject({ found: false, outcome: 'timeout', declineCode: 'status_unavailable' });
    }
    expect(fake.requests).toHaveLength(0);
  });

  it('should never answer a failed look-up by reference with a decline', async () => {
    fake.reset(() => ({ status: 500, body: { error: { type: 'api_error' } } }));
    expect(await stripe().status(statusOf('capture', 'pi_1'))).toMatchObject({ found: false, outcome: 'timeout' });
    fake.reset(() => ({ status: 400, body: { error: { type: 'invalid_request_error', message: 'nope' } } }));
    expect(await stripe().status(statusOf('charge', 'pi_1'))).toMatchObject({ found: false, outcome: 'retryable_error', declineCode: 'status_unavailable' });
    fake.reset(() => 'hang');
    expect(await stripe(100).status(statusOf('cancel', 'pi_1'))).toMatchObject({ found: false, outcome: 'timeout' });
    fake.reset(() => ({ status: 200, body: { id: 'pi_1', object: 'payment_intent', status: 'processing' } }));
    expect(await stripe().status(statusOf('capture', 'pi_1'))).toMatchObject({ found: false, outcome: 'timeout', declineCode: 'status_unavailable' });
  });
});

describe('stripe connector: capture and cancel timeouts', () => {
  it('should answer timeout when the capture answer is lost, and status() should find the capture', async () => {
    const gateway = stripe(200);
    const reference = await authorised(gateway);
    interpose((req) => (req.pathname.endsWith('/capture') ? 'hang' : undefined));
    const result = await gateway.capture(captureOf(reference, 2500));
    expect(result).toMatchObject({ outcome: 'timeout', declineCode: 'timeout', reference: null });
    expect(await gateway.status(statusOf('capture', reference))).toMatchObject({ found: true, outcome: 'succeeded', reference });
  });

  it('should answer timeout when the capture never reached Stripe, and status() should say not captured (not yet definitive)', async () => {
    const gateway = stripe(200);
    const reference = await authorised(gateway);
    interpose((req) => (req.pathname.endsWith('/capture') ? 'hang' : undefined), { before: true });
    expect(await gateway.capture(captureOf(reference, 2500))).toMatchObject({ outcome: 'timeout' });
    expect(intentOf(reference).status).toBe('requires_capture');
    expect(await gateway.status(statusOf('capture', reference))).toMatchObject({ found: false, outcome: 'declined', declineCode: 'not_found', definitive: false });
  });

  it('should answer timeout when the connection drops after the capture was sent', async () => {
    const gateway = stripe();
    const reference = await authorised(gateway);
    interpose((req) => (req.pathname.endsWith('/capture') ? 'reset' : undefined));
    expect(await gateway.capture(captureOf(reference, 2500))).toMatchObject({ outcome: 'timeout', response: { transport: 'connection_lost' } });
    expect(await gateway.status(statusOf('capture', reference))).toMatchObject({ found: true, outcome: 'succeeded' });
  });

  it('should answer timeout when the cancel answer is lost, and status() should find the cancel', async () => {
    const gateway = stripe(200);
    const reference = await authorised(gateway);
    interpose((req) => (req.pathname.endsWith('/cancel') ? 'hang' : undefined));
    expect(await gateway.cancel(cancelOf(reference))).toMatchObject({ outcome: 'timeout', declineCode: 'timeout' });
    expect(await gateway.status(statusOf('cancel', reference))).toMatchObject({ found: true, outcome: 'succeeded', reference });
  });

  it('should answer timeout when the cancel never reached Stripe, and status() should say not canceled', async () => {
    const gateway = stripe(200);
    const reference = await authorised(gateway);
    interpose((req) => (req.pathname.endsWith('/cancel') ? 'hang' : undefined), { before: true });
    expect(await gateway.cancel(cancelOf(reference))).toMatchObject({ outcome: 'timeout' });
    expect(await gateway.status(statusOf('cancel', reference))).toMatchObject({ found: false, declineCode: 'not_found', definitive: false });
  });
});

describe('stripe connector: no card data in capture, cancel and 3-D Secure summaries', () => {
  it('should keep the card number and CVC out of every request and response summary', async () => {
    const gateway = stripe();
    const results: GatewayResult[] = [];
    const authorisation = await gateway.charge(charge({ capture: false, returnUrl: 'https://pay.example/back' }));
    const pending = await gateway.charge(charge({ source: { kind: 'card', card: card(PAN_3DS) }, returnUrl: 'https://pay.example/back', capture: false }));
    results.push(authorisation, pending);
    results.push(await gateway.capture(captureOf(authorisation.reference!, 1000)));
    results.push(await gateway.status(statusOf('capture', authorisation.reference)));
    results.push(await gateway.status(statusOf('charge', pending.reference)));
    results.push(await gateway.cancel(cancelOf(pending.reference!)));
    results.push(await gateway.status(statusOf('cancel', pending.reference)));
    results.push(await gateway.capture(captureOf(pending.reference!, 1000)));
    expect(fake.requests.some((r) => r.rawBody.includes(PAN_3DS))).toBe(true); // it was sent to Stripe
    for (const result of results) expectNoCardData(result);
    expect(authorisation.request).toMatchObject({ capture: false, returnUrl: 'https://pay.example/back', source: { kind: 'card', brand: 'visa', last4: '4242' } });
  });
});
