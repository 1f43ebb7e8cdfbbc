import type { PublishedEvent } from '../../src/core/event-bus';

type Stream = AsyncIterator<PublishedEvent>;

/** The next `count` events of a live stream, failing after `timeoutMs` or if the stream ends first. */
export async function take(stream: Stream, count: number, timeoutMs = 10_000): Promise<PublishedEvent[]> {
  const taken: PublishedEvent[] = [];
  while (taken.length < count) {
    const next = await Promise.race([
      stream.next(),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`timed out after ${taken.length} of ${count} events`)), timeoutMs).unref()),
    ]);
    if (next.done) throw new Error(`the stream ended after ${taken.length} of ${count} events`);
    taken.push(next.value);
  }
  return taken;
}

/** Nothing more arrives on the stream within `ms`. */
export async function nothingWithin(stream: Stream, ms = 200): Promise<void> {
  const more = await Promise.race([stream.next().then((r) => r.value?.id ?? 'ended'), new Promise((resolve) => setTimeout(() => resolve(null), ms))]);
  if (more !== null) throw new Error(`expected nothing more within ${ms} ms, got ${String(more)}`);
}
