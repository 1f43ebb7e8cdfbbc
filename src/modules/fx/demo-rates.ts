import { crossRate } from './fx-math';

/**
 * Fixed demo FX rates for test mode. Illustrative round numbers close to real markets, never
 * updated: test-mode results stay reproducible. Live mode only uses the account's own rates.
 */
export const DEMO_BASE = 'USD';

/** Units of each currency per 1 USD. */
export const DEMO_RATES: Readonly<Record<string, string>> = Object.freeze({
  USD: '1',
  EUR: '0.92',
  GBP: '0.79',
  JPY: '150',
  CAD: '1.36',
  AUD: '1.52',
  CHF: '0.88',
  CNY: '7.2',
  INR: '83',
  BRL: '5',
  MXN: '17',
  SEK: '10.5',
  NOK: '10.6',
  DKK: '6.87',
  PLN: '4',
  KWD: '0.307',
  SGD: '1.34',
  HKD: '7.82',
  NZD: '1.64',
  ZAR: '18.5',
});

export const DEMO_CURRENCIES: readonly string[] = Object.freeze(Object.keys(DEMO_RATES));

/**
 * Units of `to` per 1 `from` (the `exchangeRate` of a payment charged in `to` whose price was in
 * `from`), as a canonical decimal string crossed through USD; `null` when either currency has no
 * demo rate. Codes are case-insensitive.
 */
export function demoRate(from: string, to: string): string | null {
  if (typeof from !== 'string' || typeof to !== 'string') return null;
  const f = from.toUpperCase();
  const t = to.toUpperCase();
  const has = (c: string) => Object.prototype.hasOwnProperty.call(DEMO_RATES, c);
  if (!has(f) || !has(t)) return null;
  if (f === t) return '1';
  return crossRate(DEMO_RATES[f], DEMO_RATES[t]);
}
