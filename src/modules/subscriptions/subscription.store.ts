import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { isoTime, readBool, readJson, readTime } from '../../db/database';
import { Filter, groupBy, listPage, modelSource, newestPerParent } from '../../db/list';
import type { Counted, ListOptions, ListParams, PageFor } from '../../core/pagination';
import type { Metadata } from '../../core/validation';
import type { Interval } from './billing-period';
import type { SubscriptionStatus } from './subscription-states';
import { SubscriptionModel, SubscriptionPendingLineModel } from './subscription.model';

type Scope = { accountId: string; mode: string };
type Row = Record<string, unknown>;

/** A subscription as stored, billing state included (the API object leaves that out). */
export interface SubscriptionRecord {
  id: string;
  accountId: string;
  mode: 'test' | 'live';
  customerId: string;
  priceId: string;
  quantity: number;
  status: SubscriptionStatus;
  collectionMethod: 'charge_automatically' | 'send_invoice';
  currentPeriodStart: Date;
  currentPeriodEnd: Date;
  billingCycleAnchor: Date;
  cancelAtPeriodEnd: boolean;
  canceledAt: Date | null;
  pausedAt: Date | null;
  endedAt: Date | null;
  latestInvoiceId: string | null;
  defaultPaymentMethodId: string | null;
  testClockId: string | null;
  metadata: Metadata;
  nextBillingAt: Date | null;
  collectInvoiceId: string | null;
  invoiceAttemptsSeen: number;
  dunningFailures: number;
  firstFailedAt: Date | null;
  /** The `prorationDate` of the latest plan change (a change in the current period when at or after its start). */
  lastChangeAt: Date | null;
  /** The tax rates its invoices' lines take (API.md §12). */
  defaultTaxRateIds: string[];
  createdAt: Date;
  updatedAt: Date;
}

/** What a subscription bills: its price with the product's name. */
export interface Plan {
  priceId: string;
  productId: string;
  productName: string;
  unitAmount: number;
  currency: string;
  interval: Interval;
  intervalCount: number;
}

/** What a renewal writes on its subscription: the next period, its invoice, and when to bill next. */
export interface PeriodAdvance {
  currentPeriodStart: Date;
  currentPeriodEnd: Date;
  latestInvoiceId: string;
  collectInvoiceId: string | null;
  invoiceAttemptsSeen: 0;
  nextBillingAt: Date;
}

export interface PendingLine {
  id: string;
  description: string;
  quantity: number;
  unitAmount: number;
  amount: number;
  periodStart: Date | null;
  periodEnd: Date | null;
  proration: boolean;
}

/**
 * Subscriptions' statements: pages, the plans of many subscriptions in one read, pending lines,
 * and the billing run's claims (due work under a lease on the database's clock, shared by
 * instances with SKIP LOCKED on PostgreSQL).
 */
export class SubscriptionStore {
  constructor(private readonly db: Database) {}

  /**
   * How many billing steps may write at once: one on SQLite (one writer at a time: in parallel
   * they gained nothing, and a step's write outside a transaction, waiting on another step's
   * transaction, held the connection that transaction's own reads then queued behind until the
   * busy timeout (15 s) broke the wait), `parallel` on PostgreSQL.
   */
  stepWidth(parallel: number): number {
    return this.db.dialect === 'sqlite' ? 1 : parallel;
  }

  async find(id: string, scope?: Scope, t?: Transaction, lock = false): Promise<SubscriptionRecord | null> {
    const where: Row = { id };
    if (scope) Object.assign(where, { accountId: scope.accountId, mode: scope.mode });
    const row = await SubscriptionModel.findOne({ where, raw: true, transaction: t, lock: lock ? this.db.rowLock(t) : undefined });
    return row ? toRecord(row as unknown as Row) : null;
  }

  async findMany(scope: Scope, ids: readonly string[]): Promise<SubscriptionRecord[]> {
    const rows = await SubscriptionModel.findAll({ where: { id: [...new Set(ids)], accountId: scope.accountId, mode: scope.mode }, raw: true });
    return rows.map((r) => toRecord(r as unknown as Row));
  }

  async list<O extends ListOptions = Counted>(
    scope: Scope, input: ListParams<'createdAt'> & { customerId?: string; status?: readonly string[] }, options?: O,
  ): Promise<PageFor<SubscriptionRecord, O>> {
    const filter = new Filter({ account_id: scope.accountId, mode: scope.mode, customer_id: input.customerId }).anyOf('status', input.status);
    return listPage(this.db, { ...modelSource(SubscriptionModel), filter, params: input, sortColumns: { createdAt: 'created_at' }, toApi: toRecord }, options);
  }

  /** The newest subscriptions of several customers (at most `limit` each), for DataLoader. */
  async forCustomers(scope: Scope, customerIds: readonly string[], limit: number): Promise<Map<string, SubscriptionRecord[]>> {
    const rows = await newestPerParent<Row>(this.db, {
      columns: `${modelSource(SubscriptionModel).columns}, created_at`, from: 'subscriptions', parentColumn: 'customer_id',
      accountId: scope.accountId, mode: scope.mode, parentIds: customerIds, limit,
    });
    return groupBy(rows.map(toRecord), (s) => s.customerId);
  }

  /** The plans of several prices in one statement (price with its product's name). */
  async plans(scope: Scope, priceIds: readonly string[], t?: Transaction): Promise<Map<string, Plan>> {
    if (priceIds.length === 0) return new Map();
    const rows = await this.db.select<Row>(
      `SELECT p.id, p.product_id, pr.name AS product_name, p.unit_amount, p.currency, p.recurring_interval, p.recurring_interval_count
         FROM prices p LEFT JOIN products pr ON pr.id = p.product_id AND pr.account_id = p.account_id AND pr.mode = p.mode
        WHERE p.account_id = $1 AND p.mode = $2 AND ${this.db.inJsonList('p.id', '$3')}`,
      [scope.accountId, scope.mode, JSON.stringify([...new Set(priceIds)])],
      t,
    );
    return new Map(rows.map((r) => [r.id as string, {
      priceId: r.id as string, productId: r.product_id as string, productName: (r.product_name as string | null) ?? '',
      unitAmount: Number(r.unit_amount), currency: r.currency as string,
      interval: r.recurring_interval as Interval, intervalCount: Number(r.recurring_interval_count ?? 1),
    }]));
  }

  /** Lines waiting for the subscription's next invoice, oldest first. */
  async pendingLines(subscriptionId: string, t?: Transaction): Promise<PendingLine[]> {
    return (await this.pendingLinesOf([subscriptionId], t)).get(subscriptionId) ?? [];
  }

  /**
   * Claims up to `limit` subscriptions whose billing work is due at `now` (business time: the
   * service's clock, or a test clock's) and not leased, for `leaseMs` on the database's clock
   * under `token`, in the order the work fell due. Subscriptions on a test clock are only ever
   * claimed by that clock's advance (`testClockId`); the run takes those on real time.
   */
  async claimDue(now: Date, limit: number, leaseMs: number, token: string, testClockId: string | null): Promise<string[]> {
    const clockFilter = testClockId === null ? 'test_clock_id IS NULL' : 'test_clock_id = $5';
    const skipLocked = this.db.dialect === 'postgres' ? ' FOR UPDATE SKIP LOCKED' : '';
    const bind: unknown[] = [now, limit, leaseMs, token];
    if (testClockId !== null) bind.push(testClockId);
    // PostgreSQL updates the chosen rows by primary key (`= ANY (ARRAY(…))`, an index condition):
    // as `IN (…)` the prepared statement's generic plan, guessing a sixth of the due rows for
    // `LIMIT $2`, hash-joined a sequential scan of every subscription on each claim.
    const [open, close] = this.db.dialect === 'postgres' ? ['= ANY (ARRAY(', '))'] : ['IN (', ')'];
    const rows = await this.db.select<{ id: string }>(
      `UPDATE subscriptions SET billing_locked_until = ${this.db.nowPlusSql('$3')}, billing_lock_token = $4
        WHERE id ${open}SELECT id FROM subscriptions
                      WHERE ${clockFilter} AND next_billing_at IS NOT NULL AND next_billing_at <= $1
                        AND (billing_locked_until IS NULL OR billing_locked_until < ${this.db.nowSql})
                      ORDER BY next_billing_at, id LIMIT $2${skipLocked}${close}
        RETURNING id`,
      bind,
    );
    return rows.map((r) => r.id);
  }

  /** Gives a claimed subscription back (only while this claim holds it). */
  async release(id: string, token: string): Promise<void> {
    await this.db.select(
      `UPDATE subscriptions SET billing_locked_until = NULL, billing_lock_token = NULL WHERE id = $1 AND billing_lock_token = $2 RETURNING id`,
      [id, token],
    );
  }

  /**
   * Several claimed subscriptions locked for a billing batch (FOR UPDATE on PostgreSQL, in id
   * order), only those this claim (`token`) still holds.
   */
  async lockClaimed(ids: readonly string[], token: string, t: Transaction): Promise<SubscriptionRecord[]> {
    if (ids.length === 0) return [];
    const rows = await SubscriptionModel.findAll({
      where: { id: [...new Set(ids)], billingLockToken: token }, order: [['id', 'ASC']], raw: true, transaction: t, lock: this.db.rowLock(t),
    });
    return rows.map((r) => toRecord(r as unknown as Row));
  }

  /** Several subscriptions by id (in the caller's transaction). */
  async findManyIn(ids: readonly string[], t?: Transaction): Promise<Map<string, SubscriptionRecord>> {
    if (ids.length === 0) return new Map();
    const rows = await SubscriptionModel.findAll({ where: { id: [...new Set(ids)] }, raw: true, transaction: t });
    return new Map(rows.map((r) => [r.id, toRecord(r as unknown as Row)]));
  }

  /** `pendingLines` of several subscriptions in one statement. */
  async pendingLinesOf(subscriptionIds: readonly string[], t?: Transaction): Promise<Map<string, PendingLine[]>> {
    const found = new Map<string, PendingLine[]>();
    if (subscriptionIds.length === 0) return found;
    const rows = await SubscriptionPendingLineModel.findAll({
      where: { subscriptionId: [...new Set(subscriptionIds)], invoiceId: null }, order: [['createdAt', 'ASC'], ['id', 'ASC']], raw: true, transaction: t,
    });
    for (const r of rows) {
      const row = r as unknown as Row;
      const line: PendingLine = {
        id: row.id as string, description: row.description as string, quantity: Number(row.quantity), unitAmount: Number(row.unitAmount),
        amount: Number(row.amount), periodStart: readTime(row.periodStart), periodEnd: readTime(row.periodEnd), proration: readBool(row.proration),
      };
      const list = found.get(row.subscriptionId as string);
      if (list) list.push(line);
      else found.set(row.subscriptionId as string, [line]);
    }
    return found;
  }

  /** The pending lines `lines` billed on `invoiceId` (no longer waiting for an invoice). */
  async billPendingLines(t: Transaction, lines: ReadonlyArray<{ id: string }>, invoiceId: string): Promise<void> {
    if (lines.length === 0) return;
    await SubscriptionPendingLineModel.update({ invoiceId }, { where: { id: lines.map((p) => p.id) }, transaction: t });
  }

  /**
   * A billing batch's period advances (what `BillingService.renew` writes for one): one
   * statement on PostgreSQL, one each on SQLite.
   */
  async advanceMany(t: Transaction, rows: Array<{ id: string; set: PeriodAdvance }>, now: Date): Promise<void> {
    if (rows.length === 0) return;
    if (this.db.dialect === 'postgres') {
      await this.db.execute(
        `UPDATE subscriptions s SET current_period_start = v.start_at, current_period_end = v.end_at, latest_invoice_id = v.invoice_id,
                collect_invoice_id = v.collect_invoice_id, invoice_attempts_seen = v.attempts_seen, next_billing_at = v.next_billing_at, updated_at = $2
           FROM json_to_recordset($1::json) AS v(id text, start_at timestamptz, end_at timestamptz, invoice_id text, collect_invoice_id text, attempts_seen integer, next_billing_at timestamptz)
          WHERE s.id = v.id`,
        [this.db.jsonParam(rows.map(({ id, set }) => ({
          id, start_at: set.currentPeriodStart, end_at: set.currentPeriodEnd, invoice_id: set.latestInvoiceId, collect_invoice_id: set.collectInvoiceId,
          attempts_seen: set.invoiceAttemptsSeen, next_billing_at: set.nextBillingAt,
        }))), now],
        t,
      );
      return;
    }
    for (const { id, set } of rows) await SubscriptionModel.update({ ...set, updatedAt: now }, { where: { id }, transaction: t });
  }

  /**
   * Active subscriptions whose collected invoice (`invoiceId`, also their latest: nothing waits
   * behind it) was just paid (`BillingService.chargeAndTake`): no longer collected, the next work
   * at the period's end (what `BillingService.paid` writes for such a one, which has no event).
   * Returns the ids changed; one statement on PostgreSQL.
   */
  async collectedMany(t: Transaction, rows: Array<{ id: string; invoiceId: string }>, now: Date): Promise<string[]> {
    if (rows.length === 0) return [];
    const set = 'collect_invoice_id = NULL, invoice_attempts_seen = 0, dunning_failures = 0, first_failed_at = NULL, next_billing_at = current_period_end';
    if (this.db.dialect === 'postgres') {
      const done = await this.db.select<{ id: string }>(
        `UPDATE subscriptions s SET ${set}, updated_at = $2
           FROM json_to_recordset($1::json) AS v(id text, invoice_id text)
          WHERE s.id = v.id AND s.collect_invoice_id = v.invoice_id AND s.latest_invoice_id = v.invoice_id AND s.status = 'active'
          RETURNING s.id`,
        [this.db.jsonParam(rows.map((r) => ({ id: r.id, invoice_id: r.invoiceId }))), now],
        t,
      );
      return done.map((r) => r.id);
    }
    const done: string[] = [];
    for (const r of rows) {
      const changed = await this.db.execute(
        `UPDATE subscriptions SET ${set}, updated_at = $3 WHERE id = $1 AND collect_invoice_id = $2 AND latest_invoice_id = $2 AND status = 'active'`,
        [r.id, r.invoiceId, now],
        t,
      );
      if (changed > 0) done.push(r.id);
    }
    return done;
  }

  /** Gives several claimed subscriptions back (those this claim still holds): one statement. */
  async releaseMany(ids: readonly string[], token: string): Promise<void> {
    if (ids.length === 0) return;
    await this.db.execute(
      `UPDATE subscriptions SET billing_locked_until = NULL, billing_lock_token = NULL
        WHERE ${this.db.inJsonList('id', '$1')} AND billing_lock_token = $2`,
      [JSON.stringify([...ids]), token],
    );
  }

  /** The earliest billing work of a test clock's subscriptions due at or before `upTo`, or null. */
  async nextDueOnClock(testClockId: string, upTo: Date): Promise<Date | null> {
    const [row] = await this.db.select<{ due: unknown }>(
      'SELECT MIN(next_billing_at) AS due FROM subscriptions WHERE test_clock_id = $1 AND next_billing_at IS NOT NULL AND next_billing_at <= $2',
      [testClockId, upTo],
    );
    return readTime(row?.due ?? null);
  }
}

export function toRecord(row: Row): SubscriptionRecord {
  return {
    id: row.id as string,
    accountId: row.accountId as string,
    mode: row.mode as 'test' | 'live',
    customerId: row.customerId as string,
    priceId: row.priceId as string,
    quantity: Number(row.quantity),
    status: row.status as SubscriptionStatus,
    collectionMethod: row.collectionMethod as SubscriptionRecord['collectionMethod'],
    currentPeriodStart: readTime(row.currentPeriodStart) as Date,
    currentPeriodEnd: readTime(row.currentPeriodEnd) as Date,
    billingCycleAnchor: readTime(row.billingCycleAnchor) as Date,
    cancelAtPeriodEnd: readBool(row.cancelAtPeriodEnd),
    canceledAt: readTime(row.canceledAt),
    pausedAt: readTime(row.pausedAt),
    endedAt: readTime(row.endedAt),
    latestInvoiceId: (row.latestInvoiceId as string | null) ?? null,
    defaultPaymentMethodId: (row.defaultPaymentMethodId as string | null) ?? null,
    testClockId: (row.testClockId as string | null) ?? null,
    metadata: readJson<Metadata>(row.metadata, {}),
    nextBillingAt: readTime(row.nextBillingAt),
    collectInvoiceId: (row.collectInvoiceId as string | null) ?? null,
    invoiceAttemptsSeen: Number(row.invoiceAttemptsSeen ?? 0),
    dunningFailures: Number(row.dunningFailures ?? 0),
    firstFailedAt: readTime(row.firstFailedAt),
    lastChangeAt: readTime(row.lastChangeAt ?? null),
    defaultTaxRateIds: readJson<string[]>(row.defaultTaxRateIds, []),
    createdAt: readTime(row.createdAt) as Date,
    updatedAt: readTime(row.updatedAt) as Date,
  };
}

export { isoTime };
