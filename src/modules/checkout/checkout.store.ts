import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { isStatementRefused, isoTime, readJson } from '../../db/database';
import { WriteBatcher } from '../../db/batcher';
import { Filter, listPage, modelSource } from '../../db/list';
import { Params } from '../../db/params';
import type { Counted, ListOptions, ListParams, PageFor } from '../../core/pagination';
import type { Metadata } from '../../core/validation';
import { idempotencyScopeSql } from '../../core/idempotency';
import type { CtePart } from '../../db/statement';
import type { HoldClaim, HoldFinish, PaymentHoldStore } from '../payments/payment-hold';
import { STORED_KEY_COLUMNS, storedKeyFrom, type StoredKey } from '../idempotency/idempotency.store';
import { CheckoutSessionModel } from './checkout-session.model';
import { PaymentLinkModel } from './payment-link.model';
import { CHECKOUT_SESSION_MOVES, type CheckoutSessionStatus } from './checkout-session-states';

type Scope = { accountId: string; mode: string };
type Row = Record<string, unknown>;

export type CheckoutMode = 'payment' | 'setup' | 'subscription';

/**
 * A session's move as the store writes it (CHECKOUT_SESSION_MOVES): `complete` with what the pay
 * made, only while `token`'s claim holds it when given; `expire`, only once due when `dueOnly`,
 * and never while a pay holds it (a live claim, or a payment that may have moved money: it
 * completes or is released first).
 */
export type SessionMoveWrite =
  | { move: 'complete'; changes: { paymentId?: string | null; paymentMethodId?: string | null; customerId?: string | null }; token?: string }
  | { move: 'expire'; dueOnly: boolean };

/** A session as stored (the API object adds its `url` and reads `status` against the clock). */
export interface CheckoutSessionRecord {
  id: string;
  livemode: boolean;
  accountId: string;
  mode: 'test' | 'live';
  checkoutMode: CheckoutMode;
  status: CheckoutSessionStatus;
  amount: number | null;
  currency: string | null;
  priceId: string | null;
  description: string | null;
  customerId: string | null;
  customerEmail: string | null;
  successUrl: string | null;
  cancelUrl: string | null;
  expiresAt: Date;
  paymentId: string | null;
  paymentMethodId: string | null;
  subscriptionId: string | null;
  invoiceId: string | null;
  payingToken: string | null;
  captureMethod: CaptureMethod;
  metadata: Metadata;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
  expiredAt: string | null;
}

export interface PaymentLinkRecord {
  id: string;
  livemode: boolean;
  accountId: string;
  mode: 'test' | 'live';
  slug: string;
  name: string;
  description: string | null;
  amount: number;
  currency: string;
  priceId: string | null;
  status: 'active' | 'inactive';
  captureMethod: CaptureMethod;
  metadata: Metadata;
  createdAt: string;
  updatedAt: string;
}

/** How the payments a session or a link makes are captured (API.md §9). */
export type CaptureMethod = 'automatic' | 'manual';

/** A payment a session's or a link's pay made, as the page it returns to after 3-D Secure shows it. */
export interface ReturnedPayment {
  id: string;
  status: string;
  failureCode: string | null;
  failureMessage: string | null;
}

/**
 * What pays: the statuses of a session's payments that hold it (money moved, or may have; or the
 * payer is answering a 3-D Secure challenge, which may still take the money).
 */
const HOLDING_PAYMENT_STATUSES = "('pending', 'requires_action', 'requires_capture', 'succeeded', 'requires_review')";

/** A session's columns under the names toSessionRecord reads (a model finder's raw names). */
const SESSION_COLUMNS = [
  'id', 'account_id', 'mode', 'checkout_mode', 'status', 'amount', 'currency', 'price_id', 'description', 'customer_id', 'customer_email',
  'success_url', 'cancel_url', 'expires_at', 'payment_id', 'payment_method_id', 'subscription_id', 'invoice_id', 'paying_token', 'capture_method', 'metadata',
  'created_at', 'updated_at', 'completed_at', 'expired_at',
].map((c) => `s.${c} AS "${c.replace(/_([a-z])/g, (_, l: string) => l.toUpperCase())}"`).join(', ');

/**
 * Checkout sessions' and payment links' statements: the list pages, and the session's pay claim.
 * A pay claims the session for a short lease on the database's clock (`paying_until`, named by
 * `paying_token`); once the pay's payment row exists, that pending payment holds the session
 * instead, so a claim is refused while any payment of the session is pending, succeeded or under
 * review, whatever its lease says. Concurrent pays of one session therefore charge at most once.
 * A payment-mode pay's claim and completion are parts of its payment's writes (PaymentHoldStore):
 * the claim in the statement (PostgreSQL) or transaction (SQLite) that inserts the pending payment,
 * which is inserted only if the claim was made, and the completion with its event in the one that
 * settles it.
 */
export class CheckoutStore implements PaymentHoldStore {
  constructor(private readonly db: Database) {}

  /**
   * The public pay's reads as one bound statement (a measured hot path, bench/checkout-pay): the
   * session, and the pay's Idempotency-Key (`key`, named in the session's account key space)
   * when there is one; null when there is no such session. On PostgreSQL one statement reads for
   * every pay ready at that moment (a WriteBatcher, as the payments' writes are grouped).
   */
  async findSessionForPay(id: string, key: string | undefined): Promise<{ session: CheckoutSessionRecord; key: StoredKey | null } | null> {
    const row = this.db.dialect === 'postgres'
      ? await this.payReads.submit({ id, key: key ?? null })
      : (await this.db.select(
        `SELECT ${SESSION_COLUMNS}, ${STORED_KEY_COLUMNS('k')}
           FROM checkout_sessions s
           LEFT JOIN idempotency_keys k ON k.scope = ${idempotencyScopeSql('s.account_id', 's.mode')} AND k.idempotency_key = $2
          WHERE s.id = $1`,
        [id, key ?? null],
      ))[0];
    if (!row) return null;
    return { session: toSessionRecord(row), key: storedKeyFrom(row) };
  }

  private readonly payReads = new WriteBatcher<{ id: string; key: string | null }, Row | undefined>({
    maxBatch: 64,
    maxInFlight: 2,
    isRefusal: isStatementRefused,
    run: async (items) => {
      // Each row looked up by its primary key (a LATERAL subquery kept apart by OFFSET 0): as a
      // join, the planner scanned both tables whole while their statistics were stale (sessions
      // made in a burst, not yet analyzed).
      const rows = await this.db.select(
        `SELECT r.n AS "readIndex", s.*, k.*
           FROM json_to_recordset($1::json) AS r(n int, id text, key text)
           CROSS JOIN LATERAL (SELECT ${SESSION_COLUMNS} FROM checkout_sessions s WHERE s.id = r.id OFFSET 0) s
           LEFT JOIN LATERAL (SELECT ${STORED_KEY_COLUMNS('k')} FROM idempotency_keys k
                               WHERE k.scope = ${idempotencyScopeSql('s."accountId"', 's.mode')} AND k.idempotency_key = r.key OFFSET 0) k ON true`,
        [this.db.jsonParam(items.map((item, n) => ({ n, ...item })))],
      );
      const byIndex = new Map(rows.map((r) => [Number(r.readIndex), r]));
      return items.map((_, n) => byIndex.get(n));
    },
  });

  async findSession(id: string, scope?: Scope, t?: Transaction): Promise<CheckoutSessionRecord | null> {
    const where: Row = { id };
    if (scope) Object.assign(where, { accountId: scope.accountId, mode: scope.mode });
    const row = await CheckoutSessionModel.findOne({ where, raw: true, transaction: t });
    return row ? toSessionRecord(row as unknown as Row) : null;
  }

  async findSessions(scope: Scope, ids: readonly string[]): Promise<CheckoutSessionRecord[]> {
    const rows = await CheckoutSessionModel.findAll({ where: { id: [...new Set(ids)], accountId: scope.accountId, mode: scope.mode }, raw: true });
    return rows.map((r) => toSessionRecord(r as unknown as Row));
  }

  /**
   * A page of sessions. `open` and `expired` are read against `now`: a session past its time is
   * expired whether or not the expiry job has written it yet.
   */
  listSessions<O extends ListOptions = Counted>(
    scope: Scope,
    input: ListParams<'createdAt' | 'amount'> & { status?: readonly CheckoutSessionStatus[]; mode?: readonly CheckoutMode[]; customerId?: string },
    now: Date,
    options?: O,
  ): Promise<PageFor<CheckoutSessionRecord, O>> {
    const filter = new Filter({ account_id: scope.accountId, mode: scope.mode, customer_id: input.customerId }).anyOf('checkout_mode', input.mode);
    const wanted = new Set(input.status ?? []);
    if (wanted.size > 0 && wanted.size < 3) {
      // An open row past its expiry is expired (the sweep has not reached it yet): the stored
      // statuses that can answer, then the expiry for the open rows when only one of the two is asked.
      const stored = [...wanted].flatMap((s) => (s === 'expired' ? ['expired', 'open'] : [s]));
      filter.anyOf('status', [...new Set(stored)]);
      if (wanted.has('open') && !wanted.has('expired')) filter.raw((p) => `(status <> 'open' OR expires_at > ${p(now)})`);
      if (wanted.has('expired') && !wanted.has('open')) filter.raw((p) => `(status <> 'open' OR expires_at <= ${p(now)})`);
    }
    return listPage(this.db, {
      ...modelSource(CheckoutSessionModel), filter, params: input, sortColumns: { createdAt: 'created_at', amount: 'amount' }, toApi: (row: Row) => toSessionRecord(row),
    }, options);
  }

  /**
   * Claims an open, unexpired session for one pay; false when it is not open, has expired
   * (`now`, the service's clock), or another pay holds it (a live claim, or a payment of the
   * session pending, succeeded or under review).
   */
  claimForPay(scope: Scope, id: string, token: string, leaseMs: number, now: Date): Promise<boolean> {
    return this.claim(scope, id, token, leaseMs, now);
  }

  private async claim(scope: Scope, id: string, token: string, leaseMs: number, now: Date, t?: Transaction, again = false): Promise<boolean> {
    const p = new Params();
    const ownClaim = again ? ` OR paying_token = ${p.add(token)}` : '';
    const changed = await this.db.execute(
      `UPDATE checkout_sessions SET paying_until = ${this.db.nowPlusSql(p.add(Math.ceil(leaseMs)))}, paying_token = ${p.add(token)}, updated_at = ${p.add(now)}
        WHERE id = ${p.add(id)} AND account_id = ${p.add(scope.accountId)} AND mode = ${p.add(scope.mode)}
          AND status = 'open' AND expires_at > ${p.add(now)}
          AND (paying_until IS NULL OR paying_until < ${this.db.nowSql}${ownClaim})
          AND NOT EXISTS (SELECT 1 FROM payments WHERE checkout_session_id = ${p.add(id)} AND status IN ${HOLDING_PAYMENT_STATUSES})`,
      p.values,
      t,
    );
    return changed === 1;
  }

  // The pay's claim and its finish as parts of the payments' statements (PaymentHoldStore):
  // a payment-mode pay claims its session with its payment's pending row and completes it (or
  // gives it back) with the payment's settling write. The same rules as claimForPay and complete;
  // a claim already this pay's (its token) may be taken again (a retry of the same write).
  // `s.id = ANY (ARRAY(…))` names the rows by primary key up front: joined to the batch's rows
  // alone (estimated at 100), the planner scanned every session instead (bench/README.md).

  claimPart(name: string, source: string): CtePart {
    return {
      name,
      sql: `UPDATE checkout_sessions s SET paying_until = ${this.db.nowPlusSql('h.hold_lease_ms')}, paying_token = h.hold_token, updated_at = h.hold_now
        FROM ${source} h
       WHERE s.id = ANY (ARRAY(SELECT a.hold_id FROM ${source} a)) AND s.id = h.hold_id AND s.account_id = h.account_id AND s.mode = h.mode
         AND s.status = 'open' AND s.expires_at > h.hold_now
         AND (s.paying_until IS NULL OR s.paying_until < ${this.db.nowSql} OR s.paying_token = h.hold_token)
         AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.checkout_session_id = s.id AND p.status IN ${HOLDING_PAYMENT_STATUSES})
      RETURNING h.payment_id`,
    };
  }

  completePart(name: string, source: string): CtePart {
    return {
      name,
      sql: `UPDATE checkout_sessions s SET ${CHECKOUT_SESSION_MOVES.sqlSet('complete', 'h.hold_now')}, updated_at = h.hold_now, paying_until = NULL, paying_token = NULL,
             payment_id = h.payment_id, customer_id = COALESCE(h.customer_id, s.customer_id)
        FROM ${source} h
       WHERE s.id = ANY (ARRAY(SELECT a.id FROM ${source} a)) AND s.id = h.id AND ${CHECKOUT_SESSION_MOVES.sqlFrom('complete', 's.status')} AND s.paying_token = h.hold_token
      RETURNING s.id`,
    };
  }

  releasePart(name: string, source: string): CtePart {
    return {
      name,
      sql: `UPDATE checkout_sessions s SET paying_until = NULL, paying_token = NULL
        FROM ${source} h
       WHERE s.id = ANY (ARRAY(SELECT a.id FROM ${source} a)) AND s.id = h.id AND s.status = 'open' AND s.paying_token = h.hold_token`,
    };
  }

  async claimIn(t: Transaction, claim: HoldClaim): Promise<boolean> {
    return this.claim({ accountId: claim.accountId, mode: claim.mode }, claim.holdId, claim.token, claim.leaseMs, claim.now, t, true);
  }

  completeIn(t: Transaction, finish: HoldFinish): Promise<boolean> {
    return this.move(t, finish.holdId, finish.now, { move: 'complete', changes: { paymentId: finish.paymentId, customerId: finish.customerId }, token: finish.token });
  }

  releaseIn(t: Transaction, finish: HoldFinish): Promise<void> {
    return this.releaseClaim(finish.holdId, finish.token, t);
  }

  /** Gives a claim back (the pay failed, or charged nothing): the session can be paid again. */
  async releaseClaim(id: string, token: string, t?: Transaction): Promise<void> {
    await this.db.execute(
      "UPDATE checkout_sessions SET paying_until = NULL, paying_token = NULL WHERE id = $1 AND paying_token = $2 AND status = 'open'",
      [id, token],
      t,
    );
  }

  /**
   * Gives back a claim whose payment has ended without paying (a failed 3-D Secure challenge, or
   * a payment the merchant canceled): the claim `token` holds, a payment of the session was made
   * under it (created at or after the claim, which stamps the session's `updated_at`), and no
   * payment holds the session any more. A claim whose pay has not written its payment yet is
   * left alone. True when it was given back.
   */
  async releaseSpentClaim(id: string, token: string): Promise<boolean> {
    const changed = await this.db.execute(
      `UPDATE checkout_sessions SET paying_until = NULL, paying_token = NULL
        WHERE id = $1 AND paying_token = $2 AND status = 'open'
          AND EXISTS (SELECT 1 FROM payments p WHERE p.checkout_session_id = $1 AND p.created_at >= checkout_sessions.updated_at)
          AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.checkout_session_id = $1 AND p.status IN ${HOLDING_PAYMENT_STATUSES})`,
      [id, token],
    );
    return changed === 1;
  }

  /**
   * A session's move in `t` (CHECKOUT_SESSION_MOVES: its status, its stamp and the status it
   * starts from), its claim cleared; the caller records the event there too. False when the
   * session could not make it (see SessionMoveWrite).
   */
  async move(t: Transaction, id: string, now: Date, write: SessionMoveWrite): Promise<boolean> {
    const p = new Params();
    const sets = [CHECKOUT_SESSION_MOVES.sqlSet(write.move, p.add(now)), `updated_at = ${p.add(now)}`, 'paying_until = NULL', 'paying_token = NULL'];
    const conditions = [`id = ${p.add(id)}`, CHECKOUT_SESSION_MOVES.sqlFrom(write.move)];
    if (write.move === 'complete') {
      const { changes, token } = write;
      if (changes.paymentId !== undefined) sets.push(`payment_id = ${p.add(changes.paymentId)}`);
      if (changes.paymentMethodId !== undefined) sets.push(`payment_method_id = ${p.add(changes.paymentMethodId)}`);
      if (changes.customerId) sets.push(`customer_id = ${p.add(changes.customerId)}`);
      if (token !== undefined) conditions.push(`paying_token = ${p.add(token)}`);
    } else {
      if (write.dueOnly) conditions.push(`expires_at <= ${p.add(now)}`);
      conditions.push(
        `(paying_until IS NULL OR paying_until < ${this.db.nowSql})`,
        `NOT EXISTS (SELECT 1 FROM payments WHERE checkout_session_id = ${p.add(id)} AND status IN ${HOLDING_PAYMENT_STATUSES})`,
      );
    }
    const changed = await this.db.execute(`UPDATE checkout_sessions SET ${sets.join(', ')} WHERE ${conditions.join(' AND ')}`, p.values, t);
    return changed === 1;
  }

  /** Open sessions due to expire at `now` (the expiry job's batch), oldest due first. */
  async dueForExpiry(now: Date, limit: number): Promise<Array<{ id: string; accountId: string; mode: 'test' | 'live' }>> {
    return this.db.select(
      // A session a payment holds cannot expire: it is left out, or it would head every batch.
      `SELECT id, account_id AS "accountId", mode FROM checkout_sessions s WHERE status = 'open' AND expires_at <= $1
        AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.checkout_session_id = s.id AND p.status IN ${HOLDING_PAYMENT_STATUSES})
        ORDER BY expires_at LIMIT $2`,
      [now, limit],
    );
  }

  /**
   * Open sessions a pay claimed whose claim has run out (its request ended without settling the
   * session, or died): the reconciling job finishes them from their payments.
   */
  async lapsedClaims(limit: number): Promise<Array<{ id: string; accountId: string; mode: 'test' | 'live' }>> {
    return this.db.select(
      // A session whose payment is still pending, under review or waiting for the payer's 3-D
      // Secure answer waits for it: left out, or it would head every batch.
      `SELECT id, account_id AS "accountId", mode FROM checkout_sessions s
        WHERE status = 'open' AND paying_until IS NOT NULL AND paying_until < ${this.db.nowSql}
          AND NOT EXISTS (SELECT 1 FROM payments p WHERE p.checkout_session_id = s.id AND p.status IN ('pending', 'requires_review', 'requires_action'))
        ORDER BY paying_until LIMIT $1`,
      [limit],
    );
  }

  /**
   * The payment `paymentId` when a pay of this session or link made it (the page a 3-D Secure
   * challenge returns to names it); null for any other payment.
   */
  async paymentOf(paymentId: string, owner: { checkoutSessionId: string } | { paymentLinkId: string }): Promise<ReturnedPayment | null> {
    const [column, ownerId] = 'checkoutSessionId' in owner ? ['checkout_session_id', owner.checkoutSessionId] : ['payment_link_id', owner.paymentLinkId];
    const rows = await this.db.select(
      `SELECT id, status, failure_code AS "failureCode", failure_message AS "failureMessage" FROM payments WHERE id = $1 AND ${column} = $2`,
      [paymentId, ownerId],
    );
    const row = rows[0];
    return row ? { id: row.id as string, status: row.status as string, failureCode: (row.failureCode as string | null) ?? null, failureMessage: (row.failureMessage as string | null) ?? null } : null;
  }

  /** The session's payments that hold it, newest first (succeeded before pending before review). */
  async holdingPayments(id: string, t?: Transaction): Promise<Array<{ id: string; status: string; customerId: string | null }>> {
    return this.db.select(
      `SELECT id, status, customer_id AS "customerId" FROM payments WHERE checkout_session_id = $1 AND status IN ${HOLDING_PAYMENT_STATUSES} ORDER BY created_at DESC, id DESC`,
      [id],
      t,
    );
  }

  // Payment links

  async findLink(where: { id?: string; slug?: string }, scope?: Scope, t?: Transaction): Promise<PaymentLinkRecord | null> {
    const conditions: Row = { ...where };
    if (scope) Object.assign(conditions, { accountId: scope.accountId, mode: scope.mode });
    const row = await PaymentLinkModel.findOne({ where: conditions, raw: true, transaction: t });
    return row ? toLinkRecord(row as unknown as Row) : null;
  }

  async findLinks(scope: Scope, ids: readonly string[]): Promise<PaymentLinkRecord[]> {
    const rows = await PaymentLinkModel.findAll({ where: { id: [...new Set(ids)], accountId: scope.accountId, mode: scope.mode }, raw: true });
    return rows.map((r) => toLinkRecord(r as unknown as Row));
  }

  listLinks<O extends ListOptions = Counted>(
    scope: Scope,
    input: ListParams<'createdAt' | 'amount'> & { status?: ReadonlyArray<'active' | 'inactive'>; search?: string },
    options?: O,
  ): Promise<PageFor<PaymentLinkRecord, O>> {
    const filter = new Filter({ account_id: scope.accountId, mode: scope.mode }).anyOf('status', input.status).search(['search_text'], input.search);
    return listPage(this.db, {
      ...modelSource(PaymentLinkModel), filter, params: input, sortColumns: { createdAt: 'created_at', amount: 'amount' }, toApi: (row: Row) => toLinkRecord(row),
    }, options);
  }
}

export function toSessionRecord(row: Row): CheckoutSessionRecord {
  return {
    id: row.id as string,
    livemode: row.mode === 'live',
    accountId: row.accountId as string,
    mode: row.mode as 'test' | 'live',
    checkoutMode: row.checkoutMode as CheckoutMode,
    status: row.status as CheckoutSessionStatus,
    amount: row.amount === null || row.amount === undefined ? null : Number(row.amount),
    currency: (row.currency as string | null) ?? null,
    priceId: (row.priceId as string | null) ?? null,
    description: (row.description as string | null) ?? null,
    customerId: (row.customerId as string | null) ?? null,
    customerEmail: (row.customerEmail as string | null) ?? null,
    successUrl: (row.successUrl as string | null) ?? null,
    cancelUrl: (row.cancelUrl as string | null) ?? null,
    expiresAt: new Date(isoTime(row.expiresAt) as string),
    paymentId: (row.paymentId as string | null) ?? null,
    paymentMethodId: (row.paymentMethodId as string | null) ?? null,
    subscriptionId: (row.subscriptionId as string | null) ?? null,
    invoiceId: (row.invoiceId as string | null) ?? null,
    payingToken: (row.payingToken as string | null) ?? null,
    captureMethod: (row.captureMethod as CaptureMethod | undefined) ?? 'automatic',
    metadata: readJson<Metadata>(row.metadata, {}),
    createdAt: isoTime(row.createdAt) as string,
    updatedAt: isoTime(row.updatedAt) as string,
    completedAt: isoTime(row.completedAt),
    expiredAt: isoTime(row.expiredAt),
  };
}

export function toLinkRecord(row: Row): PaymentLinkRecord {
  return {
    id: row.id as string,
    livemode: row.mode === 'live',
    accountId: row.accountId as string,
    mode: row.mode as 'test' | 'live',
    slug: row.slug as string,
    name: row.name as string,
    description: (row.description as string | null) ?? null,
    amount: Number(row.amount),
    currency: row.currency as string,
    priceId: (row.priceId as string | null) ?? null,
    status: row.status as 'active' | 'inactive',
    captureMethod: (row.captureMethod as CaptureMethod | undefined) ?? 'automatic',
    metadata: readJson<Metadata>(row.metadata, {}),
    createdAt: isoTime(row.createdAt) as string,
    updatedAt: isoTime(row.updatedAt) as string,
  };
}
