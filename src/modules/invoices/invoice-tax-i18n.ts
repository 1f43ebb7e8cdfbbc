import { invoiceLanguage, minorUnitsToDecimal, type InvoiceLanguage } from './invoice-i18n';

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
