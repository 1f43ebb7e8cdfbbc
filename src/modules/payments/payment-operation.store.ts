import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { readJson } from '../../db/database';
import { Params } from '../../db/params';
import type { Payment } from './payment.types';
import { PAYMENT_COLUMNS, SETTLING_COLUMNS, settlingRow, toApiPayment } from './payment.rows';
import { PAYMENT_MOVES, type ActionMove, type AuthorizationMove, type PaymentStatus } from './payment-states';

type Scope = { accountId: string; mode: string };

/** A payment as its follow-up operations read it: with what the API object leaves out. */
export interface OperationRow {
  payment: Payment;
  accountId: string;
  /** The gateway's id of the charge (authorised, captured, or waiting for 3-D Secure). */
  reference: string | null;
  plan: string[];
  returnUrl: string | null;
  /** The operation claimed on it, if any (`capture:<amount>`, `cancel`, `expire`, `resolve`). */
  operation: string | null;
}

/**
 * The writes of what happens to a payment after its charge: capture, cancel, the customer's 3-D
 * Secure answer, the expiry jobs. Each claims the payment first (`pending_operation`, leased on
 * the database's clock like a pending payment's `lease_until`): one operation at a time per
 * payment, so a capture and a cancel never both reach the gateway, and a claim left by a crash
 * is found by recovery, which asks the gateway how it ended. The move's write then clears the
 * claim, guarded by the move's `from` and by the claim itself.
 */
export class PaymentOperationStore {
  constructor(private readonly db: Database) {}

  /**
   * Claims the payment for `operation` while its status is one of `from` and no claim holds it.
   * `takeOver`: recovery's, taking over the same operation's claim once its lease ran out (a
   * new request never takes a lapsed claim over: what the gateway did under it is asked first).
   */
  async claim(scope: Scope | null, id: string, from: readonly PaymentStatus[], operation: string, leaseMs: number, takeOver = false): Promise<boolean> {
    const p = new Params();
    const scoped = scope ? ` AND account_id = ${p.add(scope.accountId)} AND mode = ${p.add(scope.mode)}` : '';
    const free = takeOver ? `pending_operation = ${p.add(operation)} AND lease_until < ${this.db.nowSql}` : 'pending_operation IS NULL';
    const sql = `UPDATE payments SET pending_operation = ${p.add(operation)}, lease_until = ${this.db.nowPlusSql(p.add(Math.ceil(leaseMs)))}
      WHERE id = ${p.add(id)}${scoped} AND status IN (${from.map((s) => p.add(s)).join(', ')}) AND ${free}`;
    return (await this.db.executeAlone(sql, p.values)) === 1;
  }

  /** Gives a claim up (the gateway refused, or could not be reached: nothing happened there). */
  async release(id: string, operation: string): Promise<void> {
    await this.db.executeAlone('UPDATE payments SET pending_operation = NULL WHERE id = $1 AND pending_operation = $2', [id, operation]);
  }

  async read(id: string, scope?: Scope, t?: Transaction): Promise<OperationRow | null> {
    const p = new Params();
    const scoped = scope ? ` AND account_id = ${p.add(scope.accountId)} AND mode = ${p.add(scope.mode)}` : '';
    const [row] = await this.db.select(
      `SELECT ${PAYMENT_COLUMNS}, account_id, gateway_reference, routing_plan, return_url, pending_operation FROM payments WHERE id = ${p.add(id)}${scoped}`,
      p.values, t,
    );
    if (!row) return null;
    return {
      payment: toApiPayment(row),
      accountId: row.account_id as string,
      reference: (row.gateway_reference as string | null) ?? null,
      plan: readJson<string[]>(row.routing_plan, []),
      returnUrl: (row.return_url as string | null) ?? null,
      operation: (row.pending_operation as string | null) ?? null,
    };
  }

  /**
   * The move's write, clearing the claim `operation`: only while the payment is in the move's
   * `from` and still claimed by it; false when not (nothing written). The settling columns are
   * written whole, so the deadlines follow the status (see settlingRow).
   */
  async write(t: Transaction, move: ActionMove | AuthorizationMove, next: Payment, reference: string | null, operation: string, captureWindowDays?: number): Promise<boolean> {
    const p = new Params();
    const row = settlingRow(next, reference, captureWindowDays);
    const sql = `UPDATE payments SET ${SETTLING_COLUMNS.map(([c]) => `${c} = ${p.add(row[c])}`).join(', ')}, pending_operation = NULL
      WHERE id = ${p.add(next.id)} AND ${PAYMENT_MOVES.sqlFrom(move)} AND pending_operation = ${p.add(operation)}`;
    return (await this.db.execute(sql, p.values, t)) === 1;
  }

  /** Challenges past their deadline (the partial index on `action_expires_at`), oldest first. */
  async actionsDue(now: Date, limit: number): Promise<string[]> {
    const rows = await this.db.select(
      `SELECT id FROM payments WHERE status = 'requires_action' AND action_expires_at < $1 ORDER BY action_expires_at LIMIT ${Number(limit)}`, [now],
    );
    return rows.map((r) => r.id as string);
  }

  /** Authorisations past their capture deadline (the partial index on `capture_before`), oldest first. */
  async authorizationsDue(now: Date, limit: number): Promise<string[]> {
    const rows = await this.db.select(
      `SELECT id FROM payments WHERE status = 'requires_capture' AND capture_before < $1 ORDER BY capture_before LIMIT ${Number(limit)}`, [now],
    );
    return rows.map((r) => r.id as string);
  }

  /** Claims whose lease ran out on the database's clock: their holder died or lost the database. */
  async lapsedClaims(limit: number): Promise<Array<{ id: string; operation: string }>> {
    const rows = await this.db.select(
      `SELECT id, pending_operation FROM payments WHERE pending_operation IS NOT NULL AND lease_until < ${this.db.nowSql} ORDER BY lease_until LIMIT ${Number(limit)}`, [],
    );
    return rows.map((r) => ({ id: r.id as string, operation: r.pending_operation as string }));
  }
}
