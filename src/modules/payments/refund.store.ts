import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { isoTime, readTime } from '../../db/database';
import { Filter, NESTED_LIST_LIMIT, groupBy, listPage, newestPerParent } from '../../db/list';
import type { Counted, ListOptions, ListParams, PageFor } from '../../core/pagination';
import { PAYMENT_COLUMNS, toApiPayment } from './payment.rows';
import type { Payment } from './payment.types';
import type { Refund } from './refund.types';
import { pendingForMs } from './lease.store';
import { REFUND_MOVES, type RefundMove } from './refund-states';

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
      'UPDATE payments SET amount_refunded = amount_refunded + $1, updated_at = $2 WHERE id = $3 AND amount_refunded + $1 <= amount_captured',
      [amount, at, paymentId],
      t,
    );
    return reserved === 1;
  }

  /**
   * Counts a refund's amount on its payment again, whatever is left: the gateway made a refund
   * recorded failed (see RefundService), so that money is gone. The total may then exceed the
   * payment while a refund that took the amount meanwhile is still pending; the gateway refuses
   * that one (its refunds never exceed the charge), and its failure gives its amount back.
   */
  async reserveAgain(t: Transaction, refund: Pick<Refund, 'paymentId' | 'amount'>, at: Date): Promise<void> {
    await this.db.execute('UPDATE payments SET amount_refunded = amount_refunded + $1, updated_at = $2 WHERE id = $3', [refund.amount, at, refund.paymentId], t);
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

  /**
   * The pending row (REFUND_MOVES `create`: `refund.status`), leased for `leaseMs` from the
   * database's now (see LeaseStore), with the Idempotency-Key it was claimed under (recovery
   * answers it).
   */
  async insertPending(t: Transaction, scope: Scope, refund: Refund, leaseMs: number, idempotencyKey: string | null): Promise<void> {
    await this.db.execute(
      `INSERT INTO refunds (id, account_id, mode, payment_id, customer_id, amount, currency, reason, status, gateway_id, created_at, updated_at, idempotency_key, lease_until, pending_since)
       VALUES ($1, $2, $3, $4, (SELECT customer_id FROM payments WHERE id = CAST($4 AS VARCHAR(64))), $5, $6, $7, $12, $8, $9, $9, $10, ${this.db.nowPlusSql('$11')}, ${this.db.nowSql})`,
      [refund.id, scope.accountId, scope.mode, refund.paymentId, refund.amount, refund.currency, refund.reason, refund.gatewayId, new Date(refund.createdAt), idempotencyKey, Math.ceil(leaseMs), refund.status],
      t,
    );
  }

  /**
   * A move of the refund (REFUND_MOVES: the status written, and only from a status the move
   * starts from) with its failure, its gateway reference and its time; false when the refund was
   * elsewhere (another writer settled it first).
   */
  async move(t: Transaction, move: Exclude<RefundMove, 'create'>, next: Refund, reference: string | null): Promise<boolean> {
    const changed = await this.db.execute(
      `UPDATE refunds SET ${REFUND_MOVES.sqlSet(move)}, failure_code = $1, failure_message = $2, gateway_reference = $3, updated_at = $4
        WHERE id = $5 AND ${REFUND_MOVES.sqlFrom(move)}`,
      [next.failureCode, next.failureMessage, reference, new Date(next.updatedAt), next.id],
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

  async list<O extends ListOptions = Counted>(
    scope: Scope, input: ListParams<'createdAt' | 'amount'> & { status?: readonly string[]; paymentId?: string; customerId?: string }, options?: O,
  ): Promise<PageFor<Refund, O>> {
    // customer_id: the payment's, copied onto the refund as it is written (migration 0027).
    const filter = new Filter({ account_id: scope.accountId, mode: scope.mode, payment_id: input.paymentId, customer_id: input.customerId }).anyOf('status', input.status);
    return listPage(this.db, {
      table: 'refunds', columns: COLUMNS, filter, params: input, sortColumns: { createdAt: 'created_at', amount: 'amount' }, toApi: toApiRefund,
    }, options);
  }

  /** The newest refunds of several payments at once (at most `limit` each, older than the refund `after`). */
  async forPayments(scope: Scope, paymentIds: readonly string[], limit = NESTED_LIST_LIMIT, after?: string): Promise<Map<string, Refund[]>> {
    const rows = await newestPerParent<Record<string, unknown>>(this.db, {
      columns: COLUMNS, from: 'refunds', parentColumn: 'payment_id', accountId: scope.accountId, mode: scope.mode, parentIds: paymentIds, limit, after,
    });
    return groupBy(rows.map(toApiRefund), (r) => r.paymentId);
  }

  /**
   * Pending refunds whose lease has run out on the database's clock, oldest lease first, with
   * what recovery needs: `pendingMs`, how long each has been pending, on that clock too. Those of
   * `held` (the ones this process's requests are still working on) are left out, whatever their
   * lease says.
   */
  async pendingPastLease(limit: number, held: readonly string[] = []): Promise<Array<{ id: string; refund: Refund; accountId: string; idempotencyKey: string | null; chargeReference: string; pendingMs: number }>> {
    const now = this.db.nowSql;
    const rows = await this.db.select(
      `SELECT r.id, r.mode, r.payment_id, r.amount, r.currency, r.reason, r.status, r.gateway_id, r.failure_code, r.failure_message,
              r.created_at, r.updated_at, r.account_id, r.idempotency_key, r.pending_since, p.gateway_reference, ${now} AS db_now
         FROM refunds r JOIN payments p ON p.id = r.payment_id
        WHERE r.status = 'pending' AND r.lease_until < ${now} AND ${this.db.notInJsonList('r.id', '$1')}
        ORDER BY r.lease_until LIMIT ${Number(limit)}`,
      [JSON.stringify(held)],
    );
    return rows.map((row) => ({
      id: row.id as string,
      refund: toApiRefund(row),
      accountId: row.account_id as string,
      idempotencyKey: (row.idempotency_key as string | null) ?? null,
      chargeReference: row.gateway_reference as string,
      pendingMs: pendingForMs(readTime(row.db_now), readTime(row.pending_since)),
    }));
  }

  /** Several refunds of the account and mode by id, in one statement whatever their number (GraphQL's `node` and links). */
  async findMany(scope: Scope, ids: readonly string[]): Promise<Refund[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.select(
      `SELECT ${COLUMNS} FROM refunds WHERE ${this.db.inJsonList('id', '$1')} AND account_id = $2 AND mode = $3`,
      [JSON.stringify([...new Set(ids)]), scope.accountId, scope.mode],
    );
    return rows.map(toApiRefund);
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
