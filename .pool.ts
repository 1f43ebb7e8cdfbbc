import { renderInvoicePdf, closeInvoicePdfRenderer } from './src/modules/invoices/invoice-pdf';
import { layoutInvoicePdf } from './src/modules/invoices/invoice-pdf.layout';
const lineItems = Array.from({ length: 60 }, (_, n) => ({ description: `Line ${n + 1}: usage of the metered API in region eu-west, tier ${n % 4}`, quantity: n + 1, unitAmount: 1250, amount: (n + 1) * 1250, periodStart: null, periodEnd: null }));
const doc: any = { id: 'in_x', number: 'INV-000001', status: process.env.S ?? 'draft', livemode: false, currency: 'EUR', locale: 'de', createdAt: '2026-11-27T09:30:00.000Z', dueDate: null, sentAt: null, paidAt: null, merchant: { name: 'Default account' }, customer: { name: 'Erika Mustermann', email: 'erika@example.com' }, lineItems, subtotal: 1, total: 1, amountPaid: 0, creditApplied: 0, amountDue: 1, memo: 'Zahlbar innerhalb von 30 Tagen ohne Abzug.', paidOutOfBand: false };
(async () => {
  const mode = process.env.M ?? 'pool';
  const r = (d: any) => (mode === 'pool' ? renderInvoicePdf(d) : layoutInvoicePdf(d));
  for (let i = 0; i < 20; i++) await r(doc);
  const t = performance.now(); for (let i = 0; i < 60; i++) await r(doc);
  console.log(process.env.PAYORCH_BENCH_PDF_FONT ?? 'dejavu', mode, doc.status, ((performance.now() - t) / 60).toFixed(1), 'ms');
  await closeInvoicePdfRenderer();
})();
