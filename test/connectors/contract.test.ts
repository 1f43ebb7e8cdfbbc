import type { CardData, ChargeRequest, Gateway, GatewayResult } from '../../src/connectors/connector';
import { createGateway } from '../../src/connectors/registry';
import { resetSimulatorState, simulatorChargeCount } from '../../src/connectors/simulator/simulator.state';
import { FakeStripe, StripeLikeBackend } from './fake-stripe';

/** The same behaviour, whichever connector: each harness builds one and counts real charges. */
interface Harness {
  name: string;
  gateway(): Gateway;
  chargeCount(idempotencyKey: string): number;
  reset(): void;
}

const SECRET = 'sk_test_contract';
let fake: FakeStripe;
let backend: StripeLikeBackend;

const simulator: Harness = {
  name: 'simulator',
  gateway: () => createGateway('simulator', { gatewayId: 'gw_contract_sim', credentials: {} }),
  chargeCount: (key) => simulatorChargeCount('gw_contract_sim', key),
  reset: () => resetSimulatorState(),
};

const stripe: Harness = {
  name: 'stripe (local fake)',
  gateway: () =>
    createGateway('stripe', {
      gatewayId: 'gw_contract_stripe',
      credentials: { secretKey: SECRET },
      settings: { baseUrl: fake.baseUrl },
      httpsAgentOptions: { ca: fake.ca },
      timeoutMs: 2000,
      allowPrivateAddresses: true, // the fake listens on loopback
    }),
  chargeCount: (key) => backend.chargeCounts.get(key) ?? 0,
  reset: () => {
    backend = new StripeLikeBackend(SECRET);
    fake.reset(backend.handle);
  },
};

beforeAll(async () => {
  fake = await FakeStripe.start();
});

afterAll(async () => {
  await fake.close();
});

const card = (number: string, extra: Partial<CardData> = {}): CardData => ({ number, expMonth: 12, expYear: 2099, cvc: '987', ...extra });

let seq = 0;
function chargeRequest(source: ChargeRequest['source'], amount = 2500): ChargeRequest {
  seq++;
  return { idempotencyKey: `pay_contract${seq}_0`, paymentId: `pay_contract${seq}`, amount, currency: 'EUR', source, metadata: { order: `o-${seq}` } };
}

/** No summary may carry the card number or the CVC. */
function expectRedacted(result: GatewayResult, number: string): void {
  const text = JSON.stringify({ request: result.request, response: result.response, message: result.message });
  expect(text).not.toContain(number);
  expect(text).not.toMatch(/"cvc"/);
  expect(text).not.toContain('"987"');
}

describe.each([simulator, stripe])('gateway contract: $name', (h) => {
  beforeEach(() => h.reset());

  it('should succeed a charge of the success test card with a reference', async () => {
    const result = await h.gateway().charge(chargeRequest({ kind: 'card', card: card('4242424242424242') }));
    expect(result).toMatchObject({ outcome: 'succeeded', declineCode: null });
    expect(result.reference).toEqual(expect.any(String));
    expect(result.latencyMs).toBeGreaterThanOrEqual(0);
    expectRedacted(result, '4242424242424242');
    expect(result.request).toMatchObject({ source: { kind: 'card', brand: 'visa', last4: '4242' } });
  });

  it('should succeed a charge of the pm_card_mastercard test token', async () => {
    const result = await h.gateway().charge(chargeRequest({ kind: 'token', token: 'pm_card_mastercard' }));
    expect(result.outcome).toBe('succeeded');
  });

  it.each([
    ['4000000000000002', 'card_declined'],
    ['4000000000009995', 'insufficient_funds'],
    ['4000000000000069', 'expired_card'],
  ])('should decline card %s with %s', async (number, code) => {
    const result = await h.gateway().charge(chargeRequest({ kind: 'card', card: card(number) }));
    expect(result).toMatchObject({ outcome: 'declined', declineCode: code });
    expect(result.message).toEqual(expect.any(String));
    expectRedacted(result, number);
  });

  it.each([
    ['pm_card_declined', 'card_declined'],
    ['pm_card_insufficient_funds', 'insufficient_funds'],
  ])('should decline test token %s with %s', async (token, code) => {
    const result = await h.gateway().charge(chargeRequest({ kind: 'token', token }));
    expect(result).toMatchObject({ outcome: 'declined', declineCode: code });
  });

  it('should decline a card whose expiry date has passed with expired_card', async () => {
    const result = await h.gateway().charge(chargeRequest({ kind: 'card', card: card('4242424242424242', { expMonth: 1, expYear: 2001 }) }));
    expect(result).toMatchObject({ outcome: 'declined', declineCode: 'expired_card' });
  });

  it('should report a gateway error as retryable for the 0119 card and the gateway-error token', async () => {
    const gateway = h.gateway();
    const byCard = await gateway.charge(chargeRequest({ kind: 'card', card: card('4000000000000119') }));
    const byToken = await gateway.charge(chargeRequest({ kind: 'token', token: 'pm_card_gateway_error' }));
    for (const result of [byCard, byToken]) {
      expect(result.outcome).toBe('retryable_error');
      expect(result.reference).toBeNull();
      expect(result.declineCode).toEqual(expect.any(String));
    }
  });

  it('should return the first result and not charge again when the idempotency key repeats', async () => {
    const request = chargeRequest({ kind: 'card', card: card('4242424242424242') });
    const first = await h.gateway().charge(request);
    const second = await h.gateway().charge(request);
    expect(second.outcome).toBe('succeeded');
    expect(second.reference).toBe(first.reference);
    expect(second.response.idempotentReplayed).toBe(true);
    expect(h.chargeCount(request.idempotencyKey)).toBe(1);
  });

  it('should replay a decline for a repeated key without charging again', async () => {
    const request = chargeRequest({ kind: 'card', card: card('4000000000000002') });
    const first = await h.gateway().charge(request);
    const second = await h.gateway().charge(request);
    expect(second).toMatchObject({ outcome: 'declined', declineCode: 'card_declined', reference: first.reference });
    expect(h.chargeCount(request.idempotencyKey)).toBe(1);
  });

  it('should charge different keys separately', async () => {
    const a = await h.gateway().charge(chargeRequest({ kind: 'token', token: 'pm_card_visa' }));
    const b = await h.gateway().charge(chargeRequest({ kind: 'token', token: 'pm_card_visa' }));
    expect(a.reference).not.toBe(b.reference);
  });

  it('should refund a succeeded charge and replay the refund for a repeated key', async () => {
    const gateway = h.gateway();
    const charge = await gateway.charge(chargeRequest({ kind: 'token', token: 'pm_card_visa' }, 5000));
    const refund = { idempotencyKey: 're_contract1', refundId: 're_contract1', chargeReference: charge.reference!, amount: 2000, currency: 'EUR', reason: 'customer asked' };
    const first = await gateway.refund(refund);
    expect(first).toMatchObject({ outcome: 'succeeded', declineCode: null });
    expect(first.reference).toEqual(expect.any(String));
    const again = await gateway.refund(refund);
    expect(again.reference).toBe(first.reference);
  });

  it('should decline a refund of an unknown charge reference', async () => {
    const result = await h.gateway().refund({ idempotencyKey: 're_contract2', refundId: 're_contract2', chargeReference: 'nope_123', amount: 100, currency: 'EUR' });
    expect(result.outcome).toBe('declined');
  });

  it('should find a charge by its idempotency key and say not_found for an unknown key', async () => {
    const gateway = h.gateway();
    const request = chargeRequest({ kind: 'token', token: 'pm_card_visa' });
    const charge = await gateway.charge(request);
    const found = await gateway.status({ idempotencyKey: request.idempotencyKey, kind: 'charge', objectId: request.paymentId });
    expect(found).toMatchObject({ found: true, outcome: 'succeeded', reference: charge.reference });
    const missing = await gateway.status({ idempotencyKey: 'pay_never_0', kind: 'charge', objectId: 'pay_never' });
    expect(missing).toMatchObject({ found: false, outcome: 'declined', declineCode: 'not_found' });
  });

  it('should find a declined charge by its key with its decline', async () => {
    const gateway = h.gateway();
    const request = chargeRequest({ kind: 'token', token: 'pm_card_insufficient_funds' });
    await gateway.charge(request);
    const status = await gateway.status({ idempotencyKey: request.idempotencyKey, kind: 'charge', objectId: request.paymentId });
    expect(status).toMatchObject({ found: true, outcome: 'declined', declineCode: 'insufficient_funds' });
  });

  it('should find a refund by its key given the charge reference', async () => {
    const gateway = h.gateway();
    const charge = await gateway.charge(chargeRequest({ kind: 'token', token: 'pm_card_visa' }));
    const refund = await gateway.refund({ idempotencyKey: 're_contract3', refundId: 're_contract3', chargeReference: charge.reference!, amount: 100, currency: 'EUR' });
    const status = await gateway.status({ idempotencyKey: 're_contract3', kind: 'refund', objectId: 're_contract3', chargeReference: charge.reference });
    expect(status).toMatchObject({ found: true, outcome: 'succeeded', reference: refund.reference });
  });

  it('should save a card as a token that charges successfully, without the number in it', async () => {
    const gateway = h.gateway();
    const saved = await gateway.saveCard({ idempotencyKey: 'pm_contract1_save', card: card('5555555555554444') });
    expect(saved.outcome).toBe('succeeded');
    expect(saved.token).toEqual(expect.any(String));
    expect(saved.token).not.toContain('5555555555554444');
    expectRedacted(saved, '5555555555554444');
    const charged = await gateway.charge(chargeRequest({ kind: 'token', token: saved.token! }));
    expect(charged.outcome).toBe('succeeded');
    const twice = await gateway.charge(chargeRequest({ kind: 'token', token: saved.token! }));
    expect(twice.outcome).toBe('succeeded');
  });

  it('should save the 0341 card but decline every charge of its token', async () => {
    const gateway = h.gateway();
    const saved = await gateway.saveCard({ idempotencyKey: 'pm_contract2_save', card: card('4000000000000341') });
    expect(saved.outcome).toBe('succeeded');
    const charged = await gateway.charge(chargeRequest({ kind: 'token', token: saved.token! }));
    expect(charged).toMatchObject({ outcome: 'declined', declineCode: 'card_declined' });
  });

  it('should return the same token when saveCard repeats its key', async () => {
    const gateway = h.gateway();
    const first = await gateway.saveCard({ idempotencyKey: 'pm_contract3_save', card: card('4242424242424242') });
    const second = await gateway.saveCard({ idempotencyKey: 'pm_contract3_save', card: card('4242424242424242') });
    expect(second.token).toBe(first.token);
  });
});
