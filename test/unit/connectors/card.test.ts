import {
  detectCardBrand,
  isCardExpired,
  isLuhnValid,
  redactCardNumbers,
  summarizeCard,
  testTokenCard,
} from '../../../src/connectors/card';

describe('card helpers', () => {
  it.each([
    ['4242424242424242', true],
    ['4242 4242 4242 4242', true],
    ['4242-4242-4242-4242', true],
    ['4242424242424241', false],
    ['42424242', false],
    ['4242a24242424242', false],
  ])('should judge %s Luhn-valid = %s', (number, valid) => {
    expect(isLuhnValid(number)).toBe(valid);
  });

  it.each([
    ['4242424242424242', 'visa'],
    ['5555555555554444', 'mastercard'],
    ['2223003122003222', 'mastercard'],
    ['378282246310005', 'amex'],
    ['6011111111111117', 'discover'],
    ['3056930009020004', 'diners'],
    ['3566002020360505', 'jcb'],
    ['6200000000000005', 'unionpay'],
    ['9999999999999995', 'unknown'],
  ])('should detect %s as %s', (number, brand) => {
    expect(detectCardBrand(number)).toBe(brand);
  });

  it('should treat a card as valid through the end of its expiry month (UTC)', () => {
    const now = new Date('2030-06-30T23:59:59Z');
    expect(isCardExpired(6, 2030, now)).toBe(false);
    expect(isCardExpired(5, 2030, now)).toBe(true);
    expect(isCardExpired(12, 2029, now)).toBe(true);
    expect(isCardExpired(1, 31, now)).toBe(false);
    expect(isCardExpired(6, 2030, new Date('2030-07-01T00:00:00Z'))).toBe(true);
  });

  it('should summarise a card with brand, last4 and expiry only', () => {
    expect(summarizeCard({ number: '4242 4242 4242 4242', expMonth: 1, expYear: 2031, cvc: '123' })).toEqual({ brand: 'visa', last4: '4242', expMonth: 1, expYear: 2031 });
  });

  it('should redact digit runs that look like card numbers', () => {
    expect(redactCardNumbers('card 4242 4242 4242 4242 failed, code 402, amount 100000')).toBe('card [redacted] failed, code 402, amount 100000');
    expect(redactCardNumbers('4000000000000002')).toBe('[redacted]');
  });

  it('should describe the known test tokens only', () => {
    expect(testTokenCard('pm_card_mastercard')).toEqual({ brand: 'mastercard', last4: '4444' });
    expect(testTokenCard('toString')).toBeNull();
    expect(testTokenCard('pm_123')).toBeNull();
  });
});
