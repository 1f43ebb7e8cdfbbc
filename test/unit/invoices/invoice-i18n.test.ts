import {
  formatInvoiceDate,
  formatLocale,
  formatMoney,
  formatQuantity,
  invoiceLabels,
  invoiceLanguage,
  minorUnitsToDecimal,
} from '../../../src/modules/invoices/invoice-i18n';

// Intl separates with no-break spaces (U+00A0, U+202F); the strings below spell them out.
const NBSP = '\u00a0';
const NNBSP = '\u202f';

describe('invoice language', () => {
  it('should read the language from a locale and fall back to English', () => {
    const cases: Array<[string | null | undefined, string]> = [
      ['en', 'en'],
      ['de', 'de'],
      ['fr', 'fr'],
      ['de-AT', 'de'],
      ['de_CH', 'de'],
      ['FR-ca', 'fr'],
      [' de ', 'de'],
      ['es', 'en'],
      ['deu', 'en'],
      ['', 'en'],
      [null, 'en'],
      [undefined, 'en'],
    ];
    for (const [locale, language] of cases) expect([locale, invoiceLanguage(locale)]).toEqual([locale, language]);
  });

  it('should label in German and French, and in English for an unknown locale', () => {
    expect(invoiceLabels('de-AT').invoice).toBe('Rechnung');
    expect(invoiceLabels('fr').amountDue).toBe('Montant dû');
    expect(invoiceLabels('pt-BR').total).toBe('Total');
    expect(invoiceLabels('de').stamp).toEqual({ draft: 'ENTWURF', paid: 'BEZAHLT', void: 'STORNIERT' });
  });
});

describe('invoice formats by region', () => {
  it("should format with the texts' language and the tag's region", () => {
    const cases: Array<[string | null, string]> = [
      ['en', 'en-US'],
      ['en-GB', 'en-GB'],
      ['de', 'de-DE'],
      ['de-CH', 'de-CH'],
      ['de_at', 'de-AT'],
      ['fr', 'fr-FR'],
      ['fr-CA', 'fr-CA'],
      ['sr-Latn-RS', 'en-RS'],
      ['es-419', 'en-419'],
      ['nl-NL', 'en-NL'],
      ['de-1996', 'de-DE'],
      ['en-x-private', 'en-US'],
      [null, 'en-US'],
    ];
    for (const [locale, intl] of cases) expect([locale, formatLocale(locale)]).toEqual([locale, intl]);
  });

  it('should write the dates and amounts of API.md §12 by region', () => {
    const date = '2026-11-29T00:00:00.000Z';
    expect(formatInvoiceDate(date, 'en')).toBe('Nov 29, 2026');
    expect(formatInvoiceDate(date, 'en-GB')).toBe('29 Nov 2026');
    expect(formatInvoiceDate(date, 'de')).toBe('29.11.2026');
    expect(formatInvoiceDate(date, 'de-CH')).toBe('29.11.2026');
    expect(formatInvoiceDate(date, 'fr')).toBe('29/11/2026');
    expect(formatMoney(1200, 'EUR', 'en-GB')).toBe('€12.00');
    expect(formatMoney(246912, 'EUR', 'de')).toBe(`2.469,12${NBSP}€`);
    expect(formatMoney(246912, 'EUR', 'de-AT')).toBe(`€${NBSP}2.469,12`);
    // Swiss German groups with an apostrophe (ICU writes U+0027 or U+2019 depending on its version).
    expect(formatMoney(246912, 'CHF', 'de-CH')).toMatch(new RegExp(`^CHF${NBSP}2['’]469\\.12$`));
    expect(formatMoney(246912, 'EUR', 'fr')).toBe(`2${NNBSP}469,12${NBSP}€`);
    expect(formatQuantity(1000, 'de-CH')).toMatch(/^1['’]000$/);
  });
});

describe('invoice amounts', () => {
  it('should format the amounts the issue names exactly', () => {
    expect(formatMoney(1200, 'JPY', 'en')).toBe('¥1,200');
    expect(formatMoney(1200, 'USD', 'en')).toBe('$12.00');
    expect(formatMoney(1200, 'EUR', 'de')).toBe(`12,00${NBSP}€`);
    expect(formatMoney(1200, 'EUR', 'en')).toBe('€12.00');
    expect(formatMoney(120000, 'EUR', 'fr')).toBe(`1${NNBSP}200,00${NBSP}€`);
  });

  it("should use the currency's minor units: none for JPY, three for KWD", () => {
    expect(formatMoney(5, 'JPY', 'en')).toBe('¥5');
    expect(formatMoney(1, 'KWD', 'en')).toBe(`KWD${NBSP}0.001`);
    expect(formatMoney(1234, 'KWD', 'de')).toBe(`1,234${NBSP}KWD`);
    expect(formatMoney(1, 'USD', 'en')).toBe('$0.01');
    expect(formatMoney(50, 'eur', 'de')).toBe(`0,50${NBSP}€`);
  });

  it('should format zero', () => {
    expect(formatMoney(0, 'USD', 'en')).toBe('$0.00');
    expect(formatMoney(0, 'JPY', 'en')).toBe('¥0');
    expect(formatMoney(0, 'KWD', 'en')).toBe(`KWD${NBSP}0.000`);
  });

  it('should format the largest amounts to the last digit, with no float rounding', () => {
    expect(formatMoney(999999999999, 'USD', 'en')).toBe('$9,999,999,999.99');
    expect(formatMoney(999999999999, 'JPY', 'en')).toBe('¥999,999,999,999');
    expect(formatMoney(999999999999, 'KWD', 'en')).toBe(`KWD${NBSP}999,999,999.999`);
    expect(formatMoney(999999999999, 'EUR', 'de')).toBe(`9.999.999.999,99${NBSP}€`);
    expect(formatMoney(1_000_000_000_000, 'USD', 'en')).toBe('$10,000,000,000.00');
    // Beyond 2^53 / 1000 a float division would already have lost the last digit.
    expect(formatMoney(9007199254740991, 'KWD', 'en')).toBe(`KWD${NBSP}9,007,199,254,740.991`);
  });

  it('should format credits with a minus sign', () => {
    expect(formatMoney(-1250, 'USD', 'en')).toBe('-$12.50');
    expect(formatMoney(-1250, 'EUR', 'de')).toBe(`-12,50${NBSP}€`);
  });

  it('should spell minor units as an exact decimal', () => {
    expect(minorUnitsToDecimal(0, 2)).toBe('0.00');
    expect(minorUnitsToDecimal(5, 3)).toBe('0.005');
    expect(minorUnitsToDecimal(-5, 2)).toBe('-0.05');
    expect(minorUnitsToDecimal(999999999999, 0)).toBe('999999999999');
    expect(minorUnitsToDecimal(999999999999, 2)).toBe('9999999999.99');
    expect(() => minorUnitsToDecimal(1.5, 2)).toThrow(RangeError);
    expect(() => minorUnitsToDecimal(2 ** 60, 2)).toThrow(RangeError);
  });

  it('should fall back to the ISO code when the symbol cannot be shown', () => {
    const latin1 = (text: string) => [...text].every((c) => c.charCodeAt(0) <= 0xff || c === '\u202f');
    expect(formatMoney(1200, 'KRW', 'en')).toBe('₩1,200');
    expect(formatMoney(1200, 'KRW', 'en', { canShow: latin1 })).toBe(`KRW${NBSP}1,200`);
    expect(formatMoney(1200, 'JPY', 'en', { canShow: latin1 })).toBe('¥1,200');
    expect(formatMoney(1200, 'INR', 'de', { canShow: latin1 })).toBe(`12,00${NBSP}INR`);
  });

  it('should group quantities in the language', () => {
    expect(formatQuantity(1000, 'en')).toBe('1,000');
    expect(formatQuantity(1000, 'de')).toBe('1.000');
    expect(formatQuantity(3, 'fr')).toBe('3');
  });
});

describe('invoice dates', () => {
  it('should write dates in each language, in UTC', () => {
    // 23:30 UTC is already the 28th east of UTC and still the 27th in UTC.
    const instant = '2026-11-27T23:30:00.000Z';
    expect(formatInvoiceDate(instant, 'en')).toBe('Nov 27, 2026');
    expect(formatInvoiceDate(instant, 'de')).toBe('27.11.2026');
    expect(formatInvoiceDate(instant, 'fr')).toBe('27/11/2026');
    expect(formatInvoiceDate('2026-01-02T00:00:00.000Z', 'de-AT')).toBe('02.01.2026');
    expect(formatInvoiceDate('2026-01-02', 'xx')).toBe('Jan 2, 2026');
    expect(formatInvoiceDate(new Date(Date.UTC(2026, 11, 31, 23, 59)), 'fr')).toBe('31/12/2026');
  });

  it('should refuse what is not a date', () => {
    expect(() => formatInvoiceDate('not a date', 'en')).toThrow(RangeError);
  });
});
