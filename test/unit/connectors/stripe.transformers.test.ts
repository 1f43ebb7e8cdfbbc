import {
  chargeForm,
  chargeSearchPath,
  encodeForm,
  mapChargeAnswer,
  mapChargeSearchAnswer,
  mapRefundAnswer,
  mapRefundListAnswer,
  refundListPath,
  stripeExponent,
  toStripeAmount,
  type StripeAnswer,
} from '../../../src/connectors/stripe/stripe.transformers';

const answer = (status: number, body: unknown): StripeAnswer => ({ status, body, requestId: 'req_1', idempotentReplayed: false });

describe('stripe transformers', () => {
  it('should encode forms with literal brackets and percent-encoded values', () => {
    expect(encodeForm([['metadata[a b]', 'x&y'], ['payment_method_types[]', 'card'], ['q', 'ü=1']])).toBe(
      'metadata[a%20b]=x%26y&payment_method_types[]=card&q=%C3%BC%3D1',
    );
  });

  it('should cap metadata at Stripe 50 keys, ours first', () => {
    const metadata = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v']));
    const { fields, droppedMetadataKeys } = chargeForm({
      idempotencyKey: 'key', paymentId: 'pay_1', amount: 1, currency: 'USD', source: { kind: 'token', token: 'pm_card_visa' }, metadata,
    }, 1);
    expect(fields.filter(([k]) => k.startsWith('metadata['))).toHaveLength(50);
    expect(droppedMetadataKeys).toEqual(['k48', 'k49']);
  });

  it('should build the search and refund list paths', () => {
    expect(decodeURIComponent(chargeSearchPath('pay_1_0'))).toBe("/v1/payment_intents/search?query=metadata['payorch_idempotency_key']:'pay_1_0'");
    expect(refundListPath('pi_1', null)).toBe('/v1/refunds?limit=100&payment_intent=pi_1');
    expect(refundListPath('pi_1', 're_9')).toBe('/v1/refunds?limit=100&payment_intent=pi_1&starting_after=re_9');
  });

  it('should treat an unreadable 2xx as an unknown outcome, not a decline', () => {
    expect(mapChargeAnswer(answer(200, { weird: true }))).toMatchObject({ outcome: 'timeout' });
    expect(mapChargeAnswer(answer(200, { object: 'payment_intent', id: 'pi_1' }))).toMatchObject({ outcome: 'timeout', declineCode: 'gateway_error', reference: 'pi_1' });
    expect(mapRefundAnswer(answer(200, null))).toMatchObject({ outcome: 'timeout' });
  });

  it('should count requires_capture as succeeded and an unknown status as a processing_error', () => {
    expect(mapChargeAnswer(answer(200, { object: 'payment_intent', id: 'pi_1', status: 'requires_capture' }))).toMatchObject({ outcome: 'succeeded', reference: 'pi_1' });
    expect(mapChargeAnswer(answer(200, { object: 'payment_intent', id: 'pi_1', status: 'canceled' }))).toMatchObject({ outcome: 'declined', declineCode: 'processing_error' });
  });

  it('should pick the newest PaymentIntent of a search', () => {
    const lookup = mapChargeSearchAnswer(answer(200, { data: [
      { object: 'payment_intent', id: 'pi_old', status: 'requires_payment_method', created: 1 },
      { object: 'payment_intent', id: 'pi_new', status: 'succeeded', created: 2 },
    ] }));
    expect(lookup).toMatchObject({ found: true, mapped: { reference: 'pi_new', outcome: 'succeeded' } });
  });

  it('should give the next cursor when a refund page does not hold the key', () => {
    const lookup = mapRefundListAnswer(answer(200, { has_more: true, data: [{ id: 're_1', metadata: {} }] }), 'k');
    expect(lookup).toEqual({ found: false, mapped: null, nextCursor: 're_1' });
  });

  it.each([
    // Same decimals at Stripe as in ISO 4217.
    [2500, 'EUR', { amount: 2500 }],
    [500, 'JPY', { amount: 500 }],
    [1230, 'KWD', { amount: 1230 }],
    // ISK: whole krónur for us, two decimals at Stripe.
    [5000, 'ISK', { amount: 500000 }],
    // MGA: two decimals in ISO 4217, whole ariary at Stripe.
    [150000, 'MGA', { amount: 1500 }],
  ])('should write %i %s as Stripe amount %j', (amount, currency, expected) => {
    expect(toStripeAmount(amount, currency)).toEqual(expected);
  });

  it.each([
    [1005, 'KWD', /last digit is 0/],
    [150050, 'MGA', /whole units/],
  ])('should refuse %i %s, which Stripe cannot take exactly', (amount, currency, why) => {
    const result = toStripeAmount(amount, currency);
    expect('refused' in result && result.refused).toMatch(why);
  });

  it('should know Stripe decimals, not ISO ones', () => {
    expect([stripeExponent('usd'), stripeExponent('JPY'), stripeExponent('MGA'), stripeExponent('ISK'), stripeExponent('BHD')]).toEqual([2, 0, 0, 2, 3]);
  });

  it.each(['pending', 'requires_action', 'some_new_status'])('should leave a %s refund unknown (it may still fail or succeed)', (status) => {
    expect(mapRefundAnswer(answer(200, { object: 'refund', id: 're_1', status }))).toMatchObject({ outcome: 'timeout', reference: 're_1', declineCode: 'refund_pending' });
  });

  it.each(['failed', 'canceled'])('should decline a %s refund', (status) => {
    expect(mapRefundAnswer(answer(200, { object: 'refund', id: 're_1', status }))).toMatchObject({ outcome: 'declined', declineCode: 'refund_failed' });
  });
});
