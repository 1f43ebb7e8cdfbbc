import { FixedClock } from '../../src/core/clock';
import { operationKey, resetSimulatorState, simulatorState } from '../../src/connectors/simulator/simulator.state';
import { startTestApp, type TestApp } from '../helpers/app';

/**
 * Authorise now, capture later, void, the expiry of authorisations, and what a refund may take
 * (API.md §9), over REST on the built-in simulator. Money check: what is captured, refunded and
 * released adds up to what was authorised.
 */
const clock = new FixedClock(new Date('2026-06-01T10:00:00Z'));
let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp({ clock });
  key = app.account.testKey;
});
afterAll(() => app.stop());

const authorize = async (amount = 1000, extra: Record<string, unknown> = {}) => {
  const res = await app.request('POST', '/v1/payments', { key, body: { amount, currency: 'eur', paymentMethod: 'pm_card_visa', captureMethod: 'manual', ...extra } });
  expect(res.status).toBe(201);
  // The next move's event is a second later: the events list orders by time.
  clock.advance(1000);
  return res.body.data;
};
const get = async (id: string) => (await app.request('GET', `/v1/payments/${id}`, { key })).body.data;
const eventsOf = async (id: string) => {
  const res = await app.request('GET', '/v1/events?pageSize=100', { key });
  return (res.body.data as Array<{ type: string; data: { object: { id: string } } }>).filter((e) => e.data.object.id === id).map((e) => e.type).reverse();
};
const captures = (paymentId: string) => simulatorState().operations.get(operationKey('gw_builtin_simulator', `${paymentId}_capture`))?.runs ?? 0;

describe('manual capture', () => {
  it('should authorise only, then capture all of it: requires_capture → succeeded with its events', async () => {
    const p = await authorize(1000);
    expect(p).toMatchObject({ status: 'requires_capture', captureMethod: 'manual', amountCapturable: 1000, amountCaptured: 0, nextAction: null });
    const captured = await app.request('POST', `/v1/payments/${p.id}/capture`, { key, body: {} });
    expect(captured.status).toBe(200);
    expect(captured.body.data).toMatchObject({ status: 'succeeded', amountCaptured: 1000, amountCapturable: 0 });
    expect(await eventsOf(p.id)).toEqual(['payment.authorized', 'payment.succeeded']);
    const calls = await app.request('GET', `/v1/payments/${p.id}/gateway-transactions`, { key });
    expect((calls.body.data as Array<{ kind: string }>).map((c) => c.kind).sort()).toEqual(['capture', 'charge']);
  });

  it('should capture part of it, release the rest and refund only what was captured', async () => {
    const p = await authorize(1000);
    const captured = await app.request('POST', `/v1/payments/${p.id}/capture`, { key, body: { amount: 600 } });
    expect(captured.body.data).toMatchObject({ status: 'succeeded', amountCaptured: 600, amountCapturable: 0 });
    const tooMuch = await app.request('POST', '/v1/refunds', { key, body: { paymentId: p.id, amount: 601 } });
    expect(tooMuch.status).toBe(422);
    expect(tooMuch.body.error).toMatchObject({ code: 'refund_exceeds_remaining', param: 'amount' });
    const rest = await app.request('POST', '/v1/refunds', { key, body: { paymentId: p.id } });
    expect(rest.body.data).toMatchObject({ amount: 600, status: 'succeeded' });
    // Captured 600, refunded 600, released 400: the authorisation's 1000 accounted for.
    const after = await get(p.id);
    expect(after).toMatchObject({ amountCaptured: 600, amountRefunded: 600, refunded: true, amountCapturable: 0 });
    expect(after.amountCaptured + (p.amountCapturable - after.amountCaptured)).toBe(p.amount);
  });

  it('should refuse a capture above what is authorised (422 capture_exceeds_authorized) and leave it capturable', async () => {
    const p = await authorize(1000);
    const res = await app.request('POST', `/v1/payments/${p.id}/capture`, { key, body: { amount: 1001 } });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: 'capture_exceeds_authorized', param: 'amount' });
    expect(await get(p.id)).toMatchObject({ status: 'requires_capture', amountCapturable: 1000 });
    expect(captures(p.id)).toBe(0);
  });

  it('should refuse capture and cancel where the status allows neither (422 invalid_state), and refunds of an authorisation', async () => {
    const automatic = (await app.request('POST', '/v1/payments', { key, body: { amount: 500, currency: 'eur', paymentMethod: 'pm_card_visa' } })).body.data;
    expect(automatic).toMatchObject({ status: 'succeeded', captureMethod: 'automatic', amountCaptured: 500 });
    for (const action of ['capture', 'cancel']) {
      const res = await app.request('POST', `/v1/payments/${automatic.id}/${action}`, { key, body: action === 'capture' ? {} : undefined });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('invalid_state');
    }
    const p = await authorize(700);
    const refund = await app.request('POST', '/v1/refunds', { key, body: { paymentId: p.id } });
    expect(refund.status).toBe(422);
    expect(refund.body.error.code).toBe('payment_not_refundable');
  });

  it('should void with cancel: canceled, payment.canceled, nothing capturable, no capture afterwards', async () => {
    const p = await authorize(800);
    const canceled = await app.request('POST', `/v1/payments/${p.id}/cancel`, { key });
    expect(canceled.status).toBe(200);
    expect(canceled.body.data).toMatchObject({ status: 'canceled', amountCapturable: 0, amountCaptured: 0 });
    expect(await eventsOf(p.id)).toEqual(['payment.authorized', 'payment.canceled']);
    const capture = await app.request('POST', `/v1/payments/${p.id}/capture`, { key, body: {} });
    expect(capture.status).toBe(422);
    expect(capture.body.error.code).toBe('invalid_state');
    expect(captures(p.id)).toBe(0);
  });

  it('should capture once under concurrent captures, and settle a capture racing a cancel to one outcome', async () => {
    const p = await authorize(1000);
    const results = await Promise.all(Array.from({ length: 6 }, () => app.request('POST', `/v1/payments/${p.id}/capture`, { key, body: { amount: 900 } })));
    const ok = results.filter((r) => r.status === 200);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    for (const r of results.filter((x) => x.status !== 200)) expect(['payment_in_progress', 'invalid_state']).toContain(r.body.error.code);
    expect(captures(p.id)).toBe(1);
    expect(await get(p.id)).toMatchObject({ status: 'succeeded', amountCaptured: 900 });
    expect((await eventsOf(p.id)).filter((t) => t === 'payment.succeeded')).toHaveLength(1);

    for (let round = 0; round < 4; round++) {
      const q = await authorize(500);
      const [capture, cancel] = await Promise.all([
        app.request('POST', `/v1/payments/${q.id}/capture`, { key, body: {} }),
        app.request('POST', `/v1/payments/${q.id}/cancel`, { key }),
      ]);
      const final = await get(q.id);
      expect(['succeeded', 'canceled']).toContain(final.status);
      // Exactly one of them took effect, and it is the one the payment shows.
      expect([capture.status, cancel.status].filter((s) => s === 200)).toHaveLength(1);
      expect(final.status).toBe(capture.status === 200 ? 'succeeded' : 'canceled');
      expect(final.amountCaptured).toBe(final.status === 'succeeded' ? 500 : 0);
    }
  });

  it('should replay a capture retried with the same Idempotency-Key without capturing again', async () => {
    const p = await authorize(1000);
    const headers = { 'Idempotency-Key': `cap-${p.id}` };
    const first = await app.request('POST', `/v1/payments/${p.id}/capture`, { key, body: { amount: 400 }, headers });
    const again = await app.request('POST', `/v1/payments/${p.id}/capture`, { key, body: { amount: 400 }, headers });
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(first.body.data);
    expect(captures(p.id)).toBe(1);
  });

  it('should recover a capture whose process died after the gateway captured: recovery asks the gateway', async () => {
    const s = app.server.services;
    const p = await authorize(1000);
    // The request claimed the payment and the gateway captured, then the process died before the write.
    await s.db.execute(`UPDATE payments SET pending_operation = 'capture:700', lease_until = $1 WHERE id = $2`, [new Date(Date.now() - 60_000), p.id]);
    const { gateway } = await s.gateways.connector({ accountId: app.account.accountId, mode: 'test' }, 'gw_builtin_simulator');
    const reference = (await s.db.select('SELECT gateway_reference FROM payments WHERE id = $1', [p.id]))[0].gateway_reference as string;
    expect((await gateway.capture({ idempotencyKey: `${p.id}_capture`, paymentId: p.id, chargeReference: reference, amount: 700, currency: 'EUR' })).outcome).toBe('succeeded');
    // Meanwhile the merchant's capture is refused: the payment is claimed.
    const busy = await app.request('POST', `/v1/payments/${p.id}/capture`, { key, body: {} });
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe('payment_in_progress');
    expect(await s.paymentActions.recoverClaims()).toBeGreaterThanOrEqual(1);
    const after = await get(p.id);
    expect(after).toMatchObject({ status: 'succeeded', amountCaptured: 700, amountCapturable: 0 });
    expect(captures(p.id)).toBe(1);
    expect((await eventsOf(p.id)).filter((t) => t === 'payment.succeeded')).toHaveLength(1);
  });

  it('should free a claim whose capture never reached the gateway, so the payment can be captured', async () => {
    const s = app.server.services;
    const p = await authorize(1000);
    await s.db.execute(`UPDATE payments SET pending_operation = 'capture:1000', lease_until = $1 WHERE id = $2`, [new Date(Date.now() - 60_000), p.id]);
    await s.paymentActions.recoverClaims();
    expect(await get(p.id)).toMatchObject({ status: 'requires_capture' });
    const captured = await app.request('POST', `/v1/payments/${p.id}/capture`, { key, body: {} });
    expect(captured.body.data).toMatchObject({ status: 'succeeded', amountCaptured: 1000 });
  });

  it('should void authorisations not captured within the gateway window (7 days by default) with payment.canceled', async () => {
    const p = await authorize(1000);
    clock.advance(6 * 86_400_000);
    await app.server.services.paymentActions.expireDue(clock.now());
    expect((await get(p.id)).status).toBe('requires_capture');
    clock.advance(86_400_000 + 1000);
    const done = await app.server.services.paymentActions.expireDue(clock.now());
    expect(done.authorizations).toBeGreaterThanOrEqual(1);
    expect(await get(p.id)).toMatchObject({ status: 'canceled', amountCapturable: 0 });
    expect(await eventsOf(p.id)).toEqual(['payment.authorized', 'payment.canceled']);
    const late = await app.request('POST', `/v1/payments/${p.id}/capture`, { key, body: {} });
    expect(late.body.error.code).toBe('invalid_state');
  });

  it('should refuse an unknown captureMethod and a returnUrl that is not https (400 with the param)', async () => {
    const bad = await app.request('POST', '/v1/payments', { key, body: { amount: 100, currency: 'eur', paymentMethod: 'pm_card_visa', captureMethod: 'later' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('captureMethod');
    const url = await app.request('POST', '/v1/payments', { key, body: { amount: 100, currency: 'eur', paymentMethod: 'pm_card_visa', returnUrl: 'ftp://x' } });
    expect(url.status).toBe(400);
    expect(url.body.error.param).toBe('returnUrl');
  });
});

describe('3-D Secure', () => {
  const card = (number: string) => ({ number, expMonth: 12, expYear: 2030, cvc: '123' });
  const pay = async (number: string, extra: Record<string, unknown> = {}) => {
    const res = await app.request('POST', '/v1/payments', { key, body: { amount: 2500, currency: 'eur', paymentMethod: 'card', card: card(number), ...extra } });
    expect(res.status).toBe(201);
    clock.advance(1000);
    return res.body.data;
  };
  /** Opens the challenge page and answers it as the customer would; returns where it sends them back. */
  const answer = async (url: string, choice: 'complete' | 'fail') => {
    const path = new URL(url).pathname;
    const page = await app.request('GET', path);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Complete');
    const answered = await app.request('POST', `${path}/${choice}`);
    expect(answered.status).toBe(200);
    const back = /http-equiv="refresh" content="0;url=([^"]+)"/.exec(answered.text)?.[1] as string;
    expect(back).toContain('/payment-return/');
    return new URL(back.replace(/&amp;/g, '&')).pathname;
  };

  it('should ask for a challenge (requires_action, nextAction, payment.requires_action), then succeed once completed', async () => {
    const p = await pay('4000002500003155');
    expect(p).toMatchObject({ status: 'requires_action', amountCaptured: 0, nextAction: { type: 'redirect_to_url' } });
    expect(p.nextAction.url).toMatch(/\/simulator\/3ds\/simchl_/);
    const back = await answer(p.nextAction.url, 'complete');
    const returned = await app.request('GET', back);
    expect(returned.status).toBe(200);
    expect(returned.text).toContain('Payment complete');
    expect(await get(p.id)).toMatchObject({ status: 'succeeded', amountCaptured: 2500, nextAction: null, gatewayId: p.gatewayId });
    expect(await eventsOf(p.id)).toEqual(['payment.requires_action', 'payment.succeeded']);
    // The challenge is answered once.
    expect((await app.request('GET', new URL(p.nextAction.url).pathname)).status).toBe(404);
  });

  it('should fail with authentication_failed when the customer fails the challenge, and decline 1629 after completion', async () => {
    const failed = await pay('4000000000003220');
    await app.request('GET', await answer(failed.nextAction.url, 'fail'));
    expect(await get(failed.id)).toMatchObject({ status: 'failed', failureCode: 'authentication_failed', nextAction: null });
    const declined = await pay('4000008400001629');
    await app.request('GET', await answer(declined.nextAction.url, 'complete'));
    expect(await get(declined.id)).toMatchObject({ status: 'failed', failureCode: 'card_declined' });
    expect(await eventsOf(declined.id)).toEqual(['payment.requires_action', 'payment.failed']);
  });

  it('should send the customer on to the returnUrl with the payment id, and authorise only when captureMethod is manual', async () => {
    const p = await pay('4000002500003155', { returnUrl: 'https://shop.example/thanks?order=7', captureMethod: 'manual' });
    const back = await answer(p.nextAction.url, 'complete');
    const returned = await app.request('GET', back);
    expect(returned.status).toBe(303);
    expect(returned.headers.location).toBe(`https://shop.example/thanks?order=7&payment_id=${p.id}`);
    expect(await get(p.id)).toMatchObject({ status: 'requires_capture', amountCapturable: 2500 });
    expect(await eventsOf(p.id)).toEqual(['payment.requires_action', 'payment.authorized']);
  });

  it('should let the merchant cancel a payment waiting for authentication; the challenge then closes', async () => {
    const p = await pay('4000000000003220');
    const canceled = await app.request('POST', `/v1/payments/${p.id}/cancel`, { key });
    expect(canceled.body.data).toMatchObject({ status: 'canceled', nextAction: null });
    expect((await app.request('GET', new URL(p.nextAction.url).pathname)).status).toBe(404);
    const returned = await app.request('GET', `/payment-return/${p.id}`);
    expect(returned.text).toContain('Payment failed');
  });

  it('should fail a challenge left unanswered for 30 minutes with authentication_expired', async () => {
    const p = await pay('4000002500003155');
    clock.advance(29 * 60_000);
    await app.server.services.paymentActions.expireDue(clock.now());
    expect((await get(p.id)).status).toBe('requires_action');
    clock.advance(2 * 60_000);
    const done = await app.server.services.paymentActions.expireDue(clock.now());
    expect(done.challenges).toBeGreaterThanOrEqual(1);
    expect(await get(p.id)).toMatchObject({ status: 'failed', failureCode: 'authentication_expired', nextAction: null });
    // Too late to complete: the gateway voided it.
    expect((await app.request('GET', new URL(p.nextAction.url).pathname)).status).toBe(404);
  });

  it('should finish a challenge answered without coming back when the expiry job reads it', async () => {
    const p = await pay('4000002500003155');
    await answer(p.nextAction.url, 'complete');
    clock.advance(31 * 60_000);
    await app.server.services.paymentActions.expireDue(clock.now());
    expect(await get(p.id)).toMatchObject({ status: 'succeeded', amountCaptured: 2500 });
  });
});

describe('3-D Secure after a simulator restart', () => {
  it('should fail an expired challenge the gateway no longer knows (nothing to void, nothing can be charged)', async () => {
    const p = (await app.request('POST', '/v1/payments', {
      key, body: { amount: 900, currency: 'eur', paymentMethod: 'card', card: { number: '4000000000003220', expMonth: 12, expYear: 2030, cvc: '123' } },
    })).body.data;
    expect(p.status).toBe('requires_action');
    resetSimulatorState(); // what a restart of the process does to the simulator's memory
    clock.advance(31 * 60_000);
    await app.server.services.paymentActions.expireDue(clock.now());
    expect(await get(p.id)).toMatchObject({ status: 'failed', failureCode: 'authentication_expired', nextAction: null });
  });
});

describe('3-D Secure on a hosted checkout pay', () => {
  it('should answer the pay with requires_action and the challenge as redirectUrl, and keep the session held while it is open', async () => {
    const session = (await app.request('POST', '/v1/checkout-sessions', { key, body: { mode: 'payment', amount: 1800, currency: 'eur' } })).body.data;
    const card = { number: '4000000000003220', expMonth: 12, expYear: 2030, cvc: '123' };
    const paid = await app.request('POST', `/v1/public/checkout-sessions/${session.id}/pay`, { body: { card } });
    expect(paid.status).toBe(200);
    expect(paid.body.data).toMatchObject({ status: 'requires_action', redirectUrl: expect.stringMatching(/\/simulator\/3ds\/simchl_/) });
    // The payment waiting for the challenge holds the session, even once the pay's own claim has lapsed.
    const holding = await app.server.services.db.select(
      `SELECT status FROM payments WHERE checkout_session_id = $1`, [session.id],
    );
    expect(holding).toEqual([{ status: 'requires_action' }]);
    await app.server.services.db.execute('UPDATE checkout_sessions SET paying_until = $1 WHERE id = $2', [new Date(Date.now() - 3_600_000), session.id]);
    const again = await app.request('POST', `/v1/public/checkout-sessions/${session.id}/pay`, { body: { card: { ...card, number: '4242424242424242' } } });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('checkout_session_in_use');
  });
});

describe('3-D Secure and the caps on public pays', () => {
  it('should not count challenges as attempts still running: a sixth challenge pay of a link from one address is answered, not 429', async () => {
    const link = (await app.request('POST', '/v1/payment-links', { key, body: { name: 'Challenged', amount: 700, currency: 'eur' } })).body.data;
    const card = { number: '4000000000003220', expMonth: 12, expYear: 2030, cvc: '123' };
    for (let i = 0; i < 7; i++) {
      const res = await app.request('POST', `/v1/public/payment-links/${link.slug}/pay`, { body: { card }, localAddress: '127.0.0.77' });
      expect([i, res.status, res.body.data?.status]).toEqual([i, 200, 'requires_action']);
    }
  });
});

describe('3-D Secure and routing', () => {
  it('should never route a payment to another gateway once one asked for authentication, and finish it on that gateway', async () => {
    const account = await app.createAccount();
    const k = account.testKey;
    const [first, second] = await Promise.all(['First', 'Second'].map(async (name) =>
      (await app.request('POST', '/v1/gateways', { key: k, body: { name, type: 'simulator' } })).body.data.id as string));
    const routing = await app.request('PUT', '/v1/routing', {
      key: k, body: { rules: [{ name: 'both', strategy: 'priority', gateways: [{ gatewayId: first }, { gatewayId: second }] }], fallback: [], maxAttempts: 2 },
    });
    expect(routing.status).toBe(200);
    const p = (await app.request('POST', '/v1/payments', {
      key: k, body: { amount: 1200, currency: 'eur', paymentMethod: 'card', card: { number: '4000008400001629', expMonth: 12, expYear: 2030, cvc: '123' } },
    })).body.data;
    expect(p).toMatchObject({ status: 'requires_action', gatewayId: first });
    expect(p.attempts).toEqual([expect.objectContaining({ gateway: first, outcome: 'requires_action' })]);
    // Completed, then declined by the card: failed at the first gateway, the second never asked.
    const path = new URL(p.nextAction.url).pathname;
    await app.request('POST', `${path}/complete`);
    await app.request('GET', `/payment-return/${p.id}`);
    const after = (await app.request('GET', `/v1/payments/${p.id}`, { key: k })).body.data;
    expect(after).toMatchObject({ status: 'failed', failureCode: 'card_declined', gatewayId: first });
    expect(after.attempts.map((a: { gateway: string }) => a.gateway)).toEqual([first, first]);
    const calls = (await app.request('GET', `/v1/payments/${p.id}/gateway-transactions`, { key: k })).body.data as Array<{ gatewayId: string }>;
    expect(new Set(calls.map((c) => c.gatewayId))).toEqual(new Set([first]));
  });
});
