import { parentPort } from 'node:worker_threads';
import type { InvoiceDocument } from './invoice-document';
import { layoutInvoicePdf } from './invoice-pdf.layout';

/** A render thread of the invoice PDF pool (invoice-pdf.ts): one snapshot in, its bytes out. */
export interface RenderRequest {
  id: number;
  document: InvoiceDocument;
}

export type RenderReply = { id: number; pdf: Uint8Array } | { id: number; error: string };

parentPort?.on('message', (request: RenderRequest) => {
  // A snapshot that cannot be drawn throws at once; it is answered like any failed render
  // instead of taking the thread down.
  new Promise<Buffer>((resolve) => resolve(layoutInvoicePdf(request.document))).then(
    (pdf) => {
      // A copy of its own: a small Buffer can share Node's allocation pool, which must not be
      // moved to the other thread.
      const bytes = new Uint8Array(pdf);
      parentPort!.postMessage({ id: request.id, pdf: bytes } satisfies RenderReply, [bytes.buffer]);
    },
    (err: unknown) => {
      parentPort!.postMessage({ id: request.id, error: err instanceof Error ? err.message : String(err) } satisfies RenderReply);
    },
  );
});
