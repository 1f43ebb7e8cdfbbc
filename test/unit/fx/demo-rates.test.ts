import { isCurrency } from '../../../src/core/money';
import { DEMO_BASE, DEMO_CURRENCIES, DEMO_RATES, demoRate } from '../../../src/modules/fx/demo-rates';
import { invertRate, normalizeRate, originalAmountFor } from '../../../src/modules/fx/fx-math';

describe('demo rates', () => {
  it('should use USD as the base', () => {
    expect(DEMO_BASE).toBe('USD');
    expect(DEMO_RATES.USD).toBe('1');
  });

  it('should cover the major currencies', () => {
    for (const c of [
      'EUR', 'GBP', 'JPY', 'CAD', 'AUD', 'CHF', 'CNY', 'INR', 'BRL', 'MXN', 'SEK', 'NOK', 'DKK', 'PLN',
      'KWD', 'SGD', 'HKD', 'NZD', 'ZAR',
    ]) {
      expect(DEMO_CURRENCIES).toContain(c);
    }
    expect(DEMO_CURRENCIES.length).toBeGreaterThanOrEqual(15);
  });

  it('should only hold known currencies with canonical, valid rates', () => {
    for (const [code, rate] of Object.entries(DEMO_RATES)) {
      expect(isCurrency(code)).toBe(true);
      expect(code).toBe(code.toUpperCase());
      expect(normalizeRate(rate)).toBe(rate);
    }
  });

  it('should be frozen', () => {
    expect(Object.isFrozen(DEMO_RATES)).toBe(true);
    expect(() => {
      (DEMO_RATES as Record<string, string>).EUR = '2';
    }).toThrow(TypeError);
  });
});

describe('demoRate', () => {
  it('should return the table rate from USD', () => {
    expect(demoRate('USD', 'EUR')).toBe('0.92');
    expect(demoRate('USD', 'JPY')).toBe('150');
    expect(demoRate('USD', 'KWD')).toBe('0.307');
  });

  it('should invert rates into USD', () => {
    expect(demoRate('EUR', 'USD')).toBe('1.086956522');
    expect(demoRate('EUR', 'USD')).toBe(invertRate('0.92'));
    expect(demoRate('JPY', 'USD')).toBe('0.006666666667');
  });

  it('should compute cross rates through USD', () => {
    expect(demoRate('EUR', 'JPY')).toBe('163.0434783'); // 150 / 0.92
    expect(demoRate('KWD', 'JPY')).toBe('488.5993485'); // 150 / 0.307
    expect(demoRate('GBP', 'EUR')).toBe('1.164556962'); // 0.92 / 0.79
  });

  it('should make A→B and B→A reciprocal within 10 significant digits', () => {
    for (const a of DEMO_CURRENCIES) {
      for (const b of DEMO_CURRENCIES) {
        const ab = Number(demoRate(a, b));
        const ba = Number(demoRate(b, a));
        expect(Math.abs(ab * ba - 1)).toBeLessThan(1e-9);
      }
    }
  });

  it('should return "1" for the same currency', () => {
    expect(demoRate('EUR', 'EUR')).toBe('1');
    expect(demoRate('usd', 'USD')).toBe('1');
  });

  it('should be case-insensitive', () => {
    expect(demoRate('eur', 'jpy')).toBe(demoRate('EUR', 'JPY'));
  });

  it('should return null for currencies without a demo rate', () => {
    expect(demoRate('USD', 'THB')).toBeNull();
    expect(demoRate('THB', 'USD')).toBeNull();
    expect(demoRate('XYZ', 'EUR')).toBeNull();
    expect(demoRate('THB', 'THB')).toBeNull();
    expect(demoRate('toString', 'USD')).toBeNull();
    expect(demoRate('', 'USD')).toBeNull();
  });

  it('should plug into originalAmountFor for a payment priced in another currency', () => {
    // Price €10.00 charged in USD: exchangeRate = USD per 1 EUR = demoRate('EUR', 'USD').
    const rate = demoRate('EUR', 'USD')!;
    expect(originalAmountFor(1087, 'USD', 'EUR', rate)).toBe(1000);
    // Price ¥1000 charged in KWD: 1000 / 488.5993485 = 2.047 KWD.
    expect(originalAmountFor(2047, 'KWD', 'JPY', demoRate('JPY', 'KWD')!)).toBe(1000);
  });
});
