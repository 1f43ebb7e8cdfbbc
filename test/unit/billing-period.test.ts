import { periodBoundary, periodEndAfter, prorate, type Recurrence } from '../../src/modules/subscriptions/billing-period';

const at = (iso: string) => new Date(iso);
const iso = (d: Date) => d.toISOString();
const month: Recurrence = { interval: 'month', intervalCount: 1 };
const boundaries = (anchor: string, r: Recurrence, ns: number[]) => ns.map((n) => iso(periodBoundary(at(anchor), r, n)));

describe('periodBoundary', () => {
  it('should keep a month-end anchor day, clamped to shorter months and restored after, in a leap year', () => {
    expect(boundaries('2028-01-31T10:00:00.000Z', month, [0, 1, 2, 3, 4, 5, 6])).toEqual([
      '2028-01-31T10:00:00.000Z', '2028-02-29T10:00:00.000Z', '2028-03-31T10:00:00.000Z', '2028-04-30T10:00:00.000Z',
      '2028-05-31T10:00:00.000Z', '2028-06-30T10:00:00.000Z', '2028-07-31T10:00:00.000Z',
    ]);
  });

  it('should clamp to Feb 28 in a common year and cross the year end', () => {
    expect(boundaries('2026-12-31T23:59:59.250Z', month, [1, 2, 3])).toEqual(['2027-01-31T23:59:59.250Z', '2027-02-28T23:59:59.250Z', '2027-03-31T23:59:59.250Z']);
    expect(boundaries('2027-01-30T00:00:00.000Z', month, [1, 2])).toEqual(['2027-02-28T00:00:00.000Z', '2027-03-30T00:00:00.000Z']);
  });

  it('should count back from the anchor with negative n', () => {
    expect(boundaries('2028-03-31T00:00:00.000Z', month, [-1, -2, -13])).toEqual(['2028-02-29T00:00:00.000Z', '2028-01-31T00:00:00.000Z', '2027-02-28T00:00:00.000Z']);
  });

  it('should multiply months by intervalCount (quarterly from Nov 30)', () => {
    expect(boundaries('2027-11-30T00:00:00.000Z', { interval: 'month', intervalCount: 3 }, [1, 2, 3, 4])).toEqual([
      '2028-02-29T00:00:00.000Z', '2028-05-30T00:00:00.000Z', '2028-08-30T00:00:00.000Z', '2028-11-30T00:00:00.000Z',
    ]);
  });

  it('should keep a Feb 29 anchor for yearly periods: Feb 28 in common years, Feb 29 again in the next leap year', () => {
    const year: Recurrence = { interval: 'year', intervalCount: 1 };
    expect(boundaries('2028-02-29T12:00:00.000Z', year, [1, 2, 3, 4])).toEqual([
      '2029-02-28T12:00:00.000Z', '2030-02-28T12:00:00.000Z', '2031-02-28T12:00:00.000Z', '2032-02-29T12:00:00.000Z',
    ]);
    expect(boundaries('2028-02-29T12:00:00.000Z', { interval: 'year', intervalCount: 2 }, [1, 2])).toEqual(['2030-02-28T12:00:00.000Z', '2032-02-29T12:00:00.000Z']);
  });

  it('should add fixed lengths for weeks and days (UTC: no daylight-saving shift), times intervalCount', () => {
    expect(boundaries('2027-03-08T01:30:00.000Z', { interval: 'week', intervalCount: 1 }, [1, 2])).toEqual(['2027-03-15T01:30:00.000Z', '2027-03-22T01:30:00.000Z']);
    expect(boundaries('2027-12-27T00:00:00.000Z', { interval: 'week', intervalCount: 2 }, [1])).toEqual(['2028-01-10T00:00:00.000Z']);
    expect(boundaries('2028-02-27T06:00:00.000Z', { interval: 'day', intervalCount: 1 }, [1, 2, 3])).toEqual([
      '2028-02-28T06:00:00.000Z', '2028-02-29T06:00:00.000Z', '2028-03-01T06:00:00.000Z',
    ]);
    expect(boundaries('2027-01-01T00:00:00.000Z', { interval: 'day', intervalCount: 10 }, [3])).toEqual(['2027-01-31T00:00:00.000Z']);
  });
});

describe('periodEndAfter', () => {
  it('should give the first boundary after a start, counted from the anchor (no drift after a clamped month)', () => {
    const anchor = at('2028-01-31T10:00:00.000Z');
    expect(iso(periodEndAfter(anchor, month, at('2028-02-29T10:00:00.000Z')))).toBe('2028-03-31T10:00:00.000Z');
    expect(iso(periodEndAfter(anchor, month, at('2028-03-31T10:00:00.000Z')))).toBe('2028-04-30T10:00:00.000Z');
    // Two years on: still the last day of the month.
    expect(iso(periodEndAfter(anchor, month, at('2030-01-31T10:00:00.000Z')))).toBe('2030-02-28T10:00:00.000Z');
    // A start between boundaries (a resumed period) ends at the next one.
    expect(iso(periodEndAfter(anchor, month, at('2028-04-05T00:00:00.000Z')))).toBe('2028-04-30T10:00:00.000Z');
    expect(iso(periodEndAfter(at('2028-02-29T00:00:00.000Z'), { interval: 'year', intervalCount: 1 }, at('2031-02-28T00:00:00.000Z')))).toBe('2032-02-29T00:00:00.000Z');
  });
});

describe('prorate', () => {
  const S = 1000;
  it('should take the share of whole seconds, rounded half away from zero to the minor unit', () => {
    expect(prorate(1000, 15 * 86_400 * S, 30 * 86_400 * S)).toBe(500);
    expect(prorate(1000, 1 * S, 3 * S)).toBe(333); // 333.33…
    expect(prorate(1000, 2 * S, 3 * S)).toBe(667); // 666.66…
    expect(prorate(1, 1 * S, 2 * S)).toBe(1); // 0.5 → 1
    expect(prorate(3, 1 * S, 2 * S)).toBe(2); // 1.5 → 2
    expect(prorate(-1, 1 * S, 2 * S)).toBe(-1); // -0.5 → -1
    expect(prorate(-3, 1 * S, 2 * S)).toBe(-2); // -1.5 → -2
    expect(prorate(-1000, 1 * S, 3 * S)).toBe(-333);
    expect(prorate(1999, 27 * 86_400 * S, 30 * 86_400 * S)).toBe(1799); // 1799.1
    expect(prorate(1999, 15 * 86_400 * S, 30 * 86_400 * S)).toBe(1000); // 999.5
  });

  it('should count whole seconds only (milliseconds dropped) and give the whole amount for the whole period', () => {
    expect(prorate(1000, 1999, 3000)).toBe(333); // 1 s of 3 s
    expect(prorate(1000, 3000, 3000)).toBe(1000);
    expect(prorate(1000, 0, 3000)).toBe(0);
    expect(prorate(1000, 999, 999)).toBe(0); // a period under a second is worth nothing
    expect(() => prorate(1000, 0, 0)).toThrow();
  });

  it('should stay exact beyond 2^53 intermediate products', () => {
    // 99,999,999,999 × 31,622,399 s overflows a double's exact range; the result must still be exact.
    const yearS = 366 * 86_400;
    expect(prorate(99_999_999_999, (yearS - 1) * S, yearS * S)).toBe(99_999_996_837); // 99,999,999,999 − 99,999,999,999/31,622,400 = 99,999,996,836.68…
  });
});
