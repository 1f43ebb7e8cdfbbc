import { z } from 'zod';
import { DomainError } from '../../core/errors';
import { amountSchema, currencyExponent, isCurrency, MAX_AMOUNT } from '../../core/money';

/**
 * FX semantics. A payment is charged `amount` (minor units) in `currency`; the merchant's price
 * was in `originalCurrency`. `exchangeRate` is the number of MAJOR units of `currency` per
 * 1 MAJOR unit of `originalCurrency` (e.g. originalCurrency EUR, currency USD, rate "1.085":
 * €1.00 costs $1.085).
 *
 * Rates are decimal strings. Canonical form: plain decimal notation (no exponent), at most
 * 10 significant digits (more are rounded half-up), no trailing fractional zeros
 * ("1.0850" → "1.085", "150.00" → "150"). Accepted range: 1e-9 … 1e9, so that every valid
 * rate's inverse is valid too.
 *
 * Arithmetic is exact: a rate "d₁…dₙ" with s fraction digits is held as the integer R = d₁…dₙ
 * (a BigInt) and the scale s, i.e. rate = R / 10^s. A conversion is then the exact fraction
 *   minorTo = amount · R · 10^expTo / (10^s · 10^expFrom)
 * (or its reciprocal in the rate for `originalAmountFor`), computed with BigInt numerator and
 * denominator and rounded once, half-up: floor((2·num + den) / (2·den)). No float ever
 * multiplies money, so there is no drift like 0.1 + 0.2.
 */

export const MAX_RATE_SIGNIFICANT_DIGITS = 10;
export const MIN_RATE = '0.000000001';
export const MAX_RATE = '1000000000';

export type RateInput = string | number;

/** A positive rational n/d held exactly. */
interface Ratio {
  n: bigint;
  d: bigint;
}

const TEN = 10n;
const pow10 = (k: number): bigint => TEN ** BigInt(k);

const RATE_PATTERN = /^(\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d{1,3}))?$/;

function invalidRate(param: string, message = 'must be a positive decimal exchange rate'): DomainError {
  return new DomainError('invalid_parameter', `Invalid '${param}': ${message}`, param);
}

/** Exact parse of a decimal string/number into n/d; throws on anything that is not a plain number. */
function parseExact(rate: RateInput, param: string): Ratio {
  let text: string;
  if (typeof rate === 'number') {
    if (!Number.isFinite(rate)) throw invalidRate(param, 'must be a finite number');
    text = String(rate); // shortest round-trip form, may use exponent notation ("1e-7")
  } else if (typeof rate === 'string') {
    text = rate.trim();
  } else {
    throw invalidRate(param);
  }
  if (text.length === 0 || text.length > 64) throw invalidRate(param);
  const m = RATE_PATTERN.exec(text);
  if (!m) throw invalidRate(param);
  const [intPart, fracPart = ''] = m[1].split('.');
  const exp = m[2] ? Number(m[2]) : 0;
  let n = BigInt((intPart || '0') + fracPart);
  let d = 1n;
  const scale = fracPart.length - exp; // value = n / 10^scale
  if (scale >= 0) d = pow10(scale);
  else n *= pow10(-scale);
  if (n === 0n) throw invalidRate(param, 'must be greater than 0');
  return { n, d };
}

/** Rounds n/d half-up to `sig` significant digits; returns q and k with value ≈ q / 10^k. */
function roundSignificant(r: Ratio, sig: number): { q: bigint; k: number } {
  // Start from the digit-length difference, then adjust so that 10^(sig-1) <= n·10^k/d < 10^sig.
  let k = sig - 1 - (r.n.toString().length - r.d.toString().length);
  const lo = pow10(sig - 1);
  const hi = pow10(sig);
  const scaled = (kk: number): { num: bigint; den: bigint } =>
    kk >= 0 ? { num: r.n * pow10(kk), den: r.d } : { num: r.n, den: r.d * pow10(-kk) };
  for (;;) {
    const { num, den } = scaled(k);
    const floor = num / den;
    if (floor >= hi) k--;
    else if (floor < lo) k++;
    else break;
  }
  const { num, den } = scaled(k);
  let q = (2n * num + den) / (2n * den);
  if (q === hi) {
    // 9.99…95 rounded up to 10.00…0: drop one digit, still exact.
    q /= TEN;
    k--;
  }
  return { q, k };
}

/** Plain decimal rendering of q / 10^k without trailing fractional zeros. */
function formatDecimal(q: bigint, k: number): string {
  if (k <= 0) return (q * pow10(-k)).toString();
  let s = q.toString().padStart(k + 1, '0');
  s = `${s.slice(0, s.length - k)}.${s.slice(s.length - k)}`;
  return s.replace(/0+$/, '').replace(/\.$/, '');
}

/** Rounds to ≤10 significant digits and checks the 1e-9 … 1e9 range. */
function toRate(r: Ratio, param: string): { text: string; ratio: Ratio } {
  const { q, k } = roundSignificant(r, MAX_RATE_SIGNIFICANT_DIGITS);
  const ratio: Ratio = k >= 0 ? { n: q, d: pow10(k) } : { n: q * pow10(-k), d: 1n };
  // ratio <= 1e9  ⇔  n <= 1e9·d ;  ratio >= 1e-9  ⇔  n·1e9 >= d
  if (ratio.n > pow10(9) * ratio.d) throw invalidRate(param, `must be at most ${MAX_RATE}`);
  if (ratio.n * pow10(9) < ratio.d) throw invalidRate(param, `must be at least ${MIN_RATE}`);
  return { text: formatDecimal(q, k), ratio };
}

function parseRate(rate: RateInput, param: string): { text: string; ratio: Ratio } {
  return toRate(parseExact(rate, param), param);
}

/**
 * Validates a rate (positive, finite, 1e-9 … 1e9; string or number) and returns its canonical
 * string. Throws DomainError `invalid_parameter` naming `param`.
 */
export function normalizeRate(rate: RateInput, param = 'exchangeRate'): string {
  return parseRate(rate, param).text;
}

export function isValidRate(rate: unknown): boolean {
  if (typeof rate !== 'string' && typeof rate !== 'number') return false;
  try {
    parseRate(rate, 'exchangeRate');
    return true;
  } catch {
    return false;
  }
}

/** zod: a rate given as a decimal string or a number; outputs the canonical string. */
export const exchangeRateSchema = z
  .union([z.string(), z.number()], { error: 'must be a positive decimal exchange rate' })
  .transform((value, ctx) => {
    try {
      return normalizeRate(value);
    } catch (err) {
      const message = err instanceof DomainError ? err.message.replace(/^Invalid '[^']*': /, '') : String(err);
      ctx.issues.push({ code: 'custom', message, input: value });
      return z.NEVER;
    }
  });

/** 1 / rate, rounded half-up to 10 significant digits. */
export function invertRate(rate: RateInput): string {
  const { ratio } = parseRate(rate, 'exchangeRate');
  return toRate({ n: ratio.d, d: ratio.n }, 'exchangeRate').text;
}

/**
 * Cross rate through a common base: given "units of A per 1 base" and "units of B per 1 base",
 * returns units of B per 1 A (= perBaseTo / perBaseFrom), 10 significant digits.
 */
export function crossRate(perBaseFrom: RateInput, perBaseTo: RateInput): string {
  const a = parseRate(perBaseFrom, 'exchangeRate').ratio;
  const b = parseRate(perBaseTo, 'exchangeRate').ratio;
  return toRate({ n: b.n * a.d, d: b.d * a.n }, 'exchangeRate').text;
}

function checkCurrency(code: string, param: string): string {
  if (typeof code !== 'string' || !/^[A-Za-z]{3}$/.test(code) || !isCurrency(code)) {
    throw new DomainError('invalid_parameter', `Invalid '${param}': must be an ISO 4217 currency code`, param);
  }
  return code.toUpperCase();
}

function checkAmount(amount: number): bigint {
  if (amount === 0) return 0n;
  const parsed = amountSchema.safeParse(amount);
  if (!parsed.success) {
    throw new DomainError('invalid_parameter', `Invalid 'amount': ${parsed.error.issues[0].message}`, 'amount');
  }
  return BigInt(parsed.data);
}

/** floor(num/den + 1/2) for num >= 0, den > 0. */
function roundHalfUp(num: bigint, den: bigint): bigint {
  return (2n * num + den) / (2n * den);
}

function toAmount(value: bigint): number {
  if (value > BigInt(MAX_AMOUNT)) {
    throw new DomainError('invalid_parameter', `Invalid 'amount': the converted amount exceeds ${MAX_AMOUNT}`, 'amount');
  }
  return Number(value);
}

/**
 * Forward: `amount` minor units of `from` → minor units of `to`, where `rate` is units of `to`
 * per 1 `from`. minorTo = round_half_up(amount · R · 10^expTo / (10^s · 10^expFrom)).
 * May return 0 when the amount is worth less than half a minor unit of `to`.
 */
export function convertAmount(amount: number, from: string, to: string, rate: RateInput): number {
  const a = checkAmount(amount);
  const expFrom = currencyExponent(checkCurrency(from, 'currency'));
  const expTo = currencyExponent(checkCurrency(to, 'currency'));
  const { ratio } = parseRate(rate, 'exchangeRate');
  return toAmount(roundHalfUp(a * ratio.n * pow10(expTo), ratio.d * pow10(expFrom)));
}

/**
 * The merchant-currency amount behind a charge: `amount` minor units of `currency`, `rate` =
 * units of `currency` per 1 `originalCurrency`. Divides by the exact rate (no inverted-rate
 * rounding): originalMinor = round_half_up(amount · 10^s · 10^expOrig / (R · 10^expCur)).
 */
export function originalAmountFor(amount: number, currency: string, originalCurrency: string, rate: RateInput): number {
  const a = checkAmount(amount);
  const expCur = currencyExponent(checkCurrency(currency, 'currency'));
  const expOrig = currencyExponent(checkCurrency(originalCurrency, 'originalCurrency'));
  const { ratio } = parseRate(rate, 'exchangeRate');
  const original = roundHalfUp(a * ratio.d * pow10(expOrig), ratio.n * pow10(expCur));
  // Amounts are 1..MAX_AMOUNT everywhere, originalAmount included; the amount itself is fine,
  // it is its worth in the original currency that has no valid amount.
  if (original < 1n) {
    throw new DomainError('invalid_parameter', `${amount} ${currency.toUpperCase()} is worth less than one minor unit of ${originalCurrency.toUpperCase()} at the current rate`, 'originalCurrency');
  }
  if (original > BigInt(MAX_AMOUNT)) {
    throw new DomainError('invalid_parameter', `${amount} ${currency.toUpperCase()} is worth more than ${MAX_AMOUNT} minor units of ${originalCurrency.toUpperCase()} at the current rate`, 'originalCurrency');
  }
  return Number(original);
}
