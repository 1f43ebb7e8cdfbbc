/**
 * Just enough MIME (RFC 2045/2046) to read back what the mail outbox sends: headers (unfolded,
 * RFC 2047 encoded words decoded), multipart bodies split on their boundary, base64 and
 * quoted-printable bodies decoded. A test helper: no mail parser dependency for the tests.
 */
export interface MimePart {
  headers: Map<string, string>;
  /** `text/plain`, lower-cased, without parameters. */
  contentType: string;
  params: Record<string, string>;
  /** The decoded body of a leaf part; empty for a multipart. */
  body: Buffer;
  parts: MimePart[];
}

function splitHead(raw: Buffer): { head: string; body: Buffer } {
  const crlf = raw.indexOf('\r\n\r\n');
  const lf = raw.indexOf('\n\n');
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return { head: raw.subarray(0, crlf).toString('latin1'), body: raw.subarray(crlf + 4) };
  if (lf >= 0) return { head: raw.subarray(0, lf).toString('latin1'), body: raw.subarray(lf + 2) };
  return { head: raw.toString('latin1'), body: Buffer.alloc(0) };
}

/** `=?utf-8?B?…?=` and `=?utf-8?Q?…?=` words of a header value. */
export function decodeWords(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?([^?]+)\?([BbQq])\?([^?]*)\?=/g, (_m, _charset: string, enc: string, text: string) => {
      const bytes = enc.toUpperCase() === 'B'
        ? Buffer.from(text, 'base64')
        : Buffer.from(text.replace(/_/g, ' ').replace(/=([0-9A-Fa-f]{2})/g, (_x, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1');
      return bytes.toString('utf8');
    });
}

function parseHeaders(head: string): Map<string, string> {
  const headers = new Map<string, string>();
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  for (const line of unfolded.split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i <= 0) continue;
    const name = line.slice(0, i).trim().toLowerCase();
    if (!headers.has(name)) headers.set(name, decodeWords(line.slice(i + 1).trim()));
  }
  return headers;
}

/** `type/subtype; a=b; c="d"` → its value and parameters. */
function parseParams(value: string): { value: string; params: Record<string, string> } {
  const [first, ...rest] = value.split(';');
  const params: Record<string, string> = {};
  for (const p of rest) {
    const i = p.indexOf('=');
    if (i < 0) continue;
    params[p.slice(0, i).trim().toLowerCase()] = p.slice(i + 1).trim().replace(/^"(.*)"$/, '$1');
  }
  return { value: first.trim().toLowerCase(), params };
}

function decodeQuotedPrintable(text: string): Buffer {
  const softBreaks = text.replace(/=\r?\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < softBreaks.length; i++) {
    const c = softBreaks[i];
    if (c === '=' && /^[0-9A-Fa-f]{2}$/.test(softBreaks.slice(i + 1, i + 3))) {
      bytes.push(parseInt(softBreaks.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(softBreaks.charCodeAt(i) & 0xff);
  }
  return Buffer.from(bytes);
}

function decodeBody(body: Buffer, encoding: string | undefined): Buffer {
  switch ((encoding ?? '7bit').toLowerCase()) {
    case 'base64': return Buffer.from(body.toString('latin1').replace(/[^A-Za-z0-9+/=]/g, ''), 'base64');
    case 'quoted-printable': return decodeQuotedPrintable(body.toString('latin1'));
    default: return body;
  }
}

export function parseMime(raw: Buffer | string): MimePart {
  const buffer = typeof raw === 'string' ? Buffer.from(raw, 'latin1') : raw;
  const { head, body } = splitHead(buffer);
  const headers = parseHeaders(head);
  const { value: contentType, params } = parseParams(headers.get('content-type') ?? 'text/plain');
  if (contentType.startsWith('multipart/') && params.boundary) {
    const text = body.toString('latin1');
    const delimiter = `--${params.boundary}`;
    const parts: MimePart[] = [];
    const pieces = text.split(new RegExp(`\\r?\\n?${delimiter.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    // pieces[0] is the preamble; the last piece starts with "--" (the closing delimiter).
    for (const piece of pieces.slice(1)) {
      if (piece.startsWith('--')) break;
      parts.push(parseMime(Buffer.from(piece.replace(/^[ \t]*\r?\n/, ''), 'latin1')));
    }
    return { headers, contentType, params, body: Buffer.alloc(0), parts };
  }
  return { headers, contentType, params, body: decodeBody(body, headers.get('content-transfer-encoding')), parts: [] };
}

/** Every leaf part, depth first. */
export function leafParts(part: MimePart): MimePart[] {
  return part.parts.length === 0 ? [part] : part.parts.flatMap(leafParts);
}

/** The leaf parts that are attachments, with their file names. */
export function attachments(part: MimePart): Array<{ filename: string; contentType: string; content: Buffer }> {
  return leafParts(part)
    .filter((p) => /^attachment/i.test(p.headers.get('content-disposition') ?? ''))
    .map((p) => ({
      filename: parseParams(p.headers.get('content-disposition') ?? '').params.filename ?? p.params.name ?? '',
      contentType: p.contentType,
      content: p.body,
    }));
}

/** The text of the first leaf part of `type` (`text/plain`, `text/html`), decoded as UTF-8. */
export function textOf(part: MimePart, type: string): string | undefined {
  const found = leafParts(part).find((p) => p.contentType === type && !/^attachment/i.test(p.headers.get('content-disposition') ?? ''));
  return found?.body.toString('utf8');
}
