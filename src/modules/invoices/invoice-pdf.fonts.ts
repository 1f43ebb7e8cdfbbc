import fs from 'node:fs';

/*
 * The invoice PDF's typeface: DejaVu Sans Condensed, book and bold (npm `dejavu-fonts-ttf`; free
 * licence, see README "Invoice PDFs: font and licence"), embedded in each PDF. It draws Latin
 * with its extensions (Polish, Czech, Turkish, Vietnamese …), Greek, Cyrillic, Armenian, Georgian
 * and every currency sign of the invoice languages as typed, where pdfkit's built-in Helvetica
 * drew only WinAnsi (Latin-1 and a few more). The condensed cut is about as wide as Helvetica
 * (DejaVu Sans is 14% wider, and wrapped "Offener Betrag" in the totals), so the layout's
 * columns hold what they held. pdfkit embeds only the glyphs a PDF uses (a subset): a one-page
 * invoice is about 16 KiB instead of 3 KiB, not the 1.3 MB of the two font files.
 *
 * DejaVu has no Chinese, Japanese or Korean glyphs (nor Devanagari, Thai …). A character the font
 * lacks is drawn as the font's missing-glyph box, one box per character, so it is never silently
 * turned into `?` or dropped; and the PDF's text keeps the character as typed, so copying,
 * searching, a screen reader and text extraction get the real name. See docs/api.md, Invoices.
 *
 * Cost: the font files are read and parsed once per thread (each render thread has its own
 * copy), not once per PDF: parsing took 18 ms, more than a whole render. Words laid out are kept
 * per thread too (`sharedLayoutCache`). With both, a render takes about the CPU time it took with
 * Helvetica (bench/README.md, invoice-pdf).
 */

/** The parts of a fontkit font used here (fontkit, pdfkit's font engine, ships no types). */
interface FontkitGlyph {
  id: number;
  advanceWidth: number;
  codePoints: number[];
}
export interface FontkitFont {
  postscriptName: string;
  unitsPerEm: number;
  hasGlyphForCodePoint(codePoint: number): boolean;
  getGlyph(id: number, codePoints?: number[]): FontkitGlyph;
  layout(text: string): unknown;
}

const fontkit = require('fontkit') as { create(buffer: Buffer): FontkitFont };

/** The font files, resolved through the package so the path holds from `src/` and `dist/` alike. */
export const FONT_FILES = {
  regular: require.resolve('dejavu-fonts-ttf/ttf/DejaVuSansCondensed.ttf'),
  bold: require.resolve('dejavu-fonts-ttf/ttf/DejaVuSansCondensed-Bold.ttf'),
};

/** The names the layout's text calls use; registered on each document by `useInvoiceFonts`. */
export const FONT = 'InvoiceSans';
export const FONT_BOLD = 'InvoiceSans-Bold';

export type InvoiceTypeface = 'dejavu' | 'helvetica';

/**
 * DejaVu Sans, unless `PAYORCH_BENCH_PDF_FONT=helvetica`: the built-in Helvetica without an
 * embedded font, the baseline bench/invoice-pdf measures against. Only benchmarks set it.
 */
export function invoiceTypeface(): InvoiceTypeface {
  return process.env.PAYORCH_BENCH_PDF_FONT === 'helvetica' ? 'helvetica' : 'dejavu';
}

let loaded: { regular: FontkitFont; bold: FontkitFont } | null = null;

/** Both faces, read and parsed on first use in this thread and kept. */
export function dejaVuSans(): { regular: FontkitFont; bold: FontkitFont } {
  loaded ??= {
    regular: openFace(FONT_FILES.regular),
    bold: openFace(FONT_FILES.bold),
  };
  return loaded;
}

function openFace(file: string): FontkitFont {
  const face = fontkit.create(fs.readFileSync(file));
  glyphsByCharacters(face);
  return face;
}

/**
 * fontkit keeps one glyph object per glyph id, holding the characters of its first use, and
 * pdfkit writes those characters into the PDF's text map. Several spellings can reach one glyph
 * (`fi` and `ﬁ`, Ω the letter and Ω the ohm sign), so with the face shared by every PDF of the
 * thread, a PDF's text map, and its bytes, would depend on what the thread drew before. Here a
 * glyph asked for with other characters than its first use gets an object of its own (sharing
 * the rest: outline, metrics) holding those characters: a glyph's characters are always the
 * ones that produced it.
 */
function glyphsByCharacters(face: FontkitFont): void {
  const getGlyph = face.getGlyph.bind(face);
  const variants = new Map<string, FontkitGlyph>();
  face.getGlyph = (id, codePoints) => {
    const glyph = getGlyph(id, codePoints);
    if (!codePoints || codePoints.length === 0 || sameCodePoints(glyph.codePoints, codePoints)) return glyph;
    const key = `${id}:${codePoints.join(',')}`;
    let variant = variants.get(key);
    if (!variant) {
      variant = Object.create(glyph) as FontkitGlyph;
      variant.codePoints = codePoints;
      variants.set(key, variant);
    }
    return variant;
  };
}

function sameCodePoints(a: number[], b: number[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

// Words laid out (glyphs and advances), kept across the PDFs of a thread: the same labels,
// amounts and descriptions come back in every invoice, and laying them out again was a third of
// a render. Bounded: past this many words a face starts a new cache.
const LAYOUT_CACHE_WORDS = 5000;
const layoutCaches = new Map<FontkitFont, Record<string, unknown>>();

function sharedLayoutCache(face: FontkitFont): Record<string, unknown> {
  let cache = layoutCaches.get(face);
  if (!cache || Object.keys(cache).length > LAYOUT_CACHE_WORDS) {
    cache = Object.create(null) as Record<string, unknown>;
    layoutCaches.set(face, cache);
  }
  return cache;
}

const coverage = new WeakMap<FontkitFont, Map<number, boolean>>();

/**
 * Whether `font` draws `codePoint`. Characters Unicode says to draw as nothing (zero-width
 * joiners, variation selectors, soft hyphens …) count as drawn: fontkit lays them out as nothing.
 */
export function fontHasGlyph(font: FontkitFont, codePoint: number): boolean {
  let known = coverage.get(font);
  if (!known) coverage.set(font, (known = new Map()));
  let has = known.get(codePoint);
  if (has === undefined) {
    has = isDefaultIgnorable(codePoint) || font.hasGlyphForCodePoint(codePoint);
    known.set(codePoint, has);
  }
  return has;
}

/** Whether every character of `text` has a glyph in the book face (a currency sign, say). */
export function dejaVuCanDraw(text: string): boolean {
  const { regular } = dejaVuSans();
  for (const char of text) if (!fontHasGlyph(regular, char.codePointAt(0)!)) return false;
  return true;
}

/**
 * `text` ready for DejaVu: composed (NFC), so `z` + combining dot above is drawn as the one glyph
 * `ż`; line breaks as `\n`, a tab as a space, other control characters dropped. Characters the
 * font lacks are kept: the font drawing them marks them (see `markMissingGlyphs`).
 */
export function forDejaVu(text: string): string {
  return text
    .normalize('NFC')
    .replace(/\r\n?/g, '\n')
    .replace(/\t/g, ' ')
    .replace(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g, '');
}

function isDefaultIgnorable(cp: number): boolean {
  return (
    cp === 0x00ad ||
    cp === 0x034f ||
    cp === 0x061c ||
    (cp >= 0x17b4 && cp <= 0x17b5) ||
    (cp >= 0x180b && cp <= 0x180f) ||
    (cp >= 0x200b && cp <= 0x200f) ||
    (cp >= 0x202a && cp <= 0x202e) ||
    (cp >= 0x2060 && cp <= 0x206f) ||
    (cp >= 0xfe00 && cp <= 0xfe0f) ||
    cp === 0xfeff ||
    (cp >= 0xfff0 && cp <= 0xfff8) ||
    (cp >= 0x1bca0 && cp <= 0x1bca3) ||
    (cp >= 0x1d173 && cp <= 0x1d17a) ||
    (cp >= 0xe0000 && cp <= 0xe0fff)
  );
}

/** What pdfkit's EmbeddedFont (0.20) keeps and does that `markMissingGlyphs` relies on. */
interface EmbeddedFontInternals {
  font: FontkitFont;
  scale: number;
  subset: { glyphs: number[]; includeGlyph(id: number): number };
  widths: number[];
  unicode: number[][];
  layoutCache?: Record<string, unknown>;
  encode(text: string, features?: unknown): [string[], GlyphPosition[]];
}
interface GlyphPosition {
  xAdvance: number;
  yAdvance: number;
  xOffset: number;
  yOffset: number;
  advanceWidth: number;
}

type Pdf = PDFKit.PDFDocument;

/**
 * Registers the invoice faces on `pdf` as `FONT` and `FONT_BOLD`: DejaVu Sans (the same parsed
 * font for every PDF of the thread), or Helvetica for the benchmark's baseline.
 */
export function useInvoiceFonts(pdf: Pdf, typeface: InvoiceTypeface): void {
  if (typeface === 'helvetica') {
    pdf.registerFont(FONT, 'Helvetica');
    pdf.registerFont(FONT_BOLD, 'Helvetica-Bold');
    return;
  }
  const { regular, bold } = dejaVuSans();
  // pdfkit takes a fontkit font as it is (it types sources as file names and bytes only).
  pdf.registerFont(FONT, regular as unknown as Buffer);
  pdf.registerFont(FONT_BOLD, bold as unknown as Buffer);
  // Opened now, in this order, so each face gets the same font id (F2, F3), and with it the
  // same subset tag (`CJZZZZ+DejaVuSans`), in every PDF.
  const internals = pdf as unknown as { _font: EmbeddedFontInternals };
  for (const [name, face] of [[FONT, regular], [FONT_BOLD, bold]] as const) {
    pdf.font(name);
    const font = internals._font;
    if (font?.font !== face || typeof font.encode !== 'function' || !font.subset?.glyphs || typeof font.layoutCache !== 'object') {
      throw new Error('pdfkit no longer keeps an embedded font as expected (_font.font, encode, subset, layoutCache)');
    }
    font.layoutCache = sharedLayoutCache(face);
    markMissingGlyphs(font);
  }
}

/**
 * Characters the face has no glyph for are each drawn as its missing-glyph box (glyph 0) through
 * a glyph of their own in the embedded subset, a copy of that box whose entry in the PDF's text
 * map is the character: the page shows one box per missing character, and the text extracted,
 * copied or read aloud is what was typed. pdfkit alone would map every box to U+0000.
 */
function markMissingGlyphs(font: EmbeddedFontInternals): void {
  const encode = font.encode.bind(font);
  const face = font.font;
  const boxWidth = face.getGlyph(0).advanceWidth * font.scale;
  const boxes = new Map<number, number>();
  const hex = (gid: number) => `0000${gid.toString(16)}`.slice(-4);

  font.encode = (text, features) => {
    let missing = false;
    for (const char of text) {
      if (!fontHasGlyph(face, char.codePointAt(0)!)) {
        missing = true;
        break;
      }
    }
    if (!missing) return encode(text, features);

    const codes: string[] = [];
    const positions: GlyphPosition[] = [];
    let run = '';
    const flush = () => {
      if (run === '') return;
      const [c, p] = encode(run, features);
      codes.push(...c);
      positions.push(...p);
      run = '';
    };
    for (const char of text) {
      const codePoint = char.codePointAt(0)!;
      if (fontHasGlyph(face, codePoint)) {
        run += char;
        continue;
      }
      flush();
      let gid = boxes.get(codePoint);
      if (gid === undefined) {
        font.subset.glyphs.push(0);
        gid = font.subset.glyphs.length - 1;
        boxes.set(codePoint, gid);
        font.widths[gid] = boxWidth;
        font.unicode[gid] = [codePoint];
      }
      codes.push(hex(gid));
      // The box's advance, as fontkit gave it when pdfkit measured the line.
      positions.push({ xAdvance: boxWidth, yAdvance: 0, xOffset: 0, yOffset: 0, advanceWidth: boxWidth });
    }
    flush();
    return [codes, positions];
  };
}
