import { TEST_CLOCK_MOVES } from './test-clock-states';
import { Op } from 'sequelize';
import type { Database } from '../../db/database';
import { isoTime } from '../../db/database';
import type { Clock } from '../../core/clock';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { DomainError, invalidState, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { parseInput } from '../../core/validation';
import type { IdempotencyKey } from '../../core/idempotency';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import { TestClockModel } from './subscription.model';
import { advanceTestClockInput, createTestClockInput, listTestClocksInput } from './subscription.inputs';
import { Filter, listPage, modelSource } from '../../db/list';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';

export interface TestClock {
  id: string;
  object: 'test_clock';
  livemode: false;
  name: string | null;
  frozenTime: string;
  status: 'ready' | 'advancing';
  createdAt: string;
  updatedAt: string;
}

/** Runs every billing step due on a clock's subscriptions up to an instant, in order (BillingService). */
export interface ClockBilling {
  advanceClock(testClockId: string, to: Date, setTime: (at: Date) => Promise<void>): Promise<void>;
}

/**
 * Time per object. A customer or subscription attached to a test clock lives on that clock's
 * frozen time; everything else on the service's clock. `clockFor` is the one resolver every
 * billing path asks, so nothing on those paths reads the process clock for an attached object.
 */
export class TestClockService {
  private billing: ClockBilling | null = null;

  /**
   * How long an advance holds its clock without a sign of life (each billing step it runs renews
   * it): an advance whose process died frees the clock after this, and the next advance finishes
   * its work (the billing run's claim lease, BILLING_LEASE_MS).
   */
  private readonly leaseMs: number;

  constructor(
    private readonly db: Database,
    private readonly idempotency: IdempotencyService,
    options: { leaseMs?: number } = {},
  ) {
    this.leaseMs = options.leaseMs ?? 5 * 60_000;
  }

  /** The billing service runs an advance's steps (set once, as services are built). */
  useBilling(billing: ClockBilling): void {
    this.billing = billing;
  }

  /** The clock an object attached to `testClockId` reads (the caller's own when it has none). */
  async clockFor(ctx: RequestContext, testClockId: string | null): Promise<Clock> {
    if (!testClockId) return ctx.clock;
    const row = await TestClockModel.findOne({ attributes: ['frozenTime'], where: { id: testClockId, accountId: ctx.accountId, mode: ctx.mode }, raw: true });
    if (!row) throw notFound('test clock', testClockId, 'testClockId');
    const at = new Date(row.frozenTime);
    return { now: () => new Date(at.getTime()) };
  }

  /** The same context on the object's clock. */
  async contextFor(ctx: RequestContext, testClockId: string | null): Promise<RequestContext> {
    return testClockId ? { ...ctx, clock: await this.clockFor(ctx, testClockId) } : ctx;
  }

  /** A clock an object may be attached to: the account's, in test mode. */
  async mustExist(ctx: RequestContext, testClockId: string, param = 'testClockId'): Promise<void> {
    refuseLiveMode(ctx);
    const row = await TestClockModel.findOne({ attributes: ['id'], where: { id: testClockId, accountId: ctx.accountId, mode: ctx.mode }, raw: true });
    if (!row) throw notFound('test clock', testClockId, param);
  }

  async create(ctx: RequestContext, input: unknown, idem?: IdempotencyKey): Promise<TestClock> {
    requirePermission(ctx, 'test_clocks', 'write');
    refuseLiveMode(ctx);
    const data = parseInput(createTestClockInput, input);
    const now = ctx.clock.now();
    return this.db.transaction((t) => this.idempotency.once(t, idem, IDEMPOTENT_OPERATIONS.createTestClock, async () => {
      const row = await TestClockModel.create({
        id: newId('clock'), accountId: ctx.accountId, mode: ctx.mode, name: data.name ?? null, frozenTime: data.frozenTime, ...TEST_CLOCK_MOVES.columns('create', now), createdAt: now, updatedAt: now,
      }, { transaction: t });
      return toApi(row.get({ plain: true }));
    }));
  }

  async retrieve(ctx: RequestContext, id: string): Promise<TestClock> {
    requirePermission(ctx, 'test_clocks', 'read');
    refuseLiveMode(ctx);
    const row = await TestClockModel.findOne({ where: { id, accountId: ctx.accountId, mode: ctx.mode }, raw: true });
    if (!row) throw notFound('test clock', id);
    return toApi(row as unknown as Record<string, unknown>);
  }

  /** The account's clocks (test mode), newest first, by page or cursor (`GET /v1/test-clocks`). */
  async list<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, options?: O): Promise<PageFor<TestClock, O>> {
    requirePermission(ctx, 'test_clocks', 'read');
    refuseLiveMode(ctx);
    const input = parseInput(listTestClocksInput, query);
    const filter = new Filter({ account_id: ctx.accountId, mode: ctx.mode });
    return listPage(this.db, { ...modelSource(TestClockModel), filter, params: input, sortColumns: { createdAt: 'created_at' }, toApi }, options);
  }

  /**
   * Moves the clock forward to `frozenTime`, running every billing step due on its subscriptions
   * on the way, in order, each at its own instant, before it answers. One advance of a clock at
   * a time (`advancing` while it runs; one whose process died is taken over after the lease);
   * clocks never touch each other's subscriptions.
   */
  async advance(ctx: RequestContext, id: string, input: unknown, idem?: IdempotencyKey): Promise<TestClock> {
    requirePermission(ctx, 'test_clocks', 'write');
    refuseLiveMode(ctx);
    const data = parseInput(advanceTestClockInput, input);
    await this.idempotency.replayIfAnswered(idem);
    const scope = { accountId: ctx.accountId, mode: ctx.mode };
    // Taken for the advance in one conditional write: a second advance of the same clock meanwhile is refused.
    let held = new Date(0);
    await this.db.transaction(async (t) => {
      const row = await TestClockModel.findOne({ where: { id, ...scope }, raw: true, transaction: t, lock: this.db.rowLock(t) });
      if (!row) throw notFound('test clock', id);
      if (data.frozenTime.getTime() < new Date(row.frozenTime).getTime()) {
        throw new DomainError('invalid_state', `frozenTime must not be before the clock's time (${isoTime(row.frozenTime)}): a test clock only moves forward`, 'frozenTime');
      }
      // A clock left advancing by a process that died (no step for longer than the lease) is taken over.
      const now = ctx.clock.now();
      const [ready, advancing] = TEST_CLOCK_MOVES.rule('start_advance').from;
      const lapsed = { status: advancing, updatedAt: { [Op.lt]: new Date(now.getTime() - this.leaseMs) } };
      const [taken] = await TestClockModel.update({ ...TEST_CLOCK_MOVES.columns('start_advance', now), updatedAt: now }, { where: { id, [Op.or]: [{ status: ready }, lapsed] }, transaction: t });
      if (taken === 0) throw invalidState('This test clock is being advanced; wait until its status is ready');
      held = now;
    });
    // Each write renews the advance's hold on the clock (updatedAt), and is made only while the
    // hold is still this advance's: one taken over after a stall (the lease passed without a step)
    // writes nothing more, so it can neither move the clock back nor mark it ready under the other.
    // In a transaction of its own: on SQLite a write outside one polls for the write lock on the
    // default connection instead of taking its turn in the transactions' queue (as
    // Database.executeAlone does for bound statements).
    const write = async (values: { frozenTime?: Date; finish?: true }) => {
      const at = ctx.clock.now();
      const set = values.finish ? TEST_CLOCK_MOVES.columns('finish_advance', at) : { frozenTime: values.frozenTime };
      const [kept] = await this.db.transaction((t) => TestClockModel.update(
        { ...set, updatedAt: at },
        { where: { id, status: TEST_CLOCK_MOVES.rule('finish_advance').from[0], updatedAt: held }, transaction: t },
      ));
      if (kept === 0) throw invalidState('This test clock was taken over by another advance after this one made no step for longer than BILLING_LEASE_MS');
      held = at;
    };
    let finished = false;
    try {
      const setTime = (at: Date) => write({ frozenTime: at });
      if (this.billing) await this.billing.advanceClock(id, data.frozenTime, setTime);
      await setTime(data.frozenTime);
      await write({ finish: true });
      finished = true;
    } finally {
      // Failed on the way: the clock is ready again, unless another advance holds it now.
      if (!finished) await write({ finish: true }).catch(() => undefined);
    }
    const answer = await this.retrieve(ctx, id);
    if (idem) {
      await this.db.transaction((t) => this.idempotency.once(t, idem, IDEMPOTENT_OPERATIONS.advanceTestClock, async () => answer)).catch(() => undefined);
    }
    return answer;
  }

  /**
   * Several test clocks by id (GraphQL's `node`, batched). A live-mode key finds none (clocks are
   * test mode's), as it finds no other mode's object; `retrieve` refuses live mode instead.
   */
  async findMany(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, TestClock>> {
    requirePermission(ctx, 'test_clocks', 'read');
    const rows = await TestClockModel.findAll({ where: { id: [...new Set(ids)], accountId: ctx.accountId, mode: ctx.mode }, raw: true });
    return new Map(rows.map((row) => [row.id, toApi(row as unknown as Record<string, unknown>)]));
  }
}

/** Test clocks exist only in test mode: a live key is refused (403 mode_mismatch). */
export function refuseLiveMode(ctx: RequestContext): void {
  if (ctx.mode === 'live') throw new DomainError('mode_mismatch', 'Test clocks exist only in test mode: use a test key (sk_test_…)');
}

function toApi(row: Record<string, unknown>): TestClock {
  return {
    id: row.id as string, object: 'test_clock', livemode: false, name: (row.name as string | null) ?? null,
    frozenTime: isoTime(row.frozenTime) as string, status: row.status as TestClock['status'],
    createdAt: isoTime(row.createdAt) as string, updatedAt: isoTime(row.updatedAt) as string,
  };
}
