import { parseInput } from '../../../src/core/validation';
import { DomainError } from '../../../src/core/errors';
import { routingConfigSchema } from '../../../src/modules/routing/routing.inputs';

function refusal(input: unknown): DomainError {
  try {
    parseInput(routingConfigSchema, input);
  } catch (err) {
    if (err instanceof DomainError) return err;
    throw err;
  }
  throw new Error('expected the config to be refused');
}

const rule = (extra: Record<string, unknown> = {}) => ({ name: 'eu', strategy: 'priority', gateways: [{ gatewayId: 'gw_a' }], ...extra });

describe('routing config schema', () => {
  it('should default fallback to [] and maxAttempts to 3', () => {
    expect(routingConfigSchema.parse({ rules: [] })).toEqual({ rules: [], fallback: [], maxAttempts: 3 });
  });

  it('should normalise currencies, countries and brands', () => {
    const config = routingConfigSchema.parse({
      rules: [rule({ when: { currency: ['eur', 'Usd'], country: ['de', 'FR'], cardBrand: ['VISA', 'Mastercard'], amountGte: 100, amountLte: 100, metadata: { tier: 'gold' } } })],
      fallback: ['gw_b'],
      maxAttempts: 10,
    });
    expect(config.rules[0].when).toEqual({ currency: ['EUR', 'USD'], country: ['DE', 'FR'], cardBrand: ['visa', 'mastercard'], amountGte: 100, amountLte: 100, metadata: { tier: 'gold' } });
  });

  it.each([
    [{ rules: [rule({ when: { currency: ['EURO'] } })] }, 'rules[0].when.currency[0]'],
    [{ rules: [rule({ when: { currency: ['XXY'] } })] }, 'rules[0].when.currency[0]'],
    [{ rules: [rule({ when: { country: ['DEU'] } })] }, 'rules[0].when.country[0]'],
    [{ rules: [rule({ when: { cardBrand: ['diners club'] } })] }, 'rules[0].when.cardBrand[0]'],
    [{ rules: [rule({ when: { amountGte: 1.5 } })] }, 'rules[0].when.amountGte'],
    [{ rules: [rule({ when: { amountGte: 500, amountLte: 100 } })] }, 'rules[0].when.amountGte'],
    [{ rules: [rule({ when: { metadata: { k: 1 } } })] }, 'rules[0].when.metadata.k'],
    [{ rules: [rule({ strategy: 'random' })] }, 'rules[0].strategy'],
    [{ rules: [rule({ gateways: [] })] }, 'rules[0].gateways'],
    [{ rules: [rule({ strategy: 'weighted', gateways: [{ gatewayId: 'gw_a', weight: 2 }, { gatewayId: 'gw_b' }] })] }, 'rules[0].gateways[1].weight'],
    [{ rules: [rule({ strategy: 'weighted', gateways: [{ gatewayId: 'gw_a', weight: 0 }] })] }, 'rules[0].gateways[0].weight'],
    [{ rules: [rule({ gateways: [{ gatewayId: 'gw_a' }, { gatewayId: 'gw_a' }] })] }, 'rules[0].gateways[1].gatewayId'],
    [{ rules: [rule(), rule()] }, 'rules[1].name'],
    [{ rules: [rule({ name: '' })] }, 'rules[0].name'],
    [{ rules: [], fallback: ['gw_a', 'gw_a'] }, 'fallback[1]'],
    [{ rules: [], maxAttempts: 0 }, 'maxAttempts'],
    [{ rules: [], maxAttempts: 11 }, 'maxAttempts'],
  ])('should refuse %j naming %s', (input, param) => {
    expect(refusal(input).param).toBe(param);
  });

  it('should refuse unknown keys at every level', () => {
    expect(refusal({ rules: [], extra: 1 })).toMatchObject({ code: 'unknown_parameter', param: 'extra' });
    expect(refusal({ rules: [rule({ priority: 1 })] })).toMatchObject({ code: 'unknown_parameter', param: 'rules[0].priority' });
    expect(refusal({ rules: [rule({ when: { currencies: ['EUR'] } })] })).toMatchObject({ code: 'unknown_parameter', param: 'rules[0].when.currencies' });
    expect(refusal({ rules: [rule({ gateways: [{ gatewayId: 'gw_a', share: 1 }] })] })).toMatchObject({ code: 'unknown_parameter', param: 'rules[0].gateways[0].share' });
  });

  it('should require rules', () => {
    expect(refusal({ fallback: [] })).toMatchObject({ code: 'missing_parameter', param: 'rules' });
  });

  it('should accept weights on non-weighted rules and a rule without when', () => {
    const config = routingConfigSchema.parse({ rules: [rule({ gateways: [{ gatewayId: 'gw_a', weight: 3 }] })] });
    expect(config.rules[0].when).toBeUndefined();
  });
});
