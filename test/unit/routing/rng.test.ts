import { hashSeed, mulberry32 } from '../../../src/modules/routing/rng';

describe('seeded rng', () => {
  it('should repeat the same sequence for the same seed', () => {
    const a = mulberry32(42);
    const b = mulberry32(42);
    const c = mulberry32(43);
    const seqA = Array.from({ length: 5 }, a);
    expect(Array.from({ length: 5 }, b)).toEqual(seqA);
    expect(Array.from({ length: 5 }, c)).not.toEqual(seqA);
  });

  it('should stay in [0, 1) and spread evenly', () => {
    const rng = mulberry32(1);
    const buckets = new Array(10).fill(0);
    let outOfRange = 0;
    for (let i = 0; i < 100_000; i++) {
      const x = rng();
      if (!(x >= 0 && x < 1)) outOfRange++;
      else buckets[Math.floor(x * 10)]++;
    }
    expect(outOfRange).toBe(0);
    for (const n of buckets) expect(Math.abs(n - 10_000)).toBeLessThan(500);
  });

  it('should hash strings to stable 32-bit seeds', () => {
    expect(hashSeed('gw_a')).toBe(hashSeed('gw_a'));
    expect(hashSeed('gw_a')).not.toBe(hashSeed('gw_b'));
    expect(Number.isInteger(hashSeed('x')) && hashSeed('x') >= 0 && hashSeed('x') < 2 ** 32).toBe(true);
  });
});
