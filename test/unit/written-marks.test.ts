import { Writable } from 'node:stream';
import { FixedClock } from '../../src/core/clock';
import type { StreamScope } from '../../src/core/event-bus';
import { WrittenMarks, type WrittenMark } from '../../src/core/written-marks';
import { createLogger } from '../../src/logger';

/** WrittenMarks: which mark a gap that opened at some moment reads back from. */

const A: StreamScope = { accountId: 'acct_a', livemode: false };
const B: StreamScope = { accountId: 'acct_b', livemode: false };
const T0 = new Date('2026-11-30T12:00:00Z');

function harness() {
  const clock = new FixedClock(T0);
  const lines: string[] = [];
  const logger = createLogger('warn', new Writable({ write: (c, _e, cb) => { lines.push(String(c)); cb(); } }));
  /** What the next read answers (per scope; a scope not listed is not known), or an error. */
  let next: Map<StreamScope, number> | Error = new Map();
  const reads = { count: 0 };
  const marks = new WrittenMarks(
    async () => {
      reads.count += 1;
      if (next instanceof Error) throw next;
      const values = next;
      return (scope) => values.get(scope);
    },
    () => [A, B],
    clock,
    logger,
    { intervalMs: 10_000, keepMs: 60_000 },
  );
  const sampleAt = async (seconds: number, values: Map<StreamScope, number> | Error) => {
    clock.set(new Date(T0.getTime() + seconds * 1000));
    next = values;
    await marks.sample();
  };
  const answer = (values: Map<StreamScope, number>) => (next = values);
  return { marks, sampleAt, answer, reads, lines, at: (seconds: number) => T0.getTime() + seconds * 1000 };
}

const both = (a: number, b: number) => new Map([[A, a], [B, b]]);

describe('WrittenMarks', () => {
  it('should answer, per scope, the newest mark taken at or before a moment, else the oldest taken after it', async () => {
    const { marks, sampleAt, at } = harness();
    expect(marks.before(at(0))(A)).toBeUndefined();
    await sampleAt(0, both(5, 50));
    await sampleAt(10, both(7, 70));
    // B's stream opened after the second mark: the third is the first that knows it.
    await sampleAt(20, new Map([[A, 9]]));
    await sampleAt(30, both(11, 110));
    expect([marks.before(at(10))(A), marks.before(at(10))(B)]).toEqual([7, 70]);
    expect([marks.before(at(19))(A), marks.before(at(25))(B)]).toEqual([7, 70]);
    expect(marks.before(at(25))(A)).toBe(9);
    expect([marks.before(at(-5))(A), marks.before(at(-5))(B)]).toEqual([5, 50]);
    expect(marks.before(at(99))({ accountId: 'acct_c', livemode: false })).toBeUndefined();
  });

  it('should keep what it answered for a moment when later marks are taken and older ones dropped', async () => {
    const { marks, sampleAt, at } = harness();
    await sampleAt(0, both(1, 1));
    await sampleAt(10, both(2, 2));
    const pinned: WrittenMark = marks.before(at(5));
    for (let s = 20; s <= 200; s += 10) await sampleAt(s, both(s, s));
    expect(pinned(A)).toBe(1);
    // Only the last minute's marks and the newest before it are kept.
    expect(marks.before(at(5))(A)).toBe(130);
    expect(marks.before(at(140))(A)).toBe(140);
  });

  it('should take a mark as a stream opens for a scope the newest mark does not know, and only then', async () => {
    const { marks, answer, reads, at } = harness();
    answer(new Map([[A, 4]]));
    await marks.start();
    try {
      expect(reads.count).toBe(1);
      marks.noteScope(A);
      expect(reads.count).toBe(1);
      answer(both(5, 8));
      marks.noteScope(B);
      expect(reads.count).toBe(2);
      await new Promise((resolve) => setImmediate(resolve));
      expect(marks.before(at(0))(B)).toBe(8);
    } finally {
      marks.stop();
    }
    marks.noteScope({ accountId: 'acct_c', livemode: false });
    expect(reads.count).toBe(2);
  });

  it('should read one scope alone for each new stream\'s scope, once each, and answer with it for a gap that opened before', async () => {
    const { marks, answer, reads, at } = harness();
    answer(new Map([[A, 4]]));
    await marks.start();
    try {
      // A gap opened now: its mark is fixed before the streams below open.
      const pinned = marks.before(at(0));
      const opened = Array.from({ length: 50 }, (_, i): StreamScope => ({ accountId: `acct_new_${i}`, livemode: false }));
      answer(new Map(opened.map((scope, i) => [scope, 100 + i])));
      for (const scope of opened) {
        marks.noteScope(scope);
        marks.noteScope(scope);
      }
      expect(reads.count).toBe(1 + opened.length);
      await new Promise((resolve) => setImmediate(resolve));
      expect(opened.map((scope) => pinned(scope))).toEqual(opened.map((_, i) => 100 + i));
      marks.noteScope(opened[0]);
      expect(reads.count).toBe(1 + opened.length);
    } finally {
      marks.stop();
    }
  });

  it('should keep the earlier marks when a read fails, and say so once', async () => {
    const { marks, sampleAt, at, lines } = harness();
    await sampleAt(0, both(3, 3));
    await sampleAt(10, new Error('database away'));
    await sampleAt(20, new Error('database away'));
    expect(marks.before(at(20))(A)).toBe(3);
    expect(lines.filter((l) => l.includes('could not take a mark'))).toHaveLength(1);
    await sampleAt(30, both(4, 4));
    expect(marks.before(at(30))(A)).toBe(4);
  });
});
