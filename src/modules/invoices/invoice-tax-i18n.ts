import { formatMoney, invoiceLabels, invoiceLanguage, minorUnitsToDecimal, type InvoiceLanguage } from './invoice-i18n';

/** What an invoice's PDF says about its taxes, in the customer's language. */
export interface InvoiceTaxLabels {
  /** Under an inclusive rate: the tax is in the amounts above. */
  included: string;
  /** `on €100.00`: the amount a rate taxes. */
  taxedOn: (amount: string) => string;
  /** The notice a reverse-charge invoice carries (EU VAT Directive art. 226 (11a): the words "Reverse charge"). */
  reverseCharge: string;
}

const TAX_LABELS: Record<InvoiceLanguage, InvoiceTaxLabels> = {
  en: {
    included: 'included',
    taxedOn: (amount) => `on ${amount}`,
    reverseCharge: 'Reverse charge: the customer is liable for the VAT on this invoice.',
  },
  de: {
    included: 'enthalten',
    taxedOn: (amount) => `auf ${amount}`,
    reverseCharge: 'Steuerschuldnerschaft des Leistungsempfängers (Reverse Charge): die Umsatzsteuer schuldet der Leistungsempfänger.',
  },
  fr: {
    included: 'incluse',
    taxedOn: (amount) => `sur ${amount}`,
    reverseCharge: 'Autoliquidation : la TVA est due par le preneur.',
  },
};

export function invoiceTaxLabels(locale: string | null | undefined): InvoiceTaxLabels {
  return TAX_LABELS[invoiceLanguage(locale)];
}

const INTL_LOCALE: Record<InvoiceLanguage, string> = { en: 'en-US', de: 'de-DE', fr: 'fr-FR' };
const percentFormats = new Map<InvoiceLanguage, Intl.NumberFormat>();

/**
 * A tax rate's percentage as the customer writes it: `19%` (en), `19 %` (de), `7,5 %` (fr). Formatted
 * from its exact decimal (19.0025 → "0.190025"), never a float's neighbour.
 */
export function formatTaxPercentage(percentage: number, locale: string | null | undefined): string {
  const language = invoiceLanguage(locale);
  let format = percentFormats.get(language);
  if (!format) {
    format = new Intl.NumberFormat(INTL_LOCALE[language], { style: 'percent', maximumFractionDigits: 4 });
    percentFormats.set(language, format);
  }
  const e4 = Math.round(percentage * 10_000);
  // A string is formatted as the exact decimal it spells (Intl.NumberFormat v3).
  return format.format(minorUnitsToDecimal(e4, 6) as unknown as number);
}

/** One row of an invoice's totals as the hosted page and the e-mail show them. */
export interface InvoiceTotalRow {
  kind: 'subtotal' | 'tax' | 'credit' | 'total' | 'paid' | 'due';
  /** `Subtotal`, `VAT 19 %`. */
  label: string;
  /** Under a tax rate: what it taxes (`on €100.00`, `included, on €119.00`). */
  detail: string | null;
  value: string;
}

/** What the totals rows read from an invoice (the API object, the public view, the document). */
export interface InvoiceTotals {
  currency: string;
  subtotal: number;
  taxBreakdown?: ReadonlyArray<{ displayName: string; percentage: number; inclusive: boolean; taxableAmount: number; amount: number }>;
  total: number;
  creditApplied: number;
  amountPaid: number;
  amountDue: number;
}

/**
 * An invoice's totals in the customer's language and formats, as its PDF shows them (API.md
 * §12): the subtotal, a row per tax rate (its name and percentage, what it taxes, the tax), the
 * total, the credit applied and what was paid when there is any, and the amount due.
 */
export function invoiceTotalRows(inv: InvoiceTotals, locale: string | null | undefined): InvoiceTotalRow[] {
  const labels = invoiceLabels(locale);
  const tax = invoiceTaxLabels(locale);
  const money = (amount: number) => formatMoney(amount, inv.currency, locale);
  return [
    { kind: 'subtotal', label: labels.subtotal, detail: null, value: money(inv.subtotal) },
    ...(inv.taxBreakdown ?? []).map((rate): InvoiceTotalRow => {
      const base = tax.taxedOn(money(rate.taxableAmount));
      return {
        kind: 'tax', label: `${rate.displayName} ${formatTaxPercentage(rate.percentage, locale)}`,
        detail: rate.inclusive ? `${tax.included}, ${base}` : base, value: money(rate.amount),
      };
    }),
    { kind: 'total', label: labels.total, detail: null, value: money(inv.total) },
    ...(inv.creditApplied > 0 ? [{ kind: 'credit' as const, label: labels.creditApplied, detail: null, value: money(-inv.creditApplied) }] : []),
    ...(inv.amountPaid > 0 ? [{ kind: 'paid' as const, label: labels.amountPaid, detail: null, value: money(inv.amountPaid) }] : []),
    { kind: 'due', label: labels.amountDue, detail: null, value: money(inv.amountDue) },
  ];
}
