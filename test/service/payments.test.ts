import { IdempotentReplay, idempotencyScope } from '../../src/core/idempotency';
import type { RequestContext } from '../../src/core/context';
import type { Payment } from '../../src/modules/payments/payment.service';
import { refusal, startServices, type ServiceHarness } from '../helpers/services';

let h: ServiceHarness;
let ctx: RequestContext;
beforeAll(async () => {
  h = await startServices();
  ctx = (await h.account()).test;
});
afterAll(() => h?.stop());

const pay = (input: Record<string, unknown>, on: RequestContext = ctx) =>
  h.services.payments.create(on, { amount: 1000, currency: 'usd', paymentMethod: 'pm_card_visa', ...input });

describe('PaymentService.create with test tokens', () => {
  it('should charge pm_card_visa through the built-in simulator and return it succeeded, stamped by the clock', async () => {
    const at = h.clock.now().toISOString();
    const p = await pay({ amount: 1999, currency: 'eur', description: 'Order 1', metadata: { order: '1' } });
    expect(p).toMatchObject({
      object: 'payment', livemode: false, amount: 1999, currency: 'EUR', originalCurrency: 'EUR', originalAmount: null, exchangeRate: null,
      status: 'succeeded', failureCode: null, failureMessage: null, amountRefunded: 0, refunded: false, gatewayId: 'gw_builtin_simulator',
      paymentMethod: 'pm_card_visa', paymentMethodDetails: { type: 'card', brand: 'visa', last4: '4242' },
      description: 'Order 1', metadata: { order: '1' }, createdAt: at,
    });
    expect(p.id).toMatch(/^pay_/);
    expect(p.attempts).toEqual([expect.objectContaining({ gateway: 'gw_builtin_simulator', outcome: 'succeeded', code: null })]);
    expect(await h.services.payments.retrieve(ctx, p.id)).toEqual(p);
  });

  it.each([
    ['pm_card_declined', 'card_declined'],
    ['pm_card_insufficient_funds', 'insufficient_funds'],
  ])('should return a %s payment as failed with %s, not throw', async (paymentMethod, failureCode) => {
    const p = await pay({ paymentMethod });
    expect(p).toMatchObject({ status: 'failed', failureCode, gatewayId: 'gw_builtin_simulator' });
    expect(p.failureMessage).toMatch(/\S/);
    expect(p.attempts).toEqual([expect.objectContaining({ outcome: 'declined', code: failureCode })]);
    expect(await h.services.payments.retrieve(ctx, p.id)).toEqual(p);
  });

  it('should keep amounts as integer minor units, zero-decimal currencies included', async () => {
    expect(await pay({ amount: 1, currency: 'usd' })).toMatchObject({ amount: 1, currency: 'USD' });
    expect(await pay({ amount: 500, currency: 'jpy' })).toMatchObject({ amount: 500, currency: 'JPY' });
    expect(await pay({ amount: 1_000_000_000_000, currency: 'usd' })).toMatchObject({ amount: 1_000_000_000_000 });
  });

  it.each([
    [{ amount: 1.5 }, 'invalid_parameter', 'amount'],
    [{ amount: 0 }, 'invalid_parameter', 'amount'],
    [{ amount: -5 }, 'invalid_parameter', 'amount'],
    [{ amount: '100' }, 'invalid_parameter', 'amount'],
    [{ amount: 1e20 }, 'invalid_parameter', 'amount'],
    [{ amount: undefined }, 'missing_parameter', 'amount'],
    [{ currency: 'usdollar' }, 'invalid_parameter', 'currency'],
    [{ currency: 'xyz' }, 'invalid_parameter', 'currency'],
    [{ paymentMethod: 'cash' }, 'invalid_parameter', 'paymentMethod'],
    [{ tip: 5 }, 'unknown_parameter', 'tip'],
  ])('should refuse %j with 400 %s naming %s, creating nothing', async (input, code, param) => {
    const own = (await h.account()).test;
    expect(await refusal(pay(input, own))).toEqual({ code, param, status: 400 });
    expect((await h.services.payments.list(own, {})).total).toBe(0);
  });

  it('should refuse test tokens with a live key (400 invalid_parameter paymentMethod)', async () => {
    const live = (await h.account()).live;
    expect(await refusal(pay({}, live))).toEqual({ code: 'invalid_parameter', param: 'paymentMethod', status: 400 });
  });

  it('should answer 404 for an unknown customer, naming customerId', async () => {
    expect(await refusal(pay({ customerId: 'cus_doesnotexist' }))).toEqual({ code: 'resource_not_found', param: 'customerId', status: 404 });
  });

  it('should record payment.succeeded or payment.failed with the payment as returned', async () => {
    const own = (await h.account()).test;
    const ok = await pay({}, own);
    const failed = await pay({ paymentMethod: 'pm_card_declined' }, own);
    const events = (await h.services.events.list(own, {})).data.filter((e) => e.type.startsWith('payment.'));
    expect(events.map((e) => [e.type, e.data.object])).toEqual(expect.arrayContaining([['payment.succeeded', ok], ['payment.failed', failed]]));
    expect(events).toHaveLength(2);
  });

  it("should not show one account's payment to another", async () => {
    const p = await pay({});
    const stranger = (await h.account()).test;
    expect(await refusal(h.services.payments.retrieve(stranger, p.id))).toMatchObject({ code: 'resource_not_found', status: 404 });
  });
});

describe('RefundService.create', () => {
  const refund = (input: Record<string, unknown>, on: RequestContext = ctx, paymentIdFromPath?: string) =>
    h.services.refunds.create(on, input, undefined, paymentIdFromPath);
  const payment = (id: string): Promise<Payment> => h.services.payments.retrieve(ctx, id);

  it('should refund part, then the rest, keeping amountRefunded and refunded on the payment', async () => {
    const p = await pay({ amount: 1000 });
    const first = await refund({ paymentId: p.id, amount: 300, reason: 'requested_by_customer' });
    expect(first).toMatchObject({ object: 'refund', paymentId: p.id, amount: 300, currency: 'USD', status: 'succeeded', reason: 'requested_by_customer' });
    expect(first.id).toMatch(/^re_/);
    expect(await payment(p.id)).toMatchObject({ amountRefunded: 300, refunded: false, status: 'succeeded' });
    // No amount: whatever is left.
    const rest = await refund({}, ctx, p.id);
    expect(rest).toMatchObject({ amount: 700, status: 'succeeded' });
    expect(await payment(p.id)).toMatchObject({ amountRefunded: 1000, refunded: true });
    expect(await refusal(refund({ paymentId: p.id }))).toEqual({ code: 'payment_not_refundable', param: 'paymentId', status: 422 });
    expect(await refusal(refund({ paymentId: p.id, amount: 1 }))).toEqual({ code: 'refund_exceeds_remaining', param: 'amount', status: 422 });
  });

  it('should refuse more than is left with 422 refund_exceeds_remaining naming amount, reserving nothing', async () => {
    const p = await pay({ amount: 500 });
    expect(await refusal(refund({ paymentId: p.id, amount: 501 }))).toEqual({ code: 'refund_exceeds_remaining', param: 'amount', status: 422 });
    expect(await payment(p.id)).toMatchObject({ amountRefunded: 0, refunded: false });
    await refund({ paymentId: p.id, amount: 200 });
    expect(await refusal(refund({ paymentId: p.id, amount: 301 }))).toEqual({ code: 'refund_exceeds_remaining', param: 'amount', status: 422 });
    expect(await refund({ paymentId: p.id, amount: 300 })).toMatchObject({ amount: 300, status: 'succeeded' });
    expect(await payment(p.id)).toMatchObject({ amountRefunded: 500, refunded: true });
  });

  it.each(['pm_card_declined', 'pm_card_insufficient_funds'])('should refuse refunding a %s payment with 422 payment_not_refundable', async (paymentMethod) => {
    const p = await pay({ paymentMethod });
    expect(p.status).toBe('failed');
    expect(await refusal(refund({ paymentId: p.id }))).toEqual({ code: 'payment_not_refundable', param: 'paymentId', status: 422 });
    expect(await refusal(refund({ paymentId: p.id, amount: 100 }))).toEqual({ code: 'payment_not_refundable', param: 'paymentId', status: 422 });
    expect(await payment(p.id)).toEqual(p);
  });

  it.each([
    [{ paymentId: 'pay_nope' }, 'resource_not_found', 'paymentId', 404],
    [{}, 'missing_parameter', 'paymentId', 400],
    [{ paymentId: 'pay_x', amount: 1.5 }, 'invalid_parameter', 'amount', 400],
    [{ paymentId: 'pay_x', amount: 0 }, 'invalid_parameter', 'amount', 400],
    [{ paymentId: 'pay_x', reason: 'r'.repeat(201) }, 'invalid_parameter', 'reason', 400],
    [{ paymentId: 'pay_x', note: 'x' }, 'unknown_parameter', 'note', 400],
  ])('should refuse %j with %s naming %s', async (input, code, param, status) => {
    expect(await refusal(refund(input))).toEqual({ code, param, status });
  });

  it('should refuse a paymentId in the body when the payment comes from the path', async () => {
    const p = await pay({});
    expect(await refusal(refund({ paymentId: p.id }, ctx, p.id))).toEqual({ code: 'unknown_parameter', param: 'paymentId', status: 400 });
    expect(await payment(p.id)).toEqual(p);
  });

  it("should not refund another account's payment", async () => {
    const p = await pay({});
    const stranger = (await h.account()).test;
    expect(await refusal(refund({ paymentId: p.id }, stranger))).toEqual({ code: 'resource_not_found', param: 'paymentId', status: 404 });
    expect(await payment(p.id)).toEqual(p);
  });
});

describe('PaymentService.create retried under its Idempotency-Key', () => {
  it('should replay the first answer though a check before the claim now refuses (the rate it used is gone)', async () => {
    const { test: on } = await h.account();
    await h.services.fx.replace(on, { rates: [{ from: 'THB', to: 'USD', rate: '0.028' }] });
    const body = { amount: 1000, currency: 'usd', originalCurrency: 'thb', paymentMethod: 'pm_card_visa' };
    const idem = { scope: idempotencyScope(on.accountId, on.mode), key: 'retry-after-rates-change', fingerprint: 'fp', requester: on.keyId };
    const first = await h.services.payments.create(on, body, idem);
    expect(first.status).toBe('succeeded');
    await h.services.fx.replace(on, { rates: [] });
    // Without the key the same request is now refused; the retry gets what the first try got.
    expect(await refusal(h.services.payments.create(on, body))).toMatchObject({ code: 'fx_rate_unavailable' });
    const replay = await h.services.payments.create(on, body, idem).then(
      () => null,
      (err: unknown) => err,
    );
    expect(replay).toBeInstanceOf(IdempotentReplay);
    expect(JSON.parse((replay as IdempotentReplay).stored)).toEqual(first);
  });
});
