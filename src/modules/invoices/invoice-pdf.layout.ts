import { createHash } from 'node:crypto';
import PDFDocument from 'pdfkit';
import type { InvoiceDocument } from './invoice-document';
import { formatInvoiceDate, formatMoney, formatQuantity, invoiceLabels, invoiceLanguage, type InvoiceLabels } from './invoice-i18n';
import { addressLines, taxIdLabel } from './invoice-i18n';
import { formatTaxPercentage, invoiceTaxLabels } from './invoice-tax-i18n';
import { dejaVuCanDraw, FONT, FONT_BOLD, forDejaVu, invoiceTypeface, useInvoiceFonts, type InvoiceTypeface } from './invoice-pdf.fonts';

/*
 * The invoice PDF, set in DejaVu Sans Condensed embedded in the file (invoice-pdf.fonts.ts): names,
 * addresses and descriptions print as typed in Latin, Greek and Cyrillic, and a character the
 * font lacks (Chinese, Japanese, Korean …) shows as a box while the PDF's text keeps it.
 *
 * Every text call takes its text through `printable`. For the benchmark's baseline
 * (`PAYORCH_BENCH_PDF_FONT=helvetica`) the layout still runs on pdfkit's built-in Helvetica,
 * whose WinAnsi encoding (Latin-1 plus €, „, –, Œ …) needs the text transliterated (Č → C) or
 * `?`, and a currency symbol outside it replaced by the ISO code (`KRW 1,200`).
 */

// The typeface of the PDF being drawn: drawing is synchronous, one PDF at a time per thread.
let typeface: InvoiceTypeface = 'dejavu';

/** `text` as the current PDF's font draws it. */
function printable(text: string): string {
  return typeface === 'helvetica' ? winAnsiText(text) : forDejaVu(text);
}

/** Whether the current PDF's font draws every character of `text` (a currency sign). */
function canShow(text: string): boolean {
  return typeface === 'helvetica' ? canDrawWinAnsi(text) : dejaVuCanDraw(text);
}

// Code points 0x80–0x9F of WinAnsi, by Unicode code point (the rest of WinAnsi is Latin-1).
const WIN_ANSI_EXTRA = new Set([
  0x20ac, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021, 0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0x017d, 0x2018, 0x2019,
  0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0x017e, 0x0178,
]);

function isWinAnsi(codePoint: number): boolean {
  return (codePoint >= 0x20 && codePoint <= 0x7e) || (codePoint >= 0xa0 && codePoint <= 0xff) || WIN_ANSI_EXTRA.has(codePoint);
}

// What Intl and people write that WinAnsi lacks but has a stand-in for.
const STAND_INS: Record<string, string> = {
  '\u202f': '\u00a0', // narrow no-break space (French grouping, before €)
  '\u2007': '\u00a0',
  '\u2009': ' ',
  '\u200a': ' ',
  '\u2002': ' ',
  '\u2003': ' ',
  '\u2212': '-', // minus sign
  '\u2010': '-',
  '\u2011': '-',
  '\u00ad': '',
  '\u200b': '',
  '\u0141': 'L',
  '\u0142': 'l',
  '\u0110': 'D',
  '\u0111': 'd',
  '\u0131': 'i',
  '\t': ' ',
};

/** Whether Helvetica can draw `text` exactly (after the spacing stand-ins). */
export function canDrawWinAnsi(text: string): boolean {
  for (const char of text) {
    const standIn = STAND_INS[char];
    if (standIn !== undefined) continue;
    if (!isWinAnsi(char.codePointAt(0)!)) return false;
  }
  return true;
}

/** `text` as Helvetica can draw it (the baseline): stand-ins, then accents dropped, then `?`. Newlines are kept. */
export function winAnsiText(text: string): string {
  let out = '';
  for (const char of text) {
    const codePoint = char.codePointAt(0)!;
    if (char === '\n' || isWinAnsi(codePoint)) {
      out += char;
      continue;
    }
    const standIn = STAND_INS[char];
    if (standIn !== undefined) {
      out += standIn;
      continue;
    }
    const bare = char.normalize('NFD').replace(/[\u0300-\u036f]/g, '');
    out += bare.length > 0 && [...bare].every((c) => isWinAnsi(c.codePointAt(0)!)) ? bare : '?';
  }
  return out.replace(/\r\n?/g, '\n');
}

const A4 = { width: 595.28, height: 841.89 };
const MARGIN = 50;
const CONTENT_WIDTH = A4.width - 2 * MARGIN;
// Where content ends; the page line sits in the bottom margin below it.
const BOTTOM = A4.height - MARGIN;
const CELL_PAD_X = 5;
const CELL_PAD_Y = 6;

const INK = '#1f2328';
const MUTED = '#5f6873';
const RULE = '#d0d7de';
const HEADER_FILL = '#f3f4f6';
const STAMP_COLOR: Record<'draft' | 'paid' | 'void', string> = { draft: '#6e7781', paid: '#1a7f37', void: '#cf222e' };

interface Column {
  key: 'description' | 'quantity' | 'unitPrice' | 'amount';
  width: number;
  align: 'left' | 'right';
}

const COLUMNS: Column[] = [
  { key: 'description', width: 245, align: 'left' },
  { key: 'quantity', width: 50, align: 'right' },
  { key: 'unitPrice', width: 100, align: 'right' },
  { key: 'amount', width: CONTENT_WIDTH - 245 - 50 - 100, align: 'right' },
];

function columnX(index: number): number {
  return MARGIN + COLUMNS.slice(0, index).reduce((sum, c) => sum + c.width, 0);
}

type Pdf = PDFKit.PDFDocument;

/**
 * Renders the snapshot to PDF bytes; the same snapshot always gives the same bytes. `font` is for
 * the benchmark's baseline only (default: DejaVu Sans Condensed, or what `PAYORCH_BENCH_PDF_FONT` says).
 */
export function layoutInvoicePdf(invoice: InvoiceDocument, font: InvoiceTypeface = invoiceTypeface()): Promise<Buffer> {
  typeface = font;
  const labels = invoiceLabels(invoice.locale);
  const createdAt = new Date(invoice.createdAt);
  const pdf = new PDFDocument({
    size: 'A4',
    margin: MARGIN,
    bufferPages: true,
    // No default font (pdfkit would load Helvetica): the faces are registered below.
    font: null as unknown as string,
    // Nothing from the time of rendering: both dates are the invoice's.
    info: {
      Title: `${labels.invoice} ${invoice.number}`,
      Author: invoice.merchant.name,
      Subject: invoice.number,
      Producer: 'Payorch',
      Creator: 'Payorch',
      CreationDate: createdAt,
      ModDate: createdAt,
    },
    lang: invoiceLanguage(invoice.locale),
    // The first page is added below, once the stamp is listening for pages.
    autoFirstPage: false,
  });
  // pdfkit derives the trailer's /ID from the info dictionary; the invoice's id is the one
  // identity the document keeps through renames and state changes.
  const internals = pdf as unknown as { _id: Uint8Array };
  if (!(internals._id instanceof Uint8Array)) throw new Error('pdfkit no longer keeps the document id in _id');
  internals._id = createHash('md5').update(`payorch invoice ${invoice.id}`).digest();
  useInvoiceFonts(pdf, typeface);

  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    pdf.on('data', (chunk: Buffer) => chunks.push(chunk));
    pdf.on('end', () => resolve(Buffer.concat(chunks)));
    pdf.on('error', reject);
  });

  const money = (amount: number) =>
    printable(formatMoney(amount, invoice.currency, invoice.locale, { canShow }));

  // The stamp goes on each page before its content, so the text is drawn over it, not under it.
  if (invoice.status !== 'sent') {
    const status = invoice.status;
    pdf.on('pageAdded', () => drawStamp(pdf, labels.stamp[status], STAMP_COLOR[status]));
  }
  pdf.addPage();
  pdf.fillColor(INK);
  let y = drawHeading(pdf, invoice, labels);
  y = drawLineItems(pdf, invoice, labels, money, y);
  y = drawTotals(pdf, invoice, labels, money, y);
  y = drawTaxNotice(pdf, invoice, y);
  drawMemo(pdf, invoice, labels, y);

  const range = pdf.bufferedPageRange();
  for (let i = range.start; i < range.start + range.count; i++) {
    pdf.switchToPage(i);
    drawFooter(pdf, `${printable(invoice.number)}  ·  ${labels.page(i - range.start + 1, range.count)}`);
  }
  pdf.end();
  return done;
}

/** Merchant, title, customer and dates; returns the y below them. */
function drawHeading(pdf: Pdf, invoice: InvoiceDocument, labels: InvoiceLabels): number {
  const titleWidth = 190;
  const nameWidth = CONTENT_WIDTH - titleWidth - 20;
  pdf.font(FONT_BOLD).fontSize(18).fillColor(INK);
  pdf.text(printable(invoice.merchant.name), MARGIN, MARGIN, { width: nameWidth });
  const nameBottom = drawSellerDetails(pdf, invoice, labels, nameWidth);

  pdf.font(FONT_BOLD).fontSize(22).fillColor(INK);
  pdf.text(printable(labels.invoice.toUpperCase()), A4.width - MARGIN - titleWidth, MARGIN - 2, { width: titleWidth, align: 'right' });
  let titleBottom = pdf.y;
  if (invoice.status !== 'sent') {
    // The stamp across the page is turned, which text extraction reads letter by letter; this
    // badge says the same in a line a reader, a search or a screen reader gets whole.
    const word = printable(labels.stamp[invoice.status]);
    pdf.font(FONT_BOLD).fontSize(9);
    const badgeWidth = pdf.widthOfString(word) + 16;
    const badgeX = A4.width - MARGIN - badgeWidth;
    const badgeY = titleBottom + 4;
    pdf.roundedRect(badgeX, badgeY, badgeWidth, 17, 3).fill(STAMP_COLOR[invoice.status]);
    pdf.fillColor('#ffffff');
    pdf.text(word, badgeX + 8, badgeY + 4.5, { lineBreak: false });
    titleBottom = badgeY + 17;
  }
  if (!invoice.livemode) {
    pdf.font(FONT).fontSize(8).fillColor('#bc4c00');
    pdf.text(printable(labels.testMode), A4.width - MARGIN - titleWidth, titleBottom + 4, { width: titleWidth, align: 'right' });
    titleBottom = pdf.y;
  }

  const top = Math.max(nameBottom, titleBottom) + 24;

  // Left: who the invoice is for.
  const leftWidth = 230;
  pdf.font(FONT_BOLD).fontSize(8).fillColor(MUTED);
  pdf.text(printable(labels.billTo.toUpperCase()), MARGIN, top, { width: leftWidth, characterSpacing: 0.5 });
  pdf.moveDown(0.3);
  if (invoice.customer.name) {
    pdf.font(FONT_BOLD).fontSize(10).fillColor(INK);
    pdf.text(printable(invoice.customer.name), MARGIN, pdf.y, { width: leftWidth });
  }
  pdf.font(FONT).fontSize(10).fillColor(INK);
  pdf.text(printable(invoice.customer.email), MARGIN, pdf.y, { width: leftWidth });
  drawBuyerDetails(pdf, invoice, labels, leftWidth);
  const leftBottom = pdf.y;

  // Right: number and dates, labels on the left of the block, values flush right.
  const blockX = MARGIN + 270;
  const blockWidth = CONTENT_WIDTH - 270;
  const labelWidth = 110;
  const rows: Array<[string, string]> = [
    [labels.invoiceNumber, invoice.number],
    [labels.issueDate, formatInvoiceDate(invoice.createdAt, invoice.locale)],
  ];
  if (invoice.dueDate) rows.push([labels.dueDate, formatInvoiceDate(invoice.dueDate, invoice.locale)]);
  if (invoice.status === 'paid' && invoice.paidAt) rows.push([labels.paidDate, formatInvoiceDate(invoice.paidAt, invoice.locale)]);
  let rowY = top;
  for (const [label, value] of rows) {
    pdf.font(FONT).fontSize(9).fillColor(MUTED);
    pdf.text(printable(label), blockX, rowY, { width: labelWidth });
    const labelBottom = pdf.y;
    pdf.font(FONT_BOLD).fontSize(9).fillColor(INK);
    pdf.text(printable(value), blockX + labelWidth, rowY, { width: blockWidth - labelWidth, align: 'right' });
    rowY = Math.max(labelBottom, pdf.y) + 4;
  }
  if (invoice.status === 'paid' && invoice.paidOutOfBand) {
    pdf.font(FONT).fontSize(8).fillColor(MUTED);
    pdf.text(printable(labels.paidOutOfBand), blockX, rowY, { width: blockWidth, align: 'right' });
    rowY = pdf.y + 4;
  }
  pdf.fillColor(INK);
  return Math.max(leftBottom, rowY) + 28;
}

/**
 * The seller's block under its name: address, tax id and support e-mail, each on its own line
 * (none when the account has not set them); returns the y below it.
 */
function drawSellerDetails(pdf: Pdf, invoice: InvoiceDocument, labels: InvoiceLabels, width: number): number {
  const { address, taxId, supportEmail } = invoice.merchant;
  const lines = address ? addressLines(address, invoice.locale) : [];
  if (taxId) lines.push(`${taxIdLabel(null, taxId, invoice.locale)}${labels.separator}${taxId}`);
  if (supportEmail) lines.push(`${labels.contact}${labels.separator}${supportEmail}`);
  if (lines.length === 0) return pdf.y;
  pdf.font(FONT).fontSize(9).fillColor(MUTED);
  pdf.text(printable(lines.join('\n')), MARGIN, pdf.y + 4, { width, lineGap: 1 });
  pdf.fillColor(INK);
  return pdf.y;
}

/** The buyer's block under its name and e-mail: address, then each tax id with its name (`USt-IdNr.: DE…`). */
function drawBuyerDetails(pdf: Pdf, invoice: InvoiceDocument, labels: InvoiceLabels, width: number): void {
  const { address, taxIds } = invoice.customer;
  const lines = address ? addressLines(address, invoice.locale) : [];
  for (const id of taxIds ?? []) lines.push(`${taxIdLabel(id.type, id.value, invoice.locale)}${labels.separator}${id.value}`);
  if (lines.length === 0) return;
  pdf.font(FONT).fontSize(10).fillColor(INK);
  pdf.text(printable(lines.join('\n')), MARGIN, pdf.y, { width });
}

function drawTableHeader(pdf: Pdf, labels: InvoiceLabels, y: number): number {
  const titles = [labels.description, labels.quantity, labels.unitPrice, labels.amount];
  pdf.font(FONT_BOLD).fontSize(8);
  const height = Math.max(...COLUMNS.map((c, i) => pdf.heightOfString(printable(titles[i]), { width: c.width - 2 * CELL_PAD_X }))) + 2 * CELL_PAD_Y;
  pdf.rect(MARGIN, y, CONTENT_WIDTH, height).fill(HEADER_FILL);
  pdf.fillColor(MUTED);
  COLUMNS.forEach((c, i) => {
    pdf.text(printable(titles[i]), columnX(i) + CELL_PAD_X, y + CELL_PAD_Y, { width: c.width - 2 * CELL_PAD_X, align: c.align });
  });
  pdf.fillColor(INK);
  return y + height;
}

interface RowCells {
  description: string;
  period: string | null;
  quantity: string;
  unitPrice: string;
  amount: string;
}

function rowHeight(pdf: Pdf, cells: RowCells): number {
  const descriptionWidth = COLUMNS[0].width - 2 * CELL_PAD_X;
  pdf.font(FONT).fontSize(9);
  let description = pdf.heightOfString(cells.description, { width: descriptionWidth });
  if (cells.period) {
    pdf.fontSize(8);
    description += 2 + pdf.heightOfString(cells.period, { width: descriptionWidth });
    pdf.fontSize(9);
  }
  // Figures never wrap (fitFigure), so they take one 9 pt line.
  return Math.max(description, pdf.currentLineHeight()) + 2 * CELL_PAD_Y;
}

function drawRow(pdf: Pdf, cells: RowCells, y: number, height: number): void {
  pdf.font(FONT).fontSize(9).fillColor(INK);
  const descriptionWidth = COLUMNS[0].width - 2 * CELL_PAD_X;
  // The height bound keeps a description longer than a page on this page (cut with …).
  const maxTextHeight = height - 2 * CELL_PAD_Y;
  pdf.text(cells.description, MARGIN + CELL_PAD_X, y + CELL_PAD_Y, { width: descriptionWidth, height: maxTextHeight, ellipsis: true });
  if (cells.period) {
    const periodY = pdf.y + 2;
    if (periodY < y + height - CELL_PAD_Y) {
      pdf.fontSize(8).fillColor(MUTED);
      pdf.text(cells.period, MARGIN + CELL_PAD_X, periodY, { width: descriptionWidth, lineBreak: true });
      pdf.fontSize(9).fillColor(INK);
    }
  }
  COLUMNS.slice(1).forEach((c, i) => {
    fitFigure(pdf, cells[c.key], columnX(i + 1) + CELL_PAD_X, y + CELL_PAD_Y, c.width - 2 * CELL_PAD_X, 9);
  });
  pdf
    .moveTo(MARGIN, y + height)
    .lineTo(MARGIN + CONTENT_WIDTH, y + height)
    .lineWidth(0.5)
    .strokeColor(RULE)
    .stroke();
}

/** The line items table, continued on new pages with its header repeated; returns the y below it. */
function drawLineItems(pdf: Pdf, invoice: InvoiceDocument, labels: InvoiceLabels, money: (amount: number) => string, top: number): number {
  let y = drawTableHeader(pdf, labels, top);
  const pageRoom = BOTTOM - (MARGIN + 24);
  for (const item of invoice.lineItems) {
    const cells: RowCells = {
      description: printable(item.description),
      period: periodText(item.periodStart, item.periodEnd, invoice.locale),
      quantity: printable(formatQuantity(item.quantity, invoice.locale)),
      unitPrice: money(item.unitAmount),
      amount: money(item.amount),
    };
    const height = Math.min(rowHeight(pdf, cells), pageRoom);
    if (y + height > BOTTOM) {
      pdf.addPage();
      y = drawTableHeader(pdf, labels, MARGIN);
    }
    drawRow(pdf, cells, y, height);
    y += height;
  }
  return y;
}

/**
 * A figure flush right on one line: pdfkit would break `KWD 999,999,999.999` inside the number
 * when it is wider than its column, so a figure that long is set smaller instead.
 */
function fitFigure(pdf: Pdf, text: string, x: number, y: number, width: number, size: number): void {
  pdf.fontSize(size);
  const natural = pdf.widthOfString(text);
  const fitted = natural > width ? Math.max(5, (size * width) / natural) : size;
  pdf.fontSize(fitted);
  // Smaller type sits on the same baseline as the row's other text.
  const baselineShift = (size - fitted) * 0.75;
  pdf.text(text, x, y + baselineShift, { width, align: 'right', lineBreak: false });
  pdf.fontSize(size);
}

function periodText(start: string | null, end: string | null, locale: string): string | null {
  if (!start && !end) return null;
  const parts = [start, end].map((d) => (d ? formatInvoiceDate(d, locale) : ''));
  return printable(`${parts[0]} – ${parts[1]}`.trim());
}

/** Subtotal, total, paid and due, flush with the amount column; kept together on one page. */
function drawTotals(pdf: Pdf, invoice: InvoiceDocument, labels: InvoiceLabels, money: (amount: number) => string, top: number): number {
  const rows: Array<{ label: string; value: string; strong: boolean; ruleAbove: boolean }> = [
    { label: labels.subtotal, value: money(invoice.subtotal), strong: false, ruleAbove: false },
    ...taxRows(invoice, money),
    { label: labels.total, value: money(invoice.total), strong: true, ruleAbove: false },
    ...(invoice.creditApplied > 0 ? [{ label: labels.creditApplied, value: money(-invoice.creditApplied), strong: false, ruleAbove: false }] : []),
    { label: labels.amountPaid, value: money(invoice.amountPaid), strong: false, ruleAbove: false },
    { label: labels.amountDue, value: money(invoice.amountDue), strong: true, ruleAbove: true },
  ];
  const valueWidth = COLUMNS[3].width + COLUMNS[2].width / 2;
  const blockX = MARGIN + COLUMNS[0].width + 10;
  const labelWidth = MARGIN + CONTENT_WIDTH - valueWidth - blockX;
  const lineHeight = 18;
  let y = top + 12;
  if (y + rows.length * lineHeight + 8 > BOTTOM) {
    pdf.addPage();
    y = MARGIN;
  }
  for (const row of rows) {
    if (row.ruleAbove) {
      pdf.moveTo(blockX, y).lineTo(MARGIN + CONTENT_WIDTH, y).lineWidth(0.5).strokeColor(RULE).stroke();
      y += 5;
    }
    pdf.font(row.strong ? FONT_BOLD : FONT).fontSize(row.strong ? 10 : 9).fillColor(row.strong ? INK : MUTED);
    pdf.text(printable(row.label), blockX, y, { width: labelWidth - 8 });
    const labelBottom = pdf.y;
    pdf.fillColor(INK);
    fitFigure(pdf, row.value, MARGIN + CONTENT_WIDTH - valueWidth, y, valueWidth - CELL_PAD_X, row.strong ? 10 : 9);
    y = Math.max(labelBottom, pdf.y, y + lineHeight - 4) + 4;
  }
  return y;
}

/**
 * One row per tax rate under the subtotal (API.md §12): its name and percentage, what it taxes
 * (an inclusive rate's tax is already in the amounts above), and the tax.
 */
function taxRows(invoice: InvoiceDocument, money: (amount: number) => string): Array<{ label: string; value: string; strong: boolean; ruleAbove: boolean }> {
  const tax = invoiceTaxLabels(invoice.locale);
  return (invoice.taxBreakdown ?? []).map((rate) => {
    const base = tax.taxedOn(money(rate.taxableAmount));
    return {
      label: `${rate.displayName} ${formatTaxPercentage(rate.percentage, invoice.locale)}\n${rate.inclusive ? `${tax.included}, ${base}` : base}`,
      value: money(rate.amount),
      strong: false,
      ruleAbove: false,
    };
  });
}

/** The reverse-charge notice under the totals, when the customer accounts for the tax (taxExempt `reverse`). */
function drawTaxNotice(pdf: Pdf, invoice: InvoiceDocument, top: number): number {
  if (!invoice.reverseCharge) return top;
  let y = top + 12;
  if (y + 30 > BOTTOM) {
    pdf.addPage();
    y = MARGIN;
  }
  pdf.font(FONT_BOLD).fontSize(9).fillColor(INK);
  pdf.text(printable(invoiceTaxLabels(invoice.locale).reverseCharge), MARGIN, y, { width: CONTENT_WIDTH });
  return pdf.y;
}

function drawMemo(pdf: Pdf, invoice: InvoiceDocument, labels: InvoiceLabels, top: number): void {
  if (!invoice.memo || invoice.memo.trim() === '') return;
  let y = top + 20;
  if (y + 40 > BOTTOM) {
    pdf.addPage();
    y = MARGIN;
  }
  pdf.font(FONT_BOLD).fontSize(8).fillColor(MUTED);
  pdf.text(printable(labels.memo.toUpperCase()), MARGIN, y, { width: CONTENT_WIDTH, characterSpacing: 0.5 });
  pdf.moveDown(0.3);
  pdf.font(FONT).fontSize(9).fillColor(INK);
  // A memo longer than the page flows onto new pages (pdfkit adds them within the margins).
  pdf.text(printable(invoice.memo), MARGIN, pdf.y, { width: CONTENT_WIDTH });
}

/** The status across the page, under its content: large, turned, faint. */
function drawStamp(pdf: Pdf, text: string, color: string): void {
  // A page pdfkit starts inside a flowing text (a long memo) goes on in that text's font, from
  // the top of the page: both are put back once the stamp is drawn.
  const fontState = pdf as unknown as { _font: unknown; _fontSize: number };
  const { _font: font, _fontSize: fontSize } = fontState;
  const { x, y } = pdf;
  const word = printable(text);
  pdf.font(FONT_BOLD).fontSize(100);
  const size = Math.min(100, (100 * 380) / pdf.widthOfString(word));
  pdf.fontSize(size);
  const width = pdf.widthOfString(word);
  const height = size * 0.72;
  const centerX = A4.width / 2;
  const centerY = A4.height / 2;
  pdf.save();
  pdf.rotate(-30, { origin: [centerX, centerY] });
  pdf.fillColor(color).fillOpacity(0.14).strokeColor(color).strokeOpacity(0.3);
  pdf
    .roundedRect(centerX - width / 2 - 18, centerY - height / 2 - 16, width + 36, height + 32, 10)
    .lineWidth(4)
    .stroke();
  pdf.text(word, centerX - width / 2, centerY - height / 2 - size * 0.09, { lineBreak: false });
  pdf.restore();
  fontState._font = font;
  fontState._fontSize = fontSize;
  pdf.x = x;
  pdf.y = y;
  pdf.fillColor(INK);
}

function drawFooter(pdf: Pdf, text: string): void {
  // Writing below the bottom margin would make pdfkit start a page; lift the margin meanwhile.
  const bottom = pdf.page.margins.bottom;
  pdf.page.margins.bottom = 0;
  pdf.font(FONT).fontSize(8).fillColor(MUTED);
  pdf.text(text, MARGIN, A4.height - MARGIN + 14, { width: CONTENT_WIDTH, align: 'center', lineBreak: false });
  pdf.page.margins.bottom = bottom;
  pdf.fillColor(INK);
}
