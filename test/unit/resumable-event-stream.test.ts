import type { PublishedEvent } from '../../src/core/event-bus';
import { ResumableEventStream, type EventStreamSource } from '../../src/modules/events/event-stream';
import type { StreamPosition } from '../../src/modules/events/event.store';

/**
 * ResumableEventStream against a source of its own: `written`, the events in the order they were
 * written (what the database reads back), and live events pushed by the test as they would be
 * published. Each case falls behind at a chosen moment and checks that every event arrives once.
 */

const event = (n: number): PublishedEvent => ({
  id: `evt_${n}`, object: 'event', type: 'customer.created', createdAt: new Date(1_700_000_000_000 + n).toISOString(), livemode: false, accountId: 'acct_x', data: { object: { n } },
});

class Source implements EventStreamSource {
  written: PublishedEvent[] = [];
  private pending: PublishedEvent[] = [];
  private waiting?: (r: IteratorResult<PublishedEvent>) => void;
  /** Called as each read-back page is read, before it is answered. */
  onRead?: (position: StreamPosition) => void;

  live(): AsyncIterable<PublishedEvent> {
    return { [Symbol.asyncIterator]: () => ({ next: () => this.take(), return: async () => ({ value: undefined, done: true }) }) };
  }

  private take(): Promise<IteratorResult<PublishedEvent>> {
    const next = this.pending.shift();
    if (next) return Promise.resolve({ value: next, done: false });
    return new Promise((resolve) => (this.waiting = resolve));
  }

  /** Writes `events` (in this order) and publishes them (in `published` order, all of them unless given). */
  write(events: PublishedEvent[], published: PublishedEvent[] = events): void {
    this.written.push(...events);
    for (const e of published) {
      const waiting = this.waiting;
      if (waiting) {
        this.waiting = undefined;
        waiting({ value: e, done: false });
      } else {
        this.pending.push(e);
      }
    }
  }

  async after(position: StreamPosition, limit: number): Promise<PublishedEvent[]> {
    this.onRead?.(position);
    const ids = this.written.map((e) => e.id);
    const start = 'after' in position ? ids.indexOf(position.after) + 1 : Math.min(...position.from.map((id) => ids.indexOf(id)));
    return this.written.slice(start, start + limit);
  }
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

async function take(stream: ResumableEventStream, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const next = await Promise.race([stream.next(), new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`only ${ids.join(', ')}`)), 2_000).unref())]);
    ids.push((next.value as PublishedEvent).id);
  }
  return ids;
}

async function nothingMore(stream: ResumableEventStream): Promise<void> {
  const more = await Promise.race([stream.next().then((r) => r.value?.id ?? 'ended'), new Promise((resolve) => setTimeout(() => resolve(null), 100))]);
  expect(more).toBeNull();
}

const LIMITS = { pageSize: 3, maxBuffered: 4, maxReplayedIds: 1_000 };
const ids = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `evt_${from + i}`);

describe('ResumableEventStream falling behind', () => {
  it('should read again the rows of a page it had not delivered yet when it falls behind in the middle of it', async () => {
    const source = new Source();
    source.write([1, 2, 3, 4, 5].map(event), []);
    const stream = new ResumableEventStream(source, { after: 'evt_1' }, () => true, LIMITS);
    // The first page is evt_2..evt_4; one of them is delivered, then a burst overflows the buffer.
    expect(await take(stream, 1)).toEqual(['evt_2']);
    source.write([6, 7, 8, 9, 10].map(event));
    await settle();
    expect(await take(stream, 8)).toEqual(ids(3, 10));
    await nothingMore(stream);
    await stream.return();
  });

  it('should read on from the first events it dropped when it falls behind again before delivering any', async () => {
    const source = new Source();
    const stream = new ResumableEventStream(source, null, () => true, LIMITS);
    await settle();
    source.write([1, 2, 3, 4, 5].map(event));
    await settle();
    // The first read-back (from evt_1) is under way when a second burst overflows the buffer again.
    let reads = 0;
    source.onRead = () => {
      if (reads++ === 0) source.write([6, 7, 8, 9, 10].map(event));
    };
    expect(await take(stream, 10)).toEqual(ids(1, 10));
    await nothingMore(stream);
    await stream.return();
  });

  it('should not deliver twice an event delivered live before one written earlier, when it falls behind after both', async () => {
    const source = new Source();
    const stream = new ResumableEventStream(source, null, () => true, LIMITS);
    await settle();
    // evt_2 is written before evt_1 (numbered first) but published after it.
    source.write([event(2), event(1)], [event(1), event(2)]);
    expect(await take(stream, 2)).toEqual(['evt_1', 'evt_2']);
    source.write([3, 4, 5, 6, 7].map(event));
    await settle();
    // Read on after evt_2 (the last delivered), where evt_1 comes after it in the written order.
    expect(await take(stream, 5)).toEqual(ids(3, 7));
    await nothingMore(stream);
    await stream.return();
  });
});
