import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { DomainError } from '../../../src/core/errors';
import { closeInvoicePdfRenderer, InvoicePdfRenderer, renderInvoicePdf } from '../../../src/modules/invoices/invoice-pdf';
import { layoutInvoicePdf } from '../../../src/modules/invoices/invoice-pdf.layout';
import { invoiceDocument, manyLines } from './invoice-fixtures';

const ROOT = path.join(__dirname, '..', '..', '..');
const threePages = () => {
  const lineItems = manyLines(60);
  const total = lineItems.reduce((sum, l) => sum + l.amount, 0);
  return invoiceDocument({ lineItems, subtotal: total, total, amountDue: total });
};

afterAll(() => closeInvoicePdfRenderer());

describe('invoice PDF rendering off the event loop', () => {
  it('should keep the event loop turning while PDFs render', async () => {
    await renderInvoicePdf(invoiceDocument()); // the thread is up
    let turns = 0;
    const ticker = setInterval(() => turns++, 2);
    const started = performance.now();
    const renders = Array.from({ length: 20 }, () => renderInvoicePdf(threePages()));
    // Handing 20 three-page invoices over takes a moment; drawing them here took ~40 ms each.
    const handOver = performance.now() - started;
    const pdfs = await Promise.all(renders);
    clearInterval(ticker);
    expect(pdfs.every((pdf) => pdf.subarray(0, 5).toString() === '%PDF-')).toBe(true);
    expect(handOver).toBeLessThan(250);
    // Drawn on this thread, all 20 would be done before a timer could fire once.
    expect(turns).toBeGreaterThan(3);
  });

  it('should refuse a render beyond the queue bound with service_unavailable', async () => {
    const renderer = new InvoicePdfRenderer({ threads: 1, maxQueued: 2 });
    try {
      const first = renderer.render(invoiceDocument()); // on the thread
      const queued = [renderer.render(invoiceDocument()), renderer.render(invoiceDocument())];
      const refused = await renderer.render(invoiceDocument()).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(DomainError);
      expect((refused as DomainError).code).toBe('service_unavailable');
      expect((refused as DomainError).status).toBe(503);
      await expect(Promise.all([first, ...queued])).resolves.toHaveLength(3);
      // Once the queue drains, renders are taken again.
      await expect(renderer.render(invoiceDocument())).resolves.toBeInstanceOf(Buffer);
    } finally {
      await renderer.close();
    }
  });

  it('should report a snapshot that cannot be drawn and go on rendering', async () => {
    const renderer = new InvoicePdfRenderer({ threads: 1 });
    try {
      await expect(renderer.render(invoiceDocument({ createdAt: 'yesterday' }))).rejects.toThrow('rendering invoice PDF failed: not a date: yesterday');
      const pdf = await renderer.render(invoiceDocument());
      expect(pdf.equals(await layoutInvoicePdf(invoiceDocument()))).toBe(true);
    } finally {
      await renderer.close();
    }
  });

  it('should abandon a render that overruns and replace its thread', async () => {
    const renderer = new InvoicePdfRenderer({ threads: 1, timeoutMs: 1 });
    try {
      await expect(renderer.render(threePages())).rejects.toThrow('rendering invoice PDF took over 1 ms');
    } finally {
      await renderer.close();
    }
    const patient = new InvoicePdfRenderer({ threads: 1, timeoutMs: 1 });
    const internals = patient as unknown as { timeoutMs: number };
    try {
      await expect(patient.render(threePages())).rejects.toThrow('took over');
      internals.timeoutMs = 60_000;
      await expect(patient.render(invoiceDocument())).resolves.toBeInstanceOf(Buffer);
    } finally {
      await patient.close();
    }
  });

  it('should refuse what is still waiting when closed', async () => {
    const renderer = new InvoicePdfRenderer({ threads: 1 });
    const renders = [renderer.render(threePages()), renderer.render(threePages())].map((p) => p.catch((err: Error) => err.message));
    await renderer.close();
    expect(await Promise.all(renders)).toEqual(['the invoice PDF renderer is closed', 'the invoice PDF renderer is closed']);
    await expect(renderer.render(invoiceDocument())).rejects.toThrow('closed');
  });
});

describe('invoice PDF rendering from compiled JavaScript', () => {
  let outDir: string;

  beforeAll(() => {
    // What `npm run build` makes of the folders the renderer needs: .js files side by side.
    outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-invoice-pdf-dist-'));
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(outDir, 'node_modules'), 'dir');
    for (const folder of ['src/core', 'src/modules/invoices']) {
      fs.mkdirSync(path.join(outDir, folder), { recursive: true });
      for (const name of fs.readdirSync(path.join(ROOT, folder)).filter((n) => n.endsWith('.ts'))) {
        const source = fs.readFileSync(path.join(ROOT, folder, name), 'utf8');
        const { outputText } = ts.transpileModule(source, {
          compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true, experimentalDecorators: true },
        });
        fs.writeFileSync(path.join(outDir, folder, name.replace(/\.ts$/, '.js')), outputText);
      }
    }
  });

  afterAll(() => fs.rmSync(outDir, { recursive: true, force: true }));

  it('should start the compiled worker and give the same bytes', async () => {
    const doc = threePages();
    const script = [
      "const { renderInvoicePdf, closeInvoicePdfRenderer } = require('./src/modules/invoices/invoice-pdf.js');",
      'renderInvoicePdf(JSON.parse(process.argv[1])).then(async (pdf) => {',
      "  process.stdout.write(pdf.toString('base64'));",
      '  await closeInvoicePdfRenderer();',
      '});',
    ].join('\n');
    // Plain node, no ts-node: a worker looked up as .ts would not load.
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script, JSON.stringify(doc)], { cwd: outDir, maxBuffer: 64 * 1024 * 1024 });
    expect(Buffer.from(stdout, 'base64').equals(await layoutInvoicePdf(doc))).toBe(true);
  });
});
