import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { InvoiceDocument } from '../../../src/modules/invoices/invoice-document';
import { closeInvoicePdfRenderer, renderInvoicePdf } from '../../../src/modules/invoices/invoice-pdf';
import { dejaVuSans, invoiceTypeface } from '../../../src/modules/invoices/invoice-pdf.fonts';
import { layoutInvoicePdf } from '../../../src/modules/invoices/invoice-pdf.layout';
import { invoiceDocument, manyLines } from './invoice-fixtures';
import { PdfReader, squash } from './pdf-text';

const reader = new PdfReader();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-invoice-fonts-'));

afterAll(async () => {
  reader.close();
  fs.rmSync(dir, { recursive: true, force: true });
  await closeInvoicePdfRenderer();
});

const POLISH = 'Zażółć Gęślą Jaźń';
const GREEK = 'Αλέξανδρος Παπαδόπουλος';
const RUSSIAN = 'Дмитрий Шостакович';

function withLines(lineItems: InvoiceDocument['lineItems'], overrides: Partial<InvoiceDocument> = {}): InvoiceDocument {
  const total = lineItems.reduce((sum, l) => sum + l.amount, 0);
  return invoiceDocument({ lineItems, subtotal: total, total, amountPaid: 0, amountDue: total, ...overrides });
}

const line = (description: string) => ({ description, quantity: 1, unitAmount: 1200, amount: 1200, periodStart: null, periodEnd: null });

/** The fonts of a PDF as `pdffonts` lists them: name, whether embedded and subset. */
function fonts(pdf: Buffer): Array<{ name: string; embedded: boolean; subset: boolean }> {
  const file = path.join(dir, `${Math.random().toString(36).slice(2)}.pdf`);
  fs.writeFileSync(file, pdf);
  return execFileSync('pdffonts', [file], { encoding: 'utf8' })
    .split('\n')
    .slice(2)
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const [name, ...rest] = l.trim().split(/\s+/);
      // type (1 or 2 words), encoding, emb, sub, uni, object, generation
      const [emb, sub] = rest.slice(-5, -3);
      return { name, embedded: emb === 'yes', subset: sub === 'yes' };
    });
}

describe('invoice PDF fonts: names as typed', () => {
  it.each([
    ['Polish', POLISH],
    ['Greek', GREEK],
    ['Russian', RUSSIAN],
  ])('should print a %s name as typed, in the customer name and in a line description', async (_, name) => {
    const pdf = await renderInvoicePdf(withLines([line(`Consulting for ${name}`)], { customer: { name, email: 'customer@example.com' } }));
    const text = reader.text(pdf);
    // The customer block: the name on a line of its own under BILL TO.
    const lines = text.split('\n').map((l) => l.trim());
    expect(lines.some((l) => l.startsWith(name))).toBe(true);
    expect(squash(text)).toContain(`Consulting for ${name} 1 $12.00 $12.00`);
    expect(text).not.toContain('?');
  });

  it('should print all three scripts side by side in the merchant name, a description and the memo, in German', async () => {
    const all = `${POLISH}, ${GREEK}, ${RUSSIAN}`;
    const pdf = await renderInvoicePdf(
      withLines([line(all)], { locale: 'de', currency: 'EUR', merchant: { name: 'Łukasz Żółkiewski Sp. z o.o.' }, customer: { name: GREEK, email: 'a@example.com' }, memo: `Спасибо! ${POLISH}` }),
    );
    const text = squash(reader.text(pdf));
    for (const expected of ['Łukasz Żółkiewski Sp. z o.o.', GREEK, `Спасибо! ${POLISH}`, 'Gesamtbetrag 12,00 €']) {
      expect([expected, text.includes(expected)]).toEqual([expected, true]);
    }
    // A description that wraps keeps every word, in order.
    expect(squash(reader.text(pdf, { raw: true }))).toContain(all);
  });

  it('should draw a name typed with combining accents (NFD) as the same PDF as the composed one', async () => {
    const composed = invoiceDocument({ customer: { name: POLISH, email: 'z@example.com' } });
    const decomposed = invoiceDocument({ customer: { name: POLISH.normalize('NFD'), email: 'z@example.com' } });
    expect(POLISH.normalize('NFD')).not.toBe(POLISH);
    const [a, b] = await Promise.all([renderInvoicePdf(composed), renderInvoicePdf(decomposed)]);
    expect(b.equals(a)).toBe(true);
    expect(reader.text(b)).toContain(POLISH);
  });
});

describe('invoice PDF fonts: characters the font lacks (Chinese, Japanese, Korean)', () => {
  const JAPANESE = '山田太郎';
  const KOREAN = '김민준';
  const CHINESE = '北京办公室';

  it('should keep them as typed in the text and draw one box per character, never a ?', async () => {
    const pdf = await renderInvoicePdf(withLines([line(`Rent, ${CHINESE}`)], { customer: { name: `${JAPANESE} ${KOREAN}`, email: 'yamada@example.jp' } }));
    const text = squash(reader.text(pdf));
    expect(text).toContain(`${JAPANESE} ${KOREAN}`);
    expect(text).toContain(`Rent, ${CHINESE}`);
    expect(text).not.toContain('?');
    expect(text).not.toContain('\u0000');

    // Each character takes the width of the font's box: the name is not dropped from the page.
    const { regular, bold } = dejaVuSans();
    const box = (font: typeof regular, size: number) => (font.getGlyph(0).advanceWidth / font.unitsPerEm) * size;
    const words = reader.words(pdf)[0];
    const name = words.find((w) => w.text === JAPANESE)!;
    expect(name.xMax - name.xMin).toBeCloseTo(4 * box(bold, 10), 0);
    const place = words.find((w) => w.text === CHINESE)!;
    expect(place.xMax - place.xMin).toBeCloseTo(5 * box(regular, 9), 0);

    // And the boxes are ink on the page: dark pixels where the name is.
    const file = path.join(dir, 'cjk.pdf');
    fs.writeFileSync(file, pdf);
    // At 144 dpi, two pixels a point.
    const px = (pt: number) => String(Math.round(pt * 2));
    const crop = ['-r', '144', '-gray', '-x', px(name.xMin), '-y', px(name.yMin), '-W', px(name.xMax - name.xMin), '-H', px(name.yMax - name.yMin)];
    const pgm = execFileSync('pdftoppm', [...crop, '-f', '1', '-l', '1', file]);
    const header = /^P5\s+(\d+)\s+(\d+)\s+255\s/.exec(pgm.toString('latin1'))!;
    const pixels = pgm.subarray(header[0].length);
    const dark = pixels.filter((v) => v < 160).length;
    // Four outlined boxes, about 12 by 14 pixels each: well over a hundred pixels of their edges.
    expect(dark).toBeGreaterThan(100);
  });

  it('should embed no other font for them: the two DejaVu faces, subset', async () => {
    const pdf = await renderInvoicePdf(invoiceDocument({ customer: { name: JAPANESE, email: 'yamada@example.jp' } }));
    const listed = fonts(pdf);
    expect(listed.map((f) => f.name.replace(/^[A-Z]{6}\+/, ''))).toEqual(['DejaVuSansCondensed-Bold', 'DejaVuSansCondensed']);
    expect(listed.every((f) => f.embedded && f.subset)).toBe(true);
  });
});

describe('invoice PDF fonts: bytes and size', () => {
  const everyScript = () =>
    withLines([line(`${POLISH} — ${GREEK}`), line(`${RUSSIAN}, 東京`), line('Office fit-out, ΩΡΑ 5'), ...manyLines(20)], {
      customer: { name: `${RUSSIAN} 김민준`, email: 'd@example.com' },
      status: 'paid',
      paidAt: '2026-11-28T08:00:00.000Z',
    });
  // Other spellings of glyphs the invoice above uses: the ligatures ﬁ and ﬃ (the glyphs of
  // "fi" and "ffi"), the ohm sign (the glyph of Ω).
  const otherSpellings = () => withLines([line('ﬁ ﬃ Ω ½ №')], { customer: { name: 'Ω Ohm', email: 'o@example.com' } });

  it('should give the same bytes for the same invoice, whatever the thread drew before', async () => {
    const first = await renderInvoicePdf(everyScript());
    const again = await renderInvoicePdf(everyScript());
    expect(again.equals(first)).toBe(true);
    // On this thread, after an invoice that reached the same glyphs through other characters.
    await layoutInvoicePdf(otherSpellings());
    const here = await layoutInvoicePdf(everyScript());
    expect(here.equals(first)).toBe(true);
    expect(squash(reader.text(here))).toContain('Office fit-out, ΩΡΑ 5');
    // And the other way round: the worker thread, having drawn this invoice, draws the other
    // one as this thread did.
    expect((await renderInvoicePdf(otherSpellings())).equals(await layoutInvoicePdf(otherSpellings()))).toBe(true);
    // The subset tags are the same in every PDF: they come from the font's place in the document.
    const tags = (pdf: Buffer) => fonts(pdf).map((f) => f.name);
    expect(tags(await renderInvoicePdf(invoiceDocument()))).toEqual(tags(first));
  });

  it('should keep the PDF small: only the glyphs used are embedded', async () => {
    const onePage = await renderInvoicePdf(invoiceDocument());
    const threePages = await renderInvoicePdf(withLines(manyLines(60)));
    expect(reader.pages(threePages)).toBe(3);
    // The two font files are 1.3 MB; the subsets of a usual invoice about 20 KB.
    expect(onePage.length).toBeLessThan(40 * 1024);
    expect(threePages.length).toBeLessThan(50 * 1024);
    expect((await renderInvoicePdf(everyScript())).length).toBeLessThan(60 * 1024);
  });
});

describe("the benchmark's Helvetica baseline", () => {
  it('should still draw with the built-in Helvetica, WinAnsi only, when asked', async () => {
    const doc = withLines([line('Line 東京')], { currency: 'KRW', merchant: { name: 'Łódź Čakavac Øresund' } });
    const pdf = await layoutInvoicePdf(doc, 'helvetica');
    const text = squash(reader.text(pdf));
    expect(text).toContain('Lódz Cakavac Øresund');
    expect(text).toContain('Line ??');
    expect(text).toContain('Total KRW 1,200');
    expect(fonts(pdf).map((f) => [f.name, f.embedded])).toEqual([
      ['Helvetica-Bold', false],
      ['Helvetica', false],
    ]);
  });

  it('should be chosen by PAYORCH_BENCH_PDF_FONT=helvetica only', () => {
    const before = process.env.PAYORCH_BENCH_PDF_FONT;
    try {
      delete process.env.PAYORCH_BENCH_PDF_FONT;
      expect(invoiceTypeface()).toBe('dejavu');
      process.env.PAYORCH_BENCH_PDF_FONT = 'helvetica';
      expect(invoiceTypeface()).toBe('helvetica');
    } finally {
      if (before === undefined) delete process.env.PAYORCH_BENCH_PDF_FONT;
      else process.env.PAYORCH_BENCH_PDF_FONT = before;
    }
  });
});
