import type { ExportFormat } from './export.inputs';

/** How a format writes rows: the file's start (csv: its header), then each page of rows as text appended to it. */
export interface RowEncoder {
  readonly contentType: string;
  readonly extension: string;
  header(): string;
  rows(items: readonly Record<string, unknown>[]): string;
}

/**
 * Text a spreadsheet would run as a formula when the file is opened (`=HYPERLINK(…)`, `+1+2`,
 * `@SUM(…)`, `-2+3`; a tab or carriage return first can also start one): OWASP's list.
 */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One CSV cell (RFC 4180): empty for null, numbers and booleans as JSON writes them, nested
 * objects and arrays as their JSON text, text as it is. Text that a spreadsheet would read as a
 * formula gets a single quote in front (CSV formula injection); a cell holding a comma, a quote, a
 * line break or a carriage return is quoted, its quotes doubled.
 */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text: string;
  if (typeof value === 'string') text = FORMULA_START.test(value) ? `'${value}` : value;
  else if (typeof value === 'object') text = JSON.stringify(value);
  else text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** Lines end with CRLF, as RFC 4180 writes them. */
const CRLF = '\r\n';

/** The API object's fields, one column each, in the order of its response schema. */
function csvEncoder(columns: readonly string[]): RowEncoder {
  return {
    contentType: 'text/csv; charset=utf-8',
    extension: 'csv',
    header: () => `${columns.map(csvCell).join(',')}${CRLF}`,
    rows: (items) => items.map((item) => `${columns.map((c) => csvCell(item[c])).join(',')}${CRLF}`).join(''),
  };
}

/** One JSON object per line: each row the object the REST API answers for it. */
const jsonlEncoder: RowEncoder = {
  contentType: 'application/x-ndjson',
  extension: 'jsonl',
  header: () => '',
  rows: (items) => items.map((item) => `${JSON.stringify(item)}\n`).join(''),
};

export function rowEncoder(format: ExportFormat, columns: readonly string[]): RowEncoder {
  return format === 'csv' ? csvEncoder(columns) : jsonlEncoder;
}

/** The types an export's file is answered with, per format (the OpenAPI document lists them). */
export const EXPORT_CONTENT_TYPES = ['text/csv', 'application/x-ndjson'] as const;
