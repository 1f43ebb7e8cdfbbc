/**
 * Runs tasks one at a time per key, in the order they were given, and different keys side by
 * side. A key's entry exists only while it has tasks, so the map never outgrows what is waiting.
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Tasks waiting or running, over every key. */
  get size(): number {
    return this.tails.size;
  }

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    // The task starts once the previous one settled, whatever its outcome.
    const result = previous.then(task, task);
    const tail = result.then(() => undefined, () => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
