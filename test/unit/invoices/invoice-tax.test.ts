import { computeInvoiceTaxes, lineRateIds, lineRatesProblem, roundHalfAwayFromZero, type TaxRateUse } from '../../../src/modules/invoices/invoice-tax';
import { percentageFromE4, percentageToE4 } from '../../../src/modules/tax-rates/tax-rate.inputs';

const rates = new Map<string, TaxRateUse>([
  ['vat19', { displayName: 'VAT', percentageE4: 190_000, inclusive: false }],
  ['vat7', { displayName: 'VAT reduced', percentageE4: 70_000, inclusive: false }],
  ['incl19', { displayName: 'MwSt.', percentageE4: 190_000, inclusive: true }],
  ['ten', { displayName: 'Sales tax', percentageE4: 100_000, inclusive: false }],
  ['odd', { displayName: 'Odd', percentageE4: 72_525, inclusive: false }],
]);
const lines = (...spec: Array<[number, string[]]>) => spec.map(([amount, taxRateIds]) => ({ amount, taxRateIds }));

describe('roundHalfAwayFromZero', () => {
  it('should round halves away from zero on both sides and everything else to the nearest', () => {
    const cases: Array<[bigint, bigint, bigint]> = [[5n, 2n, 3n], [-5n, 2n, -3n], [7n, 3n, 2n], [-7n, 3n, -2n], [8n, 3n, 3n], [0n, 7n, 0n], [1n, 2n, 1n], [-1n, 2n, -1n], [1n, 3n, 0n]];
    for (const [num, den, expected] of cases) expect([num, den, roundHalfAwayFromZero(num, den)]).toEqual([num, den, expected]);
    // Far past 2^53: still exact.
    expect(roundHalfAwayFromZero(10n ** 30n + 5n, 10n)).toBe(10n ** 29n + 1n);
  });
});

describe('tax percentages', () => {
  it('should keep up to 4 decimals exactly and refuse more, negatives and over 100', () => {
    expect([19, 7.5, 19.0025, 0, 100, 0.0001].map(percentageToE4)).toEqual([190_000, 75_000, 190_025, 0, 1_000_000, 1]);
    expect([19.00001, -1, 100.0001, 0.00001, Number.NaN, Infinity].map(percentageToE4)).toEqual([null, null, null, null, null, null]);
    expect([190_025, 75_000, 1].map(percentageFromE4)).toEqual([19.0025, 7.5, 0.0001]);
  });
});

describe('computeInvoiceTaxes', () => {
  it('should take 1900 of tax out of 11900 at 19 % inclusive, leaving the total as the lines', () => {
    // 11900 × 19 / 119 = 1900 exactly; the net is 11900 − 1900 = 10000.
    const taxes = computeInvoiceTaxes(lines([11900, ['incl19']]), rates, 'none');
    expect(taxes).toEqual({
      subtotal: 11900n, tax: 0n, total: 11900n,
      breakdown: [{ taxRateId: 'incl19', displayName: 'MwSt.', percentage: 19, inclusive: true, taxableAmount: 10000, amount: 1900 }],
    });
  });

  it('should tax lines at 7 % and 19 % each on their own sum, in the order the lines name the rates', () => {
    // 19 %: 2000 + 500 = 2500 → 475; 7 %: 1250 → 87.5 → 88 (half away from zero).
    const taxes = computeInvoiceTaxes(lines([2000, ['vat19']], [1250, ['vat7']], [500, ['vat19']]), rates, 'none');
    expect(taxes.breakdown.map((b) => [b.taxRateId, b.taxableAmount, b.amount])).toEqual([['vat19', 2500, 475], ['vat7', 1250, 88]]);
    expect([taxes.subtotal, taxes.tax, taxes.total]).toEqual([3750n, 563n, 4313n]);
  });

  it('should round once per rate and invoice, not per line', () => {
    // Three lines of 105 at 10 %: per line 10.5 → 11 each, 33 in all; once on 315: 31.5 → 32.
    const taxes = computeInvoiceTaxes(lines([105, ['ten']], [105, ['ten']], [105, ['ten']]), rates, 'none');
    expect(taxes.breakdown[0].amount).toBe(32);
    expect(taxes.total).toBe(347n);
    // 4 decimals of a percent: 1000 × 7.2525 % = 72.525 → 73.
    expect(computeInvoiceTaxes(lines([1000, ['odd']]), rates, 'none').tax).toBe(73n);
  });

  it('should let a negative (proration credit) line lower the tax with its sign, rounding half away from zero below 0 too', () => {
    // 1000 − 105 = 895 at 10 % = 89.5 → 90.
    expect(computeInvoiceTaxes(lines([1000, ['ten']], [-105, ['ten']]), rates, 'none').tax).toBe(90n);
    // A net credit: −105 at 10 % = −10.5 → −11; the total is −116.
    const credit = computeInvoiceTaxes(lines([-105, ['ten']]), rates, 'none');
    expect([credit.tax, credit.total, credit.breakdown[0].taxableAmount]).toEqual([-11n, -116n, -105]);
  });

  it('should put several exclusive rates on one line, each on the whole line', () => {
    const taxes = computeInvoiceTaxes(lines([1000, ['vat19', 'vat7']]), rates, 'none');
    expect(taxes.breakdown.map((b) => b.amount)).toEqual([190, 70]);
    expect(taxes.total).toBe(1260n);
  });

  it('should charge no tax for an exempt or reverse-charge customer: every rate at 0, inclusive amounts left as they are', () => {
    for (const exempt of ['exempt', 'reverse'] as const) {
      const taxes = computeInvoiceTaxes(lines([10000, ['vat19']], [11900, ['incl19']]), rates, exempt);
      expect([taxes.subtotal, taxes.tax, taxes.total]).toEqual([21900n, 0n, 21900n]);
      expect(taxes.breakdown.map((b) => [b.taxRateId, b.taxableAmount, b.amount])).toEqual([['vat19', 10000, 0], ['incl19', 11900, 0]]);
    }
  });

  it('should have no breakdown and no tax without rates', () => {
    expect(computeInvoiceTaxes(lines([500, []]), rates, 'none')).toEqual({ subtotal: 500n, tax: 0n, total: 500n, breakdown: [] });
  });
});

describe('which rates a line takes', () => {
  it('should take its own rates, else the defaults', () => {
    expect(lineRateIds(['vat7'], ['vat19'])).toEqual(['vat7']);
    expect(lineRateIds([], ['vat19'])).toEqual(['vat19']);
    expect(lineRateIds(undefined, ['vat19'])).toEqual(['vat19']);
  });

  it('should refuse an inclusive rate beside any other rate on one line', () => {
    expect(lineRatesProblem(['vat19', 'vat7'], rates)).toBeNull();
    expect(lineRatesProblem(['incl19'], rates)).toBeNull();
    expect(lineRatesProblem(['incl19', 'vat7'], rates)).toMatch(/inclusive/);
  });
});
