import { percentageFromE4 } from '../tax-rates/tax-rate.inputs';

import type { TaxExempt } from '../customers/customer.inputs';

export type { TaxExempt } from '../customers/customer.inputs';

/** What an invoice computes a rate with (TaxRateTerms). */
export interface TaxRateUse {
  displayName: string;
  /** Percent in ten-thousandths: 19 % → 190000. */
  percentageE4: number;
  inclusive: boolean;
}

/** One rate's line on an invoice: the tax of all the lines it applies to, rounded once. */
export interface TaxBreakdownEntry {
  taxRateId: string;
  displayName: string;
  percentage: number;
  inclusive: boolean;
  /** The amount the tax is computed on: for an inclusive rate the lines' net (their sum less the tax in it). */
  taxableAmount: number;
  amount: number;
}

export interface InvoiceTaxes {
  subtotal: bigint;
  /** The exclusive taxes (inclusive ones are already in the subtotal). */
  tax: bigint;
  total: bigint;
  breakdown: TaxBreakdownEntry[];
}

/** 100 % in ten-thousandths of a percent. */
const WHOLE = 1_000_000n;

/** `num / den` rounded half away from zero (den > 0): 5/2 → 3, −5/2 → −3, 7/3 → 2. Exact at any size. */
export function roundHalfAwayFromZero(num: bigint, den: bigint): bigint {
  if (den <= 0n) throw new RangeError('den must be positive');
  const magnitude = (2n * (num < 0n ? -num : num) + den) / (2n * den);
  return num < 0n ? -magnitude : magnitude;
}

/** The tax rates a line is taxed with: its own, else the invoice's defaults. */
export function lineRateIds(lineIds: readonly string[] | undefined, defaults: readonly string[]): readonly string[] {
  return lineIds && lineIds.length > 0 ? lineIds : defaults;
}

/**
 * Why a line cannot take these rates together, or null: its rates are all exclusive (any number
 * of them, each on the line's amount), or one inclusive rate alone. An inclusive rate beside
 * another rate would need the other's base out of a price that already holds a tax, which no
 * invoice of this service needs and none can check by hand.
 */
export function lineRatesProblem(ids: readonly string[], rates: ReadonlyMap<string, TaxRateUse>): string | null {
  const inclusive = ids.filter((id) => rates.get(id)?.inclusive);
  if (inclusive.length > 0 && ids.length > 1) {
    return 'a line takes either exclusive tax rates or a single inclusive one: an inclusive rate cannot be combined with another rate on the same line';
  }
  return null;
}

/**
 * The invoice's taxes (API.md §12), exact in integers: per rate, the sum of the lines it applies
 * to (negative proration credits included: the tax follows their sign), taxed and rounded half
 * away from zero once per rate and invoice. Exclusive: tax = sum × p / 100, added to the total.
 * Inclusive: tax = sum × p / (100 + p), already inside the lines (taxableAmount = sum − tax).
 * A customer `exempt` or `reverse` pays no tax: each rate is listed with tax 0 and the whole of
 * its lines as taxable; inclusive line amounts stay as they are (the price is the price, the tax
 * in it is 0), as Stripe does.
 * Rates come in the order the lines first name them. `rates` must hold every id the lines name.
 */
export function computeInvoiceTaxes(
  lines: ReadonlyArray<{ amount: number; taxRateIds: readonly string[] }>,
  rates: ReadonlyMap<string, TaxRateUse>,
  exempt: TaxExempt,
): InvoiceTaxes {
  let subtotal = 0n;
  const sums = new Map<string, bigint>();
  for (const line of lines) {
    const amount = BigInt(line.amount);
    subtotal += amount;
    for (const id of line.taxRateIds) sums.set(id, (sums.get(id) ?? 0n) + amount);
  }
  let tax = 0n;
  const breakdown: TaxBreakdownEntry[] = [];
  for (const [id, sum] of sums) {
    const rate = rates.get(id);
    if (!rate) throw new Error(`computeInvoiceTaxes: tax rate ${id} was not loaded`);
    const p = BigInt(rate.percentageE4);
    let amount = 0n;
    if (exempt === 'none') amount = rate.inclusive ? roundHalfAwayFromZero(sum * p, WHOLE + p) : roundHalfAwayFromZero(sum * p, WHOLE);
    const taxableAmount = rate.inclusive ? sum - amount : sum;
    if (!rate.inclusive) tax += amount;
    breakdown.push({
      taxRateId: id, displayName: rate.displayName, percentage: percentageFromE4(rate.percentageE4), inclusive: rate.inclusive,
      taxableAmount: Number(taxableAmount), amount: Number(amount),
    });
  }
  return { subtotal, tax, total: subtotal + tax, breakdown };
}
