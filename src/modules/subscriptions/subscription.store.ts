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
    scope: Scope, input: ListParams<'createdAt'> & { customerId?: string; status?: string }, options?: O,
  ): Promise<PageFor<SubscriptionRecord, O>> {
    const filter = new Filter({ account_id: scope.accountId, mode: scope.mode, customer_id: input.customerId, status: input.status });
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
        WHERE p.account_id = $1 AND p.mode = $2 AND p.id IN (${this.db.jsonTextList('$3')})`,
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
    const rows = await SubscriptionPendingLineModel.findAll({ where: { subscriptionId, invoiceId: null }, order: [['createdAt', 'ASC'], ['id', 'ASC']], raw: true, transaction: t });
    return rows.map((r) => {
      const row = r as unknown as Row;
      return {
        id: row.id as string, description: row.description as string, quantity: Number(row.quantity), unitAmount: Number(row.unitAmount),
        amount: Number(row.amount), periodStart: readTime(row.periodStart), periodEnd: readTime(row.periodEnd), proration: readBool(row.proration),
      };
    });
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
    const rows = await this.db.select<{ id: string }>(
      `UPDATE subscriptions SET billing_locked_until = ${this.db.nowPlusSql('$3')}, billing_lock_token = $4
        WHERE id IN (SELECT id FROM subscriptions
                      WHERE ${clockFilter} AND next_billing_at IS NOT NULL AND next_billing_at <= $1
                        AND (billing_locked_until IS NULL OR billing_locked_until < ${this.db.nowSql})
                      ORDER BY next_billing_at, id LIMIT $2${skipLocked})
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
    createdAt: readTime(row.createdAt) as Date,
    updatedAt: readTime(row.updatedAt) as Date,
  };
}

export { isoTime };
