import type { Database } from '../../db/database';
import type { Mode } from '../../core/context';

/** One group of an aggregate: a currency's count and summed amount. */
export interface CurrencyRow {
  currency: string;
  count: number;
  amount: number;
}

export interface MinuteRow {
  minute: string;
  status: string;
  count: number;
}

export interface GatewayRow {
  gatewayId: string;
  gatewayType: string;
  name: string | null;
  attempts: number;
  succeeded: number;
}

export interface RecurringRow {
  currency: string;
  interval: string;
  intervalCount: number;
  count: number;
  /** unit_amount × quantity summed over the group's active subscriptions, per interval. */
  amount: number;
}

type Scope = { accountId: string; mode: Mode };

// PostgreSQL answers SUM(bigint) as numeric (text through pg); counts and sums read as numbers.
const num = (v: unknown) => Number(v ?? 0);
const currencyRows = (rows: Record<string, unknown>[]): CurrencyRow[] =>
  rows.map((r) => ({ currency: String(r.currency), count: num(r.count), amount: num(r.amount) }));

/** A time window, `from` included, `until` excluded. */
export interface Window {
  from: Date;
  until: Date;
}

/**
 * The dashboard's aggregates: each one grouped statement over an index that starts with
 * (account_id, mode[, status], created_at), so the database sums the rows and Node gets one
 * row per group. The one difference between the dialects is how a timestamp becomes its minute
 * (SQLite stores UTC text, `YYYY-MM-DD HH:MM:SS.mmm +00:00`).
 *
 * Time windows are bounded on both sides. The statements are prepared per connection on
 * PostgreSQL, which after five runs may switch to a generic plan, made without the values: for
 * an open `created_at >= $n` it assumes a third of the table matches and plans a sequential scan
 * of every payment (1.0 to 1.5 s over 1,000,000 on the benchmark's machine, against 30 to 120 ms
 * for the index scan). It switches once the custom plans' average estimated cost passes that
 * plan's, which "today" does as the day fills up (bench/dashboard). A closed range is estimated
 * at 0.5% of the rows, so the generic plan is the index scan too.
 */
export class DashboardStore {
  constructor(private readonly db: Database) {}

  private minuteSql(column: string): string {
    return this.db.dialect === 'postgres' ? `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI')` : `substr(${column}, 1, 16)`;
  }

  /** Payments created in `window`, counted per UTC minute (`YYYY-MM-DD HH:MM`) and status. */
  async paymentsPerMinute(scope: Scope, window: Window): Promise<MinuteRow[]> {
    const minute = this.minuteSql('created_at');
    const rows = await this.db.select(
      `SELECT ${minute} AS minute, status, COUNT(*) AS count FROM payments
        WHERE account_id = $1 AND mode = $2 AND created_at >= $3 AND created_at < $4
        GROUP BY ${minute}, status`,
      [scope.accountId, scope.mode, window.from, window.until],
    );
    return rows.map((r) => ({ minute: String(r.minute), status: String(r.status), count: num(r.count) }));
  }

  /** Charge calls in `window` per gateway, and how many the gateway authorised. */
  async chargesPerGateway(scope: Scope, window: Window): Promise<GatewayRow[]> {
    const rows = await this.db.select(
      `SELECT t.gateway_id, t.gateway_type, g.name, COUNT(*) AS attempts,
              SUM(CASE WHEN t.outcome = 'succeeded' THEN 1 ELSE 0 END) AS succeeded
         FROM gateway_transactions t LEFT JOIN gateways g ON g.id = t.gateway_id
        WHERE t.account_id = $1 AND t.mode = $2 AND t.created_at >= $3 AND t.created_at < $4 AND t.kind = 'charge'
        GROUP BY t.gateway_id, t.gateway_type, g.name
        ORDER BY t.gateway_id`,
      [scope.accountId, scope.mode, window.from, window.until],
    );
    return rows.map((r) => ({
      gatewayId: String(r.gateway_id), gatewayType: String(r.gateway_type), name: (r.name as string | null) ?? null,
      attempts: num(r.attempts), succeeded: num(r.succeeded),
    }));
  }

  /** Rows of `table` in `status` created in `window`, counted and summed per currency. */
  private async byCurrencyIn(table: 'payments' | 'refunds', scope: Scope, status: string, window: Window): Promise<CurrencyRow[]> {
    return currencyRows(await this.db.select(
      `SELECT currency, COUNT(*) AS count, SUM(amount) AS amount FROM ${table}
        WHERE account_id = $1 AND mode = $2 AND status = $3 AND created_at >= $4 AND created_at < $5
        GROUP BY currency ORDER BY currency`,
      [scope.accountId, scope.mode, status, window.from, window.until],
    ));
  }

  succeededPaymentsIn(scope: Scope, window: Window): Promise<CurrencyRow[]> {
    return this.byCurrencyIn('payments', scope, 'succeeded', window);
  }

  succeededRefundsIn(scope: Scope, window: Window): Promise<CurrencyRow[]> {
    return this.byCurrencyIn('refunds', scope, 'succeeded', window);
  }

  /** Active subscriptions grouped by their price's currency and interval, with unit_amount × quantity summed. */
  async activeRecurring(scope: Scope): Promise<RecurringRow[]> {
    const rows = await this.db.select(
      `SELECT p.currency, p.recurring_interval AS interval, p.recurring_interval_count AS interval_count,
              COUNT(*) AS count, SUM(p.unit_amount * s.quantity) AS amount
         FROM subscriptions s JOIN prices p ON p.id = s.price_id
        WHERE s.account_id = $1 AND s.mode = $2 AND s.status = 'active'
        GROUP BY p.currency, p.recurring_interval, p.recurring_interval_count
        ORDER BY p.currency`,
      [scope.accountId, scope.mode],
    );
    return rows.map((r) => ({
      currency: String(r.currency), interval: String(r.interval), intervalCount: num(r.interval_count) || 1,
      count: num(r.count), amount: num(r.amount),
    }));
  }

  async subscriptionsInStatus(scope: Scope, status: string): Promise<number> {
    const [row] = await this.db.select(
      'SELECT COUNT(*) AS count FROM subscriptions WHERE account_id = $1 AND mode = $2 AND status = $3',
      [scope.accountId, scope.mode, status],
    );
    return num(row?.count);
  }

  /** Sent (unpaid) invoices: how many and the amount due, per currency. */
  async sentInvoices(scope: Scope): Promise<CurrencyRow[]> {
    return currencyRows(await this.db.select(
      `SELECT currency, COUNT(*) AS count, SUM(amount_due) AS amount FROM invoices
        WHERE account_id = $1 AND mode = $2 AND status = 'sent'
        GROUP BY currency ORDER BY currency`,
      [scope.accountId, scope.mode],
    ));
  }
}
