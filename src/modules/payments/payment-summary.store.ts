import type { Database } from '../../db/database';
import type { Mode } from '../../core/context';
import type { SummaryGroup } from './payment-summary.inputs';

type Scope = { accountId: string; mode: Mode };

/** One group's sums as the statement gives them (sums of bigint are numeric text on PostgreSQL). */
export interface SummaryGroupRow {
  currency: string;
  status?: string;
  gateway?: string | null;
  day?: string;
  count: number;
  amount: number;
  amountRefunded: number;
}

const num = (v: unknown) => Number(v ?? 0);

/**
 * The payment summary's one statement: the window's payments (by their creation) and succeeded
 * refunds (by the refund's creation, whenever their payment was made) as one set of money moves,
 * summed per group. Each side is a range of an existing index: payments_list_idx (account_id,
 * mode, created_at) and refunds_status_idx (account_id, mode, status, created_at); a refund's
 * payment (its status, and its gateway when the refund has none) is read by primary key.
 */
export class PaymentSummaryStore {
  constructor(private readonly db: Database) {}

  private daySql(column: string): string {
    return this.db.dialect === 'postgres' ? `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD')` : `substr(${column}, 1, 10)`;
  }

  /** Currency is always a group: amounts in different currencies are never added together. */
  async summary(scope: Scope, window: { from: Date; to: Date }, groups: readonly SummaryGroup[]): Promise<SummaryGroupRow[]> {
    const has = (g: SummaryGroup) => groups.includes(g);
    // Each group column as each side computes it; only the columns grouped by are computed.
    const columns: Array<[name: string, payment: string, refund: string]> = [['currency', 'currency', 'r.currency']];
    if (has('status')) columns.push(['status', 'status', 'p.status']);
    if (has('gateway')) columns.push(['gateway', 'gateway_id', 'COALESCE(r.gateway_id, p.gateway_id)']);
    if (has('day')) columns.push(['day', this.daySql('created_at'), this.daySql('r.created_at')]);
    const names = columns.map(([name]) => name).join(', ');
    const rows = await this.db.select(
      `SELECT ${names}, SUM(payments) AS count, SUM(amount) AS amount, SUM(refunded) AS amount_refunded FROM (
         SELECT ${columns.map(([name, payment]) => `${payment} AS ${name}`).join(', ')}, 1 AS payments,
                CASE WHEN status = 'succeeded' THEN amount_captured ELSE 0 END AS amount, 0 AS refunded
           FROM payments
          WHERE account_id = $1 AND mode = $2 AND created_at >= $3 AND created_at < $4
         UNION ALL
         SELECT ${columns.map(([name, , refund]) => `${refund} AS ${name}`).join(', ')}, 0 AS payments, 0 AS amount, r.amount AS refunded
           FROM refunds r JOIN payments p ON p.id = r.payment_id
          WHERE r.account_id = $1 AND r.mode = $2 AND r.status = 'succeeded' AND r.created_at >= $3 AND r.created_at < $4
       ) moves
       GROUP BY ${names}`,
      [scope.accountId, scope.mode, window.from, window.to],
    );
    return rows.map((r) => ({
      currency: String(r.currency),
      ...(has('status') ? { status: String(r.status) } : {}),
      ...(has('gateway') ? { gateway: (r.gateway as string | null) ?? null } : {}),
      ...(has('day') ? { day: String(r.day) } : {}),
      count: num(r.count),
      amount: num(r.amount),
      amountRefunded: num(r.amount_refunded),
    }));
  }
}
