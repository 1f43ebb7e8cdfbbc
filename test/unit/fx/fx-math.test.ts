import { z } from 'zod';
import { DomainError } from '../../../src/core/errors';
import { currencyExponent } from '../../../src/core/money';
import { parseInput } from '../../../src/core/validation';
import {
  convertAmount,
  crossRate,
  exchangeRateSchema,
  invertRate,
  isValidRate,
  normalizeRate,
  originalAmountFor,
} from '../../../src/modules/fx/fx-math';

function domainError(fn: () => unknown): DomainError {
  try {
    fn();
  } catch (err) {
    if (err instanceof DomainError) return err;
    throw err;
  }
  throw new Error('expected a DomainError');
}

describe('normalizeRate', () => {
  it.each<[string | number, string]>([
    ['1.0850', '1.085'],
    [' 150.00 ', '150'],
    ['150', '150'],
    ['0.92', '0.92'],
    ['00012.5', '12.5'],
    ['.5', '0.5'],
    ['1.', '1'],
    ['1e-7', '0.0000001'],
    ['2.5E3', '2500'],
    ['1000000000', '1000000000'],
    ['1e9', '1000000000'],
    ['0.000000001', '0.000000001'],
    [1.085, '1.085'],
    [0.1 + 0.2, '0.3'],
    [1e-7, '0.0000001'],
    [150, '150'],
  ])('should turn %p into %p', (input, expected) => {
    expect(normalizeRate(input)).toBe(expected);
  });

  it('should round to 10 significant digits, half-up', () => {
    expect(normalizeRate('1.23456789016')).toBe('1.23456789');
    expect(normalizeRate('1.23456789050')).toBe('1.234567891');
    expect(normalizeRate('1.23456789049')).toBe('1.23456789');
    expect(normalizeRate('123456.789012345')).toBe('123456.789');
    expect(normalizeRate('0.000123456789012')).toBe('0.000123456789');
    expect(normalizeRate('9.99999999995')).toBe('10');
    expect(normalizeRate('9.99999999949')).toBe('9.999999999');
  });

  it('should keep up to 10 significant digits exactly', () => {
    expect(normalizeRate('1.234567891')).toBe('1.234567891');
    expect(normalizeRate('999999999.9')).toBe('999999999.9');
  });

  it.each<[unknown, RegExp]>([
    ['0', /greater than 0/],
    ['0.000', /greater than 0/],
    ['-1', /positive decimal/],
    ['+1', /positive decimal/],
    ['abc', /positive decimal/],
    ['', /positive decimal/],
    ['1,5', /positive decimal/],
    ['1.2.3', /positive decimal/],
    ['Infinity', /positive decimal/],
    ['0x10', /positive decimal/],
    [Number.NaN, /finite/],
    [Number.POSITIVE_INFINITY, /finite/],
    [-1, /positive decimal/],
    [0, /greater than 0/],
    ['1000000001', /at most 1000000000/],
    ['1e10', /at most 1000000000/],
    ['1e999', /at most 1000000000/],
    ['0.0000000009', /at least 0.000000001/],
    ['1e-999', /at least 0.000000001/],
    [null, /positive decimal/],
    [{}, /positive decimal/],
  ])('should reject %p', (input, message) => {
    const err = domainError(() => normalizeRate(input as string));
    expect(err.code).toBe('invalid_parameter');
    expect(err.param).toBe('exchangeRate');
    expect(err.message).toMatch(message);
  });

  it('should name the given parameter in errors', () => {
    expect(domainError(() => normalizeRate('x', 'rates.EUR')).param).toBe('rates.EUR');
  });

  it('should report validity through isValidRate', () => {
    expect(isValidRate('1.085')).toBe(true);
    expect(isValidRate(2)).toBe(true);
    expect(isValidRate('0')).toBe(false);
    expect(isValidRate('2e9')).toBe(false);
    expect(isValidRate(undefined)).toBe(false);
  });
});

describe('exchangeRateSchema', () => {
  const schema = z.object({ exchangeRate: exchangeRateSchema }).strict();

  it('should output the canonical string for strings and numbers', () => {
    expect(schema.parse({ exchangeRate: '1.0850' })).toEqual({ exchangeRate: '1.085' });
    expect(schema.parse({ exchangeRate: 0.92 })).toEqual({ exchangeRate: '0.92' });
  });

  it('should map bad rates to invalid_parameter on the field', () => {
    const err = domainError(() => parseInput(schema, { exchangeRate: '0' }));
    expect(err.code).toBe('invalid_parameter');
    expect(err.param).toBe('exchangeRate');
    expect(err.message).toBe("Invalid 'exchangeRate': must be greater than 0");
    expect(domainError(() => parseInput(schema, { exchangeRate: true })).param).toBe('exchangeRate');
  });
});

describe('convertAmount', () => {
  it('should convert between two-decimal currencies', () => {
    expect(convertAmount(10000, 'EUR', 'USD', '1.085')).toBe(10850);
    expect(convertAmount(1, 'EUR', 'USD', '1.085')).toBe(1);
  });

  it('should convert into a zero-decimal currency (USD cents → JPY yen)', () => {
    expect(convertAmount(10000, 'USD', 'JPY', '150')).toBe(15000);
    expect(convertAmount(1999, 'USD', 'JPY', '151.37')).toBe(3026); // 19.99 × 151.37 = 3025.8863
  });

  it('should convert out of a zero-decimal currency (JPY yen → USD cents)', () => {
    expect(convertAmount(1000, 'JPY', 'USD', '0.0067')).toBe(670);
    expect(convertAmount(1, 'JPY', 'USD', '0.0067')).toBe(1); // 0.67 cents
    expect(convertAmount(1, 'JPY', 'USD', '0.0049')).toBe(0); // 0.49 cents
  });

  it('should convert into and out of a three-decimal currency (KWD fils)', () => {
    expect(convertAmount(10000, 'USD', 'KWD', '0.307')).toBe(30700);
    expect(convertAmount(30700, 'KWD', 'USD', '3.257328990')).toBe(10000); // 99.99999 → 10000
    expect(convertAmount(1, 'KWD', 'JPY', '488.5993485')).toBe(0); // 0.4886 yen
    expect(convertAmount(2, 'KWD', 'JPY', '488.5993485')).toBe(1); // 0.9772 yen
    expect(convertAmount(1000, 'KWD', 'JPY', '488.5993485')).toBe(489);
  });

  it('should round exact halves up, not to even', () => {
    expect(convertAmount(1, 'USD', 'EUR', '0.5')).toBe(1); // 0.5
    expect(convertAmount(5, 'USD', 'JPY', '50')).toBe(3); // 2.5
    expect(convertAmount(3, 'USD', 'JPY', '150')).toBe(5); // 4.5
    expect(convertAmount(1, 'USD', 'EUR', '0.4999999999')).toBe(0);
  });

  it('should not suffer from float drift', () => {
    // Math.round(100 * 1.005) === 100 and Math.round(100 * 0.285) === 28 with floats.
    expect(convertAmount(100, 'USD', 'EUR', '1.005')).toBe(101);
    expect(convertAmount(100, 'USD', 'EUR', '0.285')).toBe(29);
    expect(convertAmount(100, 'USD', 'EUR', 1.005)).toBe(101);
  });

  it('should accept lower-case currency codes', () => {
    expect(convertAmount(10000, 'usd', 'jpy', '150')).toBe(15000);
  });

  it('should return 0 for 0', () => {
    expect(convertAmount(0, 'USD', 'EUR', '0.92')).toBe(0);
  });

  it.each([1.5, -1, 1e20, Number.NaN, '100'])('should reject the amount %p', (amount) => {
    const err = domainError(() => convertAmount(amount as number, 'USD', 'EUR', '0.92'));
    expect(err.code).toBe('invalid_parameter');
    expect(err.param).toBe('amount');
  });

  it('should refuse a result above the maximum amount', () => {
    expect(domainError(() => convertAmount(1_000_000_000_000, 'USD', 'JPY', '150')).param).toBe('amount');
  });

  it('should reject unknown currencies and bad rates', () => {
    expect(domainError(() => convertAmount(100, 'XYZ', 'EUR', '1')).param).toBe('currency');
    expect(domainError(() => convertAmount(100, 'USD', 'EURO', '1')).param).toBe('currency');
    expect(domainError(() => convertAmount(100, 'USD', 'EUR', '-1')).param).toBe('exchangeRate');
  });
});

describe('originalAmountFor', () => {
  it('should recover the merchant price in a two-decimal currency', () => {
    // Price €10.00, charged $10.85 at 1.085 USD per EUR.
    expect(originalAmountFor(1085, 'USD', 'EUR', '1.085')).toBe(1000);
    expect(originalAmountFor(1085, 'USD', 'EUR', 1.085)).toBe(1000);
  });

  it('should round half-up on repeating decimals', () => {
    expect(originalAmountFor(1000, 'USD', 'EUR', '3')).toBe(333); // 333.33…
    expect(originalAmountFor(2000, 'USD', 'EUR', '3')).toBe(667); // 666.66…
    expect(originalAmountFor(1, 'USD', 'EUR', '2')).toBe(1); // 0.5 exactly → up
  });

  it('should handle a zero-decimal original currency', () => {
    // Charged $6.70 for a ¥1000 price at 0.0067 USD per JPY.
    expect(originalAmountFor(670, 'USD', 'JPY', '0.0067')).toBe(1000);
    // Charged ¥15000 for a $100.00 price at 150 JPY per USD.
    expect(originalAmountFor(15000, 'JPY', 'USD', '150')).toBe(10000);
    expect(originalAmountFor(1, 'JPY', 'USD', '150')).toBe(1); // 0.666… cents
  });

  it('should handle a three-decimal currency on either side', () => {
    // Charged 30.700 KWD for a $100.00 price at 0.307 KWD per USD.
    expect(originalAmountFor(30700, 'KWD', 'USD', '0.307')).toBe(10000);
    // Charged $325.73 for a 100.000 KWD price at 3.2573 USD per KWD.
    expect(originalAmountFor(32573, 'USD', 'KWD', '3.2573')).toBe(100000);
    // Charged ¥489 for a KWD price at 488.5993485 JPY per KWD: 1.000820… KWD.
    expect(originalAmountFor(489, 'JPY', 'KWD', '488.5993485')).toBe(1001);
  });

  it('should refuse, naming originalCurrency, a price that would be 0 or above the amount limit', () => {
    // 1 VND at 80000 VND per KWD is 0.0000125 KWD: less than half a fils.
    expect(domainError(() => originalAmountFor(1, 'VND', 'KWD', '80000'))).toMatchObject({ code: 'invalid_parameter', param: 'originalCurrency' });
    expect(domainError(() => originalAmountFor(1_000_000_000_000, 'JPY', 'USD', '0.001'))).toMatchObject({ code: 'invalid_parameter', param: 'originalCurrency' });
  });

  it('should divide by the exact rate rather than multiplying by a rounded inverse', () => {
    // 1/3 rounded to 10 digits would give 333333333.3 × 0.3333333333 …; exact division gives 1e9.
    expect(originalAmountFor(333_333_333_300, 'USD', 'EUR', '3')).toBe(111_111_111_100);
    expect(originalAmountFor(100_000_000_000, 'USD', 'EUR', '0.3')).toBe(333_333_333_333);
  });

  it('should be the inverse of convertAmount up to rounding', () => {
    for (const [from, to, rate] of [
      ['EUR', 'USD', '1.085'],
      ['USD', 'JPY', '151.37'],
      ['USD', 'KWD', '0.307'],
      ['KWD', 'EUR', '2.99'],
    ] as const) {
      for (const original of [100, 1999, 123457, 50_000_000]) {
        const charged = convertAmount(original, from, to, rate);
        const back = originalAmountFor(charged, to, from, rate);
        // Forward rounding moves at most ½ minor unit of `to`, worth ½·10^(expFrom−expTo)/rate
        // minor units of `from`; the way back adds at most another ½.
        const tolerance = 0.5 * 10 ** (currencyExponent(from) - currencyExponent(to)) / Number(rate) + 0.5;
        expect(Math.abs(back - original)).toBeLessThanOrEqual(tolerance);
      }
    }
    expect(originalAmountFor(convertAmount(1000, 'EUR', 'USD', '1.085'), 'USD', 'EUR', '1.085')).toBe(1000);
  });

  it('should validate its inputs', () => {
    expect(domainError(() => originalAmountFor(100, 'USD', 'ABC', '1')).param).toBe('originalCurrency');
    expect(domainError(() => originalAmountFor(100, 'ABC', 'USD', '1')).param).toBe('currency');
    expect(domainError(() => originalAmountFor(1.5, 'USD', 'EUR', '1')).param).toBe('amount');
    expect(domainError(() => originalAmountFor(100, 'USD', 'EUR', '0')).param).toBe('exchangeRate');
    expect(domainError(() => originalAmountFor(100, 'USD', 'EUR', 'abc')).param).toBe('exchangeRate');
  });

  it('should refuse a result above the maximum amount', () => {
    expect(domainError(() => originalAmountFor(1_000_000_000_000, 'USD', 'EUR', '0.5')).param).toBe('originalCurrency');
  });
});

describe('invertRate', () => {
  it.each<[string | number, string]>([
    ['2', '0.5'],
    ['0.5', '2'],
    ['4', '0.25'],
    ['1', '1'],
    ['3', '0.3333333333'],
    ['1.085', '0.9216589862'],
    ['150', '0.006666666667'],
    ['0.307', '3.25732899'],
    ['1000000000', '0.000000001'],
    ['0.000000001', '1000000000'],
    [8, '0.125'],
  ])('should invert %p to %p', (rate, inverse) => {
    expect(invertRate(rate)).toBe(inverse);
  });

  it('should round trip exactly representable inverses', () => {
    for (const r of ['2', '0.25', '1.25', '0.0008', '16', '1']) expect(invertRate(invertRate(r))).toBe(normalizeRate(r));
  });

  it('should stay within 10 significant digits after a round trip', () => {
    for (const r of ['1.085', '150', '0.307', '7.2', '83.12']) {
      const back = Number(invertRate(invertRate(r)));
      expect(Math.abs(back - Number(r)) / Number(r)).toBeLessThan(1e-9);
    }
  });

  it('should reject invalid rates', () => {
    expect(domainError(() => invertRate('0')).code).toBe('invalid_parameter');
    expect(domainError(() => invertRate('-2')).code).toBe('invalid_parameter');
  });
});

describe('crossRate', () => {
  it('should divide the target rate by the source rate', () => {
    expect(crossRate('0.92', '150')).toBe('163.0434783');
    expect(crossRate('1', '0.92')).toBe('0.92');
    expect(crossRate('0.92', '1')).toBe(invertRate('0.92'));
    expect(crossRate('7.2', '7.2')).toBe('1');
  });
});
