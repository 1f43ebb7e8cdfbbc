import { FixedClock } from '../../../src/core/clock';
import { orderCandidates, type CandidateConfig, type CandidateGateway } from '../../../src/modules/routing/candidates';
import { CircuitBreaker } from '../../../src/modules/routing/circuit-breaker';
import { mulberry32 } from '../../../src/modules/routing/rng';
import { routingConfigSchema } from '../../../src/modules/routing/routing.inputs';
import type { RoutingInput } from '../../../src/modules/routing/rules';
import { SuccessRateTracker } from '../../../src/modules/routing/success-rate';

const NOW = new Date('2030-01-01T00:00:00Z');
const gw = (id: string, extra: Partial<CandidateGateway> = {}): CandidateGateway => ({ id, enabled: true, currencies: null, ...extra });
const GATEWAYS = ['gw_a', 'gw_b', 'gw_c', 'gw_d'].map((id) => gw(id));
const EUR: RoutingInput = { amount: 1000, currency: 'EUR' };

function setup(config: unknown, opts: { gateways?: CandidateGateway[]; seed?: number; explorationRate?: number } = {}) {
  const clock = new FixedClock(NOW);
  const parsed: CandidateConfig = routingConfigSchema.parse(config);
  const stats = new SuccessRateTracker();
  const breaker = new CircuitBreaker({ failureThreshold: 2, cooldownMs: 1000, clock });
  const rng = mulberry32(opts.seed ?? 1);
  const order = (input: RoutingInput = EUR) =>
    orderCandidates({ config: parsed, input, gateways: opts.gateways ?? GATEWAYS, stats, breaker, rng, now: clock.now(), explorationRate: opts.explorationRate });
  return { order, stats, breaker, clock };
}

const priority = (ids: string[], extra: Record<string, unknown> = {}) => ({ name: 'main', strategy: 'priority', gateways: ids.map((gatewayId) => ({ gatewayId })), ...extra });

/** Share of `draws` decisions that put each gateway first. */
function firstShares(order: () => { candidates: string[] }, draws: number): Record<string, number> {
  const counts: Record<string, number> = {};
  for (let i = 0; i < draws; i++) {
    const first = order().candidates[0];
    counts[first] = (counts[first] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v / draws]));
}

describe('candidate ordering', () => {
  it('should keep the given order for priority rules and name the rule', () => {
    const { order } = setup({ rules: [priority(['gw_c', 'gw_a', 'gw_b'])] });
    expect(order()).toEqual({ rule: 'main', candidates: ['gw_c', 'gw_a', 'gw_b'], skipped: [] });
  });

  it('should use the first matching rule', () => {
    const { order } = setup({
      rules: [
        priority(['gw_a'], { name: 'usd', when: { currency: ['USD'] } }),
        priority(['gw_b'], { name: 'visa', when: { cardBrand: ['visa'] } }),
        priority(['gw_c'], { name: 'rest' }),
      ],
    });
    expect(order({ ...EUR, currency: 'usd' }).rule).toBe('usd');
    expect(order({ ...EUR, cardBrand: 'visa' })).toMatchObject({ rule: 'visa', candidates: ['gw_b'] });
    expect(order(EUR)).toMatchObject({ rule: 'rest', candidates: ['gw_c'] });
  });

  it('should append the fallback after the rule, without duplicates', () => {
    const { order } = setup({ rules: [priority(['gw_b', 'gw_a'])], fallback: ['gw_a', 'gw_c'], maxAttempts: 10 });
    expect(order().candidates).toEqual(['gw_b', 'gw_a', 'gw_c']);
  });

  it('should use only the fallback when no rule matches, and nothing without one', () => {
    expect(setup({ rules: [priority(['gw_a'], { when: { currency: ['USD'] } })], fallback: ['gw_d', 'gw_b'] }).order()).toEqual({
      rule: null, candidates: ['gw_d', 'gw_b'], skipped: [],
    });
    expect(setup({ rules: [priority(['gw_a'], { when: { currency: ['USD'] } })] }).order()).toEqual({ rule: null, candidates: [], skipped: [] });
  });

  it('should truncate to maxAttempts', () => {
    const { order } = setup({ rules: [priority(['gw_a', 'gw_b', 'gw_c'])], fallback: ['gw_d'], maxAttempts: 2 });
    expect(order().candidates).toEqual(['gw_a', 'gw_b']);
    expect(setup({ rules: [priority(['gw_a', 'gw_b', 'gw_c'])], fallback: ['gw_d'], maxAttempts: 1 }).order().candidates).toEqual(['gw_a']);
  });

  it('should skip unknown, disabled, wrong-currency and circuit-open gateways with reasons, once each', () => {
    const gateways = [gw('gw_a', { enabled: false }), gw('gw_b', { currencies: ['USD', 'GBP'] }), gw('gw_c'), gw('gw_d', { currencies: ['EUR'] }), gw('gw_e')];
    const { order, breaker } = setup({ rules: [priority(['gw_a', 'gw_b', 'gw_x', 'gw_c', 'gw_d', 'gw_e'])], fallback: ['gw_a', 'gw_x'], maxAttempts: 10 }, { gateways });
    breaker.recordFailure('gw_c');
    breaker.recordFailure('gw_c');
    expect(order()).toEqual({
      rule: 'main',
      candidates: ['gw_d', 'gw_e'],
      skipped: [
        { gatewayId: 'gw_a', reason: 'disabled' },
        { gatewayId: 'gw_b', reason: 'currency' },
        { gatewayId: 'gw_x', reason: 'unknown' },
        { gatewayId: 'gw_c', reason: 'circuit_open' },
      ],
    });
  });

  it('should compare currencies case-insensitively and treat null currencies as any', () => {
    const gateways = [gw('gw_a', { currencies: ['eur'] }), gw('gw_b', { currencies: null })];
    expect(setup({ rules: [], fallback: ['gw_a', 'gw_b'] }, { gateways }).order({ amount: 1, currency: 'eur' }).candidates).toEqual(['gw_a', 'gw_b']);
  });

  it('should bring a gateway back once its circuit half-opens', () => {
    const { order, breaker, clock } = setup({ rules: [priority(['gw_a', 'gw_b'])] });
    breaker.recordFailure('gw_a');
    breaker.recordFailure('gw_a');
    expect(order().candidates).toEqual(['gw_b']);
    clock.advance(1000);
    expect(order().candidates).toEqual(['gw_a', 'gw_b']);
  });

  it('should count truncation after filtering, so skipped gateways do not use attempts', () => {
    const gateways = [gw('gw_a', { enabled: false }), gw('gw_b'), gw('gw_c')];
    const { order } = setup({ rules: [priority(['gw_a', 'gw_b', 'gw_c'])], maxAttempts: 2 }, { gateways });
    expect(order().candidates).toEqual(['gw_b', 'gw_c']);
  });
});

describe('weighted strategy', () => {
  const weighted = (weights: Record<string, number>) => ({
    name: 'split', strategy: 'weighted', gateways: Object.entries(weights).map(([gatewayId, weight]) => ({ gatewayId, weight })),
  });

  it('should split first picks 70/30 by weight over 10 000 seeded draws (±3 %)', () => {
    const { order } = setup({ rules: [weighted({ gw_a: 7, gw_b: 3 })] }, { seed: 2024 });
    const shares = firstShares(order, 10_000);
    expect(Math.abs(shares.gw_a - 0.7)).toBeLessThan(0.03);
    expect(Math.abs(shares.gw_b - 0.3)).toBeLessThan(0.03);
  });

  it('should split three ways by weight', () => {
    const { order } = setup({ rules: [weighted({ gw_a: 1, gw_b: 2, gw_c: 7 })] }, { seed: 5 });
    const shares = firstShares(order, 10_000);
    expect(Math.abs(shares.gw_a - 0.1)).toBeLessThan(0.03);
    expect(Math.abs(shares.gw_b - 0.2)).toBeLessThan(0.03);
    expect(Math.abs(shares.gw_c - 0.7)).toBeLessThan(0.03);
  });

  it('should order the rest by descending weight, ties in rule order', () => {
    const { order } = setup({ rules: [weighted({ gw_a: 1, gw_b: 5, gw_c: 5, gw_d: 3 })], maxAttempts: 10 }, { seed: 3 });
    for (let i = 0; i < 50; i++) {
      const { candidates } = order();
      const rest = candidates.slice(1);
      const expected = ['gw_b', 'gw_c', 'gw_d', 'gw_a'].filter((id) => id !== candidates[0]);
      expect(rest).toEqual(expected);
    }
  });

  it('should draw only among usable gateways', () => {
    const gateways = [gw('gw_a', { enabled: false }), gw('gw_b'), gw('gw_c')];
    const { order } = setup({ rules: [weighted({ gw_a: 100, gw_b: 1, gw_c: 1 })] }, { gateways, seed: 9 });
    const shares = firstShares(order, 2000);
    expect(shares.gw_a).toBeUndefined();
    expect(Math.abs(shares.gw_b - 0.5)).toBeLessThan(0.05);
  });

  it('should be reproducible for a seed', () => {
    const run = () => {
      const { order } = setup({ rules: [weighted({ gw_a: 1, gw_b: 1 })] }, { seed: 77 });
      return Array.from({ length: 20 }, () => order().candidates[0]);
    };
    expect(run()).toEqual(run());
  });
});

describe('success_rate strategy', () => {
  const bySuccess = { name: 'best', strategy: 'success_rate', gateways: [{ gatewayId: 'gw_a' }, { gatewayId: 'gw_b' }, { gatewayId: 'gw_c' }] };

  function feed(stats: SuccessRateTracker, rates: Record<string, number>): void {
    for (const [id, rate] of Object.entries(rates)) for (let i = 0; i < 100; i++) stats.record(id, i < rate * 100);
  }

  it('should put the best gateway first about 90 % of the time and explore the others about 10 %', () => {
    const { order, stats } = setup({ rules: [bySuccess], maxAttempts: 10 }, { seed: 99 });
    feed(stats, { gw_a: 0.6, gw_b: 0.95, gw_c: 0.8 });
    const shares = firstShares(order, 10_000);
    expect(Math.abs(shares.gw_b - 0.9)).toBeLessThan(0.02);
    expect(Math.abs(shares.gw_a - 0.05)).toBeLessThan(0.015);
    expect(Math.abs(shares.gw_c - 0.05)).toBeLessThan(0.015);
  });

  it('should order the rest by rate', () => {
    const { order, stats } = setup({ rules: [bySuccess], maxAttempts: 10 }, { explorationRate: 0 });
    feed(stats, { gw_a: 0.6, gw_b: 0.95, gw_c: 0.8 });
    expect(order().candidates).toEqual(['gw_b', 'gw_c', 'gw_a']);
  });

  it('should honour a custom exploration rate', () => {
    const { order, stats } = setup({ rules: [bySuccess] }, { explorationRate: 0.5, seed: 4 });
    feed(stats, { gw_a: 0.9, gw_b: 0.1, gw_c: 0.1 });
    expect(Math.abs(firstShares(order, 10_000).gw_a - 0.5)).toBeLessThan(0.03);
  });

  it('should break rate ties by rule order and give new gateways the neutral prior', () => {
    const { order, stats } = setup({ rules: [bySuccess], maxAttempts: 10 }, { explorationRate: 0 });
    expect(order().candidates).toEqual(['gw_a', 'gw_b', 'gw_c']);
    feed(stats, { gw_a: 0.2 });
    // gw_b and gw_c have no data (0.5) and now beat gw_a's poor record.
    expect(order().candidates).toEqual(['gw_b', 'gw_c', 'gw_a']);
  });

  it('should still try the only usable gateway', () => {
    const gateways = [gw('gw_a', { enabled: false }), gw('gw_b', { enabled: false }), gw('gw_c')];
    const { order } = setup({ rules: [bySuccess] }, { gateways });
    expect(order().candidates).toEqual(['gw_c']);
  });
});
