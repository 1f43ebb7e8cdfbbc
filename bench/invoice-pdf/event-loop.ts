/*
 * How long invoice PDF rendering holds the event loop: 100 renders of a 3-page invoice started
 * at once in this process, with monitorEventLoopDelay sampling every 10 ms meanwhile. A
 * measurement, not a test.
 *
 *   node -r ts-node/register/transpile-only bench/invoice-pdf/event-loop.ts
 *   BENCH_RENDERS=200 BENCH_ROUNDS=5 node -r ts-node/register/transpile-only bench/invoice-pdf/event-loop.ts
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { InvoiceDocument } from '../../src/modules/invoices/invoice-document';
import { renderInvoicePdf } from '../../src/modules/invoices/invoice-pdf';
import { layoutInvoicePdf } from '../../src/modules/invoices/invoice-pdf.layout';

const RENDERS = Number(process.env.BENCH_RENDERS ?? 100);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
// in-process: the pdfkit layout on this thread; pool: renderInvoicePdf as the service calls it.
const MODE = process.env.BENCH_MODE ?? 'both';

function threePageInvoice(i: number): InvoiceDocument {
  const lineItems = Array.from({ length: 60 }, (_, n) => ({
    description: `Line ${n + 1}: usage of the metered API in region eu-west, tier ${n % 4}`,
    quantity: n + 1,
    unitAmount: 1250,
    amount: (n + 1) * 1250,
    periodStart: n % 3 === 0 ? '2026-11-01T00:00:00.000Z' : null,
    periodEnd: n % 3 === 0 ? '2026-11-30T00:00:00.000Z' : null,
  }));
  const total = lineItems.reduce((sum, l) => sum + l.amount, 0);
  return {
    id: `in_bench_${i}`,
    number: `INV-${String(i).padStart(6, '0')}`,
    status: 'sent',
    livemode: true,
    currency: 'EUR',
    locale: 'de',
    createdAt: '2026-11-27T09:30:00.000Z',
    dueDate: '2026-12-27T00:00:00.000Z',
    sentAt: '2026-11-27T09:31:00.000Z',
    paidAt: null,
    merchant: { name: 'Acme Tools GmbH' },
    customer: { name: 'Erika Mustermann', email: 'erika@example.com' },
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

/** Resolves after `ms`: a timer the event loop must get to. */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function measure(label: string, render: (doc: InvoiceDocument) => Promise<Buffer>): Promise<void> {
  for (let round = 1; round <= ROUNDS; round++) {
    const histogram = monitorEventLoopDelay({ resolution: 10 });
    const docs = Array.from({ length: RENDERS }, (_, i) => threePageInvoice(i + 1));
    histogram.enable();
    // A probe besides the histogram: how late a 10 ms interval timer fires, as a request's
    // callback waiting for the loop would be.
    let probeMax = 0;
    let last = performance.now();
    const probe = setInterval(() => {
      const now = performance.now();
      probeMax = Math.max(probeMax, now - last - 10);
      last = now;
    }, 10);
    await sleep(20);
    const utilizationBefore = performance.eventLoopUtilization();
    const started = performance.now();
    // Each render starts in its own callback, as requests arriving one after another would.
    const pdfs = await Promise.all(docs.map((doc) => new Promise<void>((resolve) => setImmediate(resolve)).then(() => render(doc))));
    const seconds = (performance.now() - started) / 1000;
    // Share of the time this thread was busy rather than waiting: other processes on the
    // machine do not raise it, unlike the delays.
    const utilization = performance.eventLoopUtilization(utilizationBefore).utilization;
    // Let the loop turn, so a block at the very end is sampled too.
    await sleep(30);
    clearInterval(probe);
    histogram.disable();
    const ms = (ns: number) => (ns / 1e6).toFixed(1);
    const bytes = pdfs.reduce((sum, b) => sum + b.length, 0) / pdfs.length;
    console.log(
      `${label} round ${round}: ${RENDERS} PDFs in ${seconds.toFixed(2)} s (${(RENDERS / seconds).toFixed(0)}/s, ${Math.round(bytes / 1024)} KiB each); ` +
        `event loop delay p50 ${ms(histogram.percentile(50))} ms, p99 ${ms(histogram.percentile(99))} ms, max ${ms(histogram.max)} ms; ` +
        `10 ms timer late by up to ${probeMax.toFixed(1)} ms; event loop busy ${(utilization * 100).toFixed(0)}% of the time`,
    );
  }
}

/** The same sampling with nothing rendering: what the machine itself adds (other processes). */
async function idle(seconds: number): Promise<void> {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  await sleep(seconds * 1000);
  histogram.disable();
  const ms = (ns: number) => (ns / 1e6).toFixed(1);
  console.log(`idle ${seconds} s: event loop delay p50 ${ms(histogram.percentile(50))} ms, p99 ${ms(histogram.percentile(99))} ms, max ${ms(histogram.max)} ms`);
}

async function main(): Promise<void> {
  await idle(5);
  // One warm-up render loads pdfkit's font metrics before anything is measured.
  await layoutInvoicePdf(threePageInvoice(0));
  if (MODE === 'both' || MODE === 'in-process') await measure('in-process', layoutInvoicePdf);
  if (MODE === 'both' || MODE === 'pool') {
    await renderInvoicePdf(threePageInvoice(0));
    await measure('worker pool', renderInvoicePdf);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
