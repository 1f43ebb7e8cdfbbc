import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { InvoiceDocument } from '../../../src/modules/invoices/invoice-document';
import { closeInvoicePdfRenderer, renderInvoicePdf } from '../../../src/modules/invoices/invoice-pdf';
import { layoutInvoicePdf } from '../../../src/modules/invoices/invoice-pdf.layout';
import { invoiceDocument, manyLines } from './invoice-fixtures';
import { PdfReader, squash } from './pdf-text';

const ROOT = path.join(__dirname, '..', '..', '..');
const reader = new PdfReader();

afterAll(async () => {
  reader.close();
  await closeInvoicePdfRenderer();
});

function withLines(lineItems: InvoiceDocument['lineItems'], overrides: Partial<InvoiceDocument> = {}): InvoiceDocument {
  const total = lineItems.reduce((sum, l) => sum + l.amount, 0);
  return invoiceDocument({ lineItems, subtotal: total, total, amountPaid: 0, amountDue: total, ...overrides });
}

describe('invoice PDF content', () => {
  it('should show the number, parties, dates, each line and the totals (USD, en)', async () => {
    const text = squash(reader.text(await renderInvoicePdf(invoiceDocument({ memo: 'Thanks for your business.' }))));
    for (const expected of [
      'Acme Tools Ltd',
      'INVOICE',
      'Invoice number INV-000042',
      'Date of issue Nov 27, 2026',
      'Due date Dec 27, 2026',
      'Jane Doe',
      'jane@example.com',
      'Description',
      'Unit price',
      'Consulting, November',
      'Support plan',
      'Nov 1, 2026 – Nov 30, 2026',
      'Subtotal',
      'Amount due',
      '$12.00',
      '$10.00',
      '$1.00',
      'Thanks for your business.',
      'INV-000042 · Page 1 of 1',
    ]) {
      expect([expected, text.includes(expected)]).toEqual([expected, true]);
    }
    expect(text).not.toContain('Paid on');
    expect(text).not.toContain('Test mode');
  });

  it('should format the total as ¥1,200 for JPY in English', async () => {
    const text = squash(reader.text(await renderInvoicePdf(withLines([{ description: 'Tea set', quantity: 1, unitAmount: 1200, amount: 1200, periodStart: null, periodEnd: null }], { currency: 'JPY' }))));
    expect(text).toContain('Tea set');
    expect(text).toContain('Total ¥1,200');
    expect(text).not.toContain('¥1,200.');
  });

  it('should write a German invoice in German, with 12,00 €', async () => {
    const pdf = await renderInvoicePdf(invoiceDocument({ locale: 'de', currency: 'EUR', paidAt: null }));
    const text = squash(reader.text(pdf));
    for (const expected of ['RECHNUNG', 'Rechnungsnummer INV-000042', 'Rechnungsdatum 27.11.2026', 'Fällig am 27.12.2026', 'Rechnungsempfänger'.toUpperCase(), 'Beschreibung', 'Menge', 'Einzelpreis', 'Zwischensumme', 'Gesamtbetrag 12,00 €', 'Offener Betrag 12,00 €', '01.11.2026 – 30.11.2026', 'Seite 1 von 1']) {
      expect([expected, text.includes(expected)]).toEqual([expected, true]);
    }
  });

  it('should write a French invoice in French', async () => {
    const pdf = await renderInvoicePdf(withLines(manyLines(1, 120000), { locale: 'fr', currency: 'EUR', status: 'paid', paidAt: '2026-11-28T08:00:00.000Z', amountPaid: 120000, amountDue: 0 }));
    const text = squash(reader.text(pdf));
    for (const expected of ['FACTURE', 'Numéro de facture INV-000042', "Date d'émission 27/11/2026", "Date d'échéance 27/12/2026", 'Payée le 28/11/2026', 'FACTURÉ À', 'Prix unitaire', 'Sous-total', 'Montant payé 1 200,00 €', 'Montant dû 0,00 €', 'Page 1 sur 1']) {
      expect([expected, text.includes(expected)]).toEqual([expected, true]);
    }
  });

  it('should show KWD with three decimals and 999999999999 to the last digit, on one line', async () => {
    const item = { description: 'Large order', quantity: 1, unitAmount: 999999999999, amount: 999999999999, periodStart: null, periodEnd: null };
    const text = squash(reader.text(await renderInvoicePdf(withLines([item], { currency: 'KWD' }))));
    expect(text).toContain('Total KWD 999,999,999.999');
    // Unit price and amount each on one line of the row, not broken inside the number.
    expect(text).toContain('Large order 1 KWD 999,999,999.999 KWD 999,999,999.999');
  });

  it('should show a currency by its own sign, ₩ for KRW', async () => {
    const text = squash(reader.text(await renderInvoicePdf(withLines(manyLines(1, 1200), { currency: 'KRW' }))));
    expect(text).toContain('Total ₩1,200');
    expect(text).not.toContain('KRW');
    expect(text).not.toContain('?');
  });

  it('should draw Latin beyond Latin-1 as typed', async () => {
    const text = squash(
      reader.text(
        await renderInvoicePdf(invoiceDocument({ merchant: { name: 'Łódź Čakavac Øresund' }, customer: { name: 'Zoë – “Müller” Şahin Nguyễn', email: 'z@example.com' } })),
      ),
    );
    expect(text).toContain('Łódź Čakavac Øresund');
    expect(text).toContain('Zoë – “Müller” Şahin Nguyễn');
  });

  it('should mark a test-mode invoice as such', async () => {
    expect(squash(reader.text(await renderInvoicePdf(invoiceDocument({ livemode: false }))))).toContain('Test mode: no real money is involved');
  });

  it('should note a payment made outside the service', async () => {
    const pdf = await renderInvoicePdf(invoiceDocument({ status: 'paid', paidAt: '2026-11-28T08:00:00.000Z', paidOutOfBand: true, amountPaid: 1200, amountDue: 0 }));
    const text = squash(reader.text(pdf));
    expect(text).toContain('Paid on Nov 28, 2026');
    expect(text).toContain('Paid outside the payment service');
  });

  it('should show the customer credit an invoice took as its own line, and no such line when it took none', async () => {
    const credited = squash(reader.text(await renderInvoicePdf(invoiceDocument({ creditApplied: 700, amountPaid: 0, amountDue: 500 }))));
    expect(credited).toMatch(/Credit applied\s*-\$7\.00/);
    expect(squash(reader.text(await renderInvoicePdf(invoiceDocument())))).not.toContain('Credit applied');
  });
});

describe('invoice PDF status stamp', () => {
  const stamps: Array<[InvoiceDocument['status'], string, string]> = [
    ['draft', 'en', 'DRAFT'],
    ['paid', 'en', 'PAID'],
    ['void', 'en', 'VOID'],
    ['draft', 'de', 'ENTWURF'],
    ['paid', 'de', 'BEZAHLT'],
    ['void', 'de', 'STORNIERT'],
    ['draft', 'fr', 'BROUILLON'],
    ['paid', 'fr', 'PAYÉE'],
    ['void', 'fr', 'ANNULÉE'],
  ];

  it.each(stamps)('should stamp a %s invoice in %s with %s', async (status, locale, stamp) => {
    const pdf = await renderInvoicePdf(invoiceDocument({ status, locale, paidAt: status === 'paid' ? '2026-11-28T08:00:00.000Z' : null }));
    // The badge is a line of its own; the stamp across the page is the page's first text.
    expect(reader.text(pdf).split('\n').map((l) => l.trim())).toContain(stamp);
    expect(reader.text(pdf, { raw: true }).split('\n')[0]).toBe(stamp);
  });

  it.each(['en', 'de', 'fr'])('should stamp no sent invoice (%s)', async (locale) => {
    const pdf = await renderInvoicePdf(invoiceDocument({ status: 'sent', locale }));
    const anyStamp = new RegExp(`\\b(${stamps.map(([, , word]) => word).join('|')})\\b`);
    expect(reader.text(pdf, { raw: true })).not.toMatch(anyStamp);
    expect(reader.text(pdf)).not.toMatch(anyStamp);
  });

  it('should stamp every page of a long draft', async () => {
    const pdf = await renderInvoicePdf(withLines(manyLines(60), { status: 'draft' }));
    const pages = reader.pages(pdf);
    expect(pages).toBeGreaterThan(1);
    for (let page = 1; page <= pages; page++) {
      expect([page, reader.text(pdf, { page, raw: true }).split('\n')[0]]).toEqual([page, 'DRAFT']);
    }
  });
});

describe('invoice PDF layout', () => {
  it('should wrap a long description within its column and keep a one-line invoice on one page', async () => {
    const words = Array.from({ length: 90 }, (_, i) => `word${i + 1}`);
    const pdf = await renderInvoicePdf(withLines([{ description: words.join(' '), quantity: 3, unitAmount: 400, amount: 1200, periodStart: null, periodEnd: null }]));
    expect(reader.pages(pdf)).toBe(1);
    const placed = reader.words(pdf)[0].filter((w) => /^word\d+$/.test(w.text));
    expect(placed.map((w) => w.text)).toEqual(words);
    // The description column ends 245 pt right of the 50 pt margin; quantity and prices stay clear.
    for (const w of placed) expect([w.text, w.xMin >= 50, w.xMax <= 295]).toEqual([w.text, true, true]);
    expect(new Set(placed.map((w) => Math.round(w.yMin))).size).toBeGreaterThan(5);
    expect(squash(reader.text(pdf))).toContain('$12.00');
  });

  it('should continue a 60-line table over several pages with the header on each', async () => {
    const lines = manyLines(60);
    const pdf = await renderInvoicePdf(withLines(lines));
    const pages = reader.pages(pdf);
    expect(pages).toBe(3);
    const seen: string[] = [];
    for (let page = 1; page <= pages; page++) {
      const text = squash(reader.text(pdf, { page }));
      for (const header of ['Description', 'Qty', 'Unit price', 'Amount']) expect([page, header, text.includes(header)]).toEqual([page, header, true]);
      expect(text).toContain(`Page ${page} of ${pages}`);
      const inOrder = reader.text(pdf, { page, raw: true });
      seen.push(...[...inOrder.matchAll(/Line (\d+):/g)].map((m) => m[1]));
    }
    // Every line once, in order, none lost at a page break.
    expect(seen).toEqual(lines.map((_, i) => String(i + 1)));
    // The header row is the first thing on a continued page.
    const continued = reader.words(pdf)[1];
    const header = continued.find((w) => w.text === 'Description')!;
    expect(header.yMin).toBeLessThan(70);
    expect(continued.filter((w) => w.yMin < header.yMin && w.text !== '')).toEqual([]);
    expect(squash(reader.text(pdf, { page: pages }))).toContain('Amount due');
  });

  it('should continue a long memo from the top of the next page, in its own font', async () => {
    const memo = Array.from({ length: 150 }, (_, i) => `Clause ${i + 1} of the payment terms applies.`).join('\n');
    const pdf = await renderInvoicePdf(withLines(manyLines(10), { memo, status: 'void' }));
    const pages = reader.words(pdf);
    expect(pages.length).toBe(3);
    for (const page of pages.slice(1)) {
      const clauses = page.filter((w) => w.text === 'Clause');
      expect(clauses.length).toBeGreaterThan(10);
      expect(clauses[0].yMin).toBeLessThan(70);
      // 9 pt text: a word box about 9 pt high, not the stamp's size.
      for (const w of clauses) expect(w.yMax - w.yMin).toBeLessThan(12);
    }
    expect(squash(reader.text(pdf))).toContain('Clause 150 of the payment terms applies.');
  });
});

describe('invoice PDF bytes', () => {
  const lines = manyLines(40);

  it('should give the same bytes for the same snapshot, on every call and thread', async () => {
    const doc = withLines(lines, { status: 'paid', paidAt: '2026-11-28T08:00:00.000Z', locale: 'de', currency: 'EUR' });
    const first = await renderInvoicePdf(doc);
    const second = await renderInvoicePdf(structuredClone(doc));
    const onThisThread = await layoutInvoicePdf(doc);
    expect(first.length).toBeGreaterThan(1000);
    expect(second.equals(first)).toBe(true);
    expect(onThisThread.equals(first)).toBe(true);
    // Nothing of the moment of rendering: the dates are the invoice's.
    const dates = first.toString('latin1').match(/\(D:\d{14}Z\)/g);
    expect(dates).toEqual(['(D:20261127093000Z)', '(D:20261127093000Z)']);
  });

  it('should give the same bytes in another process, in another time zone', async () => {
    const doc = withLines(lines, { locale: 'fr', currency: 'EUR' });
    const here = await renderInvoicePdf(doc);
    const script = [
      "const { renderInvoicePdf, closeInvoicePdfRenderer } = require('./src/modules/invoices/invoice-pdf.ts');",
      'renderInvoicePdf(JSON.parse(process.argv[1])).then(async (pdf) => {',
      "  process.stdout.write(pdf.toString('base64'));",
      '  await closeInvoicePdfRenderer();',
      '});',
    ].join('\n');
    const { stdout } = await promisify(execFile)(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', script, JSON.stringify(doc)], {
      cwd: ROOT,
      env: { ...process.env, TZ: 'Pacific/Kiritimati', LANG: 'de_DE.UTF-8' },
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(Buffer.from(stdout, 'base64').equals(here)).toBe(true);
  });

  it("should take the document id from the invoice's id", async () => {
    const id = (pdf: Buffer) => /\/ID \[<([0-9a-f]{32})> <([0-9a-f]{32})>\]/.exec(pdf.toString('latin1'))!.slice(1);
    const doc = invoiceDocument();
    const [a1, a2] = id(await renderInvoicePdf(doc));
    expect(a1).toBe(a2);
    // The same invoice after a state change keeps its id; another invoice has its own.
    expect(id(await renderInvoicePdf({ ...doc, status: 'void' }))[0]).toBe(a1);
    expect(id(await renderInvoicePdf({ ...doc, id: 'in_test_0002' }))[0]).not.toBe(a1);
  });
});
