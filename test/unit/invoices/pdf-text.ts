import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Reads PDFs back with poppler-utils (pdftotext, pdfinfo), as a person's viewer would. */
export class PdfReader {
  private readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-invoice-pdf-'));
  private count = 0;

  private file(pdf: Buffer): string {
    const file = path.join(this.dir, `${++this.count}.pdf`);
    fs.writeFileSync(file, pdf);
    return file;
  }

  /**
   * The text of the PDF (or of page `page`) in its physical layout, so a label and its value
   * share a line; `raw` gives content-stream order instead.
   */
  text(pdf: Buffer, opts: { page?: number; raw?: boolean } = {}): string {
    const args = [...(opts.page ? ['-f', String(opts.page), '-l', String(opts.page)] : []), opts.raw ? '-raw' : '-layout', this.file(pdf), '-'];
    return execFileSync('pdftotext', args, { encoding: 'utf8' });
  }

  pages(pdf: Buffer): number {
    const info = execFileSync('pdfinfo', [this.file(pdf)], { encoding: 'utf8' });
    return Number(/^Pages:\s+(\d+)/m.exec(info)![1]);
  }

  /** Each word with its box, in points from the page's top left, page by page. */
  words(pdf: Buffer): Array<Array<{ text: string; xMin: number; yMin: number; xMax: number; yMax: number }>> {
    const html = execFileSync('pdftotext', ['-bbox', this.file(pdf), '-'], { encoding: 'utf8' });
    return html
      .split('<page ')
      .slice(1)
      .map((page) =>
        [...page.matchAll(/<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)<\/word>/g)].map((m) => ({
          text: m[5].replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'"),
          xMin: Number(m[1]),
          yMin: Number(m[2]),
          xMax: Number(m[3]),
          yMax: Number(m[4]),
        })),
      );
  }

  close(): void {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Every run of white space (pdftotext's no-break spaces included) as one space. */
export const squash = (text: string) => text.replace(/\s+/g, ' ');
