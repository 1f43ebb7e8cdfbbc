import type { Database } from '../../db/database';
import type { Clock } from '../../core/clock';
import { errorForLog, type Logger } from '../../logger';
import { LeaseStore, type LeasedTable } from './lease.store';

/** How long a pending payment or refund stays this process's after its last heartbeat. */
export const LEASE_MS = 10_000;
/** How often the leases of the objects this process is working on are renewed. */
export const HEARTBEAT_MS = 2_500;

/**
 * Heartbeats for the pending payments and refunds this process is charging or refunding. Each
 * pending row carries `lease_until`; while its request runs, this keeper pushes it LEASE_MS past
 * now every HEARTBEAT_MS. A process that dies stops renewing, so its rows' leases run out within
 * LEASE_MS and recovery, on any live instance, settles them by asking the gateway; a live one
 * keeps its rows, however long its gateway calls take.
 *
 * A request starts a gateway call only while its lease is known to be fresh (`holds`): when
 * heartbeats fail (the database is unreachable), or a heartbeat finds the lease already run out
 * or taken by recovery, it stops and leaves the row to recovery rather than racing it.
 */
export class LeaseKeeper {
  private readonly held = new Map<string, { table: LeasedTable; id: string; until: number }>();
  private timer?: NodeJS.Timeout;
  private beating?: Promise<void>;
  private readonly store: LeaseStore;

  constructor(
    db: Database,
    private readonly clock: Clock,
    private readonly logger: Logger,
    readonly leaseMs = LEASE_MS,
    private readonly heartbeatMs = HEARTBEAT_MS,
  ) {
    this.store = new LeaseStore(db);
  }

  /** The lease a pending row is first written with. */
  firstLease(now: Date): Date {
    return new Date(now.getTime() + this.leaseMs);
  }

  /** Keeps renewing the row's lease (written as `until`) until the returned release is called. */
  hold(table: LeasedTable, id: string, until: Date): () => void {
    const key = `${table}:${id}`;
    this.held.set(key, { table, id, until: until.getTime() });
    this.timer ??= setInterval(() => void this.beat(), this.heartbeatMs).unref();
    return () => {
      this.held.delete(key);
      if (this.held.size === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    };
  }

  /** Whether the row's lease, as last renewed, still has at least half a lease to run at `now`. */
  holds(table: LeasedTable, id: string, now: Date): boolean {
    const lease = this.held.get(`${table}:${id}`);
    return lease !== undefined && lease.until - now.getTime() >= this.leaseMs / 2;
  }

  /** One heartbeat: every held row of each table in one statement; never two at once. */
  async beat(): Promise<void> {
    if (this.beating) return this.beating;
    this.beating = (async () => {
      const now = this.clock.now();
      for (const table of ['payments', 'refunds'] as const) {
        const leases = [...this.held.values()].filter((l) => l.table === table);
        if (leases.length === 0) continue;
        try {
          const renewed = await this.store.renew(table, leases.map((l) => l.id), now, this.leaseMs);
          // A row not renewed ran out (or recovery took it): this process starts no gateway call for it.
          for (const l of leases) l.until = renewed.has(l.id) ? now.getTime() + this.leaseMs : 0;
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
