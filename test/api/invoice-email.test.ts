import { startTestApp, type TestApp } from '../helpers/app';
import { SmtpSink } from '../helpers/smtp';
import { attachments, parseMime, textOf } from '../helpers/mime';

let app: TestApp;
let key: string;
const sink = new SmtpSink();
beforeAll(async () => {
  await sink.start();
  app = await startTestApp({ env: { SMTP_URL: sink.url, MAIL_FROM: 'Acme Billing <billing@acme.test>', PUBLIC_URL: 'https://pay.example.com' } });
  key = app.account.testKey;
});
afterAll(async () => {
  await app.stop();
  await sink.stop();
});

async function draft(locale?: string, currency = 'eur') {
  const customer = (await app.request('POST', '/v1/customers', { key, body: { email: `mail-${Math.random().toString(36).slice(2)}@example.com`, name: 'Grete Müller', ...(locale ? { locale } : {}) } })).body.data;
  return (await app.request('POST', '/v1/invoices', { key, body: { customerId: customer.id, currency, lineItems: [{ description: 'Beratung', unitAmount: 1200 }] } })).body.data;
}

describe('sending an invoice', () => {
  it('should queue the e-mail with the sent state, deliver it over SMTP with the PDF a download gives, and follow it in emailStatus', async () => {
    const inv = await draft('de');
    const sent = await app.request('POST', `/v1/invoices/${inv.id}/send`, { key });
    expect(sent.status).toBe(200);
    expect(sent.body.data).toMatchObject({ status: 'sent', emailStatus: 'queued', sentAt: expect.any(String), hostedUrl: `https://pay.example.com/invoice/${inv.id}` });
    const pdf = (await app.request('GET', `/v1/invoices/${inv.id}/pdf`, { key })).buffer;
    const results = await app.server.services.mail.sendDue();
    expect(results.map((r) => r.status)).toEqual(['sent']);
    expect(sink.received).toHaveLength(1);
    const message = parseMime(sink.received[0].raw);
    expect(textOf(message, 'text/plain')).toContain(inv.number);
    // The pay link is in both parts; MAIL_FROM is set, so the start did not warn about the sender.
    expect(textOf(message, 'text/plain')).toContain(`https://pay.example.com/invoice/${inv.id}`);
    expect(app.logs.join('')).not.toContain('MAIL_FROM is not set');
    // Intl's no-break space between amount and symbol, read as a space.
    expect(textOf(message, 'text/plain')?.replace(/[\u00a0\u202f]/g, ' ')).toContain('12,00 €');
    expect(textOf(message, 'text/html')).toContain(`https://pay.example.com/invoice/${inv.id}`);
    const [attached] = attachments(message);
    expect(attached).toMatchObject({ filename: `${inv.number}.pdf`, contentType: 'application/pdf' });
    // The bytes attached are the bytes a download gives while the invoice is sent.
    expect(Buffer.compare(attached.content, pdf)).toBe(0);
    expect((await app.request('GET', `/v1/invoices/${inv.id}`, { key })).body.data.emailStatus).toBe('sent');
    const again = await app.request('POST', `/v1/invoices/${inv.id}/send`, { key });
    expect([again.status, again.body.error.code]).toEqual([422, 'invalid_state']);
    const events = (await app.request('GET', '/v1/events?type=invoice.sent&pageSize=100', { key })).body.data;
    expect(events.some((e: { data: { object: { id: string } } }) => e.data.object.id === inv.id)).toBe(true);
  });

  it('should keep the invoice sent when SMTP is down, retry, and deliver once the server is up', async () => {
    const inv = await draft();
    await sink.stop();
    try {
      expect((await app.request('POST', `/v1/invoices/${inv.id}/send`, { key })).body.data.status).toBe('sent');
      const [failed] = await app.server.services.mail.sendDue();
      expect(failed.status).toBe('queued');
      expect((await app.request('GET', `/v1/invoices/${inv.id}`, { key })).body.data).toMatchObject({ status: 'sent', emailStatus: 'queued' });
    } finally {
      await sink.start();
    }
    // Its retry is due later: make it due now on the database's clock and run the worker again.
    await app.server.services.db.execute('UPDATE mail_outbox SET next_attempt_at = created_at WHERE about_id = $1', [inv.id]);
    const before = sink.received.length;
    const [delivered] = await app.server.services.mail.sendDue();
    expect(delivered.status).toBe('sent');
    expect(sink.received.length).toBe(before + 1);
    expect((await app.request('GET', `/v1/invoices/${inv.id}`, { key })).body.data.emailStatus).toBe('sent');
  });

  it('should not send a void invoice, and refuse a body on send', async () => {
    const inv = await draft();
    expect((await app.request('POST', `/v1/invoices/${inv.id}/send`, { key, body: { to: 'x@example.com' } })).body.error).toMatchObject({ code: 'unknown_parameter', param: 'to' });
    await app.request('POST', `/v1/invoices/${inv.id}/void`, { key });
    expect((await app.request('POST', `/v1/invoices/${inv.id}/send`, { key })).body.error.code).toBe('invalid_state');
  });
});

describe('the hosted invoice page', () => {
  it('should pay a sent invoice with a card through the public route, once', async () => {
    const inv = await draft('en', 'usd');
    await app.request('POST', `/v1/invoices/${inv.id}/send`, { key });
    const view = await app.request('GET', `/v1/public/invoices/${inv.id}`);
    expect(view.body.data).toMatchObject({ number: inv.number, amountDue: 1200, currency: 'USD', merchantName: 'Test account', status: 'sent' });
    expect(view.text).not.toContain(inv.customerId);
    const page = await app.request('GET', `/invoice/${inv.id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Pay $12.00');
    const card = { number: '4242424242424242', expMonth: 12, expYear: 2034, cvc: '123' };
    const paid = await app.request('POST', `/v1/public/invoices/${inv.id}/pay`, { body: { card }, headers: { 'Idempotency-Key': 'inv-page-1' } });
    expect(paid.body.data).toMatchObject({ status: 'succeeded', paymentId: expect.any(String) });
    const replay = await app.request('POST', `/v1/public/invoices/${inv.id}/pay`, { body: { card }, headers: { 'Idempotency-Key': 'inv-page-1' } });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.text).toBe(paid.text);
    expect((await app.request('GET', `/v1/invoices/${inv.id}`, { key })).body.data).toMatchObject({ status: 'paid', paymentStatus: 'paid', hostedUrl: null });
    expect((await app.request('POST', `/v1/public/invoices/${inv.id}/pay`, { body: { card } })).body.error.code).toBe('invalid_state');
    expect((await app.request('GET', `/invoice/${inv.id}`)).text).toContain('This invoice is paid');
    // A draft has no public page.
    const hidden = await draft();
    expect((await app.request('GET', `/v1/public/invoices/${hidden.id}`)).status).toBe(404);
  });
});
