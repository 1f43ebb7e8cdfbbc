import net from 'node:net';
import { TEST_TOKEN_CARDS } from '../../src/connectors/card';
import type { ChargeRequest, Gateway, GatewayResult } from '../../src/connectors/connector';
import { createGateway } from '../../src/connectors/registry';
import { STRIPE_API_VERSION } from '../../src/connectors/stripe/stripe.transformers';
import { untilKnown } from '../../src/connectors/until-known';
import { FakeStripe, StripeLikeBackend, type FakeResponse, type RecordedRequest } from './fake-stripe';

const SECRET = 'sk_test_51FakeSecretKey';
const PAN = '4242424242424242';
const CVC = '987';
let fake: FakeStripe;

beforeAll(async () => {
  fake = await FakeStripe.start();
});

afterAll(async () => {
  await fake.close();
});

function stripe(opts: { timeoutMs?: number; ca?: string | null; baseUrl?: string; secretKey?: string } = {}): Gateway {
  return createGateway('stripe', {
    gatewayId: 'gw_stripe_test',
    credentials: { secretKey: opts.secretKey ?? SECRET },
    settings: { baseUrl: opts.baseUrl ?? fake.baseUrl },
    httpsAgentOptions: opts.ca === null ? undefined : { ca: opts.ca ?? fake.ca },
    timeoutMs: opts.timeoutMs ?? 3000,
    // The fake listens on loopback: GATEWAY_ALLOW_PRIVATE_BASE_URL, as for a local emulator.
    allowPrivateAddresses: true,
  });
}

/** Answers every request with `response`, after running the test's assertions on it. */
function answer(response: FakeResponse | 'hang', check: (req: RecordedRequest) => void = () => undefined): void {
  fake.reset((req) => {
    check(req);
    return response;
  });
}

const cardCharge = (overrides: Partial<ChargeRequest> = {}): ChargeRequest => ({
  idempotencyKey: 'pay_abc123_0',
  paymentId: 'pay_abc123',
  amount: 2500,
  currency: 'EUR',
  source: { kind: 'card', card: { number: PAN, expMonth: 12, expYear: 2031, cvc: CVC } },
  description: 'Order 42',
  metadata: { order: '42' },
  ...overrides,
});

const intent = (status: string, extra: Record<string, unknown> = {}) => ({
  id: 'pi_123', object: 'payment_intent', amount: 2500, currency: 'eur', status, ...extra,
});

function expectNoCardData(result: GatewayResult): void {
  const text = JSON.stringify({ request: result.request, response: result.response, message: result.message });
  expect(text).not.toContain(PAN);
  // The CVC's digits on their own: a random port such as 41987 holds them too.
  expect(text).not.toMatch(new RegExp(`(?<![0-9])${CVC}(?![0-9])`));
  expect(text).not.toMatch(/"cvc"/i);
}

function expectCommonHeaders(req: RecordedRequest, idempotencyKey: string | null): void {
  expect(req.headers.authorization).toBe(`Bearer ${SECRET}`);
  expect(req.headers['stripe-version']).toBe(STRIPE_API_VERSION);
  if (idempotencyKey === null) {
    expect(req.headers['idempotency-key']).toBeUndefined();
  } else {
    expect(req.headers['idempotency-key']).toBe(idempotencyKey);
    expect(req.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(Number(req.headers['content-length'])).toBe(Buffer.byteLength(req.rawBody));
  }
}

describe('stripe connector: charge', () => {
  it('should POST a raw card PaymentIntent with the exact headers and form body', async () => {
    answer({ status: 200, body: intent('succeeded') });
    const result = await stripe().charge(cardCharge());
    const [req] = fake.requests;
    expect(fake.requests).toHaveLength(1);
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/v1/payment_intents');
    expectCommonHeaders(req, 'pay_abc123_0');
    expect(req.rawBody).toBe(
      [
        'amount=2500', 'currency=eur', 'confirm=true', 'payment_method_types[]=card',
        'payment_method_data[type]=card', `payment_method_data[card][number]=${PAN}`,
        'payment_method_data[card][exp_month]=12', 'payment_method_data[card][exp_year]=2031',
        `payment_method_data[card][cvc]=${CVC}`, 'description=Order%2042',
        'metadata[payorch_payment_id]=pay_abc123', 'metadata[payorch_idempotency_key]=pay_abc123_0',
        'metadata[order]=42',
      ].join('&'),
    );
    expect(result).toMatchObject({ outcome: 'succeeded', reference: 'pi_123', declineCode: null, message: null });
    expect(result.response).toMatchObject({ httpStatus: 200, id: 'pi_123', status: 'succeeded', requestId: 'req_fake_1', idempotentReplayed: false });
    expect(result.request).toMatchObject({ endpoint: 'POST /v1/payment_intents', source: { kind: 'card', brand: 'visa', last4: '4242' } });
    expectNoCardData(result);
  });

  it('should send a test token as payment_method and no card fields', async () => {
    answer({ status: 200, body: intent('succeeded') });
    await stripe().charge(cardCharge({ source: { kind: 'token', token: 'pm_card_visa' }, description: null, metadata: undefined }));
    const [req] = fake.requests;
    expect(req.formPairs).toEqual([
      ['amount', '2500'], ['currency', 'eur'], ['confirm', 'true'], ['payment_method_types[]', 'card'],
      ['payment_method', 'pm_card_visa'],
      ['metadata[payorch_payment_id]', 'pay_abc123'], ['metadata[payorch_idempotency_key]', 'pay_abc123_0'],
    ]);
  });

  it.each([
    ['pm_card_visa', 'pm_card_visa'],
    ['pm_card_mastercard', 'pm_card_mastercard'],
    ['pm_card_declined', 'pm_card_visa_chargeDeclined'],
    ['pm_card_insufficient_funds', 'pm_card_visa_chargeDeclinedInsufficientFunds'],
    ['pm_card_gateway_error', 'pm_card_chargeDeclinedProcessingError'],
  ])('should charge our test token %s as Stripe test PaymentMethod %s', async (token, stripeMethod) => {
    answer({ status: 200, body: intent('succeeded') });
    const result = await stripe().charge(cardCharge({ source: { kind: 'token', token } }));
    expect(fake.requests[0].form.payment_method).toBe(stripeMethod);
    expect(result.request).toMatchObject({ source: { kind: 'token', token }, stripePaymentMethod: stripeMethod });
  });

  it('should charge every documented test token as a PaymentMethod Stripe test mode knows', async () => {
    // The backend knows Stripe's test PaymentMethods only, and answers others "No such PaymentMethod".
    const backend = new StripeLikeBackend(SECRET);
    fake.reset(backend.handle);
    for (const token of Object.keys(TEST_TOKEN_CARDS)) {
      const result = await stripe().charge(cardCharge({ idempotencyKey: `pay_tok_${token}`, source: { kind: 'token', token } }));
      expect({ token, message: result.message }).not.toMatchObject({ message: expect.stringMatching(/No such PaymentMethod/) });
      expect(result.outcome).not.toBe('timeout');
    }
    expect(backend.intents.size).toBe(Object.keys(TEST_TOKEN_CARDS).length - 1); // the processing error creates none
  });

  it('should not send a test token through a live Stripe key, and say why', async () => {
    answer({ status: 200, body: intent('succeeded') });
    const result = await stripe({ secretKey: 'sk_live_51RealKey' }).charge(cardCharge({ source: { kind: 'token', token: 'pm_card_visa' } }));
    expect(fake.requests).toHaveLength(0);
    expect(result).toMatchObject({ outcome: 'declined', declineCode: 'invalid_token', reference: null });
    expect(result.message).toMatch(/test key/);
  });

  it('should charge a saved token with its customer, off session', async () => {
    answer({ status: 200, body: intent('succeeded') });
    await stripe().charge(cardCharge({ source: { kind: 'token', token: 'cus_Abc:pm_Def' } }));
    expect(fake.requests[0].form).toMatchObject({ customer: 'cus_Abc', payment_method: 'pm_Def', off_session: 'true' });
  });

  it('should percent-encode values and drop metadata keys Stripe cannot take', async () => {
    answer({ status: 200, body: intent('succeeded') });
    const result = await stripe().charge(cardCharge({ description: 'a&b=c ü', metadata: { 'x[y]': '1', payorch_payment_id: 'spoof', note: 'a+b' } }));
    const [req] = fake.requests;
    expect(req.rawBody).toContain('description=a%26b%3Dc%20%C3%BC');
    expect(req.form.description).toBe('a&b=c ü');
    expect(req.form['metadata[payorch_payment_id]']).toBe('pay_abc123');
    expect(req.form['metadata[note]']).toBe('a+b');
    expect(req.rawBody).not.toContain('x[y]');
    expect(result.request.droppedMetadataKeys).toEqual(['x[y]', 'payorch_payment_id']);
  });

  it.each([
    [{ code: 'card_declined', decline_code: 'insufficient_funds' }, 'insufficient_funds'],
    [{ code: 'card_declined', decline_code: 'generic_decline' }, 'card_declined'],
    [{ code: 'card_declined', decline_code: 'do_not_honor' }, 'card_declined'],
    [{ code: 'expired_card' }, 'expired_card'],
    [{ code: 'incorrect_cvc' }, 'incorrect_cvc'],
    [{ code: 'incorrect_number' }, 'incorrect_number'],
    [{ code: 'card_declined', decline_code: 'stolen_card' }, 'stolen_card'],
  ])('should map a 402 card_error %j to declined %s with the PaymentIntent as reference', async (error, code) => {
    answer({
      status: 402,
      body: { error: { type: 'card_error', message: 'Your card was declined.', ...error, payment_intent: intent('requires_payment_method', { id: 'pi_declined' }) } },
    });
    const result = await stripe().charge(cardCharge());
    expect(result).toMatchObject({ outcome: 'declined', declineCode: code, reference: 'pi_declined', message: 'Your card was declined.' });
    expect(result.response).toMatchObject({ httpStatus: 402, errorType: 'card_error' });
    expectNoCardData(result);
  });

  // Only an error of one of Stripe's own types has its text recorded (see the non-Stripe answers below).
  it.each([
    ['no type', { code: 'card_declined', decline_code: 'insufficient_funds', message: 'Your card has insufficient funds.' }, 'insufficient_funds', 'Stripe answered HTTP 402.'],
    ['an invalid_request_error type', { type: 'invalid_request_error', code: 'card_declined', message: 'Your card was declined.' }, 'card_declined', 'Your card was declined.'],
    ['an api_error type', { type: 'api_error', message: 'Your card was declined.' }, 'card_declined', 'Your card was declined.'],
    ['an unknown type', { type: 'emulator_error', code: 'expired_card', message: 'Your card has expired.' }, 'expired_card', 'Stripe answered HTTP 402.'],
  ])('should decline a 402 whose error has %s, never retry it elsewhere', async (_label, error, code, message) => {
    answer({ status: 402, body: { error: { ...error, payment_intent: intent('requires_payment_method', { id: 'pi_402' }) } } });
    const result = await stripe().charge(cardCharge());
    expect(result).toMatchObject({ outcome: 'declined', declineCode: code, reference: 'pi_402', message });
    expect(result.response).toMatchObject({ httpStatus: 402 });
  });

  it.each([
    ['an empty body', { rawBody: '' }],
    ['a body that is not JSON', { rawBody: '<html>Payment Required</html>' }],
    ['no error object', { body: { message: 'declined' } }],
  ])('should decline a 402 with %s as card_declined', async (_label, response) => {
    answer({ status: 402, ...response });
    const result = await stripe().charge(cardCharge());
    expect(result).toMatchObject({ outcome: 'declined', declineCode: 'card_declined', reference: null, message: 'Stripe answered HTTP 402.' });
  });

  it('should still treat a 402 processing_error without a type as retryable, as Stripe says to retry it', async () => {
    answer({ status: 402, body: { error: { code: 'processing_error', message: 'An error occurred while processing your card.' } } });
    expect(await stripe().charge(cardCharge())).toMatchObject({ outcome: 'retryable_error', declineCode: 'gateway_error' });
  });

  it('should treat a card_error processing_error as retryable', async () => {
    answer({ status: 402, body: { error: { type: 'card_error', code: 'processing_error', message: 'An error occurred while processing your card.' } } });
    const result = await stripe().charge(cardCharge());
    expect(result).toMatchObject({ outcome: 'retryable_error', declineCode: 'gateway_error' });
  });

  it('should decline a requires_payment_method PaymentIntent using its last_payment_error', async () => {
    answer({ status: 200, body: intent('requires_payment_method', { last_payment_error: { type: 'card_error', code: 'card_declined', decline_code: 'insufficient_funds', message: 'Insufficient funds.' } }) });
    const result = await stripe().charge(cardCharge());
    expect(result).toMatchObject({ outcome: 'declined', declineCode: 'insufficient_funds', reference: 'pi_123' });
  });

  it('should decline requires_action as authentication_required and treat processing as unknown', async () => {
    answer({ status: 200, body: intent('requires_action') });
    expect(await stripe().charge(cardCharge())).toMatchObject({ outcome: 'declined', declineCode: 'authentication_required' });
    answer({ status: 200, body: intent('processing') });
    expect(await stripe().charge(cardCharge())).toMatchObject({ outcome: 'timeout', reference: 'pi_123' });
  });

  it('should map 500 api_error to timeout (indeterminate: it may have charged)', async () => {
    answer({ status: 500, body: { error: { type: 'api_error', message: 'Something went wrong on our end.' } } });
    const result = await stripe().charge(cardCharge());
    expect(result).toMatchObject({ outcome: 'timeout', declineCode: 'gateway_error', reference: null });
    expect(result.response).toMatchObject({ httpStatus: 500, errorType: 'api_error' });
  });

  it('should map a non-JSON 502 to timeout', async () => {
    answer({ status: 502, rawBody: '<html>Bad gateway</html>' });
    const result = await stripe().charge(cardCharge());
    expect(result).toMatchObject({ outcome: 'timeout', message: 'Stripe answered HTTP 502.' });
  });

  it('should map 429 to retryable_error rate_limited', async () => {
    answer({ status: 429, body: { error: { type: 'invalid_request_error', code: 'rate_limit', message: 'Too many requests.' } } });
    expect(await stripe().charge(cardCharge())).toMatchObject({ outcome: 'retryable_error', declineCode: 'rate_limited' });
  });

  it('should map 409 (the first request with the key still running) to timeout', async () => {
    answer({ status: 409, body: { error: { type: 'idempotency_error', message: 'There is currently another in-progress request using this Idempotent Key.' } } });
    expect(await stripe().charge(cardCharge())).toMatchObject({ outcome: 'timeout' });
  });

  it('should map a request Stripe refused without creating anything to retryable processing_error', async () => {
    const error = { type: 'invalid_request_error', code: 'amount_too_small', param: 'amount', message: 'Amount must be at least $0.50 usd' };
    answer({ status: 400, body: { error } });
    const result = await stripe().charge(cardCharge());
    expect(result).toMatchObject({ outcome: 'retryable_error', declineCode: 'processing_error', reference: null, message: error.message });
  });

  it.each([
    [401, { type: 'invalid_request_error', message: 'Invalid API Key provided: sk_test_***' }],
    [403, { type: 'invalid_request_error', code: 'secret_key_required', message: 'This API call cannot be made with a restricted key.' }],
  ])('should map HTTP %i (our key refused, nothing done) to retryable gateway_unavailable', async (status, error) => {
    answer({ status, body: { error } });
    const result = await stripe().charge(cardCharge());
    expect(result).toMatchObject({ outcome: 'retryable_error', declineCode: 'gateway_unavailable', reference: null, message: error.message });
  });

  it('should map an idempotency_error (Stripe already holds a request under our key) to timeout', async () => {
    answer({ status: 400, body: { error: { type: 'idempotency_error', message: 'Keys for idempotent requests can only be used with the same parameters.' } } });
    expect(await stripe().charge(cardCharge())).toMatchObject({ outcome: 'timeout', declineCode: 'gateway_error' });
  });

  it('should send ISK with two decimals and MGA in whole units, as Stripe reads them', async () => {
    answer({ status: 200, body: intent('succeeded') });
    const isk = await stripe().charge(cardCharge({ amount: 5000, currency: 'ISK' }));
    expect(fake.requests[0].form).toMatchObject({ amount: '500000', currency: 'isk' });
    expect(isk.request).toMatchObject({ amount: 5000, stripeAmount: 500000 });
    answer({ status: 200, body: intent('succeeded') });
    await stripe().charge(cardCharge({ amount: 150000, currency: 'MGA' }));
    expect(fake.requests[0].form).toMatchObject({ amount: '1500', currency: 'mga' });
  });

  it('should not send an amount Stripe cannot take exactly: nothing happened, another gateway may take it', async () => {
    answer({ status: 200, body: intent('succeeded') });
    const result = await stripe().charge(cardCharge({ amount: 1005, currency: 'KWD' }));
    expect(fake.requests).toHaveLength(0);
    expect(result).toMatchObject({ outcome: 'retryable_error', declineCode: 'invalid_amount', reference: null });
    expect(result.message).toMatch(/KWD/);
  });

  it('should keep the path of a base URL that has one', async () => {
    answer({ status: 200, body: intent('succeeded') });
    await stripe({ baseUrl: `${fake.baseUrl}/stripe-proxy/` }).charge(cardCharge());
    expect(fake.requests[0].path).toBe('/stripe-proxy/v1/payment_intents');
  });

  it('should report a hung request as timeout after timeoutMs', async () => {
    answer('hang');
    const started = Date.now();
    const result = await stripe({ timeoutMs: 150 }).charge(cardCharge());
    expect(result).toMatchObject({ outcome: 'timeout', declineCode: 'timeout', reference: null });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(result.latencyMs).toBeGreaterThanOrEqual(140);
  });

  it('should report a refused connection as retryable gateway_unavailable', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (probe.address() as net.AddressInfo).port;
        probe.close(() => resolve(p));
      });
    });
    const result = await stripe({ baseUrl: `https://127.0.0.1:${port}` }).charge(cardCharge());
    expect(result).toMatchObject({ outcome: 'retryable_error', declineCode: 'gateway_unavailable' });
    expectNoCardData(result);
  });

  it('should report a connection dropped after the request was sent as timeout (it may have charged)', async () => {
    fake.reset(() => 'reset');
    const result = await stripe().charge(cardCharge());
    expect(fake.requests).toHaveLength(1); // Stripe had the whole request
    expect(result).toMatchObject({ outcome: 'timeout', declineCode: 'timeout', reference: null, response: { transport: 'connection_lost' } });
    expectNoCardData(result);
  });

  it('should refuse a server whose certificate is not trusted', async () => {
    answer({ status: 200, body: intent('succeeded') });
    const result = await stripe({ ca: null }).charge(cardCharge());
    expect(result).toMatchObject({ outcome: 'retryable_error', declineCode: 'gateway_unavailable' });
    expect(fake.requests).toHaveLength(0);
  });

  it('should flag an idempotent replay from the Idempotent-Replayed header', async () => {
    answer({ status: 200, body: intent('succeeded'), headers: { 'idempotent-replayed': 'true' } });
    const result = await stripe().charge(cardCharge());
    expect(result.response.idempotentReplayed).toBe(true);
  });

  it('should keep card numbers echoed in a gateway message out of the result', async () => {
    answer({ status: 402, body: { error: { type: 'card_error', code: 'card_declined', message: `Card ${PAN} declined` } } });
    const result = await stripe().charge(cardCharge());
    expect(result.message).toBe('Card [redacted] declined');
    expectNoCardData(result);
  });
});

describe('stripe connector: refund', () => {
  const refund = { idempotencyKey: 're_xyz', refundId: 're_xyz', chargeReference: 'pi_123', amount: 1000, currency: 'EUR', reason: 'damaged' };
  const stripeRefund = (status: string, extra: Record<string, unknown> = {}) => ({ id: 're_s1', object: 'refund', amount: 1000, currency: 'eur', status, ...extra });

  it('should POST /v1/refunds with the exact form and key', async () => {
    answer({ status: 200, body: stripeRefund('succeeded') });
    const result = await stripe().refund(refund);
    const [req] = fake.requests;
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/v1/refunds');
    expectCommonHeaders(req, 're_xyz');
    expect(req.rawBody).toBe('payment_intent=pi_123&amount=1000&metadata[payorch_refund_id]=re_xyz&metadata[payorch_idempotency_key]=re_xyz&metadata[payorch_reason]=damaged');
    expect(result).toMatchObject({ outcome: 'succeeded', reference: 're_s1' });
  });

  it('should count a succeeded refund as succeeded', async () => {
    answer({ status: 200, body: stripeRefund('succeeded') });
    expect(await stripe().refund(refund)).toMatchObject({ outcome: 'succeeded', reference: 're_s1' });
  });

  it.each(['pending', 'requires_action'])('should leave a %s refund unknown: Stripe may still fail it', async (status) => {
    answer({ status: 200, body: stripeRefund(status) });
    expect(await stripe().refund(refund)).toMatchObject({ outcome: 'timeout', declineCode: 'refund_pending', reference: 're_s1' });
  });

  it('should refund ISK with two decimals at Stripe', async () => {
    answer({ status: 200, body: stripeRefund('succeeded') });
    await stripe().refund({ ...refund, amount: 300, currency: 'ISK' });
    expect(fake.requests[0].form).toMatchObject({ amount: '30000' });
  });

  it('should decline a failed refund', async () => {
    answer({ status: 200, body: stripeRefund('failed', { failure_reason: 'expired_or_canceled_card' }) });
    const result = await stripe().refund(refund);
    expect(result).toMatchObject({ outcome: 'declined', declineCode: 'refund_failed', reference: 're_s1' });
    expect(result.response.failureReason).toBe('expired_or_canceled_card');
  });

  it.each([
    ['charge_already_refunded', 'already_refunded'],
    ['amount_too_large', 'refund_exceeds_charge'],
    ['resource_missing', 'charge_not_found'],
  ])('should map refund error %s to %s', async (code, ours) => {
    answer({ status: 400, body: { error: { type: 'invalid_request_error', code, message: 'nope' } } });
    expect(await stripe().refund(refund)).toMatchObject({ outcome: 'declined', declineCode: ours });
  });

  it('should map a 503 on refund to timeout (the refund may have happened)', async () => {
    answer({ status: 503, body: { error: { type: 'api_error', message: 'unavailable' } } });
    expect(await stripe().refund(refund)).toMatchObject({ outcome: 'timeout' });
  });
});

describe('stripe connector: status', () => {
  it('should search PaymentIntents by our idempotency key metadata', async () => {
    answer({ status: 200, body: { object: 'search_result', data: [intent('succeeded', { created: 1 })], has_more: false } });
    const result = await stripe().status({ idempotencyKey: 'pay_abc123_0', kind: 'charge', objectId: 'pay_abc123' });
    const [req] = fake.requests;
    expect(req.method).toBe('GET');
    expect(req.pathname).toBe('/v1/payment_intents/search');
    expect(req.query.get('query')).toBe("metadata['payorch_idempotency_key']:'pay_abc123_0'");
    expectCommonHeaders(req, null);
    expect(req.rawBody).toBe('');
    expect(result).toMatchObject({ found: true, outcome: 'succeeded', reference: 'pi_123' });
  });

  it('should escape quotes in the searched key', async () => {
    answer({ status: 200, body: { object: 'search_result', data: [], has_more: false } });
    await stripe().status({ idempotencyKey: "k'1\\", kind: 'charge', objectId: 'pay_x' });
    expect(fake.requests[0].query.get('query')).toBe("metadata['payorch_idempotency_key']:'k\\'1\\\\'");
  });

  it('should return found=false not_found for an empty search', async () => {
    answer({ status: 200, body: { object: 'search_result', data: [], has_more: false } });
    expect(await stripe().status({ idempotencyKey: 'pay_none_0', kind: 'charge', objectId: 'pay_none' })).toMatchObject({
      found: false, outcome: 'declined', declineCode: 'not_found',
    });
  });

  it('should never answer a failed look-up with a decline', async () => {
    answer({ status: 400, body: { error: { type: 'invalid_request_error', message: 'Search is not available' } } });
    const refused = await stripe().status({ idempotencyKey: 'pay_a_0', kind: 'charge', objectId: 'pay_a' });
    expect(refused).toMatchObject({ found: false, outcome: 'retryable_error', declineCode: 'status_unavailable' });
    answer({ status: 500, body: { error: { type: 'api_error' } } });
    expect(await stripe().status({ idempotencyKey: 'pay_a_0', kind: 'charge', objectId: 'pay_a' })).toMatchObject({ found: false, outcome: 'timeout' });
    answer('hang');
    expect(await stripe({ timeoutMs: 100 }).status({ idempotencyKey: 'pay_a_0', kind: 'charge', objectId: 'pay_a' })).toMatchObject({ found: false, outcome: 'timeout' });
  });

  it('should page through a charge refunds to find the one with our key', async () => {
    const page1 = { object: 'list', has_more: true, data: [{ id: 're_1', object: 'refund', status: 'succeeded', metadata: { payorch_idempotency_key: 're_other' } }] };
    const page2 = { object: 'list', has_more: false, data: [{ id: 're_2', object: 'refund', status: 'pending', metadata: { payorch_idempotency_key: 're_mine' } }] };
    fake.reset((req) => ({ status: 200, body: req.query.get('starting_after') === 're_1' ? page2 : page1 }));
    const result = await stripe().status({ idempotencyKey: 're_mine', kind: 'refund', objectId: 're_mine', chargeReference: 'pi_123' });
    expect(fake.requests.map((r) => r.path)).toEqual([
      '/v1/refunds?limit=100&payment_intent=pi_123',
      '/v1/refunds?limit=100&payment_intent=pi_123&starting_after=re_1',
    ]);
    // Found, but still pending at Stripe: not settled yet.
    expect(result).toMatchObject({ found: true, outcome: 'timeout', declineCode: 'refund_pending', reference: 're_2' });
  });

  it('should say it cannot tell for a refund without its charge reference, without calling Stripe', async () => {
    answer({ status: 500 });
    const result = await stripe().status({ idempotencyKey: 're_mine', kind: 'refund', objectId: 're_mine' });
    expect(result).toMatchObject({ found: false, outcome: 'timeout', declineCode: 'status_unavailable' });
    expect(fake.requests).toHaveLength(0);
  });
});

describe('stripe connector: saveCard', () => {
  it('should create a PaymentMethod then a customer holding it, and return both as the token', async () => {
    fake.reset((req) =>
      req.pathname === '/v1/payment_methods'
        ? { status: 200, body: { id: 'pm_111', object: 'payment_method', card: { brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2031 } } }
        : { status: 200, body: { id: 'cus_222', object: 'customer' } },
    );
    const result = await stripe().saveCard({ idempotencyKey: 'pm_ours_save', card: { number: PAN, expMonth: 12, expYear: 2031, cvc: CVC } });
    const [method, customer] = fake.requests;
    expect(method.path).toBe('/v1/payment_methods');
    expectCommonHeaders(method, 'pm_ours_save');
    expect(method.rawBody).toBe(`type=card&card[number]=${PAN}&card[exp_month]=12&card[exp_year]=2031&card[cvc]=${CVC}`);
    expect(customer.path).toBe('/v1/customers');
    expectCommonHeaders(customer, 'pm_ours_save:customer');
    expect(customer.formPairs).toEqual([
      ['payment_method', 'pm_111'], ['description', 'Payorch saved card'], ['metadata[payorch_idempotency_key]', 'pm_ours_save:customer'],
    ]);
    expect(result).toMatchObject({ outcome: 'succeeded', token: 'cus_222:pm_111', reference: 'pm_111' });
    expect(result.response).toMatchObject({ paymentMethod: { card: { brand: 'visa', last4: '4242' } } });
    expectNoCardData(result);
  });

  it('should return no token when Stripe refuses the card', async () => {
    answer({ status: 402, body: { error: { type: 'card_error', code: 'incorrect_number', message: 'Your card number is incorrect.' } } });
    const result = await stripe().saveCard({ idempotencyKey: 'pm_bad_save', card: { number: '4242424242424241', expMonth: 12, expYear: 2031, cvc: CVC } });
    expect(result).toMatchObject({ outcome: 'declined', declineCode: 'incorrect_number', token: null, reference: null });
    expect(fake.requests).toHaveLength(1);
    expectNoCardData(result);
  });

  it('should return no token when the customer cannot be created', async () => {
    fake.reset((req) =>
      req.pathname === '/v1/payment_methods'
        ? { status: 200, body: { id: 'pm_111', object: 'payment_method', card: { brand: 'visa', last4: '4242' } } }
        : { status: 500, body: { error: { type: 'api_error' } } },
    );
    const result = await stripe().saveCard({ idempotencyKey: 'pm_c_save', card: { number: PAN, expMonth: 12, expYear: 2031 } });
    expect(result).toMatchObject({ outcome: 'timeout', token: null });
    expect(fake.requests[0].rawBody).not.toContain('cvc');
  });
});

describe('stripe connector: latency of an attempt', () => {
  it('should report the wall time of a timed-out call and its repeat, not the repeat alone', async () => {
    let calls = 0;
    fake.reset(() => (++calls === 1 ? 'hang' : { status: 200, body: intent('succeeded'), headers: { 'idempotent-replayed': 'true' } }));
    const gateway = stripe({ timeoutMs: 400 });
    const request = cardCharge();
    const started = performance.now();
    const learned = await untilKnown(
      () => gateway.charge(request),
      () => gateway.status({ idempotencyKey: request.idempotencyKey, kind: 'charge', objectId: request.paymentId }),
      () => undefined,
    );
    const wallMs = performance.now() - started;
    expect(learned).toMatchObject({ known: true, result: { outcome: 'succeeded', reference: 'pi_123' } });
    expect(calls).toBe(2);
    expect(learned.result.latencyMs).toBeGreaterThanOrEqual(400);
    expect(learned.result.latencyMs).toBeLessThanOrEqual(Math.ceil(wallMs));
    expect(learned.result.latencyMs).toBeGreaterThan(wallMs - 50);
  });
});

describe('stripe connector: base URL', () => {
  let emulator: FakeStripe;

  beforeAll(async () => {
    emulator = await FakeStripe.start({ http: true });
  });

  afterAll(async () => {
    await emulator.close();
  });

  it('should charge through a local emulator over http on a loopback address', async () => {
    expect(emulator.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:/);
    emulator.reset(() => ({ status: 200, body: intent('succeeded') }));
    const result = await stripe({ baseUrl: emulator.baseUrl, ca: null }).charge(cardCharge());
    expect(result).toMatchObject({ outcome: 'succeeded', reference: 'pi_123' });
    expect(emulator.requests).toHaveLength(1);
    expectCommonHeaders(emulator.requests[0], 'pay_abc123_0');
  });

  it.each(['http://localhost:12111', 'http://[::1]:12111', 'http://127.0.0.2/stripe'])('should accept http to loopback %s', (baseUrl) => {
    expect(() => stripe({ baseUrl })).not.toThrow();
  });

  it.each(['http://api.stripe.com', 'http://10.0.0.5:12111', 'http://stripe-emulator.internal', 'http://169.254.169.254', 'ftp://127.0.0.1'])(
    'should refuse %s: http only to a loopback address',
    (baseUrl) => {
      expect(() => stripe({ baseUrl })).toThrow(expect.objectContaining({ name: 'GatewayConfigError', param: 'settings.baseUrl' }));
    },
  );

  it('should refuse http with a live Stripe key, even to loopback', () => {
    expect(() => stripe({ baseUrl: 'http://127.0.0.1:12111', secretKey: 'sk_live_51RealKey' })).toThrow(
      expect.objectContaining({ param: 'settings.baseUrl', message: expect.stringMatching(/test key/) }),
    );
  });
});

describe('stripe connector: the address policy at connect time', () => {
  /** A connector held to the webhook address policy (GATEWAY_ALLOW_PRIVATE_BASE_URL unset). */
  const guarded = (baseUrl: string, lookup?: net.LookupFunction) =>
    createGateway('stripe', {
      gatewayId: 'gw_stripe_guarded', credentials: { secretKey: SECRET }, settings: { baseUrl }, httpsAgentOptions: { ca: fake.ca }, timeoutMs: 3000, lookup,
    });
  /** DNS that answers `address` for every name (a name re-pointed after registration: DNS rebinding). */
  const resolvesTo = (address: string): net.LookupFunction => (_host, options, callback) => {
    const family = net.isIPv6(address) ? 6 : 4;
    if (options?.all) (callback as (err: null, addresses: Array<{ address: string; family: number }>) => void)(null, [{ address, family }]);
    else (callback as (err: null, address: string, family: number) => void)(null, address, family);
  };

  it('should send nothing to a base URL on a private address saved while such addresses were allowed', async () => {
    answer({ status: 200, body: intent('succeeded') });
    const result = await guarded(fake.baseUrl).charge(cardCharge());
    expect(result).toMatchObject({ outcome: 'retryable_error', declineCode: 'gateway_unavailable', message: expect.stringMatching(/destination not allowed: URL host is a loopback address/) });
    expect(result.response).toEqual({ transport: 'connection_error' });
    expect(fake.requests).toHaveLength(0);
  });

  it.each(['127.0.0.1', '10.0.0.5', '169.254.169.254', '::ffff:127.0.0.1'])('should refuse, before connecting, a host name that now resolves to %s', async (address) => {
    answer({ status: 200, body: intent('succeeded') });
    const port = new URL(fake.baseUrl).port;
    const gateway = guarded(`https://localhost.rebind.example:${port}/`, resolvesTo(address));
    const result = await gateway.charge(cardCharge());
    expect(result).toMatchObject({ outcome: 'retryable_error', declineCode: 'gateway_unavailable', message: expect.stringMatching(/resolves to a .* address/) });
    expect(await gateway.status({ idempotencyKey: 'pay_abc123_0', kind: 'charge', objectId: 'pay_abc123' })).toMatchObject({ found: false, outcome: 'retryable_error' });
    expect(fake.requests).toHaveLength(0);
  });

  it('should connect to a name resolving to loopback when private addresses are allowed', async () => {
    answer({ status: 200, body: intent('succeeded') });
    const port = new URL(fake.baseUrl).port;
    const gateway = createGateway('stripe', {
      gatewayId: 'gw_stripe_open', credentials: { secretKey: SECRET }, settings: { baseUrl: `https://localhost:${port}/` },
      httpsAgentOptions: { ca: fake.ca }, timeoutMs: 3000, allowPrivateAddresses: true, lookup: resolvesTo('127.0.0.1'),
    });
    expect(await gateway.charge(cardCharge())).toMatchObject({ outcome: 'succeeded' });
    expect(fake.requests).toHaveLength(1);
  });
});

describe('stripe connector: answers that are not Stripe errors', () => {
  it.each([
    ['a JSON error of no Stripe type', { status: 400, body: { error: { message: 'deleted 42 rows from accounts', code: 'ADMIN_OK' } } }],
    ['a JSON error of an unknown type', { status: 500, body: { error: { type: 'internal', message: 'deleted 42 rows from accounts' } } }],
    ['an HTML page', { status: 404, rawBody: '<html>deleted 42 rows from accounts</html>', headers: { 'request-id': 'deleted 42 rows' } }],
  ])('should record no text of %s', async (_label, response) => {
    answer(response as FakeResponse);
    const result = await stripe().charge(cardCharge());
    const recorded = JSON.stringify(result);
    expect(recorded).not.toMatch(/deleted 42 rows|ADMIN_OK|"internal"/);
    expect(result.message).toBe(`Stripe answered HTTP ${response.status}.`);
    expect(result.response).toMatchObject({ httpStatus: response.status, errorType: null, errorCode: null });
  });
});
