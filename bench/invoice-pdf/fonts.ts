/*
 * How long one invoice PDF takes to draw with the embedded DejaVu Sans Condensed against the
 * built-in Helvetica the service used before, in the same process, one render at a time: p50 and
 * p99 per font, their ratio (goal: p99 at most 1.5× Helvetica's), the PDFs' sizes and what loading
 * the font cost. The invoice is bench/invoice-pdf's: a draft of 60 lines, in German. The fonts
 * alternate in blocks of `BENCH_BLOCK` renders, so a change in the machine's load touches both
 * alike. Each render is timed twice: wall clock, and the CPU time this process used meanwhile,
 * which other processes on the machine move much less (a render is one thread's work). A
 * measurement, not a test.
 *
 *   node -r ts-node/register/transpile-only bench/invoice-pdf/fonts.ts
 *   BENCH_RENDERS=50 node -r ts-node/register/transpile-only bench/invoice-pdf/fonts.ts   # smoke run
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import type { InvoiceDocument } from '../../src/modules/invoices/invoice-document';
import { dejaVuSans, type InvoiceTypeface } from '../../src/modules/invoices/invoice-pdf.fonts';
import { layoutInvoicePdf } from '../../src/modules/invoices/invoice-pdf.layout';

const RENDERS = Number(process.env.BENCH_RENDERS ?? 600);
const BLOCK = Number(process.env.BENCH_BLOCK ?? 25);
const GOAL = 1.5;

function invoice(lines: number, customerName = 'Erika Mustermann'): InvoiceDocument {
  const lineItems = Array.from({ length: lines }, (_, n) => ({
    description: `Line ${n + 1}: usage of the metered API in region eu-west, tier ${n % 4}`,
    quantity: n + 1,
    unitAmount: 1250,
    amount: (n + 1) * 1250,
    periodStart: n % 3 === 0 ? '2026-11-01T00:00:00.000Z' : null,
    periodEnd: n % 3 === 0 ? '2026-11-30T00:00:00.000Z' : null,
  }));
  const total = lineItems.reduce((sum, l) => sum + l.amount, 0);
  return {
    id: 'in_bench_fonts',
    number: 'INV-000001',
    status: 'draft',
    livemode: false,
    currency: 'EUR',
    locale: 'de',
    createdAt: '2026-11-27T09:30:00.000Z',
    dueDate: '2026-12-27T00:00:00.000Z',
    sentAt: '2026-11-27T09:31:00.000Z',
    paidAt: null,
    merchant: { name: 'Acme Tools GmbH' },
    customer: { name: customerName, email: 'erika@example.com' },
    lineItems,
    subtotal: total,
    total,
    amountPaid: 0,
    creditApplied: 0,
    amountDue: total,
    memo: 'Zahlbar innerhalb von 30 Tagen ohne Abzug.',
    paidOutOfBand: false,
  };
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
// pdfkit writes one uncompressed `/Type /Page` dictionary per page.
const pages = (pdf: Buffer) => (pdf.toString('latin1').match(/\/Type \/Page\b(?!s)/g) ?? []).length;

async function main(): Promise<void> {
  const doc = invoice(60);
  process.stdout.write(`invoice PDF fonts on ${os.cpus()[0]?.model ?? 'unknown CPU'} × ${os.availableParallelism()}, node ${process.version}; load average ${os.loadavg().map((n) => n.toFixed(1)).join(' ')}\n`);

  const rssBefore = process.memoryUsage().rss;
  let t = performance.now();
  dejaVuSans();
  process.stdout.write(`loading DejaVu Sans Condensed book and bold (once per thread): ${(performance.now() - t).toFixed(1)} ms, RSS ${mb(rssBefore)} → ${mb(process.memoryUsage().rss)}\n`);

  // Sizes: a one-page invoice, the 60-line three-page one, and one with every script.
  for (const [label, sample] of [
    ['2 lines', invoice(2)],
    ['60 lines', doc],
    ['60 lines, Polish/Greek/Russian/Japanese names', invoice(60, 'Zażółć Gęślą Jaźń — Αλέξανδρος Παπαδόπουλος — Дмитрий Шостакович — 山田太郎')],
  ] as const) {
    const [dejavu, helvetica] = [await layoutInvoicePdf(sample, 'dejavu'), await layoutInvoicePdf(sample, 'helvetica')];
    process.stdout.write(`size, ${label}: DejaVu ${kib(dejavu.length)} (${pages(dejavu)} pages), Helvetica ${kib(helvetica.length)} (${pages(helvetica)} pages)\n`);
  }

  // Warm-up: the JIT, pdfkit's Helvetica metrics and the font tables fontkit reads lazily.
  for (let i = 0; i < 20; i++) {
    await layoutInvoicePdf(doc, 'dejavu');
    await layoutInvoicePdf(doc, 'helvetica');
  }
  const times: Record<InvoiceTypeface, number[]> = { dejavu: [], helvetica: [] };
  const cpu: Record<InvoiceTypeface, number[]> = { dejavu: [], helvetica: [] };
  t = performance.now();
  for (let done = 0; done < RENDERS; done += BLOCK) {
    for (const font of ['dejavu', 'helvetica'] as const) {
      for (let i = 0; i < BLOCK; i++) {
        const started = performance.now();
        const cpuStarted = process.cpuUsage();
        await layoutInvoicePdf(doc, font);
        const used = process.cpuUsage(cpuStarted);
        times[font].push(performance.now() - started);
        cpu[font].push((used.user + used.system) / 1000);
      }
    }
  }
  const seconds = (performance.now() - t) / 1000;
  const stats = (samples: number[]) => {
    const sorted = [...samples].sort((a, b) => a - b);
    return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] };
  };
  for (const [label, by] of [['wall clock', times], ['CPU time', cpu]] as const) {
    const figures = { dejavu: stats(by.dejavu), helvetica: stats(by.helvetica) };
    for (const font of ['dejavu', 'helvetica'] as const) {
      const f = figures[font];
      process.stdout.write(`${label.padEnd(10)} ${font.padEnd(9)} ${by[font].length} renders: p50 ${f.p50.toFixed(1)} ms, p99 ${f.p99.toFixed(1)} ms, max ${f.max.toFixed(1)} ms\n`);
    }
    const ratio = figures.dejavu.p99 / figures.helvetica.p99;
    process.stdout.write(
      `${label.padEnd(10)} p99 ratio DejaVu/Helvetica ${ratio.toFixed(2)}× (goal ≤ ${GOAL}×: ${ratio <= GOAL ? 'met' : 'NOT met'}); p50 ratio ${(figures.dejavu.p50 / figures.helvetica.p50).toFixed(2)}×\n`,
    );
  }
  process.stdout.write(`${seconds.toFixed(1)} s; RSS at the end ${mb(process.memoryUsage().rss)}; load average ${os.loadavg().map((n) => n.toFixed(1)).join(' ')}\n`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
