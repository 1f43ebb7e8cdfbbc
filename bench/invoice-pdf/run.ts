/**
 * bench/invoice-pdf: invoice PDFs rendered per second at 16 concurrent
 * `GET /v1/invoices/{id}/pdf` (a 60-line invoice, four pages in the embedded font), and the p99 latency of a
 * `GET /v1/customers/{id}` issued alongside, against the same GET on the same service with
 * nothing else to do, in the same run. Prints the ratio loaded/idle p99 (goal: at most 5), the
 * service's RSS and the load average. Every response is checked (200; a PDF starts `%PDF`).
 *
 * The GET is a light, steady probe rather than a second load: 4 connections, each sending its
 * next request 10 ms after the previous answer (BENCH_PROBE_CONNECTIONS, BENCH_PROBE_PAUSE_MS).
 * A closed loop as fast as it goes would saturate the service by itself, and "idle" would then
 * mean "busy with GETs". The idle figure is taken before and again after the PDF load; the
 * ratio is against the one before, the one after shows how much the machine moved meanwhile.
 *
 *
 * Each dialect runs twice, once per font of `BENCH_PDF_FONTS` (default `dejavu,helvetica`): the
 * embedded DejaVu Sans Condensed the service uses, then the built-in Helvetica it used before
 * (`PAYORCH_BENCH_PDF_FONT=helvetica`, set only here), and prints the ratio of the PDFs' p99
 * (goal: at most 1.5).
 *
 *   npm run bench:invoice-pdf                      # PostgreSQL
 *   BENCH_DB=sqlite BENCH_SECONDS=15 npm run bench:invoice-pdf
 */
import fs from 'node:fs';
import https from 'node:https';
import autocannon from 'autocannon';
import { benchTempDir, freshDatabase, rssMb, sampleRss, type RssSamples } from '../lib';
import { api, loadAverage, machine, mb, percentile, startService, stopService, type Service } from '../service';

// The bench client talks to local self-signed listeners only.
process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';

const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP_SECONDS ?? 3);
const PDF_CONNECTIONS = Number(process.env.BENCH_PDF_CONNECTIONS ?? 16);
const PROBE_CONNECTIONS = Number(process.env.BENCH_PROBE_CONNECTIONS ?? 4);
const PROBE_PAUSE_MS = Number(process.env.BENCH_PROBE_PAUSE_MS ?? 10);
const LINES = Number(process.env.BENCH_INVOICE_LINES ?? 60);
const GOAL = 5;
const FONTS = (process.env.BENCH_PDF_FONTS ?? 'dejavu,helvetica').split(',');
const FONT_GOAL = 1.5;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface ProbeFigures { requests: number; rps: number; p50: number; p99: number; max: number; bad: number; samples: string[] }

/**
 * GET `url` from `PROBE_CONNECTIONS` loops for `seconds`, each pausing `PROBE_PAUSE_MS` after an
 * answer; latencies from sending to the whole body read.
 */
async function probe(url: string, headers: Record<string, string>, seconds: number): Promise<ProbeFigures> {
  const latencies: number[] = [];
  const samples: string[] = [];
  let bad = 0;
  const until = performance.now() + seconds * 1000;
  await Promise.all(Array.from({ length: PROBE_CONNECTIONS }, async () => {
    while (performance.now() < until) {
      const t0 = performance.now();
      const res = await api('GET', url, headers);
      latencies.push(performance.now() - t0);
      if (res.status !== 200) {
        bad++;
        if (samples.length < 3) samples.push(`${res.status} ${JSON.stringify(res.json).slice(0, 200)}`);
      }
      await sleep(PROBE_PAUSE_MS);
    }
  }));
  return {
    requests: latencies.length,
    rps: latencies.length / seconds,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: Math.max(...latencies),
    bad,
    samples,
  };
}

interface PdfFigures { pdfs: number; perSecond: number; p50: number; p99: number; bad: number; errors: number; timeouts: number; samples: string[] }

/** GET the PDF at `connections` for `seconds`, as fast as it comes. */
async function pdfLoad(service: Service, invoiceId: string, headers: Record<string, string>, seconds: number): Promise<PdfFigures> {
  let bad = 0;
  let pdfs = 0;
  const samples: string[] = [];
  const result = await autocannon({
    url: `${service.baseUrl}/v1/invoices/${invoiceId}/pdf`,
    method: 'GET',
    connections: PDF_CONNECTIONS,
    duration: seconds,
    headers,
    requests: [{
      onResponse: (status: number, body: string) => {
        if (status === 200 && body.startsWith('%PDF')) pdfs++;
        else {
          bad++;
          if (samples.length < 3) samples.push(`${status} ${body.slice(0, 200)}`);
        }
      },
    }],
  } as never);
  const r = result as unknown as { latency: { p50: number; p99: number }; errors: number; timeouts: number };
  return { pdfs, perSecond: pdfs / seconds, p50: r.latency.p50, p99: r.latency.p99, bad, errors: r.errors, timeouts: r.timeouts, samples };
}

interface Result {
  idle: ProbeFigures;
  loaded: ProbeFigures;
  idleAfter: ProbeFigures;
  pdf: PdfFigures;
  idleRss: number | null;
  loadedRss: RssSamples;
  invoice: { number: string; lines: number; pages: number; bytes: number };
}

async function benchDialect(dialect: string, font: string): Promise<Result> {
  const dir = benchTempDir('invoice-pdf');
  const db = await freshDatabase(dialect, dir);
  const service = await startService(db.url, dir, font === 'helvetica' ? { PAYORCH_BENCH_PDF_FONT: 'helvetica' } : {});
  try {
    const idleRss = rssMb(service.pid);
    const auth = { authorization: `Bearer ${service.testKey}` };
    const customer = await api('POST', `${service.baseUrl}/v1/customers`, auth, { email: 'erika@example.com', name: 'Erika Mustermann', locale: 'de' });
    if (customer.status !== 201) throw new Error(`creating the customer answered ${customer.status}: ${JSON.stringify(customer.json)}`);
    const customerId = customer.json.data?.id as string;
    const lineItems = Array.from({ length: LINES }, (_, n) => ({
      description: `Line ${n + 1}: usage of the metered API in region eu-west, tier ${n % 4}`,
      quantity: n + 1,
      unitAmount: 1250,
    }));
    const invoice = await api('POST', `${service.baseUrl}/v1/invoices`, auth, { customerId, currency: 'eur', lineItems, memo: 'Zahlbar innerhalb von 30 Tagen ohne Abzug.' });
    if (invoice.status !== 201) throw new Error(`creating the invoice answered ${invoice.status}: ${JSON.stringify(invoice.json)}`);
    const invoiceId = invoice.json.data?.id as string;

    // One PDF, to know what is being rendered: its size and page count (pdfkit writes one
    // uncompressed `/Type /Page` dictionary per page).
    const one = await fetchBytes(`${service.baseUrl}/v1/invoices/${invoiceId}/pdf`, auth);
    const pages = (one.toString('latin1').match(/\/Type \/Page\b(?!s)/g) ?? []).length;

    const customerUrl = `${service.baseUrl}/v1/customers/${customerId}`;
    // Warm-up of the GET alone, then the idle figure.
    await probe(customerUrl, auth, WARMUP);
    const idle = await probe(customerUrl, auth, DURATION);

    // The PDF load: a warm-up (the render thread starts, pdfkit loads its fonts), the probe
    // running alongside but not counted; then both measured together.
    const rss = sampleRss(service.pid);
    await Promise.all([pdfLoad(service, invoiceId, auth, WARMUP), probe(customerUrl, auth, WARMUP)]);
    const [pdf, loaded] = await Promise.all([pdfLoad(service, invoiceId, auth, DURATION), probe(customerUrl, auth, DURATION)]);
    const loadedRss = rss.stop();

    // The idle figure again: the machine's own drift over the run.
    await sleep(1000);
    const idleAfter = await probe(customerUrl, auth, DURATION);
    return { idle, loaded, idleAfter, pdf, idleRss, loadedRss, invoice: { number: String(invoice.json.data?.number), lines: LINES, pages, bytes: one.length } };
  } finally {
    await stopService(service);
    await db.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function fetchBytes(url: string, headers: Record<string, string>): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    https.get(url, { headers, rejectUnauthorized: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        if (res.statusCode !== 200 || !bytes.subarray(0, 4).equals(Buffer.from('%PDF'))) reject(new Error(`the invoice PDF answered ${res.statusCode}: ${bytes.subarray(0, 200).toString()}`));
        else resolve(bytes);
      });
    }).on('error', reject);
  });
}

const ms = (n: number) => `${n.toFixed(1)} ms`;

function probeLine(name: string, f: ProbeFigures): string {
  let line = `  ${name.padEnd(34)} ${f.rps.toFixed(0).padStart(5)} req/s   p50 ${ms(f.p50).padStart(8)}   p99 ${ms(f.p99).padStart(8)}   max ${ms(f.max).padStart(8)}`;
  if (f.bad) line += `   NOT 200: ${f.bad} (e.g. ${f.samples.join(' | ')})`;
  return `${line}\n`;
}

async function main(): Promise<void> {
  const dialects = (process.env.BENCH_DB ?? 'postgres').split(',');
  process.stdout.write(
    `invoice-pdf benchmark on ${machine()}, ${DURATION}s per run after a ${WARMUP}s warm-up; ${PDF_CONNECTIONS} PDF connections, ` +
      `GET probe ${PROBE_CONNECTIONS} connections pausing ${PROBE_PAUSE_MS} ms\n`,
  );
  process.stdout.write(`load average at start: ${loadAverage()}\n`);
  for (const dialect of dialects) {
    const pdfP99: Record<string, number> = {};
    for (const font of FONTS) {
      const r = await benchDialect(dialect, font);
      pdfP99[font] = r.pdf.p99;
      process.stdout.write(`\n${dialect}, ${font}: invoice ${r.invoice.number}, ${r.invoice.lines} lines, ${r.invoice.pages} pages, ${(r.invoice.bytes / 1024).toFixed(1)} KiB\n`);
      const p = r.pdf;
      process.stdout.write(
      `  PDFs at ${PDF_CONNECTIONS} connections         ${p.perSecond.toFixed(1).padStart(5)} PDFs/s  p50 ${String(p.p50).padStart(5)} ms   p99 ${String(p.p99).padStart(5)} ms` +
        `   (${p.pdfs} PDFs${p.bad || p.errors || p.timeouts ? `; NOT A PDF: ${p.bad}, socket errors ${p.errors}, timeouts ${p.timeouts}; e.g. ${p.samples.join(' | ')}` : ', all 200 %PDF'})\n`,
      );
      process.stdout.write(probeLine('GET customer, idle', r.idle));
      process.stdout.write(probeLine('GET customer, alongside the PDFs', r.loaded));
      process.stdout.write(probeLine('GET customer, idle again after', r.idleAfter));
      const ratio = r.loaded.p99 / r.idle.p99;
      process.stdout.write(
      `  ratio of p99 (loaded/idle): ${ratio.toFixed(1)}× (goal ≤ ${GOAL}×: ${ratio <= GOAL ? 'met' : 'NOT met'}); against the idle figure after: ${(r.loaded.p99 / r.idleAfter.p99).toFixed(1)}×\n`,
      );
      process.stdout.write(
      `  service RSS: idle ${mb(r.idleRss)}; under the PDF load peak ${mb(r.loadedRss.peak)}, end ${mb(r.loadedRss.end)}; ` +
        `every 5 s from the warm-up on: ${r.loadedRss.trace.map((n) => n.toFixed(0)).join(' ')} MB\n`,
      );
      process.stdout.write(`  load average after ${dialect}, ${font}: ${loadAverage()}\n`);
    }
    if (pdfP99.dejavu !== undefined && pdfP99.helvetica !== undefined) {
      const ratio = pdfP99.dejavu / pdfP99.helvetica;
      process.stdout.write(
        `\n${dialect}: PDF p99 with the embedded font ${pdfP99.dejavu} ms against Helvetica's ${pdfP99.helvetica} ms: ${ratio.toFixed(2)}× (goal ≤ ${FONT_GOAL}×: ${ratio <= FONT_GOAL ? 'met' : 'NOT met'})\n`,
      );
    }
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
