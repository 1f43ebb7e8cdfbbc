import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';

let app: TestApp;
let key: string;
let customerId: string;
beforeAll(async () => {
  app = await startTestApp({ env: { PUBLIC_URL: 'https://pay.example.com' } });
  key = app.account.testKey;
  customerId = (await app.request('POST', '/v1/customers', { key, body: { email: 'billing@example.com', name: 'Ada Lovelace' } })).body.data.id;
});
afterAll(() => app.stop());

const create = (body: Record<string, unknown>, k = key) => app.request('POST', '/v1/invoices', { key: k, body });
const invoice = async (body: Record<string, unknown> = {}) => {
  const res = await create({ customerId, currency: 'usd', lineItems: [{ description: 'Consulting', quantity: 3, unitAmount: 15000 }, { description: 'Travel', unitAmount: 4250 }], ...body });
  expect(res.status).toBe(201);
  return res.body.data;
};
const post = (p: string, body?: Record<string, unknown>, headers: Record<string, string> = {}) => app.request('POST', p, { key, body, headers });
const customerWithCard = async (number = '4242424242424242', email = `payer-${Math.random().toString(36).slice(2)}@example.com`) => {
  const c = (await app.request('POST', '/v1/customers', { key, body: { email } })).body.data;
  const saved = await post(`/v1/customers/${c.id}/payment-methods`, { card: { number, expMonth: 12, expYear: 2034, cvc: '123' } });
  expect(saved.status).toBe(201);
  return c.id as string;
};

describe('invoices API', () => {
  it('should create a draft with priced line items, totals, a number and its event', async () => {
    const inv = await invoice({ memo: 'Thank you', dueDate: '2026-12-31', metadata: { po: '77' } });
    expect(inv).toMatchObject({
      object: 'invoice', livemode: false, status: 'draft', paymentStatus: 'unpaid', currency: 'USD', customerId,
      subtotal: 49250, total: 49250, amountDue: 49250, amountPaid: 0, memo: 'Thank you', dueDate: '2026-12-31T23:59:59.999Z',
      paidOutOfBand: false, emailStatus: null, hostedUrl: null, metadata: { po: '77' },
    });
    expect(inv.id).toMatch(/^in_[0-9A-Za-z]{24}$/);
    expect(inv.number).toMatch(/^INV-\d{6}$/);
    expect(inv.lineItems).toEqual([
      { id: expect.stringMatching(/^il_/), description: 'Consulting', quantity: 3, unitAmount: 15000, amount: 45000, periodStart: null, periodEnd: null, proration: false, taxRateIds: [] },
      { id: expect.stringMatching(/^il_/), description: 'Travel', quantity: 1, unitAmount: 4250, amount: 4250, periodStart: null, periodEnd: null, proration: false, taxRateIds: [] },
    ]);
    expect((await app.request('GET', `/v1/invoices/${inv.id}`, { key })).body.data).toEqual(inv);
    const events = (await app.request('GET', '/v1/events?type=invoice.created&pageSize=100', { key })).body.data;
    expect(events.some((e: { data: { object: { id: string } } }) => e.data.object.id === inv.id)).toBe(true);
  });

  it('should refuse an invoice without line items, naming lineItems, and bad lines by path', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ customerId, currency: 'usd', lineItems: [] }, 'lineItems'],
      [{ customerId, currency: 'usd' }, 'lineItems'],
      [{ customerId, currency: 'usd', lineItems: [{ description: 'x', unitAmount: 1.5 }] }, 'lineItems[0].unitAmount'],
      [{ customerId, currency: 'usd', lineItems: [{ description: '', unitAmount: 1 }] }, 'lineItems[0].description'],
      [{ customerId, currency: 'usd', lineItems: [{ description: 'x', unitAmount: 1, quantity: 0 }] }, 'lineItems[0].quantity'],
      // quantity × unitAmount past 10^12, computed exactly.
      [{ customerId, currency: 'usd', lineItems: [{ description: 'x', unitAmount: 1_000_000_000_000, quantity: 2 }] }, 'lineItems[0].quantity'],
      [{ customerId, currency: 'usd', lineItems: [{ description: 'a', unitAmount: 600_000_000_000 }, { description: 'b', unitAmount: 600_000_000_000 }] }, 'lineItems'],
      [{ customerId, currency: 'usd', lineItems: [{ description: 'x', unitAmount: 1 }], dueDate: 'tomorrow' }, 'dueDate'],
      [{ customerId, currency: 'usd', lineItems: [{ description: 'x', unitAmount: 1 }], dueDate: '2026-02-31' }, 'dueDate'],
      [{ customerId, currency: 'usd', lineItems: [{ description: 'x', unitAmount: 1 }], dueDate: '0000-01-01' }, 'dueDate'],
    ];
    for (const [body, param] of cases) {
      const res = await create(body);
      expect([param, res.status, res.body.error.param]).toEqual([param, 400, param]);
    }
    const unknown = await create({ customerId: 'cus_nope', currency: 'usd', lineItems: [{ description: 'x', unitAmount: 1 }] });
    expect([unknown.status, unknown.body.error.param]).toEqual([404, 'customerId']);
  });

  it(`should number invoices per account and mode with no gap and no duplicate under 20 concurrent creates (${DIALECT})`, async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => create({ customerId, currency: 'eur', lineItems: [{ description: 'Race', unitAmount: 100 }] })));
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(201));
    const all = (await app.request('GET', '/v1/invoices?pageSize=100&sortDirection=asc', { key })).body.data as Array<{ number: string }>;
    const numbers = all.map((i) => Number(i.number.slice(4))).sort((a, b) => a - b);
    expect(numbers).toEqual(Array.from({ length: numbers.length }, (_, i) => i + 1));
    // Live mode counts on its own.
    const liveCustomer = (await app.request('POST', '/v1/customers', { key: app.account.liveKey, body: { email: 'live@example.com' } })).body.data.id;
    const live = await create({ customerId: liveCustomer, currency: 'usd', lineItems: [{ description: 'Live', unitAmount: 100 }] }, app.account.liveKey);
    expect(live.body.data.number).toBe('INV-000001');
  });

  it('should take the account\'s prefix, set with PATCH /v1/account', async () => {
    const account = await app.request('GET', '/v1/account', { key });
    expect(account.body.data).toMatchObject({ object: 'account', name: 'Test account', invoicePrefix: 'INV', dunningRetryDays: [1, 3, 7] });
    const patched = await app.request('PATCH', '/v1/account', { key, body: { invoicePrefix: 'ACME', name: 'Acme Ltd' } });
    expect(patched.body.data).toMatchObject({ invoicePrefix: 'ACME', name: 'Acme Ltd' });
    try {
      expect((await invoice()).number).toMatch(/^ACME-\d{6}$/);
      for (const [body, param] of [[{ invoicePrefix: 'inv' }, 'invoicePrefix'], [{ invoicePrefix: 'TOOLONGPREFIX1' }, 'invoicePrefix'], [{ dunningRetryDays: [3, 1] }, 'dunningRetryDays[1]'], [{ rateLimitPerMinute: 5 }, 'rateLimitPerMinute']] as const) {
        const res = await app.request('PATCH', '/v1/account', { key, body });
        expect([param, res.status, res.body.error.param]).toEqual([param, 400, param]);
      }
    } finally {
      await app.request('PATCH', '/v1/account', { key, body: { invoicePrefix: 'INV', name: 'Test account' } });
    }
  });

  it('should change a draft only, and list with customer and status filters', async () => {
    const inv = await invoice();
    const patched = await app.request('PATCH', `/v1/invoices/${inv.id}`, { key, body: { lineItems: [{ description: 'Only line', unitAmount: 999, quantity: 2 }], memo: null, metadata: { po: '1' } } });
    expect(patched.body.data).toMatchObject({ total: 1998, amountDue: 1998, memo: null, metadata: { po: '1' }, lineItems: [{ description: 'Only line', amount: 1998 }] });
    await post(`/v1/invoices/${inv.id}/void`);
    const refused = await app.request('PATCH', `/v1/invoices/${inv.id}`, { key, body: { memo: 'late' } });
    expect([refused.status, refused.body.error.code]).toEqual([422, 'invalid_state']);
    const voided = await app.request('GET', `/v1/invoices?customerId=${customerId}&status=void&pageSize=100`, { key });
    expect(voided.body.data.map((i: { id: string }) => i.id)).toContain(inv.id);
    expect(voided.body.data.every((i: { status: string }) => i.status === 'void')).toBe(true);
    expect((await app.request('GET', '/v1/invoices?status=open', { key })).body.error).toMatchObject({ code: 'invalid_parameter', param: 'status' });
  });

  it('should charge the customer\'s default card through routing, settle paid with its event, and refuse a second pay', async () => {
    const payer = await customerWithCard();
    const inv = await invoice({ customerId: payer });
    const res = await post(`/v1/invoices/${inv.id}/pay`, {});
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ status: 'paid', paymentStatus: 'paid', amountPaid: 49250, amountDue: 0, paidOutOfBand: false, paidAt: expect.any(String) });
    const payment = (await app.request('GET', `/v1/payments/${res.body.data.latestPaymentId}`, { key })).body.data;
    expect(payment).toMatchObject({ status: 'succeeded', amount: 49250, invoiceId: inv.id, customerId: payer });
    const again = await post(`/v1/invoices/${inv.id}/pay`, {});
    expect([again.status, again.body.error.code]).toEqual([422, 'invalid_state']);
    const types = (await app.request('GET', '/v1/events?pageSize=100', { key })).body.data
      .filter((e: { data: { object: { id: string } } }) => e.data.object.id === inv.id).map((e: { type: string }) => e.type);
    expect(types).toEqual(expect.arrayContaining(['invoice.created', 'invoice.sent', 'invoice.paid']));
  });

  it('should record a decline as paymentStatus failed with invoice.payment_failed, the invoice staying sent, then pay with another card', async () => {
    const payer = await customerWithCard('4000000000000341');
    const inv = await invoice({ customerId: payer });
    const declined = await post(`/v1/invoices/${inv.id}/pay`, {});
    expect(declined.status).toBe(200);
    expect(declined.body.data).toMatchObject({ status: 'sent', paymentStatus: 'failed', amountPaid: 0 });
    const events = (await app.request('GET', '/v1/events?type=invoice.payment_failed&pageSize=100', { key })).body.data;
    expect(events.some((e: { data: { object: { id: string } } }) => e.data.object.id === inv.id)).toBe(true);
    // A retry of the same attempt would replay; a new attempt gets its own key and charges.
    const paid = await post(`/v1/invoices/${inv.id}/pay`, { paymentMethod: 'pm_card_visa' });
    expect(paid.body.data).toMatchObject({ status: 'paid', paymentStatus: 'paid' });
    const payments = (await app.request('GET', '/v1/payments?pageSize=100', { key })).body.data.filter((p: { invoiceId: string }) => p.invoiceId === inv.id);
    expect(payments.map((p: { status: string }) => p.status).sort()).toEqual(['failed', 'succeeded']);
  });

  it('should refuse a pay with no card to charge, in either mode, leaving the draft exactly as it was', async () => {
    for (const k of [key, app.account.liveKey]) {
      const bare = (await app.request('POST', '/v1/customers', { key: k, body: { email: `nocard-${Math.random().toString(36).slice(2)}@example.com` } })).body.data.id;
      const inv = (await create({ customerId: bare, currency: 'usd', lineItems: [{ description: 'x', unitAmount: 100 }] }, k)).body.data;
      // No default saved card: nothing is charged (the test simulator's fallback card does not apply to invoices).
      const res = await app.request('POST', `/v1/invoices/${inv.id}/pay`, { key: k, body: {} });
      expect([res.status, res.body.error.code, res.body.error.param]).toEqual([400, 'missing_parameter', 'paymentMethod']);
      // A card refused by the payments service before anything was written: the draft stays a draft.
      const refused = await app.request('POST', `/v1/invoices/${inv.id}/pay`, { key: k, body: { paymentMethod: 'pm_nope' } });
      expect(refused.status).toBeGreaterThanOrEqual(400);
      expect(refused.status).toBeLessThan(500);
      const after = (await app.request('GET', `/v1/invoices/${inv.id}`, { key: k })).body.data;
      expect(after).toMatchObject({ status: 'draft', paymentStatus: 'unpaid', sentAt: null });
      expect((await app.request('POST', `/v1/invoices/${inv.id}/send`, { key: k })).body.data.status).toBe('sent');
      const payments = (await app.request('GET', '/v1/payments?pageSize=100', { key: k })).body.data.filter((p: { invoiceId: string }) => p.invoiceId === inv.id);
      expect(payments).toEqual([]);
    }
  });

  it('should settle a charge that succeeds after its invoice was released, never ignoring the money', async () => {
    const payer = await customerWithCard();
    const inv = await invoice({ customerId: payer });
    const invoices = app.server.services.invoices as unknown as { settleCharge(ctx: unknown, id: string, p: { id: string; status: string; amount: number }): Promise<{ status: string }> };
    const ctx = { accountId: app.account.accountId, mode: 'test', permissions: ['*'], requestId: 'late', clock: app.server.services.clock };
    // The invoice never waited for this charge (its request was released), yet the charge succeeded.
    const settled = await invoices.settleCharge(ctx, inv.id, { id: 'pay_late_charge_000000000000', status: 'succeeded', amount: inv.amountDue });
    expect(settled).toMatchObject({ status: 'paid', paymentStatus: 'paid', latestPaymentId: 'pay_late_charge_000000000000' });
    // Seen again (the job and a read both settle it): still once.
    await invoices.settleCharge(ctx, inv.id, { id: 'pay_late_charge_000000000000', status: 'succeeded', amount: inv.amountDue });
    const paidEvents = (await app.request('GET', '/v1/events?type=invoice.paid&pageSize=100', { key })).body.data.filter((e: { data: { object: { id: string } } }) => e.data.object.id === inv.id);
    expect(paidEvents).toHaveLength(1);
  });

  it('should mark paid out of band and void, each only from draft or sent', async () => {
    const inv = await invoice();
    const paid = await post(`/v1/invoices/${inv.id}/mark-paid`);
    expect(paid.body.data).toMatchObject({ status: 'paid', paidOutOfBand: true, paymentStatus: 'paid', amountPaid: inv.total, amountDue: 0, paidAt: expect.any(String) });
    expect((await post(`/v1/invoices/${inv.id}/mark-paid`)).body.error.code).toBe('invalid_state');
    expect((await post(`/v1/invoices/${inv.id}/void`)).body.error.code).toBe('invalid_state');
    const other = await invoice();
    const voided = await post(`/v1/invoices/${other.id}/void`);
    expect(voided.body.data).toMatchObject({ status: 'void', amountDue: 0 });
    expect((await post(`/v1/invoices/${other.id}/pay`, {})).body.error.code).toBe('invalid_state');
    expect((await post(`/v1/invoices/${other.id}/mark-paid`, { amount: 1 })).body.error).toMatchObject({ code: 'unknown_parameter', param: 'amount' });
    const types = (await app.request('GET', '/v1/events?pageSize=100', { key })).body.data.map((e: { type: string }) => e.type);
    expect(types).toEqual(expect.arrayContaining(['invoice.paid', 'invoice.voided']));
  });

  it(`should settle an invoice once when a pay and a mark-paid race (${DIALECT})`, async () => {
    for (let round = 0; round < 5; round++) {
      const payer = await customerWithCard();
      const inv = await invoice({ customerId: payer });
      const [pay, mark] = await Promise.all([post(`/v1/invoices/${inv.id}/pay`, {}), post(`/v1/invoices/${inv.id}/mark-paid`)]);
      const winners = [pay, mark].filter((r) => r.status === 200 && r.body.data.status === 'paid');
      expect(winners.length).toBeGreaterThanOrEqual(1);
      const after = (await app.request('GET', `/v1/invoices/${inv.id}`, { key })).body.data;
      expect(after.status).toBe('paid');
      const charged = (await app.request('GET', '/v1/payments?pageSize=100', { key })).body.data
        .filter((p: { invoiceId: string; status: string }) => p.invoiceId === inv.id && p.status === 'succeeded');
      // Paid once: by card (and then not out of band), or out of band (and then no card charge).
      expect(after.paidOutOfBand ? charged.length : charged.length - 1).toBe(0);
      const paidEvents = (await app.request('GET', '/v1/events?type=invoice.paid&pageSize=100', { key })).body.data
        .filter((e: { data: { object: { id: string } } }) => e.data.object.id === inv.id);
      expect(paidEvents).toHaveLength(1);
    }
  });

  it('should replay a pay under the same Idempotency-Key', async () => {
    const payer = await customerWithCard();
    const inv = await invoice({ customerId: payer });
    const first = await post(`/v1/invoices/${inv.id}/pay`, {}, { 'Idempotency-Key': 'pay-invoice-1' });
    const again = await post(`/v1/invoices/${inv.id}/pay`, {}, { 'Idempotency-Key': 'pay-invoice-1' });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
  });

  it('should answer the PDF as application/pdf, the same bytes while the status is unchanged, with the number and lines', async () => {
    const inv = await invoice({ lineItems: [{ description: 'Design work', unitAmount: 1200 }] });
    const first = await app.request('GET', `/v1/invoices/${inv.id}/pdf`, { key });
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toBe('application/pdf');
    const second = await app.request('GET', `/v1/invoices/${inv.id}/pdf`, { key });
    expect(Buffer.compare(first.buffer, second.buffer)).toBe(0);
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'inv-pdf-')), 'i.pdf');
    fs.writeFileSync(file, first.buffer);
    const text = execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' });
    expect(text).toContain(inv.number);
    expect(text).toContain('Design work');
    expect(text).toMatch(/\$12\.00/);
    expect(text).toMatch(/DRAFT/);
    await post(`/v1/invoices/${inv.id}/mark-paid`);
    const paid = await app.request('GET', `/v1/invoices/${inv.id}/pdf`, { key });
    expect(Buffer.compare(first.buffer, paid.buffer)).not.toBe(0);
  });
});
