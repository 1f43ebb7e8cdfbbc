import { activeContext, inContext, inSpan, linkTo, tracedIn } from '../observability/spans';
import type { Context } from '@opentelemetry/api';

/**
 * Group commit for hot-path writes: items submitted while a statement of the same kind is
 * already running are written together by the next one, as one statement for all of them.
 *
 * With nothing in flight an item is written at once (after the current tick, so items of the
 * same tick share the statement): a lone request waits for no one. Under load each statement
 * carries every item that arrived while the previous ones ran, so the database sees one round
 * trip, one plan execution and one commit for many payments instead of one each.
 *
 * A batch that the database refuses (`isRefusal`: the statement failed as a whole, nothing
 * written) is split: each item is written alone, one after the other, so one bad item fails only
 * its own request. Any other failure (a lost connection, whose outcome is unknown) fails every
 * item of the batch, as it would have failed each of them written alone.
 *
 * Traced, a statement runs in the context of its batch's first item (a child of that request's
 * span), as a `db.group_commit` span linked to the spans of the others it carries.
 */
export interface BatcherOptions<I, O> {
  /** What the statements write, on their spans (`payments.pending`). */
  name?: string;
  /** Writes `items` in one statement; returns one result per item, in order. */
  run(items: I[]): Promise<O[]>;
  /** Most items in one statement. */
  maxBatch: number;
  /** Most statements of this kind running at once (connections it may hold). */
  maxInFlight: number;
  /** Items with the same key never share a statement (e.g. one Idempotency-Key). */
  conflictKey?(item: I): string | undefined;
  /** Whether `err` means the statement was refused whole, so nothing of it was written. */
  isRefusal(err: unknown): boolean;
}

interface Waiting<I, O> {
  item: I;
  /** Where the item was submitted: its request's trace. */
  context: Context;
  resolve(value: O): void;
  reject(err: unknown): void;
}

export class WriteBatcher<I, O> {
  private queue: Array<Waiting<I, O>> = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(private readonly options: BatcherOptions<I, O>) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, context: activeContext(), resolve, reject });
      this.schedule();
    });
  }

  /** Statements running now. */
  get running(): number {
    return this.inFlight;
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.options.maxInFlight || this.queue.length === 0) return;
    this.scheduled = true;
    // After the current tick: the other requests this tick is serving join the same statement.
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
      const batch = this.take();
      this.inFlight++;
      void this.write(batch).finally(() => {
        this.inFlight--;
        this.schedule();
      });
    }
  }

  /** Up to maxBatch waiting items, oldest first, at most one per conflict key. */
  private take(): Array<Waiting<I, O>> {
    const { maxBatch, conflictKey } = this.options;
    if (!conflictKey) return this.queue.splice(0, maxBatch);
    const batch: Array<Waiting<I, O>> = [];
    const rest: Array<Waiting<I, O>> = [];
    const keys = new Set<string>();
    for (const w of this.queue) {
      const key = batch.length < maxBatch ? conflictKey(w.item) : undefined;
      if (batch.length < maxBatch && (key === undefined || !keys.has(key))) {
        if (key !== undefined) keys.add(key);
        batch.push(w);
      } else {
        rest.push(w);
      }
    }
    this.queue = rest;
    return batch;
  }

  private write(batch: Array<Waiting<I, O>>): Promise<void> {
    const origin = batch[0].context;
    if (!tracedIn(origin)) return this.writeBatch(batch);
    const links = batch.slice(1).flatMap((w) => linkTo(w.context) ?? []);
    const attributes = { 'payorch.db.batch': this.options.name ?? 'write', 'payorch.db.batch_size': batch.length };
    return inContext(origin, () => inSpan('db.group_commit', attributes, () => this.writeBatch(batch), links));
  }

  private async writeBatch(batch: Array<Waiting<I, O>>): Promise<void> {
    try {
      const results = await this.options.run(batch.map((w) => w.item));
      batch.forEach((w, i) => w.resolve(results[i]));
    } catch (err) {
      if (batch.length === 1 || !this.options.isRefusal(err)) {
        for (const w of batch) w.reject(err);
        return;
      }
      // Nothing was written: find the item the database refuses by writing each alone, one at a
      // time (a refusal caused by load must not turn into a burst of statements).
      for (const w of batch) await this.write([w]);
    }
  }
}
