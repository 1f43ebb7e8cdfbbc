import { startTestApp, type TestApp } from '../helpers/app';
import { waitFor } from '../helpers/wait';

let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp();
  key = app.account.testKey;
});
afterAll(() => app.stop());

const card = (number: string, extra: Record<string, unknown> = {}) => ({ number, expMonth: 12, expYear: 2034, cvc: '123', ...extra });
const pay = (body: Record<string, unknown>, k = key) => app.request('POST', '/v1/payments', { key: k, body });

describe('payments with the built-in test simulator', () => {
  it('should charge a test card and answer 201 succeeded with safe card details', async () => {
    const res = await pay({ amount: 1999, currency: 'eur', paymentMethod: 'card', card: card('4242 4242 4242 4242'), description: 'Order 1', metadata: { order: '1' } });
    expect(res.status).toBe(201);
    const p = res.body.data;
    expect(p).toMatchObject({
      object: 'payment', livemode: false, amount: 1999, currency: 'EUR', originalCurrency: 'EUR', originalAmount: null, exchangeRate: null,
      status: 'succeeded', failureCode: null, amountRefunded: 0, refunded: false, paymentMethod: 'card', description: 'Order 1', metadata: { order: '1' },
      paymentMethodDetails: { type: 'card', brand: 'visa', last4: '4242', expMonth: 12, expYear: 2034 },
    });
    expect(p.id).toMatch(/^pay_[0-9A-Za-z]{24}$/);
    expect(p.paymentMethodDetails.fingerprint).toMatch(/^[0-9a-f]{32}$/);
    expect(p.attempts).toHaveLength(1);
    expect(p.attempts[0]).toMatchObject({ gateway: 'gw_builtin_simulator', outcome: 'succeeded' });
    expect(res.text).not.toContain('4242424242424242');
    expect(res.text).not.toContain('"cvc"');
  });

  it('should name each attempt\'s gateway and latency as API.md does, for new and previously stored attempts', async () => {
    const created = (await pay({ amount: 700, currency: 'eur', paymentMethod: 'pm_card_visa' })).body.data;
    const [attempt] = created.attempts;
    // One name per value (API.md): gateway and latency only.
    expect(attempt).toEqual({ gateway: 'gw_builtin_simulator', outcome: 'succeeded', code: null, latency: expect.any(Number) });
    expect((await app.request('GET', `/v1/payments/${created.id}`, { key })).body.data.attempts).toEqual(created.attempts);
    // A row written under the old names carries only gatewayId/latencyMs.
    await app.server.services.db.execute('UPDATE payments SET attempts = $1 WHERE id = $2', [JSON.stringify([{ gatewayId: 'gw_old', outcome: 'declined', code: 'card_declined', latencyMs: 12 }]), created.id]);
    expect((await app.request('GET', `/v1/payments/${created.id}`, { key })).body.data.attempts).toEqual([
      { gateway: 'gw_old', outcome: 'declined', code: 'card_declined', latency: 12 },
    ]);
  });

  it.each([
    ['4000000000000002', 'card_declined'],
    ['4000000000009995', 'insufficient_funds'],
    ['4000000000000069', 'expired_card'],
  ])('should answer 201 failed for %s with %s', async (number, code) => {
    const res = await pay({ amount: 500, currency: 'usd', paymentMethod: 'card', card: card(number) });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ status: 'failed', failureCode: code });
    expect(typeof res.body.data.failureMessage).toBe('string');
  });

  it('should accept test tokens in test mode and refuse them in live mode', async () => {
    const ok = await pay({ amount: 700, currency: 'usd', paymentMethod: 'pm_card_mastercard' });
    expect(ok.body.data).toMatchObject({ status: 'succeeded', paymentMethodDetails: { brand: 'mastercard', last4: '4444' } });
    const declined = await pay({ amount: 700, currency: 'usd', paymentMethod: 'pm_card_declined' });
    expect(declined.body.data).toMatchObject({ status: 'failed', failureCode: 'card_declined' });
    const live = await pay({ amount: 700, currency: 'usd', paymentMethod: 'pm_card_visa' }, app.account.liveKey);
    expect(live.status).toBe(400);
    expect(live.body.error).toMatchObject({ code: 'invalid_parameter', param: 'paymentMethod' });
  });

  it('should charge the simulator default card for "card" without a card in test mode', async () => {
    const res = await pay({ amount: 300, currency: 'usd', paymentMethod: 'card' });
    expect(res.body.data.status).toBe('succeeded');
  });

  it('should refuse live payments when no gateway is configured with 422 no_gateway_available', async () => {
    const res = await pay({ amount: 300, currency: 'usd', paymentMethod: 'card', card: card('4242424242424242') }, app.account.liveKey);
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('no_gateway_available');
  });

  it('should answer an unknown customerId with 404 before looking for its saved card, in live mode too', async () => {
    for (const k of [app.account.liveKey, key]) {
      const res = await pay({ amount: 300, currency: 'usd', paymentMethod: 'card', customerId: 'cus_doesnotexist' }, k);
      expect(res.status).toBe(404);
      expect(res.body.error).toMatchObject({ code: 'resource_not_found', param: 'customerId' });
    }
  });

  it('should save a card for a customer and charge it by pm_ id, and as the default for "card"', async () => {
    const customer = await app.request('POST', '/v1/customers', { key, body: { email: 'saver@example.com' } });
    const cid = customer.body.data.id;
    const saved = await app.request('POST', `/v1/customers/${cid}/payment-methods`, { key, body: { card: card('5555555555554444') } });
    expect(saved.status).toBe(201);
    expect(saved.body.data).toMatchObject({ object: 'payment_method', customerId: cid, card: { brand: 'mastercard', last4: '4444' }, isDefault: true });
    expect(saved.body.data.updatedAt).toBe(saved.body.data.createdAt);
    const byId = await pay({ customerId: cid, amount: 1200, currency: 'usd', paymentMethod: saved.body.data.id });
    expect(byId.body.data).toMatchObject({ status: 'succeeded', customerId: cid, paymentMethodDetails: { last4: '4444' } });
    const byDefault = await pay({ customerId: cid, amount: 1300, currency: 'usd', paymentMethod: 'card' });
    expect(byDefault.body.data).toMatchObject({ status: 'succeeded', paymentMethodDetails: { last4: '4444' } });
    const listed = await app.request('GET', `/v1/customers/${cid}/payment-methods`, { key });
    expect(listed.body.meta.total).toBe(1);
    const refreshed = await app.request('GET', `/v1/customers/${cid}`, { key });
    expect(refreshed.body.data.defaultPaymentMethodId).toBe(saved.body.data.id);
  });

  it('should save cards on an account none of whose gateways takes USD', async () => {
    const k = (await app.createAccount()).testKey;
    const eur = (await app.request('POST', '/v1/gateways', { key: k, body: { name: 'EUR only', type: 'simulator', currencies: ['EUR'] } })).body.data;
    const cid = (await app.request('POST', '/v1/customers', { key: k, body: { email: 'eur@example.com' } })).body.data.id;
    const saved = await app.request('POST', `/v1/customers/${cid}/payment-methods`, { key: k, body: { card: card('4242424242424242') } });
    expect(saved.status).toBe(201);
    expect(saved.body.data.gatewayId).toBe(eur.id);
    const inEur = await app.request('POST', `/v1/customers/${cid}/payment-methods`, { key: k, body: { card: card('5555555555554444'), currency: 'eur' } });
    expect(inEur.body.data.gatewayId).toBe(eur.id);
    // A currency no configured gateway takes: where a test payment in it goes, the built-in simulator.
    const inJpy = await app.request('POST', `/v1/customers/${cid}/payment-methods`, { key: k, body: { card: card('5555555555554444'), currency: 'jpy' } });
    expect(inJpy.body.data.gatewayId).toBe('gw_builtin_simulator');
    const paid = await app.request('POST', '/v1/payments', { key: k, body: { customerId: cid, amount: 900, currency: 'eur', paymentMethod: saved.body.data.id } });
    expect(paid.body.data).toMatchObject({ status: 'succeeded', gatewayId: eur.id });
  });

  it('should refuse to save a card in a currency no live gateway takes', async () => {
    const k = (await app.createAccount()).liveKey;
    const eur = (await app.request('POST', '/v1/gateways', { key: k, body: { name: 'EUR only', type: 'simulator', currencies: ['EUR'] } })).body.data;
    const cid = (await app.request('POST', '/v1/customers', { key: k, body: { email: 'eur-live@example.com' } })).body.data.id;
    const saved = await app.request('POST', `/v1/customers/${cid}/payment-methods`, { key: k, body: { card: card('4242424242424242') } });
    expect(saved.body.data.gatewayId).toBe(eur.id);
    const inJpy = await app.request('POST', `/v1/customers/${cid}/payment-methods`, { key: k, body: { card: card('5555555555554444'), currency: 'jpy' } });
    expect(inJpy.status).toBe(422);
    expect(inJpy.body.error).toMatchObject({ code: 'no_gateway_available', param: 'currency' });
  });

  it('should answer a card the gateway declines to save with 422 card_declined, and a gateway that cannot answer with 503', async () => {
    const k = await app.createAccount();
    const cid = (await app.request('POST', '/v1/customers', { key: k.testKey, body: { email: 'save-fail@example.com' } })).body.data.id;
    const declined = await app.request('POST', `/v1/customers/${cid}/payment-methods`, { key: k.testKey, body: { card: card('4000000000000002') } });
    expect(declined.status).toBe(422);
    expect(declined.body.error).toMatchObject({ code: 'card_declined', param: 'card' });
    const [call] = await app.server.services.db.select<{ kind: string; outcome: string; code: string }>(
      "SELECT kind, outcome, code FROM gateway_transactions WHERE account_id = $1 AND kind = 'save_card'", [k.accountId],
    );
    expect(call).toEqual({ kind: 'save_card', outcome: 'declined', code: 'card_declined' });
    const g = (await app.request('POST', '/v1/gateways', { key: k.testKey, body: { name: 'Down', type: 'simulator', settings: { outage: true } } })).body.data;
    const headers = { 'idempotency-key': 'save-while-down' };
    const down = await app.request('POST', `/v1/customers/${cid}/payment-methods`, { key: k.testKey, body: { card: card('4242424242424242'), gatewayId: g.id }, headers });
    expect(down.status).toBe(503);
    expect(down.body.error.code).toBe('gateway_unavailable');
    // Not the request's fault: the key is free for the retry once the gateway is back.
    await app.request('PATCH', `/v1/gateways/${g.id}`, { key: k.testKey, body: { settings: { outage: false } } });
    const retry = await app.request('POST', `/v1/customers/${cid}/payment-methods`, { key: k.testKey, body: { card: card('4242424242424242'), gatewayId: g.id }, headers });
    expect(retry.status).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect((await app.request('GET', `/v1/customers/${cid}/payment-methods`, { key: k.testKey })).body.meta.total).toBe(1);
  });

  it('should save 4000000000000341 but decline every charge of it', async () => {
    const customer = await app.request('POST', '/v1/customers', { key, body: { email: 'chargefail@example.com' } });
    const saved = await app.request('POST', `/v1/customers/${customer.body.data.id}/payment-methods`, { key, body: { card: card('4000000000000341') } });
    expect(saved.status).toBe(201);
    const res = await pay({ customerId: customer.body.data.id, amount: 100, currency: 'usd', paymentMethod: saved.body.data.id });
    expect(res.body.data).toMatchObject({ status: 'failed', failureCode: 'card_declined' });
  });

  it('should convert with FX rates when originalCurrency differs, and refuse a missing rate', async () => {
    const res = await pay({ amount: 10850, currency: 'usd', originalCurrency: 'eur', paymentMethod: 'pm_card_visa' });
    expect(res.status).toBe(201);
    expect(res.body.data.originalCurrency).toBe('EUR');
    expect(typeof res.body.data.exchangeRate).toBe('string');
    expect(Number.isInteger(res.body.data.originalAmount)).toBe(true);
    const put = await app.request('PUT', '/v1/fx-rates', { key: app.account.liveKey, body: { rates: [{ from: 'EUR', to: 'USD', rate: '1.25' }] } });
    expect(put.status).toBe(200);
    expect(put.body.data.rates).toEqual([expect.objectContaining({ from: 'EUR', to: 'USD', rate: '1.25' })]);
    await app.request('POST', '/v1/gateways', { key: app.account.liveKey, body: { name: 'Sim live', type: 'simulator' } });
    const live = await pay({ amount: 1000, currency: 'usd', originalCurrency: 'eur', paymentMethod: 'card', card: card('4242424242424242') }, app.account.liveKey);
    expect(live.body.data).toMatchObject({ status: 'succeeded', exchangeRate: '1.25', originalAmount: 800 });
    const none = await pay({ amount: 1000, currency: 'usd', originalCurrency: 'gbp', paymentMethod: 'card', card: card('4242424242424242') }, app.account.liveKey);
    expect(none.status).toBe(422);
    expect(none.body.error.code).toBe('fx_rate_unavailable');
  });

  it('should list the demo rates in test mode and take back what GET /v1/fx-rates returned', async () => {
    const k = await app.createAccount();
    const testRates = await app.request('GET', '/v1/fx-rates', { key: k.testKey });
    expect(testRates.body.data).toMatchObject({ object: 'fx_rates', livemode: false, rates: [], demoRatesAvailable: true });
    expect(testRates.body.data.demoRates).toContainEqual({ from: 'USD', to: 'EUR', rate: '0.92', updatedAt: null });
    // The listed demo rate is the one a payment uses.
    const paid = await pay({ amount: 920, currency: 'eur', originalCurrency: 'usd', paymentMethod: 'pm_card_visa' }, k.testKey);
    expect(paid.body.data).toMatchObject({ exchangeRate: '0.92', originalAmount: 1000 });
    expect((await app.request('GET', '/v1/fx-rates', { key: k.liveKey })).body.data).toMatchObject({ rates: [], demoRatesAvailable: false, demoRates: [] });
    const put = await app.request('PUT', '/v1/fx-rates', { key: k.testKey, body: { rates: [{ from: 'EUR', to: 'GBP', rate: '0.85' }] } });
    // Sent back as GET gave it (object, livemode, updatedAt, the demo list): the same table, no demo rate pinned.
    const again = await app.request('PUT', '/v1/fx-rates', { key: k.testKey, body: put.body.data });
    expect(again.status).toBe(200);
    expect(again.body.data.rates).toEqual([expect.objectContaining({ from: 'EUR', to: 'GBP', rate: '0.85' })]);
    const unknown = await app.request('PUT', '/v1/fx-rates', { key: k.testKey, body: { ...put.body.data, colour: 'red' } });
    expect(unknown.body.error).toMatchObject({ code: 'unknown_parameter', param: 'colour' });
  });

  it.each([
    [{ currency: 'usd', paymentMethod: 'card' }, 'missing_parameter', 'amount'],
    [{ amount: 1.5, currency: 'usd', paymentMethod: 'card' }, 'invalid_parameter', 'amount'],
    [{ amount: '100', currency: 'usd', paymentMethod: 'card' }, 'invalid_parameter', 'amount'],
    [{ amount: -1, currency: 'usd', paymentMethod: 'card' }, 'invalid_parameter', 'amount'],
    [{ amount: 1e20, currency: 'usd', paymentMethod: 'card' }, 'invalid_parameter', 'amount'],
    [{ amount: 100, currency: 'xyz', paymentMethod: 'card' }, 'invalid_parameter', 'currency'],
    [{ amount: 100, currency: 'usd', paymentMethod: 'bank' }, 'invalid_parameter', 'paymentMethod'],
    [{ amount: 100, currency: 'usd', paymentMethod: 'card', card: { number: '4242424242424241', expMonth: 1, expYear: 2030, cvc: '123' } }, 'invalid_parameter', 'card.number'],
    [{ amount: 100, currency: 'usd', paymentMethod: 'card', card: { number: '4242424242424242', expMonth: 13, expYear: 2030, cvc: '123' } }, 'invalid_parameter', 'card.expMonth'],
    [{ amount: 100, currency: 'usd', paymentMethod: 'card', card: { number: '4242424242424242', expMonth: 1, expYear: 2030, cvc: '1' } }, 'invalid_parameter', 'card.cvc'],
    [{ amount: 100, currency: 'usd', paymentMethod: 'pm_card_visa', card: { number: '4242424242424242', expMonth: 1, expYear: 2030, cvc: '123' } }, 'invalid_parameter', 'card'],
    [{ amount: 100, currency: 'usd', paymentMethod: 'card', customerId: 'cus_missing' }, 'resource_not_found', 'customerId'],
    [{ amount: 100, currency: 'usd', paymentMethod: 'pm_doesnotexist' }, 'resource_not_found', 'paymentMethod'],
    [{ amount: 100, currency: 'usd', paymentMethod: 'card', status: 'succeeded' }, 'unknown_parameter', 'status'],
  ])('should refuse %j with %s on %s and write nothing', async (body, code, param) => {
    const before = await app.request('GET', '/v1/payments?pageSize=1', { key });
    const res = await pay(body as Record<string, unknown>);
    expect(res.body.error).toMatchObject({ code, param });
    const after = await app.request('GET', '/v1/payments?pageSize=1', { key });
    expect(after.body.meta.total).toBe(before.body.meta.total);
  });
});

describe('payment reads and updates', () => {
  let ids: string[] = [];
  let customerId: string;
  let other: { testKey: string };
  beforeAll(async () => {
    other = await app.createAccount();
    const c = await app.request('POST', '/v1/customers', { key: other.testKey, body: { email: 'Finder@Example.com' } });
    customerId = c.body.data.id;
    ids = [];
    for (const [i, amount] of [500, 100, 900, 300].entries()) {
      const res = await pay(
        { amount, currency: 'usd', paymentMethod: i === 3 ? 'pm_card_declined' : 'pm_card_visa', customerId: i < 2 ? customerId : undefined, description: `desc-${i}`, metadata: { ref: `r${i}x` } },
        other.testKey,
      );
      ids.push(res.body.data.id);
    }
  });

  it('should list newest first with filters, search and amount sort', async () => {
    const k = other.testKey;
    const all = await app.request('GET', '/v1/payments', { key: k });
    expect(all.body.meta.total).toBe(4);
    expect(all.body.data.map((p: { id: string }) => p.id)).toEqual([...ids].reverse());
    const failed = await app.request('GET', '/v1/payments?status=failed', { key: k });
    expect(failed.body.data.map((p: { id: string }) => p.id)).toEqual([ids[3]]);
    const byCustomer = await app.request('GET', `/v1/payments?customerId=${customerId}`, { key: k });
    expect(byCustomer.body.meta.total).toBe(2);
    const byAmount = await app.request('GET', '/v1/payments?sortField=amount&sortDirection=asc', { key: k });
    expect(byAmount.body.data.map((p: { amount: number }) => p.amount)).toEqual([100, 300, 500, 900]);
    const byDescription = await app.request('GET', '/v1/payments?search=DESC-2', { key: k });
    expect(byDescription.body.data.map((p: { id: string }) => p.id)).toEqual([ids[2]]);
    const byEmail = await app.request('GET', '/v1/payments?search=finder@example', { key: k });
    expect(byEmail.body.meta.total).toBe(2);
    // Search follows the customer's current e-mail.
    await app.request('PATCH', `/v1/customers/${customerId}`, { key: k, body: { email: 'renamed@example.com' } });
    expect((await app.request('GET', '/v1/payments?search=renamed@', { key: k })).body.meta.total).toBe(2);
    expect((await app.request('GET', '/v1/payments?search=finder@example', { key: k })).body.meta.total).toBe(0);
    const byMetadata = await app.request('GET', '/v1/payments?search=r3x', { key: k });
    expect(byMetadata.body.data.map((p: { id: string }) => p.id)).toEqual([ids[3]]);
    const byId = await app.request('GET', `/v1/payments?search=${ids[1]}`, { key: k });
    expect(byId.body.data.map((p: { id: string }) => p.id)).toEqual([ids[1]]);
    const bad = await app.request('GET', '/v1/payments?status=paid', { key: k });
    expect(bad.body.error).toMatchObject({ code: 'invalid_parameter', param: 'status' });
  });

  it('should PATCH only description and metadata and record payment.updated', async () => {
    const k = other.testKey;
    const res = await app.request('PATCH', `/v1/payments/${ids[0]}`, { key: k, body: { description: 'new', metadata: { ref: null, extra: 'y' } } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ description: 'new', metadata: { extra: 'y' }, amount: 500 });
    const refused = await app.request('PATCH', `/v1/payments/${ids[0]}`, { key: k, body: { amount: 1 } });
    expect(refused.body.error).toMatchObject({ code: 'unknown_parameter', param: 'amount' });
    const events = await app.request('GET', '/v1/events?type=payment.updated', { key: k });
    expect(events.body.data[0].data.object).toEqual(res.body.data);
  });

  it('should refuse a PATCH while the payment is still pending, so the settled answer and event keep every change', async () => {
    const k = (await app.createAccount()).testKey;
    const slow = (await app.request('POST', '/v1/gateways', { key: k, body: { name: 'Slow', type: 'simulator', settings: { latencyMs: 1500 } } })).body.data;
    await app.request('PUT', '/v1/routing', { key: k, body: { rules: [], fallback: [slow.id], maxAttempts: 1 } });
    const creating = app.request('POST', '/v1/payments', { key: k, body: { amount: 700, currency: 'usd', paymentMethod: 'pm_card_visa', description: 'orig' } });
    const pending = await waitFor(async () => (await app.request('GET', '/v1/payments?status=pending', { key: k })).body.data[0] as { id: string } | undefined, {
      timeoutMs: 5_000, intervalMs: 10, what: 'the payment pending (its gateway answers after 1.5 s)',
    });
    const patched = await app.request('PATCH', `/v1/payments/${pending.id}`, { key: k, body: { description: 'patched' } });
    expect(patched.status).toBe(422);
    expect(patched.body.error).toMatchObject({ code: 'invalid_state' });
    const created = (await creating).body.data;
    expect(created).toMatchObject({ id: pending.id, status: 'succeeded', description: 'orig' });
    expect((await app.request('GET', `/v1/payments/${created.id}`, { key: k })).body.data).toEqual(created);
    const after = await app.request('PATCH', `/v1/payments/${created.id}`, { key: k, body: { description: 'patched' } });
    expect(after.body.data.description).toBe('patched');
  });

  it('should leave a payment, its updatedAt and the event log alone when a PATCH changes nothing', async () => {
    const k = (await app.createAccount()).testKey;
    const p = (await app.request('POST', '/v1/payments', { key: k, body: { amount: 300, currency: 'usd', paymentMethod: 'pm_card_visa', description: 'same', metadata: { a: '1' } } })).body.data;
    const res = await app.request('PATCH', `/v1/payments/${p.id}`, { key: k, body: { description: 'same', metadata: { a: '1', gone: null } } });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(p);
    const events = await app.request('GET', '/v1/events?type=payment.updated', { key: k });
    expect(events.body.meta.total).toBe(0);
  });

  it('should record payment.succeeded and payment.failed events with the API object', async () => {
    const k = other.testKey;
    const succeeded = await app.request('GET', '/v1/events?type=payment.succeeded&pageSize=100', { key: k });
    expect(succeeded.body.meta.total).toBe(3);
    const failed = await app.request('GET', '/v1/events?type=payment.failed', { key: k });
    const payment = await app.request('GET', `/v1/payments/${ids[3]}`, { key: k });
    expect(failed.body.data[0].data.object).toEqual(payment.body.data);
  });

  it('should list every gateway call with redacted summaries', async () => {
    const res = await app.request('GET', `/v1/payments/${ids[0]}/gateway-transactions`, { key: other.testKey });
    expect(res.body.meta.total).toBe(1);
    expect(res.body.data[0]).toMatchObject({ object: 'gateway_transaction', kind: 'charge', outcome: 'succeeded', gatewayId: 'gw_builtin_simulator' });
    expect(res.body.data[0].idempotencyKey).toBe(`${ids[0]}_a1`);
  });

  it('should hide another account payments', async () => {
    const res = await app.request('GET', `/v1/payments/${ids[0]}`, { key });
    expect(res.status).toBe(404);
  });
});
