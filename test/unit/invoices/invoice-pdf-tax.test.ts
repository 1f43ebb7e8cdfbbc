import { layoutInvoicePdf } from '../../../src/modules/invoices/invoice-pdf.layout';
import { formatTaxPercentage } from '../../../src/modules/invoices/invoice-tax-i18n';
import { invoiceDocument } from './invoice-fixtures';
import { PdfReader, squash } from './pdf-text';

const reader = new PdfReader();
afterAll(() => reader.close());

// 1000 at 19 % exclusive = 190; 200 holding 7.5 % inclusive: 200 × 7.5 / 107.5 = 13.95 → 14, net 186.
const taxed = {
  currency: 'EUR',
  subtotal: 1200,
  tax: 190,
  total: 1390,
  amountDue: 1390,
  taxBreakdown: [
    { displayName: 'VAT', percentage: 19, inclusive: false, taxableAmount: 1000, amount: 190 },
    { displayName: 'VAT reduced', percentage: 7.5, inclusive: true, taxableAmount: 186, amount: 14 },
  ],
};

describe('invoice PDF taxes', () => {
  it('should print each rate with its percentage, what it taxes and its tax, in the customer\'s language', async () => {
    const cases: Array<[string, string[]]> = [
      ['en', ['VAT 19% €1.90', 'on €10.00', 'VAT reduced 7.5% €0.14', 'included, on €1.86', 'Total €13.90']],
      ['de', ['VAT 19 % 1,90 €', 'auf 10,00 €', 'VAT reduced 7,5 % 0,14 €', 'enthalten, auf 1,86 €', 'Gesamtbetrag 13,90 €']],
      ['fr', ['VAT 19 % 1,90 €', 'sur 10,00 €', 'VAT reduced 7,5 % 0,14 €', 'incluse, sur 1,86 €', 'Total 13,90 €']],
    ];
    for (const [locale, expected] of cases) {
      const text = squash(reader.text(await layoutInvoicePdf(invoiceDocument({ ...taxed, locale }))));
      for (const piece of expected) expect([locale, piece, text.includes(piece)]).toEqual([locale, piece, true]);
      expect(text).not.toMatch(/Reverse charge|Reverse Charge|Autoliquidation/);
    }
  });

  it('should print the reverse-charge notice in the customer\'s language, and the same bytes on every rendering', async () => {
    const reverse = { ...taxed, tax: 0, total: 1200, amountDue: 1200, reverseCharge: true, taxBreakdown: taxed.taxBreakdown.map((b) => ({ ...b, amount: 0 })) };
    const notices: Array<[string, string]> = [
      ['en', 'Reverse charge: the customer is liable for the VAT on this invoice.'],
      ['de', 'Steuerschuldnerschaft des Leistungsempfängers (Reverse Charge)'],
      ['fr', 'Autoliquidation : la TVA est due par le preneur.'],
    ];
    for (const [locale, notice] of notices) {
      const pdf = await layoutInvoicePdf(invoiceDocument({ ...reverse, locale }));
      expect(squash(reader.text(pdf))).toContain(notice);
      expect(Buffer.compare(pdf, await layoutInvoicePdf(invoiceDocument({ ...reverse, locale })))).toBe(0);
    }
  });

  it('should write a percentage from its exact decimal', () => {
    expect([formatTaxPercentage(19.0025, 'de'), formatTaxPercentage(7.5, 'en'), formatTaxPercentage(0.0001, 'fr')]).toEqual(['19,0025\u00a0%', '7.5%', '0,0001\u00a0%']);
  });
});
