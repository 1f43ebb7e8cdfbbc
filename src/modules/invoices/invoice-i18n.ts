import { currencyExponent } from '../../core/money';

/** The languages an invoice's PDF and e-mail are written in; anything else reads as `en`. */
export type InvoiceLanguage = 'en' | 'de' | 'fr';

/** The locale Intl formats each language with when no region is named: `en` → `$12.00`, `de` → `12,00 €`, `fr` → `12,00 €`. */
const INTL_LOCALE: Record<InvoiceLanguage, string> = { en: 'en-US', de: 'de-DE', fr: 'fr-FR' };

/** `de-AT`, `DE`, `de_CH` → `de`; unknown, empty or missing → `en`. */
export function invoiceLanguage(locale: string | null | undefined): InvoiceLanguage {
  const primary = (locale ?? '').trim().toLowerCase().split(/[-_]/)[0];
  return primary === 'de' || primary === 'fr' ? primary : 'en';
}

/** The region of a BCP 47 tag, upper-cased (`en-GB` → `GB`, `sr-Latn-RS` → `RS`, `es-419` → `419`), or null. */
export function localeRegion(locale: string | null | undefined): string | null {
  const subtags = (locale ?? '').trim().split(/[-_]/);
  // The region follows the language and an optional 4-letter script, and comes before variants and extensions.
  for (const subtag of subtags.slice(1, 3)) {
    if (/^[A-Za-z]{2}$|^\d{3}$/.test(subtag)) return subtag.toUpperCase();
    if (!/^[A-Za-z]{4}$/.test(subtag)) break;
  }
  return null;
}

const supportedFormatLocales = new Map<string, boolean>();

/**
 * The locale dates and amounts are formatted in: the language the texts are written in (`en`,
 * `de` or `fr`) with the tag's region, so the region decides the formats (`en-GB` → `29 Nov 2026`,
 * `de-CH` → `CHF 2'469.12`, `de-AT` → `€ 12,00`) and the words never change language; without a
 * region (or one Intl does not know), `en-US`, `de-DE` or `fr-FR`. A language without texts takes
 * English with its region (`nl-NL` → `en-NL`).
 */
export function formatLocale(locale: string | null | undefined): string {
  const language = invoiceLanguage(locale);
  const region = localeRegion(locale);
  if (!region) return INTL_LOCALE[language];
  const tag = `${language}-${region}`;
  let supported = supportedFormatLocales.get(tag);
  if (supported === undefined) {
    supported = Intl.NumberFormat.supportedLocalesOf([tag]).length > 0 && Intl.DateTimeFormat.supportedLocalesOf([tag]).length > 0;
    if (supportedFormatLocales.size < 1000) supportedFormatLocales.set(tag, supported);
  }
  return supported ? tag : INTL_LOCALE[language];
}

export interface InvoiceLabels {
  invoice: string;
  invoiceNumber: string;
  issueDate: string;
  dueDate: string;
  paidDate: string;
  paidOutOfBand: string;
  billTo: string;
  description: string;
  quantity: string;
  unitPrice: string;
  amount: string;
  subtotal: string;
  total: string;
  amountPaid: string;
  creditApplied: string;
  amountDue: string;
  memo: string;
  testMode: string;
  page: (page: number, pages: number) => string;
  stamp: { draft: string; paid: string; void: string };
  /** The parties' blocks: the seller's support e-mail, and the name each kind of tax id goes by (taxIdLabel). */
  contact: string;
  /** Between a label and its value: `VAT: DE…`, `N° TVA : FR…` (French sets a no-break space before the colon). */
  separator: string;
  taxIdNames: { vat: string; generic: string; ca_gst_hst: string };
}

const LABELS: Record<InvoiceLanguage, InvoiceLabels> = {
  en: {
    invoice: 'Invoice',
    invoiceNumber: 'Invoice number',
    issueDate: 'Date of issue',
    dueDate: 'Due date',
    paidDate: 'Paid on',
    paidOutOfBand: 'Paid outside the payment service',
    billTo: 'Bill to',
    description: 'Description',
    quantity: 'Qty',
    unitPrice: 'Unit price',
    amount: 'Amount',
    subtotal: 'Subtotal',
    total: 'Total',
    amountPaid: 'Amount paid',
    creditApplied: 'Credit applied',
    amountDue: 'Amount due',
    memo: 'Memo',
    testMode: 'Test mode: no real money is involved',
    page: (page, pages) => `Page ${page} of ${pages}`,
    stamp: { draft: 'DRAFT', paid: 'PAID', void: 'VOID' },
    contact: 'Contact',
    separator: ': ',
    taxIdNames: { vat: 'VAT', generic: 'Tax ID', ca_gst_hst: 'GST/HST' },
  },
  de: {
    invoice: 'Rechnung',
    invoiceNumber: 'Rechnungsnummer',
    issueDate: 'Rechnungsdatum',
    dueDate: 'Fällig am',
    paidDate: 'Bezahlt am',
    paidOutOfBand: 'Außerhalb des Zahlungsdienstes bezahlt',
    billTo: 'Rechnungsempfänger',
    description: 'Beschreibung',
    quantity: 'Menge',
    unitPrice: 'Einzelpreis',
    amount: 'Betrag',
    subtotal: 'Zwischensumme',
    total: 'Gesamtbetrag',
    amountPaid: 'Bezahlt',
    creditApplied: 'Guthaben',
    amountDue: 'Offener Betrag',
    memo: 'Anmerkung',
    testMode: 'Testmodus: es fließt kein echtes Geld',
    page: (page, pages) => `Seite ${page} von ${pages}`,
    stamp: { draft: 'ENTWURF', paid: 'BEZAHLT', void: 'STORNIERT' },
    contact: 'Kontakt',
    separator: ': ',
    taxIdNames: { vat: 'USt-IdNr.', generic: 'Steuernummer', ca_gst_hst: 'GST/HST-Nr.' },
  },
  fr: {
    invoice: 'Facture',
    invoiceNumber: 'Numéro de facture',
    issueDate: "Date d'émission",
    dueDate: "Date d'échéance",
    paidDate: 'Payée le',
    paidOutOfBand: 'Payée en dehors du service de paiement',
    billTo: 'Facturé à',
    description: 'Description',
    quantity: 'Qté',
    unitPrice: 'Prix unitaire',
    amount: 'Montant',
    subtotal: 'Sous-total',
    total: 'Total',
    amountPaid: 'Montant payé',
    creditApplied: 'Avoir imputé',
    amountDue: 'Montant dû',
    memo: 'Remarque',
    testMode: "Mode test : aucun argent réel n'est en jeu",
    page: (page, pages) => `Page ${page} sur ${pages}`,
    stamp: { draft: 'BROUILLON', paid: 'PAYÉE', void: 'ANNULÉE' },
    contact: 'Contact',
    separator: '\u00a0: ',
    taxIdNames: { vat: 'N° TVA', generic: 'N° d’identification fiscale', ca_gst_hst: 'N° TPS/TVH' },
  },
};

export function invoiceLabels(locale: string | null | undefined): InvoiceLabels {
  return LABELS[invoiceLanguage(locale)];
}

const DATE_FORMATS: Record<InvoiceLanguage, Intl.DateTimeFormatOptions> = {
  // Nov 27, 2026: the month spelled out, so day and month are never confused.
  en: { timeZone: 'UTC', year: 'numeric', month: 'short', day: 'numeric' },
  // 27.11.2026 and 27/11/2026: the forms German and French invoices use.
  de: { timeZone: 'UTC', year: 'numeric', month: '2-digit', day: '2-digit' },
  fr: { timeZone: 'UTC', year: 'numeric', month: '2-digit', day: '2-digit' },
};

// Building an Intl formatter costs far more than using one (most of a PDF's time, measured).
// Keys name a format locale (language and region), so the map stays small; it is emptied if
// it ever grows past what a few hundred regions need.
const formatters = new Map<string, Intl.NumberFormat | Intl.DateTimeFormat>();

function cached<T extends Intl.NumberFormat | Intl.DateTimeFormat>(key: string, make: () => T): T {
  let formatter = formatters.get(key) as T | undefined;
  if (!formatter) {
    formatter = make();
    if (formatters.size >= 5000) formatters.clear();
    formatters.set(key, formatter);
  }
  return formatter;
}

/** A calendar date in the customer's language and region's form, read in UTC (an ISO instant or `YYYY-MM-DD`). */
export function formatInvoiceDate(value: string | Date, locale: string | null | undefined): string {
  const language = invoiceLanguage(locale);
  const intl = formatLocale(locale);
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) throw new RangeError(`not a date: ${String(value)}`);
  return cached(`date ${intl}`, () => new Intl.DateTimeFormat(intl, DATE_FORMATS[language])).format(date);
}

/**
 * Integer minor units as an exact decimal string (`120050`, exponent 2 → `1200.50`), so Intl
 * formats the digits given instead of a binary float's nearest value.
 */
export function minorUnitsToDecimal(amount: number, exponent: number): string {
  if (!Number.isSafeInteger(amount)) throw new RangeError(`amount must be a safe integer in minor units: ${amount}`);
  const digits = String(Math.abs(amount)).padStart(exponent + 1, '0');
  const sign = amount < 0 ? '-' : '';
  if (exponent === 0) return sign + digits;
  return `${sign}${digits.slice(0, -exponent)}.${digits.slice(-exponent)}`;
}

export interface FormatMoneyOptions {
  /**
   * Whether a rendering can show this text (a PDF's standard font lacks `₩`, `₹`, …); when the
   * symbol form cannot be shown, the ISO code form is used (`KRW 1,200`).
   */
  canShow?: (text: string) => boolean;
}

/**
 * An amount in minor units as the customer reads it, with the currency's own number of decimals
 * (JPY none, KWD three): `¥1,200` (en), `$12.00` (en), `12,00 €` (de). Intl's spacing (no-break
 * and narrow no-break spaces) is kept as Intl writes it.
 */
export function formatMoney(amount: number, currency: string, locale: string | null | undefined, options: FormatMoneyOptions = {}): string {
  const code = currency.toUpperCase();
  const exponent = currencyExponent(code);
  const decimal = minorUnitsToDecimal(amount, exponent);
  const intl = formatLocale(locale);
  const format = (currencyDisplay: 'symbol' | 'code') =>
    cached(
      `money ${intl} ${code} ${currencyDisplay}`,
      () =>
        new Intl.NumberFormat(intl, {
          style: 'currency',
          currency: code,
          currencyDisplay,
          minimumFractionDigits: exponent,
          maximumFractionDigits: exponent,
        }),
      // A string is formatted as the exact decimal it spells (Intl.NumberFormat v3).
    ).format(decimal as unknown as number);
  const withSymbol = format('symbol');
  if (!options.canShow || options.canShow(withSymbol)) return withSymbol;
  return format('code');
}

/** A quantity with the language's digit grouping: `1,000` (en), `1.000` (de). */
export function formatQuantity(quantity: number, locale: string | null | undefined): string {
  const intl = formatLocale(locale);
  return cached(`quantity ${intl}`, () => new Intl.NumberFormat(intl, { maximumFractionDigits: 6 })).format(quantity);
}

/** Tax id types printed under their own name whatever the language (the name on the number's certificate). */
const TAX_ID_OWN_NAMES: Record<string, string> = { us_ein: 'EIN', au_abn: 'ABN', nz_gst: 'GST', in_gst: 'GSTIN', sg_uen: 'UEN', br_cnpj: 'CNPJ', mx_rfc: 'RFC', ca_bn: 'BN' };
/** Value added tax numbers: "VAT", "USt-IdNr.", "N° TVA". */
const VAT_TYPES = new Set(['eu_vat', 'gb_vat', 'ch_vat', 'no_vat', 'za_vat']);

/**
 * What a tax id is called on an invoice in the customer's language: `VAT` / `USt-IdNr.` / `N° TVA`
 * for a VAT number, the number's own name for some (`EIN`, `ABN`), else `Tax ID` /
 * `Steuernummer` / `N° d'identification fiscale`. An account's `taxId` has no type: one that reads
 * as a European VAT number (`DE…`, `GB…`, `CHE…`) is called one.
 */
export function taxIdLabel(type: string | null, value: string, locale: string | null | undefined): string {
  const names = invoiceLabels(locale).taxIdNames;
  const kind = type ?? (/^(AT|BE|BG|CY|CZ|DE|DK|EE|EL|ES|FI|FR|HR|HU|IE|IT|LT|LU|LV|MT|NL|PL|PT|RO|SE|SI|SK|XI|GB)[0-9A-Z]{2,12}$/.test(value.replace(/[\s.-]/g, '').toUpperCase()) || /^CHE[-\s]?[0-9]/i.test(value) ? 'eu_vat' : null);
  if (kind === 'ca_gst_hst') return names.ca_gst_hst;
  if (kind && VAT_TYPES.has(kind)) return names.vat;
  return (kind && TAX_ID_OWN_NAMES[kind]) ?? names.generic;
}

/** A country by its ISO 3166-1 alpha-2 code in the customer's language (`DE` → `Germany`, `Deutschland`, `Allemagne`); the code when unknown. */
export function formatCountry(code: string, locale: string | null | undefined): string {
  const language = invoiceLanguage(locale);
  let names = countryNames.get(language);
  if (!names) {
    names = new Intl.DisplayNames([INTL_LOCALE[language]], { type: 'region', fallback: 'code' });
    countryNames.set(language, names);
  }
  return names.of(code) ?? code;
}
const countryNames = new Map<InvoiceLanguage, Intl.DisplayNames>();

/**
 * An address as printed, one string a line, in the order the country's post reads it: `10117
 * Berlin` (most of Europe), `Austin, TX 78701` (US, CA, AU), the postal code on its own line (GB,
 * IE); the country's name last.
 */
export function addressLines(address: { line1: string; line2?: string | null; postalCode: string; city: string; state?: string | null; country: string }, locale: string | null | undefined): string[] {
  const lines = [address.line1];
  if (address.line2) lines.push(address.line2);
  const state = address.state ?? '';
  switch (address.country) {
    case 'US':
    case 'CA':
    case 'AU':
      lines.push(`${address.city}${state ? `, ${state}` : ''} ${address.postalCode}`.trim());
      break;
    case 'GB':
    case 'IE':
      lines.push(address.city);
      if (state) lines.push(state);
      if (address.postalCode) lines.push(address.postalCode);
      break;
    default:
      lines.push(`${address.postalCode} ${address.city}`.trim());
      if (state) lines.push(state);
  }
  lines.push(formatCountry(address.country, locale));
  return lines;
}
