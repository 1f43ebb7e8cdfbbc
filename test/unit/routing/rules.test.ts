import { matchRule, ruleMatches } from '../../../src/modules/routing/rules';

const base = { amount: 5000, currency: 'EUR', country: 'DE', cardBrand: 'visa', metadata: { tier: 'gold', channel: 'web' } };

describe('rule matching', () => {
  it('should match any payment when when is absent or empty', () => {
    expect(ruleMatches(undefined, base)).toBe(true);
    expect(ruleMatches({}, { amount: 1, currency: 'JPY' })).toBe(true);
  });

  it('should match on currency case-insensitively on the input side', () => {
    expect(ruleMatches({ currency: ['EUR', 'USD'] }, { ...base, currency: 'eur' })).toBe(true);
    expect(ruleMatches({ currency: ['USD'] }, base)).toBe(false);
  });

  it('should match on country and never match a payment without one', () => {
    expect(ruleMatches({ country: ['DE', 'AT'] }, { ...base, country: 'de' })).toBe(true);
    expect(ruleMatches({ country: ['FR'] }, base)).toBe(false);
    expect(ruleMatches({ country: ['DE'] }, { ...base, country: null })).toBe(false);
    expect(ruleMatches({ country: ['DE'] }, { amount: 1, currency: 'EUR' })).toBe(false);
  });

  it('should match amount bounds inclusively', () => {
    expect(ruleMatches({ amountGte: 5000 }, base)).toBe(true);
    expect(ruleMatches({ amountGte: 5001 }, base)).toBe(false);
    expect(ruleMatches({ amountLte: 5000 }, base)).toBe(true);
    expect(ruleMatches({ amountLte: 4999 }, base)).toBe(false);
    expect(ruleMatches({ amountGte: 1000, amountLte: 9000 }, base)).toBe(true);
  });

  it('should match on card brand and never match a payment without one', () => {
    expect(ruleMatches({ cardBrand: ['visa', 'mastercard'] }, { ...base, cardBrand: 'VISA' })).toBe(true);
    expect(ruleMatches({ cardBrand: ['amex'] }, base)).toBe(false);
    expect(ruleMatches({ cardBrand: ['visa'] }, { ...base, cardBrand: null })).toBe(false);
  });

  it('should require every metadata pair to be present and equal', () => {
    expect(ruleMatches({ metadata: { tier: 'gold' } }, base)).toBe(true);
    expect(ruleMatches({ metadata: { tier: 'gold', channel: 'web' } }, base)).toBe(true);
    expect(ruleMatches({ metadata: { tier: 'silver' } }, base)).toBe(false);
    expect(ruleMatches({ metadata: { region: 'eu' } }, base)).toBe(false);
    expect(ruleMatches({ metadata: { tier: 'gold' } }, { ...base, metadata: undefined })).toBe(false);
    expect(ruleMatches({ metadata: { toString: 'x' } }, { ...base, metadata: {} })).toBe(false);
  });

  it('should require all given conditions together', () => {
    expect(ruleMatches({ currency: ['EUR'], country: ['DE'], cardBrand: ['visa'], amountGte: 100, metadata: { tier: 'gold' } }, base)).toBe(true);
    expect(ruleMatches({ currency: ['EUR'], country: ['FR'] }, base)).toBe(false);
  });

  it('should return the first matching rule, or null', () => {
    const rules = [
      { name: 'usd', when: { currency: ['USD'] } },
      { name: 'big-eur', when: { currency: ['EUR'], amountGte: 1000 } },
      { name: 'eur', when: { currency: ['EUR'] } },
    ];
    expect(matchRule(rules, base)?.name).toBe('big-eur');
    expect(matchRule(rules, { ...base, amount: 10 })?.name).toBe('eur');
    expect(matchRule(rules, { ...base, currency: 'GBP' })).toBeNull();
    expect(matchRule([], base)).toBeNull();
  });
});
