import type { Database } from '../../db/database';
import { requirePermission, type RequestContext } from '../../core/context';
import { DashboardStore, type CurrencyRow, type RecurringRow } from './dashboard.store';

const MINUTE_MS = 60_000;
/** Minutes the payments chart covers: the last hour, the current minute included. */
export const DASHBOARD_MINUTES = 60;

export interface CurrencyTotal {
  currency: string;
  count: number;
  amount: number;
}

export interface PaymentsMinute {
  minute: string;
  succeeded: number;
  failed: number;
  total: number;
}

export interface GatewayAuthorization {
  gatewayId: string;
  gatewayType: string;
  name: string | null;
  attempts: number;
  succeeded: number;
  /** succeeded / attempts, 0 to 1. */
  rate: number;
}

export interface PaymentsOverview {
  since: string;
  perMinute: PaymentsMinute[];
  gateways: GatewayAuthorization[];
  volumeToday: CurrencyTotal[];
}

export interface RefundsOverview {
  count: number;
  byCurrency: CurrencyTotal[];
}

export interface SubscriptionsOverview {
  active: number;
  pastDue: number;
  /** Per currency: active subscriptions and their monthly recurring revenue. */
  mrr: CurrencyTotal[];
}

export interface InvoicesOverview {
  unpaid: number;
  amountDue: CurrencyTotal[];
}

/** Months in one `interval`: a price's amount × quantity ÷ (this × interval_count) is its monthly share. */
const MONTHS_PER_INTERVAL: Record<string, number> = { day: 12 / 365, week: 12 / 52, month: 1, year: 12 };

/** Monthly recurring revenue per currency, rounded to the minor unit once per currency. */
export function monthlyRecurring(rows: RecurringRow[]): CurrencyTotal[] {
  const totals = new Map<string, { count: number; amount: number }>();
  for (const r of rows) {
    const months = (MONTHS_PER_INTERVAL[r.interval] ?? 1) * r.intervalCount;
    const t = totals.get(r.currency) ?? { count: 0, amount: 0 };
    t.count += r.count;
    t.amount += r.amount / months;
    totals.set(r.currency, t);
  }
  return [...totals].sort(([a], [b]) => a.localeCompare(b)).map(([currency, t]) => ({ currency, count: t.count, amount: Math.round(t.amount) }));
}

const DAY_MS = 86_400_000;
/** The UTC day `now` is in. */
const today = (now: Date) => {
  const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  return { from, until: new Date(from.getTime() + DAY_MS) };
};
const minuteKey = (d: Date) => d.toISOString().slice(0, 16).replace('T', ' ');
const countOf = (rows: CurrencyRow[]) => rows.reduce((n, r) => n + r.count, 0);

/**
 * The live dashboard's figures for the key's account and mode, one section per resource: each
 * checks its own read permission, so a restricted key is refused a section, not the dashboard.
 * Every figure is an aggregate the database computes (DashboardStore); "today" is the UTC day.
 */
export class DashboardService {
  private readonly store: DashboardStore;

  constructor(db: Database) {
    this.store = new DashboardStore(db);
  }

  async payments(ctx: RequestContext): Promise<PaymentsOverview> {
    requirePermission(ctx, 'payments', 'read');
    const now = ctx.clock.now();
    const scope = { accountId: ctx.accountId, mode: ctx.mode };
    const first = new Date(Math.floor(now.getTime() / MINUTE_MS) * MINUTE_MS - (DASHBOARD_MINUTES - 1) * MINUTE_MS);
    // Every window ends after now: at the end of the current minute, or of the UTC day.
    const nextMinute = new Date(first.getTime() + DASHBOARD_MINUTES * MINUTE_MS);
    const [minutes, gateways, volume] = await Promise.all([
      this.store.paymentsPerMinute(scope, { from: first, until: nextMinute }),
      this.store.chargesPerGateway(scope, { from: new Date(now.getTime() - DASHBOARD_MINUTES * MINUTE_MS), until: nextMinute }),
      this.store.succeededPaymentsIn(scope, today(now)),
    ]);
    const perMinute = Array.from({ length: DASHBOARD_MINUTES }, (_, i) => {
      const at = new Date(first.getTime() + i * MINUTE_MS);
      return { at, key: minuteKey(at), succeeded: 0, failed: 0, total: 0 };
    });
    const byKey = new Map(perMinute.map((m) => [m.key, m]));
    for (const row of minutes) {
      const bucket = byKey.get(row.minute);
      if (!bucket) continue;
      bucket.total += row.count;
      if (row.status === 'succeeded') bucket.succeeded += row.count;
      if (row.status === 'failed') bucket.failed += row.count;
    }
    return {
      since: first.toISOString(),
      perMinute: perMinute.map(({ at, succeeded, failed, total }) => ({ minute: at.toISOString(), succeeded, failed, total })),
      gateways: gateways.map((g) => ({ ...g, rate: g.attempts ? g.succeeded / g.attempts : 0 })),
      volumeToday: volume,
    };
  }

  async refunds(ctx: RequestContext): Promise<RefundsOverview> {
    requirePermission(ctx, 'refunds', 'read');
    const rows = await this.store.succeededRefundsIn({ accountId: ctx.accountId, mode: ctx.mode }, today(ctx.clock.now()));
    return { count: countOf(rows), byCurrency: rows };
  }

  async subscriptions(ctx: RequestContext): Promise<SubscriptionsOverview> {
    requirePermission(ctx, 'subscriptions', 'read');
    const scope = { accountId: ctx.accountId, mode: ctx.mode };
    const [recurring, pastDue] = await Promise.all([this.store.activeRecurring(scope), this.store.subscriptionsInStatus(scope, 'past_due')]);
    const mrr = monthlyRecurring(recurring);
    return { active: countOf(mrr), pastDue, mrr };
  }

  async invoices(ctx: RequestContext): Promise<InvoicesOverview> {
    requirePermission(ctx, 'invoices', 'read');
    const rows = await this.store.sentInvoices({ accountId: ctx.accountId, mode: ctx.mode });
    return { unpaid: countOf(rows), amountDue: rows };
  }
}
