import { FixedClock } from '../../../src/core/clock';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { randomBase62 } from '../../../src/core/ids';
import type { CardData, ChargeRequest, GatewayResult } from '../../../src/connectors/connector';
import { SimulatorGateway, type SimulatorSettings } from '../../../src/connectors/simulator/simulator.gateway';
import { SIMULATOR_MEMORY, resetSimulatorState, simulatorChargeCount, simulatorState } from '../../../src/connectors/simulator/simulator.state';
import { decodeSavedToken } from '../../../src/connectors/simulator/simulator.transformers';

const GW = 'gw_sim_unit';
const clock = new FixedClock(new Date('2030-06-15T12:00:00Z'));

function sim(settings: SimulatorSettings = {}, extra: { gatewayId?: string; timeoutMs?: number } = {}): SimulatorGateway {
  return new SimulatorGateway({ gatewayId: extra.gatewayId ?? GW, settings, clock, timeoutMs: extra.timeoutMs });
}

const card = (number: string, extra: Partial<CardData> = {}): CardData => ({ number, expMonth: 12, expYear: 2031, cvc: '123', ...extra });

let seq = 0;
function charge(source: ChargeRequest['source'], overrides: Partial<ChargeRequest> = {}): ChargeRequest {
  seq++;
  return { idempotencyKey: `key_${seq}`, paymentId: `pay_${seq}`, amount: 1000, currency: 'USD', source, ...overrides };
}

beforeEach(() => resetSimulatorState());

/** V8's collector, for measuring what stays on the heap (the test runs without --expose-gc). */
function exposedGc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

describe('simulator outcomes', () => {
  it.each([
    ['4242424242424242', 'succeeded', null],
    ['5555555555554444', 'succeeded', null],
    ['4000000000000002', 'declined', 'card_declined'],
    ['4000000000009995', 'declined', 'insufficient_funds'],
    ['4000000000000069', 'declined', 'expired_card'],
    ['4000000000000119', 'retryable_error', 'gateway_error'],
    ['4000000000000341', 'declined', 'card_declined'],
    ['4000056655665556', 'succeeded', null],
    ['378282246310005', 'succeeded', null],
  ])('should answer a charge of card %s with %s (%s)', async (number, outcome, code) => {
    const result = await sim().charge(charge({ kind: 'card', card: card(number) }));
    expect(result).toMatchObject({ outcome, declineCode: code });
  });

  it.each([
    ['pm_card_visa', 'succeeded', null],
    ['pm_card_mastercard', 'succeeded', null],
    ['pm_card_declined', 'declined', 'card_declined'],
    ['pm_card_insufficient_funds', 'declined', 'insufficient_funds'],
    ['pm_card_gateway_error', 'retryable_error', 'gateway_error'],
    ['pm_card_unheard_of', 'declined', 'invalid_token'],
    ['simtok_success_tooShort!', 'declined', 'invalid_token'],
  ])('should answer a charge of token %s with %s (%s)', async (token, outcome, code) => {
    expect(await sim().charge(charge({ kind: 'token', token }))).toMatchObject({ outcome, declineCode: code });
  });

  it('should decline a Luhn-invalid number as incorrect_number', async () => {
    expect(await sim().charge(charge({ kind: 'card', card: card('4242424242424241') }))).toMatchObject({ outcome: 'declined', declineCode: 'incorrect_number' });
  });

  it('should decline expiry dates before the injected now as expired_card and accept the current month', async () => {
    const lastMonth = await sim().charge(charge({ kind: 'card', card: card('4242424242424242', { expMonth: 5, expYear: 2030 }) }));
    const thisMonth = await sim().charge(charge({ kind: 'card', card: card('4242424242424242', { expMonth: 6, expYear: 2030 }) }));
    const twoDigit = await sim().charge(charge({ kind: 'card', card: card('4242424242424242', { expMonth: 6, expYear: 29 }) }));
    expect(lastMonth).toMatchObject({ outcome: 'declined', declineCode: 'expired_card' });
    expect(thisMonth.outcome).toBe('succeeded');
    expect(twoDigit).toMatchObject({ outcome: 'declined', declineCode: 'expired_card' });
  });

  it('should follow the injected clock as it moves', async () => {
    const moving = new FixedClock(new Date('2031-12-31T23:59:59Z'));
    const gateway = new SimulatorGateway({ gatewayId: GW, clock: moving });
    expect((await gateway.charge(charge({ kind: 'card', card: card('4242424242424242') }))).outcome).toBe('succeeded');
    moving.advance(2000);
    expect((await gateway.charge(charge({ kind: 'card', card: card('4242424242424242') }))).declineCode).toBe('expired_card');
  });

  it('should decline a malformed CVC and an impossible expiry month', async () => {
    expect((await sim().charge(charge({ kind: 'card', card: card('4242424242424242', { cvc: '12a' }) }))).declineCode).toBe('incorrect_cvc');
    expect((await sim().charge(charge({ kind: 'card', card: card('4242424242424242', { expMonth: 13 }) }))).declineCode).toBe('invalid_expiry');
  });

  it('should never put the card number or CVC in the request or response summaries', async () => {
    const result = await sim().charge(charge({ kind: 'card', card: card('4242424242424242', { cvc: '987' }) }));
    const text = JSON.stringify([result.request, result.response]);
    expect(text).not.toContain('4242424242424242');
    expect(text).not.toContain('987');
    expect(result.request.source).toEqual({ kind: 'card', brand: 'visa', last4: '4242', expMonth: 12, expYear: 2031 });
    expect(result.response.card).toEqual({ brand: 'visa', last4: '4242' });
  });
});

describe('simulator idempotency', () => {
  it('should replay the first result for a repeated key and count one charge', async () => {
    const request = charge({ kind: 'token', token: 'pm_card_visa' });
    const first = await sim().charge(request);
    const second = await sim().charge(request);
    expect(second.reference).toBe(first.reference);
    expect(second.response.idempotentReplayed).toBe(true);
    expect(simulatorChargeCount(GW, request.idempotencyKey)).toBe(1);
  });

  it('should share the store between gateway objects of the same gatewayId (a second app instance)', async () => {
    const request = charge({ kind: 'token', token: 'pm_card_visa' });
    const first = await sim().charge(request);
    const again = await new SimulatorGateway({ gatewayId: GW }).charge(request);
    expect(again.reference).toBe(first.reference);
    expect(simulatorChargeCount(GW, request.idempotencyKey)).toBe(1);
  });

  it('should keep keys of different gateways apart', async () => {
    const request = charge({ kind: 'token', token: 'pm_card_visa' });
    const a = await sim().charge(request);
    const b = await sim({}, { gatewayId: 'gw_other' }).charge(request);
    expect(b.reference).not.toBe(a.reference);
    expect(simulatorChargeCount(GW, request.idempotencyKey)).toBe(1);
    expect(simulatorChargeCount('gw_other', request.idempotencyKey)).toBe(1);
  });

  it('should charge once when two calls with the same key run concurrently', async () => {
    const request = charge({ kind: 'token', token: 'pm_card_visa' });
    const [a, b] = await Promise.all([sim({ latencyMs: 20 }).charge(request), sim({ latencyMs: 20 }).charge(request)]);
    expect(a.reference).toBe(b.reference);
    expect(simulatorChargeCount(GW, request.idempotencyKey)).toBe(1);
  });

  it('should run a retryable failure again on repeat, since nothing happened', async () => {
    const request = charge({ kind: 'card', card: card('4000000000000119') });
    await sim().charge(request);
    const again = await sim().charge(request);
    expect(again.outcome).toBe('retryable_error');
    expect(again.response.idempotentReplayed).toBeUndefined();
    expect(simulatorChargeCount(GW, request.idempotencyKey)).toBe(2);
  });

  it('should refuse a key already used for another operation', async () => {
    const request = charge({ kind: 'token', token: 'pm_card_visa' });
    const first = await sim().charge(request);
    const refund = await sim().refund({ idempotencyKey: request.idempotencyKey, refundId: 're_1', chargeReference: first.reference!, amount: 100, currency: 'USD' });
    expect(refund).toMatchObject({ outcome: 'declined', declineCode: 'processing_error' });
  });

  it('should forget everything on resetSimulatorState', async () => {
    const request = charge({ kind: 'token', token: 'pm_card_visa' });
    await sim().charge(request);
    resetSimulatorState();
    expect(simulatorChargeCount(GW, request.idempotencyKey)).toBe(0);
    expect((await sim().status({ idempotencyKey: request.idempotencyKey, kind: 'charge', objectId: request.paymentId })).found).toBe(false);
  });
});

describe('simulator memory', () => {
  const saved = { ...SIMULATOR_MEMORY };
  afterEach(() => {
    Object.assign(SIMULATOR_MEMORY, saved);
    clock.set(new Date('2030-06-15T12:00:00Z'));
  });
  const lookUp = (request: ChargeRequest) => sim().status({ idempotencyKey: request.idempotencyKey, kind: 'charge', objectId: request.paymentId });
  const known = async (request: ChargeRequest) => (await lookUp(request)).found;
  /** What an answer says, whenever it is given (not how long it took, nor what was asked). */
  const said = ({ latencyMs: _l, request: _r, response, found: _found, ...rest }: GatewayResult & { found?: boolean }): object => {
    const { found: _f, idempotentReplayed: _i, ...body } = response;
    return { ...rest, response: body };
  };

  it('should keep at most its limit of operations and charges, forgetting the oldest first', async () => {
    SIMULATOR_MEMORY.limit = 3;
    const requests = Array.from({ length: 5 }, () => charge({ kind: 'token', token: 'pm_card_visa' }));
    const results = [];
    for (const request of requests) results.push(await sim().charge(request));
    const state = simulatorState();
    expect([state.operations.size, state.charges.size]).toEqual([3, 3]);
    expect([await known(requests[0]), await known(requests[1]), await known(requests[2]), await known(requests[4])]).toEqual([false, false, true, true]);
    expect(simulatorChargeCount(GW, requests[0].idempotencyKey)).toBe(0);
    // A forgotten charge can still be refunded (its reference is trusted, as after a restart).
    const refund = await sim().refund({ idempotencyKey: 'refund_old', refundId: 're_old', chargeReference: results[0].reference!, amount: 100, currency: 'USD' });
    expect(refund.outcome).toBe('succeeded');
  });

  it('should stay within its limit at a high rate whatever the age, in a few hundred bytes an operation', async () => {
    SIMULATOR_MEMORY.limit = 10_000;
    const gc = exposedGc();
    const heapNow = () => {
      gc();
      gc();
      return process.memoryUsage().heapUsed;
    };
    // 30,000 charges in the same instant of the clock: an hour's worth or a second's, all alike.
    const sources: ChargeRequest['source'][] = [{ kind: 'token', token: 'pm_card_visa' }, { kind: 'card', card: card('4000000000000002') }];
    // Measured against the heap before as well as after: in a long test run, garbage of earlier
    // test files collected in between would otherwise count as the simulator's.
    resetSimulatorState();
    const before = heapNow();
    for (let i = 0; i < 30_000; i++) {
      const id = `pay_${randomBase62(24)}`;
      await sim().charge({ idempotencyKey: `${id}_a1`, paymentId: id, amount: 1999, currency: 'USD', source: sources[i % 2], description: 'bench', metadata: { order: String(i) } });
    }
    const state = simulatorState();
    expect([state.operations.size, state.charges.size]).toEqual([10_000, 10_000]);
    const held = heapNow();
    resetSimulatorState();
    const bytesEach = Math.min(held - before, held - heapNow()) / 10_000;
    // The stored result (a Promise, the result, its request summary and response) took 1.4 KB.
    expect(bytesEach).toBeLessThan(600);
  });

  it('should answer a remembered operation as it first did, and a forgotten one as not found, no longer definitively', async () => {
    SIMULATOR_MEMORY.limit = 50;
    const requests = Array.from({ length: 200 }, (_, i) =>
      charge(i % 3 === 0 ? { kind: 'card', card: card(i % 2 ? '4000000000009995' : '4242424242424242') } : { kind: 'token', token: i % 2 ? 'pm_card_declined' : 'pm_card_visa' }),
    );
    const first = [];
    for (const request of requests) first.push(await sim().charge(request));
    // Nothing forgotten yet would make "not found" definitive; now recovery must wait (15 min).
    expect(await lookUp(requests[0])).toMatchObject({ found: false, outcome: 'declined', declineCode: 'not_found', definitive: false });
    expect(await lookUp(requests[149])).toMatchObject({ found: false, definitive: false });
    for (const i of [150, 151, 198, 199]) {
      const status = await lookUp(requests[i]);
      expect(status.found).toBe(true);
      expect(said(status)).toEqual(said(first[i]));
      const replay = await sim().charge(requests[i]);
      expect(replay.response.idempotentReplayed).toBe(true);
      expect(said(replay)).toEqual(said(first[i]));
      expect(simulatorChargeCount(GW, requests[i].idempotencyKey)).toBe(1);
    }
    // A remembered charge's refunds are still held to what is left of it.
    const visa = first[198];
    expect(visa.outcome).toBe('succeeded');
    const refund = { refundId: 're_r', chargeReference: visa.reference!, amount: 1000, currency: 'USD' };
    expect((await sim().refund({ ...refund, idempotencyKey: 'r_all' })).outcome).toBe('succeeded');
    expect(await sim().refund({ ...refund, idempotencyKey: 'r_more', amount: 1 })).toMatchObject({ outcome: 'declined', declineCode: 'refund_exceeds_charge' });
  });

  it('should never forget an operation still in flight, so a concurrent repeat charges once', async () => {
    SIMULATOR_MEMORY.limit = 2;
    const slow = charge({ kind: 'token', token: 'pm_card_visa' });
    const firstCall = sim({ latencyMs: 50 }).charge(slow);
    for (let i = 0; i < 5; i++) await sim().charge(charge({ kind: 'token', token: 'pm_card_visa' }));
    const repeat = await sim({ latencyMs: 50 }).charge(slow);
    expect(repeat.reference).toBe((await firstCall).reference);
    expect(simulatorChargeCount(GW, slow.idempotencyKey)).toBe(1);
    expect(simulatorState().operations.size).toBe(2);
  });
});

describe('simulator status', () => {
  it('should return the stored result with found=true', async () => {
    const request = charge({ kind: 'token', token: 'pm_card_declined' });
    const first = await sim().charge(request);
    const status = await sim().status({ idempotencyKey: request.idempotencyKey, kind: 'charge', objectId: request.paymentId });
    expect(status).toMatchObject({ found: true, outcome: 'declined', declineCode: 'card_declined', reference: first.reference });
  });

  it('should say not_found for an unknown key, a key of the other kind and a retryable attempt', async () => {
    const failed = charge({ kind: 'token', token: 'pm_card_gateway_error' });
    await sim().charge(failed);
    const ok = charge({ kind: 'token', token: 'pm_card_visa' });
    await sim().charge(ok);
    for (const r of [
      { idempotencyKey: 'nope', kind: 'charge' as const, objectId: 'pay_x' },
      { idempotencyKey: ok.idempotencyKey, kind: 'refund' as const, objectId: 're_x' },
      { idempotencyKey: failed.idempotencyKey, kind: 'charge' as const, objectId: failed.paymentId },
    ]) {
      expect(await sim().status(r)).toMatchObject({ found: false, outcome: 'declined', declineCode: 'not_found' });
    }
  });
});

describe('simulator refunds', () => {
  async function succeededCharge(amount = 1000): Promise<string> {
    return (await sim().charge(charge({ kind: 'token', token: 'pm_card_visa' }, { amount }))).reference!;
  }

  it('should refund a known charge up to its amount, then refuse more', async () => {
    const ref = await succeededCharge(1000);
    const first = await sim().refund({ idempotencyKey: 'r1', refundId: 're_1', chargeReference: ref, amount: 600, currency: 'USD' });
    const second = await sim().refund({ idempotencyKey: 'r2', refundId: 're_2', chargeReference: ref, amount: 400, currency: 'USD' });
    const third = await sim().refund({ idempotencyKey: 'r3', refundId: 're_3', chargeReference: ref, amount: 1, currency: 'USD' });
    expect(first.outcome).toBe('succeeded');
    expect(first.reference).toMatch(/^simre_/);
    expect(second.outcome).toBe('succeeded');
    expect(third).toMatchObject({ outcome: 'declined', declineCode: 'refund_exceeds_charge' });
  });

  it('should not count a replayed refund twice against the charge', async () => {
    const ref = await succeededCharge(1000);
    const request = { idempotencyKey: 'r1', refundId: 're_1', chargeReference: ref, amount: 1000, currency: 'USD' };
    await sim().refund(request);
    expect((await sim().refund(request)).outcome).toBe('succeeded');
  });

  it('should refuse refunds of declined charges, other gateways charges and unknown references', async () => {
    const declined = (await sim().charge(charge({ kind: 'token', token: 'pm_card_declined' }))).reference!;
    const ok = await succeededCharge();
    expect((await sim().refund({ idempotencyKey: 'a', refundId: 're_a', chargeReference: declined, amount: 1, currency: 'USD' })).declineCode).toBe('charge_not_refundable');
    expect((await sim({}, { gatewayId: 'gw_other' }).refund({ idempotencyKey: 'b', refundId: 're_b', chargeReference: ok, amount: 1, currency: 'USD' })).declineCode).toBe('charge_not_found');
    expect((await sim().refund({ idempotencyKey: 'c', refundId: 're_c', chargeReference: 'ch_nope', amount: 1, currency: 'USD' })).declineCode).toBe('charge_not_found');
  });

  it('should accept a well-formed simulator reference from an earlier process', async () => {
    const result = await sim().refund({ idempotencyKey: 'd', refundId: 're_d', chargeReference: 'simch_ABCDEFGHIJKLMNOPQRSTUVWX', amount: 10, currency: 'USD' });
    expect(result.outcome).toBe('succeeded');
  });
});

describe('simulator saveCard', () => {
  it('should encode the behaviour, never the PAN, in the token', async () => {
    const ok = await sim().saveCard({ idempotencyKey: 's1', card: card('4242424242424242') });
    const later = await sim().saveCard({ idempotencyKey: 's2', card: card('4000000000000341') });
    expect(ok.token).toMatch(/^simtok_success_[0-9A-Za-z]{20}$/);
    expect(decodeSavedToken(later.token!)).toBe('charge_declined');
    expect(JSON.stringify(ok)).not.toContain('4242424242424242');
  });

  it('should let a token minted by one process charge in another (behaviour rides in the token)', async () => {
    const saved = await sim().saveCard({ idempotencyKey: 's1', card: card('4000000000009995') });
    resetSimulatorState();
    expect(await sim().charge(charge({ kind: 'token', token: saved.token! }))).toMatchObject({ outcome: 'declined', declineCode: 'insufficient_funds' });
  });

  it.each([
    ['4000000000000002', 'card_declined'],
    ['4000000000000069', 'expired_card'],
    ['4242424242424241', 'incorrect_number'],
  ])('should refuse to save card %s (%s)', async (number, code) => {
    const result = await sim().saveCard({ idempotencyKey: `s_${number}`, card: card(number) });
    expect(result).toMatchObject({ outcome: 'declined', declineCode: code, token: null });
  });

  it('should report the 0119 card as retryable when saving', async () => {
    expect(await sim().saveCard({ idempotencyKey: 's_err', card: card('4000000000000119') })).toMatchObject({ outcome: 'retryable_error', token: null });
  });
});

describe('simulator settings', () => {
  it('should make every call retryable gateway_unavailable during an outage, without charging', async () => {
    const gateway = sim({ outage: true });
    const request = charge({ kind: 'token', token: 'pm_card_visa' });
    expect(await gateway.charge(request)).toMatchObject({ outcome: 'retryable_error', declineCode: 'gateway_unavailable', reference: null });
    expect(await gateway.refund({ idempotencyKey: 'r', refundId: 're_1', chargeReference: 'simch_ABCDEFGHIJKLMNOPQRSTUVWX', amount: 1, currency: 'USD' })).toMatchObject({ outcome: 'retryable_error', declineCode: 'gateway_unavailable' });
    expect(await gateway.saveCard({ idempotencyKey: 's', card: card('4242424242424242') })).toMatchObject({ outcome: 'retryable_error', token: null });
    expect(await gateway.status({ idempotencyKey: request.idempotencyKey, kind: 'charge', objectId: request.paymentId })).toMatchObject({ outcome: 'retryable_error', found: false });
    expect(simulatorChargeCount(GW, request.idempotencyKey)).toBe(0);
    expect((await sim().charge(request)).outcome).toBe('succeeded');
  });

  it('should wait latencyMs before answering', async () => {
    const started = performance.now();
    const result = await sim({ latencyMs: 60 }).charge(charge({ kind: 'token', token: 'pm_card_visa' }));
    expect(performance.now() - started).toBeGreaterThanOrEqual(55);
    expect(result.latencyMs).toBeGreaterThanOrEqual(55);
  });

  it('should time out when latency exceeds timeoutMs, yet complete the charge for status to find', async () => {
    const request = charge({ kind: 'token', token: 'pm_card_visa' });
    const result = await sim({ latencyMs: 80 }, { timeoutMs: 20 }).charge(request);
    expect(result).toMatchObject({ outcome: 'timeout', declineCode: 'timeout', reference: null });
    const status = await sim().status({ idempotencyKey: request.idempotencyKey, kind: 'charge', objectId: request.paymentId });
    expect(status).toMatchObject({ found: true, outcome: 'succeeded' });
    expect(status.reference).toMatch(/^simch_/);
  });

  it('should fail about failureRate of charges, reproducibly for a seed', async () => {
    async function failures(seed: number): Promise<boolean[]> {
      resetSimulatorState();
      const gateway = sim({ failureRate: 0.3, seed });
      const out: boolean[] = [];
      for (let i = 0; i < 1000; i++) out.push((await gateway.charge(charge({ kind: 'token', token: 'pm_card_visa' }))).outcome === 'retryable_error');
      return out;
    }
    const a = await failures(42);
    const b = await failures(42);
    const c = await failures(7);
    const share = a.filter(Boolean).length / a.length;
    expect(share).toBeGreaterThan(0.26);
    expect(share).toBeLessThan(0.34);
    expect(b).toEqual(a);
    expect(c).not.toEqual(a);
  });

  it('should continue the failure sequence across gateway objects for the same gateway', async () => {
    let failed = 0;
    for (let i = 0; i < 400; i++) {
      // A fresh connector per call, as a service building it per request would do.
      const result = await sim({ failureRate: 0.5, seed: 1 }).charge(charge({ kind: 'token', token: 'pm_card_visa' }));
      if (result.outcome === 'retryable_error') failed++;
    }
    expect(failed).toBeGreaterThan(160);
    expect(failed).toBeLessThan(240);
  });

  it('should never fail with failureRate 0 and always fail with failureRate 1', async () => {
    const never = await sim({ failureRate: 0 }).charge(charge({ kind: 'token', token: 'pm_card_visa' }));
    const always = await sim({ failureRate: 1 }).charge(charge({ kind: 'token', token: 'pm_card_visa' }));
    expect(never.outcome).toBe('succeeded');
    expect(always).toMatchObject({ outcome: 'retryable_error', declineCode: 'gateway_error' });
  });
});
