import type { Database } from '../../db/database';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { parseInput } from '../../core/validation';
import { paymentSummaryInput } from './payment-summary.inputs';
import type { PaymentSummaryRow } from './payment-summary.schemas';
import { PaymentSummaryStore } from './payment-summary.store';

export type { PaymentSummaryRow } from './payment-summary.schemas';

/** The order rows are answered in: by day, then currency, status and gateway (no gateway last). */
const ORDER: ReadonlyArray<'day' | 'currency' | 'status' | 'gateway'> = ['day', 'currency', 'status', 'gateway'];

function compareRows(a: PaymentSummaryRow, b: PaymentSummaryRow): number {
  for (const key of ORDER) {
    const x = a[key];
    const y = b[key];
    if (x === y) continue;
    if (x === null || x === undefined) return 1;
    if (y === null || y === undefined) return -1;
    return x < y ? -1 : 1;
  }
  return 0;
}

/**
 * `GET /v1/payments/summary` (API.md §2): the money of a window, per group. The rules:
 * - `count`: the payments created in [from, to), of every status;
 * - `amount`: what those of them that succeeded captured, `amountCaptured` (all of `amount` for
 *   an automatic capture, what was taken for a manual one, partial captures included); nothing for
 *   any other status (an authorisation not captured, a failure, a payment under review);
 * - `amountRefunded`: the succeeded refunds created in [from, to), whenever their payment was
 *   made (refunds are netted by refund date), grouped under their payment's status, their own
 *   gateway (else the payment's) and their own day;
 * - `net` = `amount` − `amountRefunded`.
 * Rows are always per currency; a group with neither payments nor refunds in the window has no row.
 */
export class PaymentSummaryService {
  private readonly store: PaymentSummaryStore;

  constructor(db: Database) {
    this.store = new PaymentSummaryStore(db);
  }

  async summarize(ctx: RequestContext, input: unknown): Promise<PaymentSummaryRow[]> {
    requirePermission(ctx, 'payments', 'read');
    const data = parseInput(paymentSummaryInput, input);
    const groups = data.groupBy ?? [];
    const rows = await this.store.summary(ctx, { from: data.from, to: data.to }, groups);
    return rows.map((r) => ({ ...r, net: r.amount - r.amountRefunded })).sort(compareRows);
  }
}
