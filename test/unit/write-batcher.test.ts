import { WriteBatcher } from '../../src/db/batcher';

/** A run function that records each batch and answers after `release()` (or at once). */
function recorder(opts: { hold?: boolean; refuse?: (item: string) => boolean; fail?: boolean } = {}) {
  const batches: string[][] = [];
  const waiting: Array<() => void> = [];
  const run = async (items: string[]) => {
    batches.push([...items]);
    if (opts.hold) await new Promise<void>((resolve) => waiting.push(resolve));
    if (opts.fail) throw new Error('connection terminated');
    if (opts.refuse && items.some(opts.refuse)) throw Object.assign(new Error('value too long'), { code: '22001' });
    return items.map((i) => `ok:${i}`);
  };
  return { batches, run, release: () => waiting.splice(0).forEach((r) => r()) };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('WriteBatcher', () => {
  it('should write what one tick submits in one statement, and a lone item at once', async () => {
    const r = recorder();
    const b = new WriteBatcher<string, string>({ isRefusal: (e) => (e as { code?: string }).code === '22001', run: r.run, maxBatch: 64, maxInFlight: 2 });
    expect(await Promise.all(['a', 'b', 'c'].map((i) => b.submit(i)))).toEqual(['ok:a', 'ok:b', 'ok:c']);
    expect(r.batches).toEqual([['a', 'b', 'c']]);
    expect(await b.submit('d')).toBe('ok:d');
    expect(r.batches).toEqual([['a', 'b', 'c'], ['d']]);
  });

  it('should gather what arrives while statements run into the next one, within maxInFlight', async () => {
    const r = recorder({ hold: true });
    const b = new WriteBatcher<string, string>({ isRefusal: (e) => (e as { code?: string }).code === '22001', run: r.run, maxBatch: 64, maxInFlight: 1 });
    const first = b.submit('a');
    await tick();
    expect(r.batches).toEqual([['a']]);
    const later = ['b', 'c', 'd'].map((i) => b.submit(i));
    await tick();
    await tick();
    expect(r.batches).toEqual([['a']]); // one in flight: the others wait together
    expect(b.running).toBe(1);
    r.release();
    await first;
    for (let i = 0; i < 5 && r.batches.length < 2; i++) await tick();
    expect(r.batches).toEqual([['a'], ['b', 'c', 'd']]);
    r.release();
    expect(await Promise.all(later)).toEqual(['ok:b', 'ok:c', 'ok:d']);
  });

  it('should cap a statement at maxBatch items and never put two items with one key in it', async () => {
    const r = recorder();
    const b = new WriteBatcher<string, string>({ isRefusal: (e) => (e as { code?: string }).code === '22001', run: r.run, maxBatch: 3, maxInFlight: 1, conflictKey: (i) => i.split(':')[0] });
    const items = ['k1:a', 'k1:b', 'k2:a', 'k3:a', 'k4:a', 'k1:c'];
    expect(await Promise.all(items.map((i) => b.submit(i)))).toEqual(items.map((i) => `ok:${i}`));
    for (const batch of r.batches) {
      expect(batch.length).toBeLessThanOrEqual(3);
      const keys = batch.map((i) => i.split(':')[0]);
      expect(new Set(keys).size).toBe(keys.length);
    }
    expect(r.batches.flat().sort()).toEqual([...items].sort());
    expect(r.batches[0]).toEqual(['k1:a', 'k2:a', 'k3:a']); // oldest first
  });

  it('should fail only the item the database refuses when a batch is refused', async () => {
    const r = recorder({ refuse: (i) => i === 'bad' });
    const b = new WriteBatcher<string, string>({ isRefusal: (e) => (e as { code?: string }).code === '22001', run: r.run, maxBatch: 64, maxInFlight: 2 });
    const results = await Promise.allSettled(['a', 'bad', 'c'].map((i) => b.submit(i)));
    expect(results.map((x) => x.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason.code).toBe('22001');
    expect(r.batches[0]).toEqual(['a', 'bad', 'c']);
    expect(r.batches.slice(1).sort()).toEqual([['a'], ['bad'], ['c']]);
  });

  it('should write the items of a refused batch alone one at a time, not all at once', async () => {
    let running = 0;
    let most = 0;
    const run = async (items: string[]) => {
      running++;
      most = Math.max(most, running);
      // A turn of the event loop with the write still open: writes started together overlap here.
      await new Promise((r) => setImmediate(r));
      running--;
      if (items.length > 1) throw Object.assign(new Error('deadlock detected'), { code: '40P01' });
      return items.map((i) => `ok:${i}`);
    };
    const b = new WriteBatcher<string, string>({ isRefusal: () => true, run, maxBatch: 64, maxInFlight: 1 });
    expect(await Promise.all(['a', 'b', 'c', 'd'].map((i) => b.submit(i)))).toEqual(['ok:a', 'ok:b', 'ok:c', 'ok:d']);
    expect(most).toBe(1);
  });

  it('should fail every item of a batch whose outcome is unknown (no retry)', async () => {
    const r = recorder({ fail: true });
    const b = new WriteBatcher<string, string>({ isRefusal: (e) => (e as { code?: string }).code === '22001', run: r.run, maxBatch: 64, maxInFlight: 2 });
    const results = await Promise.allSettled(['a', 'b'].map((i) => b.submit(i)));
    expect(results.map((x) => x.status)).toEqual(['rejected', 'rejected']);
    expect(r.batches).toEqual([['a', 'b']]); // written once: a lost connection may have committed
  });
});
