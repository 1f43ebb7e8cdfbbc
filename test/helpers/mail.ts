import type { InvoiceDocument } from '../../src/modules/invoices/invoice-document';
import type { OutgoingMail } from '../../src/modules/mail/mail.types';

/**
 * A tiny valid PDF with non-ASCII bytes (the binary comment line real PDFs carry): what the tests'
 * fake `invoice_pdf` renderer returns, so the bytes that arrive can be compared exactly.
 */
export const FAKE_PDF = Buffer.concat([
  Buffer.from('%PDF-1.4\n%'),
  Buffer.from([0xe2, 0xe3, 0xcf, 0xd3, 0x0a]),
  Buffer.from(
    '1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n' +
      '3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 72 72]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n',
  ),
]);

export function invoiceDocument(overrides: Partial<InvoiceDocument> = {}): InvoiceDocument {
  return {
    id: 'in_test000000000000000001',
    number: 'INV-000042',
    status: 'sent',
    livemode: false,
    currency: 'eur',
    locale: 'de',
    createdAt: '2026-11-01T10:00:00.000Z',
    dueDate: null,
    sentAt: '2026-11-01T10:00:00.000Z',
    paidAt: null,
    merchant: { name: 'Acme GmbH' },
    customer: { name: 'Jörg Müller', email: 'joerg@example.com' },
    lineItems: [{ description: 'Beratung', quantity: 1, unitAmount: 1200, amount: 1200, periodStart: null, periodEnd: null }],
    subtotal: 1200,
    total: 1200,
    amountPaid: 0,
    creditApplied: 0,
    amountDue: 1200,
    memo: null,
    paidOutOfBand: false,
    ...overrides,
  };
}

/** An invoice's mail as the invoice service would queue it: PDF attached, plain text and HTML. */
export function invoiceMail(overrides: Partial<OutgoingMail> = {}): OutgoingMail {
  const document = invoiceDocument();
  return {
    to: 'joerg@example.com',
    subject: `Rechnung ${document.number} von ${document.merchant.name}`,
    text: `Hallo Jörg,\n\nanbei Ihre Rechnung ${document.number} über 12,00 €.\n`,
    html: `<p>Hallo Jörg,</p><p>anbei Ihre Rechnung <b>${document.number}</b> über 12,00&nbsp;€.</p>`,
    attachments: [{ filename: `${document.number}.pdf`, contentType: 'application/pdf', source: { type: 'invoice_pdf', document } }],
    about: { type: 'invoice', id: document.id },
    ...overrides,
  };
}
