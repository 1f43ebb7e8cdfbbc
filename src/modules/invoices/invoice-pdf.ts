import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { DomainError } from '../../core/errors';
import type { InvoiceDocument } from './invoice-document';
import type { RenderReply, RenderRequest } from './invoice-pdf.worker';

/*
 * Invoice PDFs are drawn on worker threads: pdfkit lays a page out synchronously, and 100
 * three-page invoices rendered on the event loop held it for 2–5 s in one block (bench/README.md,
 * "invoice PDF rendering: event loop"), so every other request waited that long.
 */

// The worker is this folder's invoice-pdf.worker: .ts under ts-jest and ts-node, .js in dist/.
const SOURCE = path.extname(__filename) === '.ts';
const WORKER_FILE = path.join(__dirname, `invoice-pdf.worker${SOURCE ? '.ts' : '.js'}`);
const TSCONFIG = path.join(__dirname, '..', '..', '..', 'tsconfig.json');

function startWorker(): Worker {
  if (!SOURCE) return new Worker(WORKER_FILE);
  // Plain Node cannot load TypeScript: the sources go through ts-node, as bin/payorch.js does.
  const bootstrap = `require('ts-node').register({ transpileOnly: true, project: ${JSON.stringify(TSCONFIG)} }); require(${JSON.stringify(WORKER_FILE)});`;
  return new Worker(bootstrap, { eval: true });
}

export interface InvoicePdfRendererOptions {
  /** Render threads; default 1 on two cores, 2 on more (the API keeps a core). */
  threads?: number;
  /** Renders waiting for a thread beyond which a render is refused (503 `service_unavailable`). */
  maxQueued?: number;
  /** A render taking longer is abandoned and its thread replaced. */
  timeoutMs?: number;
  /** A thread idle this long is stopped (memory back after a burst). */
  idleMs?: number;
}

interface Task {
  id: number;
  document: InvoiceDocument;
  resolve: (pdf: Buffer) => void;
  reject: (err: Error) => void;
}

interface Thread {
  worker: Worker;
  task: Task | null;
  timer: NodeJS.Timeout | null;
}

/** A small pool of render threads with a bounded queue, behind `renderInvoicePdf`. */
export class InvoicePdfRenderer {
  private readonly threads: number;
  private readonly maxQueued: number;
  private readonly timeoutMs: number;
  private readonly idleMs: number;
  private readonly pool: Thread[] = [];
  private readonly queue: Task[] = [];
  private nextId = 1;
  private closed = false;

  constructor(options: InvoicePdfRendererOptions = {}) {
    this.threads = Math.max(1, options.threads ?? Math.min(2, Math.max(1, os.availableParallelism() - 1)));
    this.maxQueued = options.maxQueued ?? 500;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.idleMs = options.idleMs ?? 30_000;
  }

  render(document: InvoiceDocument): Promise<Buffer> {
    if (this.closed) return Promise.reject(new Error('the invoice PDF renderer is closed'));
    if (this.queue.length >= this.maxQueued) {
      return Promise.reject(new DomainError('service_unavailable', 'Too many invoice PDFs are being rendered; try again shortly'));
    }
    return new Promise<Buffer>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, document, resolve, reject });
      this.dispatch();
    });
  }

  /** Stops every thread; renders not finished are refused. */
  async close(): Promise<void> {
    this.closed = true;
    const refused = new Error('the invoice PDF renderer is closed');
    for (const task of this.queue.splice(0)) task.reject(refused);
    await Promise.all(
      this.pool.splice(0).map((thread) => {
        if (thread.timer) clearTimeout(thread.timer);
        thread.task?.reject(refused);
        return thread.worker.terminate();
      }),
    );
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let thread = this.pool.find((t) => t.task === null);
      if (!thread && this.pool.length < this.threads) thread = this.spawn();
      if (!thread) return;
      const task = this.queue.shift()!;
      thread.task = task;
      if (thread.timer) clearTimeout(thread.timer);
      thread.timer = setTimeout(() => this.fail(thread, new Error(`rendering invoice PDF took over ${this.timeoutMs} ms`)), this.timeoutMs);
      // A busy thread keeps the process alive until its answer is in; an idle one does not.
      thread.worker.ref();
      thread.worker.postMessage({ id: task.id, document: task.document } satisfies RenderRequest);
    }
  }

  private spawn(): Thread {
    const thread: Thread = { worker: startWorker(), task: null, timer: null };
    thread.worker.on('message', (reply: RenderReply) => this.settle(thread, reply));
    thread.worker.on('error', (err) => this.fail(thread, err));
    thread.worker.on('exit', (code) => this.fail(thread, new Error(`invoice PDF thread exited with code ${code}`)));
    this.pool.push(thread);
    return thread;
  }

  private settle(thread: Thread, reply: RenderReply): void {
    const task = thread.task;
    if (!task || task.id !== reply.id) return;
    thread.task = null;
    if ('error' in reply) task.reject(new Error(`rendering invoice PDF failed: ${reply.error}`));
    else task.resolve(Buffer.from(reply.pdf.buffer, reply.pdf.byteOffset, reply.pdf.byteLength));
    this.idle(thread);
    this.dispatch();
  }

  private idle(thread: Thread): void {
    if (thread.timer) clearTimeout(thread.timer);
    thread.worker.unref();
    thread.timer = setTimeout(() => this.retire(thread), this.idleMs);
    thread.timer.unref();
  }

  private retire(thread: Thread): void {
    if (thread.task) return;
    this.remove(thread);
    void thread.worker.terminate();
  }

  /** The thread crashed, exited or overran: its render is refused and the thread replaced on demand. */
  private fail(thread: Thread, err: Error): void {
    if (!this.pool.includes(thread)) return;
    this.remove(thread);
    if (thread.timer) clearTimeout(thread.timer);
    thread.task?.reject(err);
    thread.task = null;
    void thread.worker.terminate();
    this.dispatch();
  }

  private remove(thread: Thread): void {
    const index = this.pool.indexOf(thread);
    if (index >= 0) this.pool.splice(index, 1);
  }
}

let shared: InvoicePdfRenderer | null = null;

/**
 * The invoice's PDF: A4, in the customer's language, the same bytes for the same snapshot on
 * every call and in every process. Rendered on a worker thread, never on the event loop.
 */
export function renderInvoicePdf(document: InvoiceDocument): Promise<Buffer> {
  shared ??= new InvoicePdfRenderer();
  return shared.render(document);
}

/** Stops the shared render threads (shutdown, tests); the next render starts them again. */
export async function closeInvoicePdfRenderer(): Promise<void> {
  const renderer = shared;
  shared = null;
  await renderer?.close();
}
