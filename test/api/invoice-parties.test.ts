import { startTestApp, type TestApp, type TestAccount } from '../helpers/app';
import { SmtpSink } from '../helpers/smtp';
import { attachments, parseMime } from '../helpers/mime';
import { PdfReader } from '../unit/invoices/pdf-text';

/*
 * The parties on an invoice end to end (API.md §12): the account's and the customer's address and
 * tax ids, set over the API, printed on the PDF a download gives and on the one the e-mail carries.
 */

let app: TestApp;
let account: TestAccount;
const sink = new SmtpSink();
const reader = new PdfReader();
beforeAll(async () => {
  await sink.start();
  app = await startTestApp({ env: { SMTP_URL: sink.url, MAIL_FROM: 'Acme Billing <billing@acme.test>', PUBLIC_URL: 'https://pay.example.com' } });
  account = await app.createAccount();
  const set = await app.request('PATCH', '/v1/account', {
    key: account.testKey,
    body: {
      name: 'Acme Tools GmbH', taxId: 'DE123456789', supportEmail: 'billing@acme.example',
      address: { line1: 'Friedrichstraße 68', postalCode: '10117', city: 'Berlin', country: 'DE' },
    },
  });
  expect(set.status).toBe(200);
});
afterAll(async () => {
  reader.close();
  await app.stop();
  await sink.stop();
});

const key = () => account.testKey;

async function customerAndInvoice(customer: Record<string, unknown>) {
  const c = await app.request('POST', '/v1/customers', { key: key(), body: { email: `buyer-${Math.random().toString(36).slice(2)}@example.com`, ...customer } });
  expect(c.status).toBe(201);
  const inv = await app.request('POST', '/v1/invoices', { key: key(), body: { customerId: c.body.data.id, currency: 'eur', lineItems: [{ description: 'Beratung', unitAmount: 1200 }] } });
  expect(inv.status).toBe(201);
  return { customer: c.body.data, invoice: inv.body.data };
}

/** The PDF's lines, trimmed, no-break spaces read as spaces. */
const linesOf = (pdf: Buffer) => reader.text(pdf, { raw: true }).split('\n').map((l) => l.replace(/[\u00a0\u202f]/g, ' ').trim());

async function pdfLines(invoiceId: string): Promise<string[]> {
  const res = await app.request('GET', `/v1/invoices/${invoiceId}/pdf`, { key: key() });
  expect(res.status).toBe(200);
  return linesOf(res.buffer);
}

describe('the parties on an invoice', () => {
  it('should print the seller and the buyer with both addresses and tax ids, in the customer\'s language, and follow a change', async () => {
    const { customer, invoice } = await customerAndInvoice({
      name: 'Hans Müller', locale: 'de',
      address: { line1: 'Hauptstraße 5', line2: '3. OG', postalCode: '80331', city: 'München', country: 'DE' },
      taxIds: [{ type: 'eu_vat', value: 'DE 987 654 321' }, { type: 'gb_vat', value: 'GB123456789' }],
    });
    const lines = await pdfLines(invoice.id);
    for (const expected of [
      'Acme Tools GmbH', 'Friedrichstraße 68', '10117 Berlin', 'USt-IdNr.: DE123456789', 'Kontakt: billing@acme.example',
      'Hans Müller', 'Hauptstraße 5', '3. OG', '80331 München', 'USt-IdNr.: DE987654321', 'USt-IdNr.: GB123456789',
    ]) {
      expect([expected, lines.includes(expected)]).toEqual([expected, true]);
    }
    expect(lines.filter((l) => l === 'Deutschland')).toHaveLength(2);

    // The customer's address and tax ids removed: the buyer's block goes, the seller's stays.
    await app.request('PATCH', `/v1/customers/${customer.id}`, { key: key(), body: { address: null, taxIds: null } });
    const after = await pdfLines(invoice.id);
    expect(after).not.toContain('Hauptstraße 5');
    expect(after.some((l) => l.includes('DE987654321'))).toBe(false);
    expect(after).toContain('USt-IdNr.: DE123456789');
  });

  it('should attach a PDF with both parties to the e-mail, the one a download gives (en, another country)', async () => {
    const { invoice } = await customerAndInvoice({
      name: 'Jane Smith', locale: 'en',
      address: { line1: '350 Fifth Avenue', postalCode: '10118', city: 'New York', state: 'NY', country: 'US' },
      taxIds: [{ type: 'us_ein', value: '12-3456789' }],
    });
    const sent = await app.request('POST', `/v1/invoices/${invoice.id}/send`, { key: key() });
    expect(sent.status).toBe(200);
    const download = (await app.request('GET', `/v1/invoices/${invoice.id}/pdf`, { key: key() })).buffer;
    const before = sink.received.length;
    const results = await app.server.services.mail.sendDue();
    expect(results.map((r) => r.status)).toContain('sent');
    const mail = sink.received.slice(before).map((m) => parseMime(m.raw)).find((m) => attachments(m).some((a) => a.filename === `${invoice.number}.pdf`));
    const attached = attachments(mail!).find((a) => a.filename === `${invoice.number}.pdf`)!;
    expect(Buffer.compare(attached.content, download)).toBe(0);
    const lines = linesOf(attached.content);
    for (const expected of [
      'Friedrichstraße 68', '10117 Berlin', 'Germany', 'VAT: DE123456789', 'Contact: billing@acme.example',
      'Jane Smith', '350 Fifth Avenue', 'New York, NY 10118', 'United States', 'EIN: 12-3456789',
    ]) {
      expect([expected, lines.includes(expected)]).toEqual([expected, true]);
    }
  });

  it('should print both parties on a subscription\'s e-mailed invoices, the first and a renewal of the billing run', async () => {
    const post = async (p: string, body: Record<string, unknown>) => {
      const res = await app.request('POST', p, { key: key(), body });
      expect([p, res.status]).toEqual([p, p.endsWith('/advance') ? 200 : 201]);
      return res.body.data;
    };
    const clock = await post('/v1/test-clocks', { frozenTime: '2026-03-01T10:00:00Z' });
    const buyer = await post('/v1/customers', {
      email: 'subscriber@example.fr', name: 'Élodie Martin', locale: 'fr', testClockId: clock.id,
      address: { line1: '8 rue de la Paix', postalCode: '75002', city: 'Paris', country: 'FR' }, taxIds: [{ type: 'eu_vat', value: 'FR12345678901' }],
    });
    const product = await post('/v1/products', { name: 'Abonnement' });
    const price = await post('/v1/prices', { productId: product.id, unitAmount: 2500, currency: 'eur', recurring: { interval: 'month' } });
    const sub = await post('/v1/subscriptions', { customerId: buyer.id, priceId: price.id, collectionMethod: 'send_invoice' });
    await post(`/v1/test-clocks/${clock.id}/advance`, { frozenTime: '2026-04-01T11:00:00Z' });
    const invoices = (await app.request('GET', `/v1/subscriptions/${sub.id}/invoices?sortDirection=asc`, { key: key() })).body.data as Array<{ number: string; emailStatus: string }>;
    expect(invoices.map((i) => i.emailStatus)).toEqual(['queued', 'queued']);
    const before = sink.received.length;
    await app.server.services.mail.sendDue();
    const mails = sink.received.slice(before).map((m) => parseMime(m.raw));
    for (const { number } of invoices) {
      const attached = mails.flatMap((m) => attachments(m)).find((a) => a.filename === `${number}.pdf`);
      const lines = linesOf(attached!.content);
      for (const expected of ['Friedrichstraße 68', 'Allemagne', 'N° TVA : DE123456789', '8 rue de la Paix', '75002 Paris', 'France', 'N° TVA : FR12345678901']) {
        expect([number, expected, lines.includes(expected)]).toEqual([number, expected, true]);
      }
    }
  });
});
