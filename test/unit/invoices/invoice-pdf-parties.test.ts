import { layoutInvoicePdf } from '../../../src/modules/invoices/invoice-pdf.layout';
import { addressLines, taxIdLabel } from '../../../src/modules/invoices/invoice-i18n';
import type { InvoiceDocument } from '../../../src/modules/invoices/invoice-document';
import { invoiceDocument } from './invoice-fixtures';
import { PdfReader } from './pdf-text';

/* The seller's and the buyer's blocks of the invoice PDF (API.md §12): read back with pdftotext. */

const reader = new PdfReader();
afterAll(() => reader.close());

const seller: InvoiceDocument['merchant'] = {
  name: 'Acme Tools GmbH',
  address: { line1: 'Friedrichstraße 68', line2: 'Aufgang B', postalCode: '10117', city: 'Berlin', state: null, country: 'DE' },
  taxId: 'DE123456789',
  supportEmail: 'billing@acme.example',
};
const buyer: InvoiceDocument['customer'] = {
  name: 'Marie Dupont',
  email: 'marie@example.fr',
  address: { line1: '11 rue de Rivoli', line2: null, postalCode: '75001', city: 'Paris', state: null, country: 'FR' },
  taxIds: [{ type: 'eu_vat', value: 'FR12345678901' }, { type: 'us_ein', value: '12-3456789' }],
};

/** The PDF's lines in drawing order, trimmed, no-break spaces read as spaces. */
async function lines(doc: InvoiceDocument): Promise<string[]> {
  return reader.text(await layoutInvoicePdf(doc), { raw: true }).split('\n').map((l) => l.replace(/[\u00a0\u202f]/g, ' ').trim());
}

/** Whether `block` appears in `all` as consecutive lines. */
function contiguous(all: string[], block: string[]): boolean {
  return all.some((_, i) => block.every((line, k) => all[i + k] === line));
}

describe('invoice PDF parties', () => {
  it.each([
    ['en', ['Acme Tools GmbH', 'Friedrichstraße 68', 'Aufgang B', '10117 Berlin', 'Germany', 'VAT: DE123456789', 'Contact: billing@acme.example'],
      ['Marie Dupont', 'marie@example.fr', '11 rue de Rivoli', '75001 Paris', 'France', 'VAT: FR12345678901', 'EIN: 12-3456789']],
    ['de', ['Acme Tools GmbH', 'Friedrichstraße 68', 'Aufgang B', '10117 Berlin', 'Deutschland', 'USt-IdNr.: DE123456789', 'Kontakt: billing@acme.example'],
      ['Marie Dupont', 'marie@example.fr', '11 rue de Rivoli', '75001 Paris', 'Frankreich', 'USt-IdNr.: FR12345678901', 'EIN: 12-3456789']],
    ['fr', ['Acme Tools GmbH', 'Friedrichstraße 68', 'Aufgang B', '10117 Berlin', 'Allemagne', 'N° TVA : DE123456789', 'Contact : billing@acme.example'],
      ['Marie Dupont', 'marie@example.fr', '11 rue de Rivoli', '75001 Paris', 'France', 'N° TVA : FR12345678901', 'EIN : 12-3456789']],
  ])('should print the seller under its name and the buyer under its e-mail, in the customer\'s language (%s)', async (locale, sellerBlock, buyerBlock) => {
    const all = await lines(invoiceDocument({ locale, merchant: seller, customer: buyer }));
    expect([sellerBlock, contiguous(all, sellerBlock)]).toEqual([sellerBlock, true]);
    expect([buyerBlock, contiguous(all, buyerBlock)]).toEqual([buyerBlock, true]);
    // The seller's block comes before the buyer's, which comes before the line items.
    expect(all.indexOf(sellerBlock[1])).toBeLessThan(all.indexOf(buyerBlock[2]));
    expect(all.indexOf(buyerBlock[buyerBlock.length - 1])).toBeLessThan(all.findIndex((l) => l.startsWith('Consulting, November')));
  });

  it('should print an address in the order its country\'s post reads it', () => {
    expect(addressLines({ line1: '350 Fifth Avenue', line2: 'Suite 3300', postalCode: '10118', city: 'New York', state: 'NY', country: 'US' }, 'en'))
      .toEqual(['350 Fifth Avenue', 'Suite 3300', 'New York, NY 10118', 'United States']);
    expect(addressLines({ line1: '10 Downing Street', postalCode: 'SW1A 2AA', city: 'London', country: 'GB' }, 'de'))
      .toEqual(['10 Downing Street', 'London', 'SW1A 2AA', 'Vereinigtes Königreich']);
    expect(addressLines({ line1: 'Via del Corso 1', postalCode: '00186', city: 'Roma', state: 'RM', country: 'IT' }, 'fr'))
      .toEqual(['Via del Corso 1', '00186 Roma', 'RM', 'Italie']);
    expect(addressLines({ line1: '1 Queen\'s Road Central', postalCode: '', city: 'Hong Kong', country: 'HK' }, 'en'))
      .toEqual(['1 Queen\'s Road Central', 'Hong Kong', 'Hong Kong SAR China']);
  });

  it('should name each tax id as the customer reads it, and an account\'s untyped one by its form', () => {
    expect(['en', 'de', 'fr'].map((l) => taxIdLabel('gb_vat', 'GB123456789', l))).toEqual(['VAT', 'USt-IdNr.', 'N° TVA']);
    expect(['en', 'de', 'fr'].map((l) => taxIdLabel('ca_gst_hst', '123456789RT0001', l))).toEqual(['GST/HST', 'GST/HST-Nr.', 'N° TPS/TVH']);
    expect(['en', 'de', 'fr'].map((l) => taxIdLabel('jp_cn', '1234567890123', l))).toEqual(['Tax ID', 'Steuernummer', 'N° d’identification fiscale']);
    expect(taxIdLabel('au_abn', '51824753556', 'de')).toBe('ABN');
    expect(taxIdLabel(null, 'ATU 12345678', 'en')).toBe('VAT');
    expect(taxIdLabel(null, 'CHE-123.456.789 MWST', 'de')).toBe('USt-IdNr.');
    expect(taxIdLabel(null, '12-3456789', 'en')).toBe('Tax ID');
  });

  it('should print a generic tax id name for a seller tax id that is no VAT number, and no block line for what is not set', async () => {
    const all = await lines(invoiceDocument({ merchant: { name: 'Acme Inc.', taxId: '12-3456789', address: null, supportEmail: null }, customer: { name: 'Jane Doe', email: 'jane@example.com', address: null, taxIds: [] } }));
    expect(contiguous(all, ['Acme Inc.', 'Tax ID: 12-3456789'])).toBe(true);
    expect(contiguous(all, ['Jane Doe', 'jane@example.com', 'Invoice number INV-000042'])).toBe(true);
    expect(all.some((l) => l.startsWith('Contact'))).toBe(false);
  });

  it('should give a snapshot without parties (a mail queued before they existed) the same bytes as one with none set', async () => {
    const before = await layoutInvoicePdf(invoiceDocument({ merchant: { name: 'Acme Tools Ltd' }, customer: { name: 'Jane Doe', email: 'jane@example.com' } }));
    const none = await layoutInvoicePdf(invoiceDocument({
      merchant: { name: 'Acme Tools Ltd', address: null, taxId: null, supportEmail: null }, customer: { name: 'Jane Doe', email: 'jane@example.com', address: null, taxIds: [] },
    }));
    expect(Buffer.compare(before, none)).toBe(0);
    const withParties = await layoutInvoicePdf(invoiceDocument({ merchant: seller, customer: buyer }));
    expect(Buffer.compare(withParties, await layoutInvoicePdf(invoiceDocument({ merchant: seller, customer: buyer })))).toBe(0);
    expect(Buffer.compare(before, withParties)).not.toBe(0);
  });
});
