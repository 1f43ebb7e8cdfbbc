import { startTestApp, type TestApp } from '../helpers/app';

let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp();
  key = app.account.testKey;
});
afterAll(() => app.stop());

const payment = async (amount = 1000, paymentMethod = 'pm_card_visa') =>
  (await app.request('POST', '/v1/payments', { key, body: { amount, currency: 'usd', paymentMethod } })).body.data;

describe('refunds', () => {
  it('should refund partially then the rest, keeping amountRefunded and refunded on the payment', async () => {
    const p = await payment(1000);
    const first = await app.request('POST', '/v1/refunds', { key, body: { paymentId: p.id, amount: 300, reason: 'requested_by_customer' } });
    expect(first.status).toBe(201);
    expect(first.body.data).toMatchObject({ object: 'refund', paymentId: p.id, amount: 300, currency: 'USD', status: 'succeeded', reason: 'requested_by_customer', gatewayId: 'gw_builtin_simulator' });
    expect(first.body.data.id).toMatch(/^re_/);
    const mid = await app.request('GET', `/v1/payments/${p.id}`, { key });
    expect(mid.body.data).toMatchObject({ amountRefunded: 300, refunded: false });
    const rest = await app.request('POST', `/v1/payments/${p.id}/refunds`, { key, body: {} });
    expect(rest.body.data).toMatchObject({ amount: 700, status: 'succeeded' });
    const after = await app.request('GET', `/v1/payments/${p.id}`, { key });
    expect(after.body.data).toMatchObject({ amountRefunded: 1000, refunded: true, status: 'succeeded' });
    const listed = await app.request('GET', `/v1/payments/${p.id}/refunds`, { key });
    expect(listed.body.meta.total).toBe(2);
    const again = await app.request('POST', '/v1/refunds', { key, body: { paymentId: p.id } });
    expect(again.status).toBe(422);
    expect(again.body.error.code).toBe('payment_not_refundable');
  });

  it('should refuse a refund above what is left with 422 refund_exceeds_remaining', async () => {
    const p = await payment(500);
    const res = await app.request('POST', '/v1/refunds', { key, body: { paymentId: p.id, amount: 501 } });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: 'refund_exceeds_remaining', param: 'amount' });
  });

  it('should refuse refunds of payments that did not succeed with 422 payment_not_refundable', async () => {
    const p = await payment(500, 'pm_card_declined');
    const res = await app.request('POST', '/v1/refunds', { key, body: { paymentId: p.id } });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: 'payment_not_refundable', param: 'paymentId' });
  });

  it('should never refund more than the payment under concurrent refunds', async () => {
    const p = await payment(1000);
    const results = await Promise.all(Array.from({ length: 8 }, () => app.request('POST', '/v1/refunds', { key, body: { paymentId: p.id, amount: 300 } })));
    const ok = results.filter((r) => r.status === 201);
    expect(ok).toHaveLength(3);
    for (const r of results.filter((x) => x.status !== 201)) expect(r.body.error.code).toBe('refund_exceeds_remaining');
    const after = await app.request('GET', `/v1/payments/${p.id}`, { key });
    expect(after.body.data.amountRefunded).toBe(900);
  });

  it('should answer refund_exceeds_remaining to an amount when racing refunds left nothing', async () => {
    const p = await payment(1000);
    const results = await Promise.all(Array.from({ length: 4 }, () => app.request('POST', '/v1/refunds', { key, body: { paymentId: p.id, amount: 500 } })));
    expect(results.filter((r) => r.status === 201)).toHaveLength(2);
    for (const r of results.filter((x) => x.status !== 201)) expect(r.body.error).toMatchObject({ code: 'refund_exceeds_remaining', param: 'amount' });
    const one = await app.request('POST', '/v1/refunds', { key, body: { paymentId: p.id, amount: 1 } });
    expect(one.status).toBe(422);
    expect(one.body.error).toMatchObject({ code: 'refund_exceeds_remaining', param: 'amount' });
  });

  it('should record refund.created, refund.succeeded and payment.updated', async () => {
    const p = await payment(800);
    const r = await app.request('POST', '/v1/refunds', { key, body: { paymentId: p.id, amount: 100 } });
    const created = await app.request('GET', '/v1/events?type=refund.created', { key });
    expect(created.body.data[0].data.object).toMatchObject({ id: r.body.data.id, status: 'pending' });
    const succeeded = await app.request('GET', '/v1/events?type=refund.succeeded', { key });
    expect(succeeded.body.data[0].data.object).toEqual(r.body.data);
    const updated = await app.request('GET', '/v1/events?type=payment.updated', { key });
    expect(updated.body.data[0].data.object).toMatchObject({ id: p.id, amountRefunded: 100 });
    // One payment.updated: the reservation changes the payment, a success leaves it as it is.
    const forPayment = (updated.body.data as Array<{ data: { object: { id: string } } }>).filter((e) => e.data.object.id === p.id);
    expect(forPayment).toHaveLength(1);
  });

  it('should refuse paymentId in the query of the per-payment refund list', async () => {
    const p = await payment(300);
    const res = await app.request('GET', `/v1/payments/${p.id}/refunds?paymentId=pay_other`, { key });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'unknown_parameter', param: 'paymentId' });
  });

  it('should name the path\'s id, not paymentId, in errors about the payment on the nested refund route', async () => {
    const missing = await app.request('POST', '/v1/payments/pay_nope/refunds', { key, body: {} });
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({ code: 'resource_not_found', param: 'id' });
    const declined = await payment(500, 'pm_card_declined');
    const refused = await app.request('POST', `/v1/payments/${declined.id}/refunds`, { key, body: {} });
    expect(refused.status).toBe(422);
    expect(refused.body.error).toMatchObject({ code: 'payment_not_refundable', param: 'id' });
  });

  it('should list, retrieve and validate refunds', async () => {
    const list = await app.request('GET', '/v1/refunds?status=succeeded&pageSize=2', { key });
    expect(list.body.meta.pageSize).toBe(2);
    const one = await app.request('GET', `/v1/refunds/${list.body.data[0].id}`, { key });
    expect(one.body.data).toEqual(list.body.data[0]);
    const missing = await app.request('POST', '/v1/refunds', { key, body: { paymentId: 'pay_nope' } });
    expect(missing.body.error).toMatchObject({ code: 'resource_not_found', param: 'paymentId' });
    const longReason = await app.request('POST', '/v1/refunds', { key, body: { paymentId: 'pay_x', reason: 'r'.repeat(201) } });
    expect(longReason.body.error).toMatchObject({ code: 'invalid_parameter', param: 'reason' });
    const fraction = await app.request('POST', '/v1/refunds', { key, body: { paymentId: 'pay_x', amount: 1.5 } });
    expect(fraction.body.error).toMatchObject({ code: 'invalid_parameter', param: 'amount' });
  });
});
