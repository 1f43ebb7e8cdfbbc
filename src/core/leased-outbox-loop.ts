import { errorForLog, type Logger } from '../logger';

const MAX_ERROR_BACKOFF_MS = 10_000;

/** A leased row in this process's hands. */
export interface LeasedWork {
  /** The claim's token (several rows may share one). */
  lockToken: string;
}

/** What a leased outbox's loop drives: its service. */
export interface LeasedOutboxWorker<C extends LeasedWork> {
  /** Leases up to `limit` due rows; `inFlight`: this loop's rows in flight per group. */
  claim(limit: number, inFlight: ReadonlyMap<string, number>): Promise<C[]>;
  /**
   * Sends one claimed row and settles it; a throw leaves the row to its lease (it is retried once
   * the lease ends). `sent` may be called once the row no longer counts against its group (its
   * request is answered; what is left is recording the outcome): the group's next row may then go
   * while this one is written. The row still holds its slot of `concurrency` until it is settled.
   */
  process(claimed: C, sent: () => void): Promise<unknown>;
  /** Extends the leases of the claims in flight. */
  renewLeases(tokens: string[]): Promise<unknown>;
}

export interface LeasedOutboxLoopOptions<C extends LeasedWork> {
  pollMs: number;
  /** Rows in flight in this process. */
  concurrency: number;
  /** How often the leases of rows in flight are extended; none when absent. */
  renewLeasesMs?: number;
  /** Rows in flight per group (webhook endpoint), so one slow receiver cannot hold every slot. */
  group?: { of(claimed: C): string; concurrency: number };
  /** Subscribes the loop to what says rows were queued (a commit here, an event from another instance); returns the unsubscribe. */
  wakeSources?: Array<(wake: () => void) => () => void>;
  /** Log lines, e.g. `{ claimFailed: 'mail claim failed', … }`, and the fields naming a row in them. */
  messages: { claimFailed: string; renewFailed: string; settleFailed: string };
  describe(claimed: C): Record<string, unknown>;
  /** Run once the rows in flight are done (drop pooled connections). */
  onStopped?: () => void;
}

/**
 * The loop of one instance over a leased outbox (webhook deliveries, mail): claims due rows
 * whenever there is a free slot — every `pollMs`, when woken (a commit queued rows, an event from
 * another instance), and when a row finishes while more were waiting — and works on them without
 * ever blocking request handling. Rows in flight keep their leases; while claims fail (the
 * database is unreachable), polling slows down and wake-ups wait for it.
 */
export class LeasedOutboxLoop<C extends LeasedWork> {
  private readonly perGroup = new Map<string, number>();
  /** Claim tokens of rows in flight, with how many each still has. */
  private readonly leases = new Map<string, number>();
  private renewTimer?: NodeJS.Timeout;
  private readonly tasks = new Set<Promise<void>>();
  private active = 0;
  private timer?: NodeJS.Timeout;
  private ticking?: Promise<void>;
  private again = false;
  /** A claim round is set for the next turn of the event loop (rows finished, more are waiting). */
  private refillSet = false;
  private backlog = false;
  private stopped = false;
  private stopping?: Promise<void>;
  /** Consecutive failed claim rounds: polling slows down meanwhile. */
  private failures = 0;
  private readonly unsubscribe: Array<() => void>;

  constructor(
    private readonly worker: LeasedOutboxWorker<C>,
    private readonly logger: Logger,
    private readonly options: LeasedOutboxLoopOptions<C>,
  ) {
    this.unsubscribe = (options.wakeSources ?? []).map((subscribe) => subscribe(() => this.wake()));
    if (options.renewLeasesMs) {
      this.renewTimer = setInterval(() => this.renewLeases(), options.renewLeasesMs);
      this.renewTimer.unref();
    }
    this.wake();
  }

  /** A row's work can outlast its lease (a slow database, a slow receiver): keep the lease while it is ours. */
  private renewLeases(): void {
    if (this.leases.size === 0) return;
    this.worker.renewLeases([...this.leases.keys()]).catch((err) => {
      this.logger.warn({ err: errorForLog(err) }, this.options.messages.renewFailed);
    });
  }

  /** Runs a claim round now, or right after the one in progress. */
  wake(): void {
    if (this.stopped || this.failures > 0) return; // while failing, only the (slower) timer retries
    this.run();
  }

  /**
   * Claims for the slots rows just freed, once every row finishing in this turn of the event loop
   * has freed its own (settled in one batch, they finish together): one claim takes them all
   * instead of one claim per row.
   */
  private refill(): void {
    if (this.refillSet) return;
    this.refillSet = true;
    setImmediate(() => {
      this.refillSet = false;
      this.wake();
    });
  }

  private run(): void {
    if (this.stopped) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.ticking = this.tick().finally(() => {
      this.ticking = undefined;
      if (this.stopped) return;
      if (this.again && this.failures === 0) {
        this.again = false;
        this.run();
      } else {
        this.again = false;
        const delay = this.failures === 0 ? this.options.pollMs : Math.min(this.options.pollMs * 2 ** this.failures, MAX_ERROR_BACKOFF_MS);
        this.timer = setTimeout(() => this.run(), delay);
        this.timer.unref();
      }
    });
  }

  /** Stops claiming and waits for the rows in flight (their leases renewed meanwhile). */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.stopped = true;
      if (this.timer) clearTimeout(this.timer);
      for (const off of this.unsubscribe) off();
      await this.ticking;
      await Promise.allSettled([...this.tasks]);
      if (this.renewTimer) clearInterval(this.renewTimer);
      this.options.onStopped?.();
    })();
    return this.stopping;
  }

  get inFlight(): number {
    return this.active;
  }

  private async tick(): Promise<void> {
    const group = this.options.group;
    do {
      this.again = false;
      const free = this.options.concurrency - this.active;
      if (free <= 0) {
        this.backlog = true;
        return;
      }
      const saturated = group !== undefined && [...this.perGroup.values()].some((n) => n >= group.concurrency);
      let claimed: C[];
      try {
        // What this instance already has in flight per group counts against that group's turn.
        claimed = await this.worker.claim(free, this.perGroup);
      } catch (err) {
        this.failures += 1;
        if (!this.stopped && (this.failures === 1 || this.failures % 10 === 0)) {
          this.logger.error({ err: errorForLog(err), failures: this.failures }, this.options.messages.claimFailed);
        }
        return;
      }
      this.failures = 0;
      // Anything claimed, or groups left out for being busy, means more may be due after a row finishes.
      this.backlog = claimed.length > 0 || saturated;
      for (const c of claimed) this.launch(c);
    } while (this.again && !this.stopped);
  }

  private launch(c: C): void {
    const key = this.options.group?.of(c);
    this.active += 1;
    if (key !== undefined) this.perGroup.set(key, (this.perGroup.get(key) ?? 0) + 1);
    let inGroup = key !== undefined;
    const leaveGroup = (): void => {
      if (!inGroup || key === undefined) return;
      inGroup = false;
      const left = (this.perGroup.get(key) ?? 1) - 1;
      if (left > 0) this.perGroup.set(key, left);
      else this.perGroup.delete(key);
    };
    this.leases.set(c.lockToken, (this.leases.get(c.lockToken) ?? 0) + 1);
    const sent = (): void => {
      if (!inGroup) return;
      leaveGroup();
      if (this.backlog && !this.stopped) this.refill();
    };
    const task: Promise<void> = this.worker
      .process(c, sent)
      .then(
        () => undefined,
        (err) => this.logger.error({ ...this.options.describe(c), err: errorForLog(err) }, this.options.messages.settleFailed),
      )
      .finally(() => {
        this.active -= 1;
        leaveGroup();
        const sharing = (this.leases.get(c.lockToken) ?? 1) - 1;
        if (sharing > 0) this.leases.set(c.lockToken, sharing);
        else this.leases.delete(c.lockToken);
        this.tasks.delete(task);
        if (this.backlog) this.refill();
      });
    this.tasks.add(task);
  }
}
