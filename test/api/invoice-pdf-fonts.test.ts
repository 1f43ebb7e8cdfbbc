import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { PdfReader, squash } from '../unit/invoices/pdf-text';

let app: TestApp;
let key: string;
const reader = new PdfReader();
beforeAll(async () => {
  app = await startTestApp();
  key = app.account.testKey;
});
afterAll(async () => {
  reader.close();
  await app.stop();
});

const POLISH = 'Zażółć Gęślą Jaźń';
const GREEK = 'Αλέξανδρος Παπαδόπουλος';
const RUSSIAN = 'Дмитрий Шостакович';

describe(`invoice PDF: names in every script the font draws, over the API (${DIALECT})`, () => {
  it.each([
    ['Polish', POLISH, 'de'],
    ['Greek', GREEK, 'en'],
    ['Russian', RUSSIAN, 'fr'],
  ])('should print a %s customer name and line description as typed, the same bytes twice', async (_, name, locale) => {
    const customer = await app.request('POST', '/v1/customers', { key, body: { email: `${locale}-customer@example.com`, name, locale } });
    expect(customer.status).toBe(201);
    const created = await app.request('POST', '/v1/invoices', {
      key,
      body: { customerId: customer.body.data.id, currency: 'eur', lineItems: [{ description: `Beratung für ${name}`, unitAmount: 1200 }] },
    });
    expect(created.status).toBe(201);
    const first = await app.request('GET', `/v1/invoices/${created.body.data.id}/pdf`, { key });
    expect([first.status, first.headers['content-type']]).toEqual([200, 'application/pdf']);
    const text = reader.text(first.buffer);
    expect(text.split('\n').map((l) => l.trim()).some((l) => l.startsWith(name))).toBe(true);
    expect(squash(text)).toContain(`Beratung für ${name}`);
    expect(text).not.toContain('?');
    const second = await app.request('GET', `/v1/invoices/${created.body.data.id}/pdf`, { key });
    expect(second.buffer.equals(first.buffer)).toBe(true);
  });

  it('should keep a Japanese name as typed in the PDF text, drawn as boxes the font marks as missing', async () => {
    const customer = await app.request('POST', '/v1/customers', { key, body: { email: 'yamada@example.jp', name: '山田太郎' } });
    const created = await app.request('POST', '/v1/invoices', {
      key,
      body: { customerId: customer.body.data.id, currency: 'jpy', lineItems: [{ description: '東京オフィス賃料', unitAmount: 120000 }] },
    });
    const pdf = await app.request('GET', `/v1/invoices/${created.body.data.id}/pdf`, { key });
    expect(pdf.status).toBe(200);
    const text = squash(reader.text(pdf.buffer));
    expect(text).toContain('山田太郎');
    expect(text).toContain('東京オフィス賃料');
    expect(text).not.toContain('?');
  });
});
