import type { Database } from '../../db/database';
import type { Stopwatch } from '../../core/clock';
import { errorForLog, type Logger } from '../../logger';
import { LeaseStore, type LeasedTable } from './lease.store';

/** How long a pending payment or refund stays this process's after its last heartbeat. */
export const LEASE_MS = 10_000;
/** How often the leases of the objects this process is working on are renewed. */
const HEARTBEAT_MS = 2_500;

/**
 * Heartbeats for the pending payments and refunds this process is charging or refunding. Each
 * pending row carries `lease_until`, on the database's clock (LeaseStore); while its request
 * runs, this keeper pushes it LEASE_MS past the database's now every HEARTBEAT_MS. A process
 * that dies stops renewing, so its rows' leases run out within LEASE_MS and recovery, on any
 * live instance, settles them by asking the gateway; a live one keeps its rows, however long its
 * gateway calls take and whatever its own clock does. Its own recovery never takes a row it holds
 * (heldIds), whatever the database's clock does either (on SQLite that clock is the host's).
 *
 * A request starts a gateway call only while its lease is known to be fresh (`holds`), timed on
 * this process's stopwatch from before the write that set it: when heartbeats fail (the
 * database is unreachable), or a heartbeat finds the lease already run out or taken by
 * recovery, it stops and leaves the row to recovery rather than racing it.
 */
export class LeaseKeeper {
  /** `until`: on the stopwatch, no later than the lease's end on the database's clock. */
  private readonly held = new Map<string, { table: LeasedTable; id: string; until: number }>();
  private timer?: NodeJS.Timeout;
  private beating?: Promise<void>;
  private readonly store: LeaseStore;

  constructor(
    db: Database,
    private readonly stopwatch: Stopwatch,
    private readonly logger: Logger,
    readonly leaseMs = LEASE_MS,
    private readonly heartbeatMs = HEARTBEAT_MS,
  ) {
    this.store = new LeaseStore(db);
  }

  /**
   * Read just before the statement that writes a row's first lease (`leaseMs` from the database's
   * now as it runs), and handed to `hold`: the lease cannot end before `leaseMs` past it.
   */
  leaseStart(): number {
    return this.stopwatch.elapsedMs();
  }

  /** Keeps renewing the row's lease (written after `leaseStart`) until the returned release is called. */
  hold(table: LeasedTable, id: string, leaseStart: number): () => void {
    const key = `${table}:${id}`;
    this.held.set(key, { table, id, until: leaseStart + this.leaseMs });
    this.timer ??= setInterval(() => void this.beat(), this.heartbeatMs).unref();
    return () => {
      this.held.delete(key);
      if (this.held.size === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    };
  }

  /** Whether the row's lease, as last renewed, still has at least half a lease to run. */
  holds(table: LeasedTable, id: string): boolean {
    const lease = this.held.get(`${table}:${id}`);
    return lease !== undefined && lease.until - this.stopwatch.elapsedMs() >= this.leaseMs / 2;
  }

  /**
   * The rows of `table` this process's requests are working on now, whatever their lease looks
   * like in the database: recovery on this process leaves them alone (see recoverPending). The
   * database's clock is the host's on SQLite, so a jump of it (an NTP step, a VM resumed) runs
   * every lease out at once; the request still holding its row settles it, or leaves it pending
   * and releases it, when its gateway call ends (each call is bounded by its timeout).
   */
  heldIds(table: LeasedTable): string[] {
    return [...this.held.values()].filter((l) => l.table === table).map((l) => l.id);
  }

  /** One heartbeat: every held row of each table in one statement; never two at once. */
  async beat(): Promise<void> {
    if (this.beating) return this.beating;
    this.beating = (async () => {
      for (const table of ['payments', 'refunds'] as const) {
        const leases = [...this.held.values()].filter((l) => l.table === table);
        if (leases.length === 0) continue;
        const started = this.stopwatch.elapsedMs();
        try {
          const renewed = await this.store.renew(table, leases.map((l) => l.id), this.leaseMs);
          // A row not renewed ran out (or recovery took it): this process starts no gateway call for it.
          for (const l of leases) l.until = renewed.has(l.id) ? started + this.leaseMs : 0;
        } catch (err) {
          this.logger.warn({ table, rows: leases.length, err: errorForLog(err) }, 'lease heartbeat failed; those rows go to recovery if it keeps failing');
        }
      }
    })().finally(() => {
      this.beating = undefined;
    });
    return this.beating;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.held.clear();
  }
}
