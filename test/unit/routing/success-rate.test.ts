import { SuccessRateTracker } from '../../../src/modules/routing/success-rate';

describe('success rate tracker', () => {
  it('should give a gateway without data the neutral prior', () => {
    const tracker = new SuccessRateTracker();
    expect(tracker.rate('gw_new')).toBe(0.5);
    expect(tracker.stats('gw_new')).toEqual({ successes: 0, total: 0, rate: 0.5 });
  });

  it('should approach the observed rate as data accumulates', () => {
    const tracker = new SuccessRateTracker();
    for (let i = 0; i < 100; i++) tracker.record('gw_a', i % 10 !== 0);
    expect(tracker.stats('gw_a')).toMatchObject({ successes: 90, total: 100 });
    expect(tracker.rate('gw_a')).toBeCloseTo(91 / 102, 10);
  });

  it('should keep only the last windowSize outcomes', () => {
    const tracker = new SuccessRateTracker({ windowSize: 10, priorWeight: 0 });
    for (let i = 0; i < 10; i++) tracker.record('gw_a', false);
    expect(tracker.rate('gw_a')).toBe(0);
    for (let i = 0; i < 7; i++) tracker.record('gw_a', true);
    expect(tracker.stats('gw_a')).toEqual({ successes: 7, total: 10, rate: 0.7 });
    for (let i = 0; i < 25; i++) tracker.record('gw_a', true);
    expect(tracker.rate('gw_a')).toBe(1);
  });

  it('should track gateways separately and reset them', () => {
    const tracker = new SuccessRateTracker({ priorWeight: 0, prior: 0.5 });
    tracker.record('gw_a', true);
    tracker.record('gw_b', false);
    expect(tracker.rate('gw_a')).toBe(1);
    expect(tracker.rate('gw_b')).toBe(0);
    tracker.reset('gw_a');
    expect(tracker.stats('gw_a').total).toBe(0);
    tracker.reset();
    expect(tracker.stats('gw_b').total).toBe(0);
  });

  it('should refuse a window smaller than one', () => {
    expect(() => new SuccessRateTracker({ windowSize: 0 })).toThrow(RangeError);
  });
});
