import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';

/**
 * A draft whose card charge is out (processing: the billing run's, or POST /pay's, payment made
 * for the amount due as it was claimed) cannot be changed: its settle would mark it paid for the
 * old amount while a different one is due.
 */
describe(`an invoice being charged (${DIALECT})`, () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.stop());

  it('should refuse a PATCH while a card payment of the invoice is processing, and take it once it is not', async () => {
    const key = app.account.testKey;
    const customerId = (await app.request('POST', '/v1/customers', { key, body: { email: 'charged@example.com' } })).body.data.id;
    const created = await app.request('POST', '/v1/invoices', { key, body: { customerId, currency: 'usd', lineItems: [{ description: 'Plan', unitAmount: 1500 }] } });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    // As a charge's claim leaves it (InvoiceService.charge, InvoiceStore.claimCharges).
    await app.server.services.db.execute(
      "UPDATE invoices SET payment_status = 'processing', payment_attempts = 1, latest_payment_id = 'pay_inflight', updated_at = $2 WHERE id = $1", [id, new Date()],
    );
    const change = { lineItems: [{ description: 'Plan, discounted', unitAmount: 900 }] };
    const refused = await app.request('PATCH', `/v1/invoices/${id}`, { key, body: change });
    expect([refused.status, refused.body.error?.code]).toEqual([409, 'invoice_payment_in_progress']);
    expect((await app.request('GET', `/v1/invoices/${id}`, { key })).body.data).toMatchObject({ total: 1500, amountDue: 1500, lineItems: [{ description: 'Plan' }] });

    await app.server.services.db.execute("UPDATE invoices SET payment_status = 'failed' WHERE id = $1", [id]);
    const changed = await app.request('PATCH', `/v1/invoices/${id}`, { key, body: change });
    expect([changed.status, changed.body.data?.total]).toEqual([200, 900]);
  }, 60_000);
});
