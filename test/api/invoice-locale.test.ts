import fs from 'node:fs';
import path from 'node:path';
import { startTestApp, type TestApp } from '../helpers/app';
import { parseMime, textOf } from '../helpers/mime';
import { PdfReader, squash } from '../unit/invoices/pdf-text';

/**
 * The customer's locale everywhere an invoice is shown (API.md §7, §12): its language picks the
 * words, its region the date and number forms, in the PDF (read back with pdftotext), the mail
 * (the .eml file written without SMTP_URL, bytes as they would go out) and the hosted page.
 */

let app: TestApp;
let key: string;
const reader = new PdfReader();
beforeAll(async () => {
  app = await startTestApp({ env: { PUBLIC_URL: 'https://pay.example.com' } });
  key = app.account.testKey;
});
afterAll(async () => {
  reader.close();
  await app.stop();
});

const gql = (query: string, variables: Record<string, unknown> = {}) => app.request('POST', '/graphql', { key, body: { query, variables } });

interface Sent {
  id: string;
  number: string;
  hostedUrl: string;
  pdf: string;
  eml: Buffer;
  mail: ReturnType<typeof parseMime>;
}

/** A sent invoice of 2469.12 due on 29 Nov 2026 for a customer in `locale`: its PDF text and its mail. */
async function sendInvoice(locale: string, currency = 'eur'): Promise<Sent> {
  const customer = await app.request('POST', '/v1/customers', { key, body: { email: `${locale.toLowerCase()}-${Math.random().toString(36).slice(2)}@example.com`, name: 'Grete Example', locale } });
  expect(customer.status).toBe(201);
  const created = await app.request('POST', '/v1/invoices', {
    key,
    // One line of 2469.12, so subtotal, total and amount due all read 2469.12.
    body: { customerId: customer.body.data.id, currency, dueDate: '2026-11-29', lineItems: [{ description: 'Consulting', unitAmount: 246912 }] },
  });
  expect(created.status).toBe(201);
  const id = created.body.data.id as string;
  const sent = await app.request('POST', `/v1/invoices/${id}/send`, { key });
  expect(sent.status).toBe(200);
  const pdf = (await app.request('GET', `/v1/invoices/${id}/pdf`, { key })).buffer;
  const [result] = await app.server.services.mail.sendDue();
  expect(result.status).toBe('sent');
  const eml = fs.readFileSync(path.join(app.config.dataDir, 'outbox', `${result.mailId}.eml`));
  return { id, number: sent.body.data.number, hostedUrl: sent.body.data.hostedUrl, pdf: squash(reader.text(pdf)), eml, mail: parseMime(eml) };
}

describe('the customer locale', () => {
  it('should take BCP 47 tags, keep them canonical, and refuse anything else with invalid_parameter on locale', async () => {
    const ok = await app.request('POST', '/v1/customers', { key, body: { email: 'canonical@example.com', locale: 'EN-gb' } });
    expect([ok.status, ok.body.data.locale]).toEqual([201, 'en-GB']);
    const swiss = await app.request('PATCH', `/v1/customers/${ok.body.data.id}`, { key, body: { locale: 'sr-latn-rs' } });
    expect(swiss.body.data.locale).toBe('sr-Latn-RS');
    for (const locale of ['en_GB', 'x-private', 'english', 'de-', '12', 'en-GB-oxendict-x1', '', 'de CH']) {
      const res = await app.request('POST', '/v1/customers', { key, body: { email: 'refused@example.com', locale } });
      expect([locale, res.status, res.body.error?.code, res.body.error?.param]).toEqual([locale, 400, 'invalid_parameter', 'locale']);
    }
    const patched = await app.request('PATCH', `/v1/customers/${ok.body.data.id}`, { key, body: { locale: 'de_CH' } });
    expect([patched.status, patched.body.error.code, patched.body.error.param]).toEqual([400, 'invalid_parameter', 'locale']);
    const viaGraphql = await gql('mutation { createCustomer(input: { email: "gql-locale@example.com", locale: "fr_FR" }) { id } }');
    expect(viaGraphql.body.errors[0].extensions).toMatchObject({ code: 'invalid_parameter', param: 'locale' });
    const fine = await gql('mutation { createCustomer(input: { email: "gql-locale@example.com", locale: "de-ch" }) { locale } }');
    expect(fine.body.data.createCustomer.locale).toBe('de-CH');
  });
});

describe("an invoice in the customer's locale", () => {
  // locale, due date, amount as the region writes them; the PDF's and the mail's words.
  const cases: Array<{ locale: string; date: string; amount: string; pdfWords: string[]; mailWords: string[] }> = [
    { locale: 'en', date: 'Nov 29, 2026', amount: '€2,469.12', pdfWords: ['Due date Nov 29, 2026', 'Amount due €2,469.12'], mailWords: ['Due date: Nov 29, 2026', 'for €2,469.12.'] },
    { locale: 'en-GB', date: '29 Nov 2026', amount: '€2,469.12', pdfWords: ['Due date 29 Nov 2026', 'Amount due €2,469.12'], mailWords: ['Due date: 29 Nov 2026', 'for €2,469.12.'] },
    { locale: 'de', date: '29.11.2026', amount: '2.469,12 €', pdfWords: ['Fällig am 29.11.2026', 'Offener Betrag 2.469,12 €'], mailWords: ['Fällig am: 29.11.2026', 'über 2.469,12 € gesendet'] },
    { locale: 'fr', date: '29/11/2026', amount: '2 469,12 €', pdfWords: ["Date d'échéance 29/11/2026", 'Montant dû 2 469,12 €'], mailWords: ["Date d'échéance : 29/11/2026", "d'un montant de 2 469,12 €."] },
  ];

  it.each(cases)('should print $locale dates and amounts in the PDF and the mail', async ({ locale, pdfWords, mailWords }) => {
    const inv = await sendInvoice(locale);
    for (const words of pdfWords) expect([locale, words, inv.pdf.includes(words)]).toEqual([locale, words, true]);
    const text = textOf(inv.mail, 'text/plain')!;
    for (const words of mailWords) expect([locale, words, squash(text).includes(words)]).toEqual([locale, words, true]);
    // The pay link is in the plain text too, not only behind the HTML's link.
    expect(text).toContain(`https://pay.example.com/invoice/${inv.id}`);
    expect(textOf(inv.mail, 'text/html')).toMatch(/<title>[^<]*INV-\d{6}[^<]*<\/title>/);
  });

  it('should group French thousands with a no-break space, never a plain one that could break the amount', async () => {
    const inv = await sendInvoice('fr');
    const text = textOf(inv.mail, 'text/plain')!;
    expect(text).toMatch(/2[\u00a0\u202f]469,12\u00a0€/);
    expect(text).not.toContain('2 469,12');
  });

  it('should write Swiss francs for de-CH as Intl does, with the apostrophe grouping', async () => {
    const inv = await sendInvoice('de-CH', 'chf');
    expect(inv.pdf).toMatch(/Offener Betrag CHF 2['’]469\.12/);
    expect(inv.pdf).toContain('Fällig am 29.11.2026');
    expect(squash(textOf(inv.mail, 'text/plain')!)).toMatch(/über CHF 2['’]469\.12 gesendet/);
  });

  it('should say in the mail that a test-mode invoice is one, as the PDF does', async () => {
    const inv = await sendInvoice('de');
    expect(inv.pdf).toContain('Testmodus');
    expect(inv.mail.headers.get('subject')).toBe(`[Testmodus] Rechnung ${inv.number} von Test account`);
    expect(textOf(inv.mail, 'text/plain')!.startsWith('Testmodus: es fließt kein echtes Geld.')).toBe(true);
  });

  it('should write the .eml file with CRLF line endings throughout: no bare LF and no bare CR in its bytes', async () => {
    const inv = await sendInvoice('fr');
    const bare: number[] = [];
    for (let i = 0; i < inv.eml.length; i++) {
      if (inv.eml[i] === 0x0a && inv.eml[i - 1] !== 0x0d) bare.push(i);
      if (inv.eml[i] === 0x0d && inv.eml[i + 1] !== 0x0a) bare.push(i);
    }
    expect(bare).toEqual([]);
    // Lines of the body did break (the text part has several), each with CRLF.
    expect(inv.eml.toString('latin1').split('\r\n').length).toBeGreaterThan(30);
    // Without SMTP_URL nothing goes to a real server: no warning about the sender.
    expect(app.logs.join('')).not.toContain('MAIL_FROM is not set');
  });
});

describe('the hosted invoice page', () => {
  it("should be in the customer's language and formats, lang attribute included", async () => {
    const cases: Array<[string, string, string[]]> = [
      ['de', 'de', ['Rechnung INV-', '2.469,12\u00a0€', 'Fällig am 29.11.2026', '2.469,12\u00a0€ bezahlen', 'Kartennummer', 'Testmodus']],
      ['en-GB', 'en', ['Invoice INV-', '€2,469.12', 'Due 29 Nov 2026', 'Pay €2,469.12', 'Card number']],
      ['fr', 'fr', ['Facture INV-', '2\u202f469,12\u00a0€', 'Échéance le 29/11/2026', 'Numéro de carte', 'Mode test']],
    ];
    for (const [locale, lang, words] of cases) {
      const inv = await sendInvoice(locale);
      const view = await app.request('GET', `/v1/public/invoices/${inv.id}`);
      expect(view.body.data.locale).toBe(locale);
      const page = await app.request('GET', new URL(inv.hostedUrl).pathname);
      expect(page.status).toBe(200);
      expect(page.text).toContain(`<html lang="${lang}">`);
      for (const w of words) expect([locale, w, page.text.includes(w)]).toEqual([locale, w, true]);
    }
  });

  it('should say a paid invoice is paid in German for a German customer', async () => {
    const inv = await sendInvoice('de');
    expect((await app.request('POST', `/v1/invoices/${inv.id}/mark-paid`, { key })).status).toBe(200);
    const page = await app.request('GET', new URL(inv.hostedUrl).pathname);
    expect(page.text).toContain('<html lang="de">');
    expect(page.text).toContain('Diese Rechnung ist bezahlt');
  });
});
