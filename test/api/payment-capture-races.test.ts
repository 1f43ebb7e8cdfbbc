import { FixedClock } from '../../src/core/clock';
import { simulatorState } from '../../src/connectors/simulator/simulator.state';
import { PaymentActions } from '../../src/modules/payments/payment-actions';
import { GatewayTransactionStore } from '../../src/modules/payments/gateway-transaction.store';
import { startTestApp, type TestApp } from '../helpers/app';
import { seeded } from '../helpers/seeded';

/**
 * Authorisations under races and in random sequences, checked against the gateway: what the
 * payment says was captured, released, voided and refunded is what the simulator did.
 *
 * "Another instance" is a second PaymentActions on the same database: it keeps nothing in
 * memory, so two of them differ from two processes only in sharing the simulator, which a
 * spawned process cannot (the built-in simulator's memory is its process's).
 */
const clock = new FixedClock(new Date('2026-07-01T10:00:00Z'));
let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp({ clock });
  key = app.account.testKey;
});
afterAll(() => app.stop());

const authorize = async (amount: number) => {
  const res = await app.request('POST', '/v1/payments', { key, body: { amount, currency: 'eur', paymentMethod: 'pm_card_visa', captureMethod: 'manual' } });
  expect(res.body.data.status).toBe('requires_capture');
  return res.body.data as { id: string; amount: number };
};
const get = async (id: string) => (await app.request('GET', `/v1/payments/${id}`, { key })).body.data;
const reference = async (id: string) => (await app.server.services.db.select('SELECT gateway_reference FROM payments WHERE id = $1', [id]))[0].gateway_reference as string;
/** What the simulator holds of the charge: captured amount, voided, refunded. */
const atGateway = async (id: string) => {
  const charge = simulatorState().charges.get(await reference(id));
  return { captured: charge?.life?.captured ?? 0, voided: charge?.life?.voided ?? false, refunded: charge?.refunded ?? 0 };
};
const other = () => {
  const s = app.server.services;
  return new PaymentActions(s.db, s.events, s.gateways, new GatewayTransactionStore(s.db), s.idempotency, s.clock, s.logger);
};
const rc = () => ({ accountId: app.account.accountId, mode: 'test' as const, permissions: ['*'], requestId: 'req_race', clock });

/** The payment agrees with the gateway, and its amounts add up. */
async function agrees(id: string, authorized: number) {
  const p = await get(id);
  const g = await atGateway(id);
  expect(p.amountCaptured).toBe(g.captured);
  expect(p.amountRefunded).toBe(g.refunded);
  expect(p.amountRefunded).toBeLessThanOrEqual(p.amountCaptured);
  if (p.status === 'succeeded') expect(g.voided).toBe(false);
  if (p.status === 'canceled') expect([g.voided, g.captured]).toEqual([true, 0]);
  if (p.status === 'requires_capture') expect([p.amountCapturable, g.captured, g.voided]).toEqual([authorized, 0, false]);
  else expect(p.amountCapturable).toBe(0);
  return p;
}

describe('authorisations under races', () => {
  it('should settle a capture on one instance racing a cancel on another to one outcome, the gateway agreeing', async () => {
    const second = other();
    for (let round = 0; round < 6; round++) {
      const p = await authorize(800);
      const results = await Promise.allSettled([
        round % 2 ? second.capture(rc(), p.id, { amount: 500 }) : app.server.services.paymentActions.capture(rc(), p.id, { amount: 500 }),
        round % 2 ? app.server.services.paymentActions.cancel(rc(), p.id, {}) : second.cancel(rc(), p.id, {}),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      for (const r of results) if (r.status === 'rejected') expect(['payment_in_progress', 'invalid_state']).toContain((r.reason as { code: string }).code);
      const final = await agrees(p.id, 800);
      expect(['succeeded', 'canceled']).toContain(final.status);
    }
  });

  it('should let the expiry job and a late capture race without both taking effect', async () => {
    for (let round = 0; round < 4; round++) {
      const p = await authorize(600);
      clock.advance(7 * 86_400_000 + 1000);
      const [captured] = await Promise.all([
        app.request('POST', `/v1/payments/${p.id}/capture`, { key, body: {} }),
        app.server.services.paymentActions.expireDue(clock.now()),
      ]);
      const final = await agrees(p.id, 600);
      if (captured.status === 200) expect(final.status).toBe('succeeded');
      else {
        expect(['payment_in_progress', 'invalid_state']).toContain(captured.body.error.code);
        // The capture lost to the job's claim: the job voids it (now, or on its next run).
        await app.server.services.paymentActions.expireDue(clock.now());
        expect((await agrees(p.id, 600)).status).toBe('canceled');
      }
    }
  });
});

describe('authorisations in random sequences (seeded)', () => {
  it('should keep captured, released, voided and refunded equal to what the gateway did, whatever the order', async () => {
    for (const seed of [11, 12, 13, 14, 15]) {
      const rng = seeded(seed);
      const pick = (n: number) => Math.floor(rng() * n);
      const amount = 100 + pick(5000);
      const p = await authorize(amount);
      let refundedOk = 0;
      for (let step = 0; step < 6; step++) {
        const op = pick(5);
        if (op === 0) {
          const ask = 1 + pick(amount + 200); // sometimes above the authorisation
          const res = await app.request('POST', `/v1/payments/${p.id}/capture`, { key, body: { amount: ask } });
          if (ask > amount && res.status !== 200) expect(['capture_exceeds_authorized', 'invalid_state']).toContain(res.body.error.code);
        } else if (op === 1) {
          await app.request('POST', `/v1/payments/${p.id}/cancel`, { key });
        } else if (op === 2) {
          const res = await app.request('POST', '/v1/refunds', { key, body: { paymentId: p.id, amount: 1 + pick(amount) } });
          if (res.status === 201) refundedOk += res.body.data.amount;
        } else if (op === 3) {
          clock.advance(pick(2) ? 8 * 86_400_000 : 3_600_000);
          await app.server.services.paymentActions.expireDue(clock.now());
        } else {
          await app.request('POST', `/v1/payments/${p.id}/capture`, { key, body: {} });
        }
      }
      const final = await agrees(p.id, amount);
      expect(final.amountRefunded).toBe(refundedOk);
      // Captured at most once, never more than authorised; a voided one took nothing.
      if (final.status === 'succeeded') expect(final.amountCaptured).toBeGreaterThan(0);
      expect(final.amountCaptured).toBeLessThanOrEqual(amount);
      if (final.status === 'canceled') expect(final.amountCaptured).toBe(0);
      expect(['requires_capture', 'succeeded', 'canceled']).toContain(final.status);
    }
  });
});
