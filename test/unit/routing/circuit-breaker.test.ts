import { FixedClock } from '../../../src/core/clock';
import { CircuitBreaker } from '../../../src/modules/routing/circuit-breaker';

function setup(failureThreshold = 3, cooldownMs = 1000) {
  const clock = new FixedClock(new Date('2030-01-01T00:00:00Z'));
  return { clock, breaker: new CircuitBreaker({ failureThreshold, cooldownMs, clock }) };
}

describe('circuit breaker', () => {
  it('should default to 5 failures and a 30 s cool-down', () => {
    const breaker = new CircuitBreaker({ clock: new FixedClock(new Date()) });
    expect(breaker.failureThreshold).toBe(5);
    expect(breaker.cooldownMs).toBe(30_000);
  });

  it('should stay closed below the threshold and open at it', () => {
    const { breaker } = setup(3);
    breaker.recordFailure('gw_a');
    breaker.recordFailure('gw_a');
    expect(breaker.isOpen('gw_a')).toBe(false);
    breaker.recordFailure('gw_a');
    expect(breaker.isOpen('gw_a')).toBe(true);
    expect(breaker.state('gw_a')).toBe('open');
    expect(breaker.isOpen('gw_b')).toBe(false);
  });

  it('should only count consecutive failures', () => {
    const { breaker } = setup(3);
    breaker.recordFailure('gw_a');
    breaker.recordFailure('gw_a');
    breaker.recordSuccess('gw_a');
    breaker.recordFailure('gw_a');
    breaker.recordFailure('gw_a');
    expect(breaker.describe('gw_a')).toMatchObject({ state: 'closed', consecutiveFailures: 2 });
  });

  it('should go half-open after the cool-down and close on a successful trial', () => {
    const { breaker, clock } = setup(3, 1000);
    for (let i = 0; i < 3; i++) breaker.recordFailure('gw_a');
    expect(breaker.describe('gw_a').openUntil).toEqual(new Date('2030-01-01T00:00:01Z'));
    clock.advance(999);
    expect(breaker.isOpen('gw_a')).toBe(true);
    clock.advance(1);
    expect(breaker.state('gw_a')).toBe('half_open');
    expect(breaker.isOpen('gw_a')).toBe(false);
    expect(breaker.tryAcquire('gw_a')).toBe(true);
    breaker.recordSuccess('gw_a');
    expect(breaker.describe('gw_a')).toEqual({ state: 'closed', consecutiveFailures: 0, openUntil: null });
  });

  it('should re-open for a new cool-down when the half-open trial fails', () => {
    const { breaker, clock } = setup(3, 1000);
    for (let i = 0; i < 3; i++) breaker.recordFailure('gw_a');
    clock.advance(1000);
    expect(breaker.tryAcquire('gw_a')).toBe(true);
    breaker.recordFailure('gw_a');
    expect(breaker.state('gw_a')).toBe('open');
    clock.advance(999);
    expect(breaker.isOpen('gw_a')).toBe(true);
    clock.advance(1);
    expect(breaker.state('gw_a')).toBe('half_open');
  });

  it('should allow one trial at a time while half-open', () => {
    const { breaker, clock } = setup(1, 1000);
    breaker.recordFailure('gw_a');
    clock.advance(1000);
    expect(breaker.tryAcquire('gw_a')).toBe(true);
    expect(breaker.tryAcquire('gw_a')).toBe(false);
    expect(breaker.isOpen('gw_a')).toBe(true);
    // A trial whose result never came back stops blocking after another cool-down.
    clock.advance(1000);
    expect(breaker.tryAcquire('gw_a')).toBe(true);
  });

  it('should not let isOpen consume the half-open trial', () => {
    const { breaker, clock } = setup(1, 1000);
    breaker.recordFailure('gw_a');
    clock.advance(1000);
    expect(breaker.isOpen('gw_a')).toBe(false);
    expect(breaker.isOpen('gw_a')).toBe(false);
    expect(breaker.tryAcquire('gw_a')).toBe(true);
  });

  it('should refuse acquiring while open and allow it while closed', () => {
    const { breaker } = setup(1);
    expect(breaker.tryAcquire('gw_a')).toBe(true);
    breaker.recordFailure('gw_a');
    expect(breaker.tryAcquire('gw_a')).toBe(false);
  });

  it('should ignore late results while open', () => {
    const { breaker, clock } = setup(1, 1000);
    breaker.recordFailure('gw_a');
    clock.advance(500);
    breaker.recordSuccess('gw_a');
    breaker.recordFailure('gw_a');
    expect(breaker.state('gw_a')).toBe('open');
    clock.advance(500);
    expect(breaker.state('gw_a')).toBe('half_open');
  });

  it('should forget gateways on reset', () => {
    const { breaker } = setup(1);
    breaker.recordFailure('gw_a');
    breaker.reset('gw_a');
    expect(breaker.isOpen('gw_a')).toBe(false);
  });
});
