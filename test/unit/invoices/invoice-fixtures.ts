import type { InvoiceDocument } from '../../../src/modules/invoices/invoice-document';

/** A sent USD invoice in English with two lines; override what a test is about. */
export function invoiceDocument(overrides: Partial<InvoiceDocument> = {}): InvoiceDocument {
  return {
    id: 'in_test_0001',
    number: 'INV-000042',
    status: 'sent',
    livemode: true,
    currency: 'USD',
    locale: 'en',
    createdAt: '2026-11-27T09:30:00.000Z',
    dueDate: '2026-12-27T00:00:00.000Z',
    sentAt: '2026-11-27T09:31:00.000Z',
    paidAt: null,
    merchant: { name: 'Acme Tools Ltd' },
    customer: { name: 'Jane Doe', email: 'jane@example.com' },
    lineItems: [
      { description: 'Consulting, November', quantity: 1, unitAmount: 1000, amount: 1000, periodStart: null, periodEnd: null },
      { description: 'Support plan', quantity: 2, unitAmount: 100, amount: 200, periodStart: '2026-11-01T00:00:00.000Z', periodEnd: '2026-11-30T00:00:00.000Z' },
    ],
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

/** `count` lines, each with a description naming its position (`Line 7 …`). */
export function manyLines(count: number, unitAmount = 1250): InvoiceDocument['lineItems'] {
  return Array.from({ length: count }, (_, i) => ({
    description: `Line ${i + 1}: usage of the metered API`,
    quantity: i + 1,
    unitAmount,
    amount: (i + 1) * unitAmount,
    periodStart: i % 3 === 0 ? '2026-11-01T00:00:00.000Z' : null,
    periodEnd: i % 3 === 0 ? '2026-11-30T00:00:00.000Z' : null,
  }));
}
