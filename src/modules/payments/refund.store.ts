import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { isoTime } from '../../db/database';
import { Filter, NESTED_LIST_LIMIT, groupBy, listPage, newestPerParent } from '../../db/list';
import type { Counted, ListOptions, ListParams, PageFor } from '../../core/pagination';
import { PAYMENT_COLUMNS, toApiPayment } from './payment.rows';
import type { Payment } from './payment.types';

export interface Refund {
  id: string;
  object: 'refund';
  livemode: boolean;
  paymentId: string;
  amount: number;
  currency: string;
  reason: string | null;
  status: 'pending' | 'succeeded' | 'failed';
  gatewayId: string | null;
  failureCode: string | null;
  failureMessage: string | null;
  createdAt: string;
  updatedAt: string;
}

type Scope = { accountId: string; mode: string };

const COLUMNS = 'id, mode, payment_id, amount, currency, reason, status, gateway_id, failure_code, failure_message, created_at, updated_at';

/**
 * Where refunds, and the refunded amount they reserve on their payment, are read and written.
 * Every write takes the caller's transaction: reserving (key claim, payment lock, reservation,
 * pending row) and settling (outcome, reservation given back) are each one transaction of
 * RefundService, together with their events, as on both dialects alike (no batching here).
 */
export class RefundStore {
  constructor(private readonly db: Database) {}

  /** The payment to refund and its charge's gateway reference, locked for the rest of the transaction (PostgreSQL). */
  async paymentForUpdate(scope: Scope, paymentId: string, t: Transaction): Promise<{ payment: Payment; chargeReference: string } | null> {
    const [row] = await this.db.select(
      `SELECT ${PAYMENT_COLUMNS}, gateway_reference FROM payments WHERE id = $1 AND account_id = $2 AND mode = $3${this.db.forUpdate}`,
      [paymentId, scope.accountId, scope.mode],
      t,
    );
    return row ? { payment: toApiPayment(row), chargeReference: row.gateway_reference as string } : null;
  }

  /** Adds `amount` to the payment's refunded amount only while the total stays within the payment; false when it would not. */
  async reserve(t: Transaction, paymentId: string, amount: number, at: Date): Promise<boolean> {
    const reserved = await this.db.execute(
      'UPDATE payments SET amount_refunded = amount_refunded + $1, updated_at = $2 WHERE id = $3 AND amount_refunded + $1 <= amount',
      [amount, at, paymentId],
      t,
    );
    return reserved === 1;
  }

  /** Gives a failed refund's reservation back. */
  async release(t: Transaction, refund: Pick<Refund, 'paymentId' | 'amount'>, at: Date): Promise<void> {
    await this.db.execute('UPDATE payments SET amount_refunded = amount_refunded - $1, updated_at = $2 WHERE id = $3', [refund.amount, at, refund.paymentId], t);
  }

  /** The payment as this transaction has left it (for `payment.updated`). */
  async paymentAsWritten(t: Transaction, paymentId: string): Promise<Payment> {
    const [row] = await this.db.select(`SELECT ${PAYMENT_COLUMNS} FROM payments WHERE id = $1`, [paymentId], t);
    return toApiPayment(row);
  }

  /** The pending row, with its lease and the Idempotency-Key it was claimed under (recovery answers it). */
  async insertPending(t: Transaction, scope: Scope, refund: Refund, leaseUntil: Date, idempotencyKey: string | null): Promise<void> {
    await this.db.execute(
      `INSERT INTO refunds (id, account_id, mode, payment_id, amount, currency, reason, status, gateway_id, created_at, updated_at, lease_until, idempotency_key)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9, $9, $10, $11)`,
      [refund.id, scope.accountId, scope.mode, refund.paymentId, refund.amount, refund.currency, refund.reason, refund.gatewayId, new Date(refund.createdAt), leaseUntil, idempotencyKey],
      t,
    );
  }

  /** The settling write, only while the refund is still pending; false when another writer settled it first. */
  async settle(t: Transaction, done: Refund, reference: string | null): Promise<boolean> {
    const changed = await this.db.execute(
      `UPDATE refunds SET status = $1, failure_code = $2, failure_message = $3, gateway_reference = $4, updated_at = $5 WHERE id = $6 AND status = 'pending'`,
      [done.status, done.failureCode, done.failureMessage, reference, new Date(done.updatedAt), done.id],
      t,
    );
    return changed === 1;
  }

  async find(scope: Scope, id: string, t?: Transaction): Promise<Refund | null> {
    const [row] = await this.db.select(`SELECT ${COLUMNS} FROM refunds WHERE id = $1 AND account_id = $2 AND mode = $3`, [id, scope.accountId, scope.mode], t);
    return row ? toApiRefund(row) : null;
  }

  /** Whether the payment exists for this account and mode (a list under `/v1/payments/{id}` answers 404 otherwise). */
  async paymentExists(scope: Scope, paymentId: string): Promise<boolean> {
    const [row] = await this.db.select('SELECT id FROM payments WHERE id = $1 AND account_id = $2 AND mode = $3', [paymentId, scope.accountId, scope.mode]);
    return row !== undefined;
  }

  async list<O extends ListOptions = Counted>(scope: Scope, input: ListParams<'createdAt' | 'amount'> & { status?: string; paymentId?: string }, options?: O): Promise<PageFor<Refund, O>> {
    const filter = new Filter({ account_id: scope.accountId, mode: scope.mode, status: input.status, payment_id: input.paymentId });
    return listPage(this.db, {
      table: 'refunds', columns: COLUMNS, filter, params: input, sortColumns: { createdAt: 'created_at', amount: 'amount' }, toApi: toApiRefund,
    }, options);
  }

  /** The newest refunds of several payments at once (at most `limit` each). */
  async forPayments(scope: Scope, paymentIds: readonly string[], limit = NESTED_LIST_LIMIT): Promise<Map<string, Refund[]>> {
    const rows = await newestPerParent<Record<string, unknown>>(this.db, {
      columns: COLUMNS, from: 'refunds', parentColumn: 'payment_id', accountId: scope.accountId, mode: scope.mode, parentIds: paymentIds, limit,
    });
    return groupBy(rows.map(toApiRefund), (r) => r.paymentId);
  }

  /** Pending refunds whose lease has run out, oldest lease first, with what recovery needs. */
  async pendingPastLease(now: Date, limit: number): Promise<Array<{ id: string; refund: Refund; accountId: string; idempotencyKey: string | null; chargeReference: string }>> {
    const rows = await this.db.select(
      `SELECT r.id, r.mode, r.payment_id, r.amount, r.currency, r.reason, r.status, r.gateway_id, r.failure_code, r.failure_message,
              r.created_at, r.updated_at, r.account_id, r.idempotency_key, p.gateway_reference
         FROM refunds r JOIN payments p ON p.id = r.payment_id WHERE r.status = 'pending' AND r.lease_until < $1 ORDER BY r.lease_until LIMIT ${Number(limit)}`,
      [now],
    );
    return rows.map((row) => ({
      id: row.id as string,
      refund: toApiRefund(row),
      accountId: row.account_id as string,
      idempotencyKey: (row.idempotency_key as string | null) ?? null,
      chargeReference: row.gateway_reference as string,
    }));
  }
}

function toApiRefund(row: Record<string, unknown>): Refund {
  return {
    id: row.id as string,
    object: 'refund',
    livemode: row.mode === 'live',
    paymentId: row.payment_id as string,
    amount: Number(row.amount),
    currency: row.currency as string,
    reason: (row.reason as string | null) ?? null,
    status: row.status as Refund['status'],
    gatewayId: (row.gateway_id as string | null) ?? null,
    failureCode: (row.failure_code as string | null) ?? null,
    failureMessage: (row.failure_message as string | null) ?? null,
    createdAt: isoTime(row.created_at) as string,
    updatedAt: isoTime(row.updated_at) as string,
  };
}
