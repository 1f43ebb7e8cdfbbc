import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { readJson, readTime } from '../../db/database';
import { Filter, NESTED_LIST_LIMIT, groupBy, likePattern, listPage, newestPerParent } from '../../db/list';
import { Params } from '../../db/params';
import type { RequestContext } from '../../core/context';
import type { ObjectClaim } from '../../core/idempotency';
import type { Counted, ListOptions, ListParams, PageFor } from '../../core/pagination';
import { errorForLog, type Logger } from '../../logger';
import { pendingForMs } from './lease.store';
import type { EventService } from '../events/event.service';
import type { IdempotencyStore } from '../idempotency/idempotency.store';
import type { GatewayTransactionStore, PendingTransaction } from './gateway-transaction.store';
import { PaymentCountStore } from './payment-count.store';
import { PaymentBatchStore, type FinalWrite, type PaymentBatchOptions } from './payment-batch.store';
import { HoldRefused, type HoldClaim, type PaymentHold, type PaymentHoldStore } from './payment-hold';
import { PAYMENT_COLUMNS, PENDING_COLUMNS, SETTLING_COLUMNS, columnList, pendingRow, searchText, settlingRow, toApiPayment } from './payment.rows';
import type { Payment, PaymentAttempt } from './payment.types';
import type { Attributes } from '@opentelemetry/api';
import { inSpan } from '../../observability/spans';
import { PAYMENT_MOVES, movedPayment, type SettlingMove } from './payment-states';

type Scope = { accountId: string; mode: string };

/** The payments list's own filters (listPaymentsInput), besides paging and the ranges. */
export interface PaymentFilters {
  status?: readonly string[];
  customerId?: string;
  search?: string;
  currency?: readonly string[];
  amountGte?: number;
  amountLte?: number;
  failureCode?: string;
  gatewayId?: string;
  invoiceId?: string;
  subscriptionId?: string;
  checkoutSessionId?: string;
  paymentLinkId?: string;
  metadata?: Record<string, string>;
}

/** The filters the kept count (PaymentCountStore) cannot answer: any of them makes the list count. */
const COUNTED_FILTERS: ReadonlyArray<keyof PaymentFilters> = [
  'customerId', 'search', 'currency', 'amountGte', 'amountLte', 'failureCode', 'gatewayId', 'invoiceId', 'subscriptionId', 'checkoutSessionId', 'paymentLinkId', 'metadata',
];

/**
 * Where payments are read and written. Creating and settling a payment are measured hot paths:
 * named, bound statements, batched on PostgreSQL (PaymentBatchStore, one statement for every
 * payment ready at that moment), on SQLite a transaction each, those waiting together committed
 * as one (Database.transaction's `group`); the dialects differ only here.
 * Each write claims or answers the payment's Idempotency-Key in the same statement or transaction.
 */
export class PaymentStore {
  private readonly batch: PaymentBatchStore;
  /** The list's totals, kept by the payments table's triggers. */
  readonly counts: PaymentCountStore;
  private holds: PaymentHoldStore | undefined;

  constructor(
    private readonly db: Database,
    private readonly events: EventService,
    private readonly gtx: GatewayTransactionStore,
    private readonly keys: IdempotencyStore,
    private readonly logger: Logger,
    // One statement of each kind at a time: measured best on a 2-core machine (bench/README.md),
    // since larger batches cost less per payment than statements run side by side.
    batchOptions: PaymentBatchOptions = { maxBatch: 64, maxInFlight: 1 },
  ) {
    this.counts = new PaymentCountStore(db, logger);
    this.batch = new PaymentBatchStore(db, events, gtx, keys, {
      onPublishError: (err) => logger.error({ err: errorForLog(err) }, 'event listener failed after a payment was recorded'),
      ...batchOptions,
    });
  }

  /** The store of the rows payments hold (see PaymentHold), registered once at startup. */
  useHolds(holds: PaymentHoldStore): void {
    this.holds = holds;
    this.batch.useHolds(holds);
  }

  /**
   * The pending row, leased for `leaseMs` from the database's now (see LeaseStore). With an
   * Idempotency-Key the key is claimed in the same write; false when the key is already held
   * (nothing written: see IdempotencyService.foldedClaim). With a hold, the hold is claimed in
   * the same write too; HoldRefused when it could not be (no payment written).
   */
  insertPending(
    ctx: RequestContext, payment: Payment, plan: string, leaseMs: number, claim: ObjectClaim | undefined, hold?: PaymentHold, returnUrl: string | null = null,
  ): Promise<boolean> {
    return inSpan('payment.insert_pending', this.spanAttributes(payment), () => this.writePending(ctx, payment, plan, leaseMs, claim, hold, returnUrl));
  }

  private async writePending(
    ctx: RequestContext, payment: Payment, plan: string, leaseMs: number, claim: ObjectClaim | undefined, hold?: PaymentHold, returnUrl: string | null = null,
  ): Promise<boolean> {
    const holdClaim: HoldClaim | undefined = hold && {
      paymentId: payment.id, holdId: hold.id, token: hold.token, leaseMs: hold.leaseMs, accountId: ctx.accountId, mode: ctx.mode, now: hold.now,
    };
    if (this.db.dialect !== 'postgres') return this.insertPendingAlone(ctx, payment, plan, leaseMs, claim, holdClaim, returnUrl);
    const written = await this.batch.writePending({ ctx, payment, plan, leaseMs, searchText: searchText(payment), idem: claim, hold: holdClaim, returnUrl });
    if (written === 'hold_refused') throw new HoldRefused(holdClaim?.holdId as string);
    return written;
  }

  /**
   * SQLite: the claims of the key and the hold (if any) and the insert in one transaction; false
   * when the key is taken. Grouped with the other payments' writes waiting at the same moment:
   * everything it reads, it reads in its transaction.
   */
  private async insertPendingAlone(
    ctx: RequestContext, payment: Payment, plan: string, leaseMs: number, claim?: ObjectClaim, hold?: HoldClaim, returnUrl: string | null = null,
  ): Promise<boolean> {
    const p = new Params();
    const row = pendingRow(ctx, payment, plan, searchText(payment), claim?.key ?? null, returnUrl);
    const values = PENDING_COLUMNS.map(([c]) => p.add(row[c])).join(', ');
    const insert = `INSERT INTO payments (${columnList(PENDING_COLUMNS)}, lease_until, pending_since)
      VALUES (${values}, ${this.db.nowPlusSql(p.add(Math.ceil(leaseMs)))}, ${this.db.nowSql})`;
    return this.db.transaction(async (t) => {
      if (claim && !(await this.keys.claim(t, claim))) return false;
      // Refused: thrown, so the key's claim rolls back with it.
      if (hold && !(await this.requireHolds().claimIn(t, hold))) throw new HoldRefused(hold.holdId);
      await this.db.execute(insert, p.values, t);
      return true;
    }, { group: true });
  }

  private requireHolds(): PaymentHoldStore {
    if (!this.holds) throw new Error('a payment names a hold but no hold store is registered (PaymentService.useHolds)');
    return this.holds;
  }

  /**
   * The settling write, one of the SETTLING_MOVES (PAYMENT_MOVES: the status written, the event
   * written with it): the outcome (or `requires_review`, recovery's giving up), the gateway calls,
   * the event (with its webhook deliveries) and the key's answer, together and only while the
   * payment is still pending. Returns the
   * payment as stored (as another writer settled it, when one got there first; see settledElsewhere).
   */
  settle(
    ctx: RequestContext, move: SettlingMove, done: Payment, log: PendingTransaction[], reference: string | null, claim: ObjectClaim | undefined, hold?: PaymentHold,
    captureWindowDays?: number,
  ): Promise<Payment> {
    return inSpan('payment.settle', { ...this.spanAttributes(done), 'payorch.payment.move': move }, () => this.writeSettled(ctx, move, done, log, reference, claim, hold, captureWindowDays));
  }

  /** A payment write's span: which payment, on which database (on SQLite no statement has a span of its own). */
  private spanAttributes(payment: Payment): Attributes {
    return { 'payorch.payment.id': payment.id, 'db.system.name': this.db.dialect === 'postgres' ? 'postgresql' : 'sqlite' };
  }

  private async writeSettled(
    ctx: RequestContext, move: SettlingMove, done: Payment, log: PendingTransaction[], reference: string | null, claim: ObjectClaim | undefined, hold?: PaymentHold,
    captureWindowDays?: number,
  ): Promise<Payment> {
    // The status written is the move's, whatever `done` says.
    if (done.status !== PAYMENT_MOVES.rule(move).to) done = { ...done, ...PAYMENT_MOVES.columns(move, done.updatedAt) };
    const eventType = PAYMENT_MOVES.rule(move).event ?? undefined;
    const finish = holdFinish(move, done, hold);
    if (this.db.dialect === 'postgres') {
      const changed = await this.batch.writeFinal({ ctx, done, doneJson: JSON.stringify(done), reference, log, eventType, idem: claim, hold: finish, captureWindowDays });
      return changed ? done : this.db.transaction((t) => this.settledElsewhere(ctx, t, move, done, reference, claim));
    }
    return this.db.transaction(async (t) => {
      const p = new Params();
      const changed = await this.db.execute(outcomeUpdateSql(move, done, reference, p, captureWindowDays), p.values, t);
      await this.gtx.insert(ctx, t, { paymentId: done.id }, log);
      if (changed === 1 && eventType) await this.events.record(ctx, t, eventType, done);
      if (changed === 0) return this.settledElsewhere(ctx, t, move, done, reference, claim);
      if (claim) await this.keys.answer(t, claim, claim.status, JSON.stringify(done));
      if (finish?.outcome === 'complete') {
        if (await this.requireHolds().completeIn(t, finish)) await this.events.recordPayload(ctx, t, finish.event);
      } else if (finish) {
        await this.requireHolds().releaseIn(t, finish);
      }
      return done;
    }, { group: true });
  }

  /**
   * A settling write that found the payment no longer pending: another writer settled it first
   * (recovery, or a racing request). Returns it as stored, except when the gateway reports a
   * charge succeeded on a payment recorded as not charged (recovery failed it, its gateway's
   * "not found" looking final): that money moved, so the success is never dropped. The payment
   * becomes `requires_review`, with the charge's gateway, reference and attempts and its event,
   * in this transaction, and a warning is logged. The payment's Idempotency-Key (`claim`, the
   * key that created it), when its answer is that payment as recorded (`failed`, stored by
   * recovery), answers the `requires_review` payment from then on, in the same transaction: a
   * retry replaying `failed` could lead its client to charge again.
   */
  private async settledElsewhere(
    ctx: RequestContext, t: Transaction, move: SettlingMove, done: Payment, reference: string | null, claim: ObjectClaim | undefined,
  ): Promise<Payment> {
    const stored = (await this.findForUpdate(ctx, done.id, t)) as Payment;
    if (move !== 'succeed') return stored;
    if (stored.status === 'requires_review') {
      this.logger.warn({ paymentId: done.id, gatewayId: done.gatewayId, reference }, 'gateway reported a charge succeeded for a payment already in requires_review');
      return stored;
    }
    if (!PAYMENT_MOVES.can(stored.status, 'review_late_success')) return stored;
    const review = movedPayment(stored, 'review_late_success', new Date(done.updatedAt), {
      failureCode: null, failureMessage: null, gatewayId: done.gatewayId, attempts: mergeAttempts(stored.attempts, done.attempts),
    });
    const p = new Params();
    const row = settlingRow(review, reference);
    await this.db.execute(
      `UPDATE payments SET ${SETTLING_COLUMNS.map(([c]) => `${c} = ${p.add(c === 'gateway_reference' ? reference : row[c])}`).join(', ')}
        WHERE id = ${p.add(done.id)} AND status = ${p.add(stored.status)}`,
      p.values,
      t,
    );
    const { event } = PAYMENT_MOVES.rule('review_late_success');
    if (event) await this.events.record(ctx, t, event, review);
    if (claim) await this.keys.reviseAnswer(t, claim, claim.status, stored.status, JSON.stringify(review));
    this.logger.warn(
      { paymentId: done.id, gatewayId: done.gatewayId, reference, recordedAs: stored.status, failureCode: stored.failureCode },
      'gateway reported a charge succeeded for a payment recorded as not charged; marked requires_review',
    );
    return review;
  }

  async find(scope: Scope, id: string, t?: Transaction): Promise<Payment | null> {
    const [row] = await this.db.select(`SELECT ${PAYMENT_COLUMNS} FROM payments WHERE id = $1 AND account_id = $2 AND mode = $3`, [id, scope.accountId, scope.mode], t);
    return row ? toApiPayment(row) : null;
  }

  /** The payment, locked for the rest of the transaction (PostgreSQL; SQLite has one writer). */
  async findForUpdate(scope: Scope, id: string, t: Transaction): Promise<Payment | null> {
    const [row] = await this.db.select(
      `SELECT ${PAYMENT_COLUMNS} FROM payments WHERE id = $1 AND account_id = $2 AND mode = $3${this.db.forUpdate}`,
      [id, scope.accountId, scope.mode],
      t,
    );
    return row ? toApiPayment(row) : null;
  }

  async writeDetails(t: Transaction, next: Payment): Promise<void> {
    await this.db.execute('UPDATE payments SET description = $1, metadata = $2, updated_at = $3, search_text = $4 WHERE id = $5', [
      next.description, JSON.stringify(next.metadata), new Date(next.updatedAt), searchText(next), next.id,
    ], t);
  }

  async list<O extends ListOptions = Counted>(
    scope: Scope,
    input: ListParams<'createdAt' | 'amount'> & PaymentFilters,
    filters: { subscriptionId?: string } = {},
    options?: O,
  ): Promise<PageFor<Payment, O>> {
    const filter = new Filter({
      account_id: scope.accountId, mode: scope.mode, customer_id: input.customerId, subscription_id: filters.subscriptionId,
    })
      .anyOf('status', input.status)
      .anyOf('currency', input.currency)
      .eq('failure_code', input.failureCode)
      .eq('gateway_id', input.gatewayId)
      .eq('invoice_id', input.invoiceId)
      .eq('checkout_session_id', input.checkoutSessionId)
      .eq('payment_link_id', input.paymentLinkId);
    if (input.subscriptionId !== filters.subscriptionId) filter.eq('subscription_id', input.subscriptionId);
    if (input.amountGte !== undefined) filter.raw((p) => `amount >= ${p(input.amountGte)}`);
    if (input.amountLte !== undefined) filter.raw((p) => `amount <= ${p(input.amountLte)}`);
    const metadata = input.metadata && Object.keys(input.metadata).length > 0 ? input.metadata : undefined;
    if (metadata) filter.raw((p) => this.metadataHolds(metadata, p));
    if (input.search) {
      const pattern = likePattern(input.search);
      const search = input.search;
      filter.raw((p) => {
        const like = p(pattern);
        // The customer's current e-mail, not a copy: it may have changed since the payment.
        return `(id = ${p(search)} OR search_text LIKE ${like} ESCAPE '\\' OR customer_id IN (
          SELECT c.id FROM customers c WHERE c.account_id = ${p(scope.accountId)} AND c.mode = ${p(scope.mode)} AND c.email_normalized LIKE ${like} ESCAPE '\\'))`;
      });
    }
    // Filtered by status at most: the kept count (PaymentCountStore), not a count of up to every payment of the account.
    // An empty `search` filters nothing.
    const kept = COUNTED_FILTERS.every((name) => input[name] === undefined || input[name] === '') && filters.subscriptionId === undefined;
    return listPage(this.db, {
      table: 'payments', columns: PAYMENT_COLUMNS, filter, params: input, sortColumns: { createdAt: 'created_at', amount: 'amount' }, toApi: toApiPayment,
      total: kept ? () => this.counts.total(scope, input.status) : undefined,
    }, options);
  }

  /**
   * `metadata` holds every key and value of `wanted`. PostgreSQL: containment of the JSON
   * column, which the GIN index of payments with metadata answers (migration 0027; the
   * `metadata <> '{}'` term is its predicate, written as the index has it). SQLite: each pair
   * looked up in json_each, whatever characters the key has (no index reaches inside the JSON
   * there; the account's list index bounds the rows read).
   */
  private metadataHolds(wanted: Record<string, string>, p: (value: unknown) => string): string {
    if (this.db.dialect === 'postgres') return `metadata <> '{}' AND metadata::jsonb @> ${p(JSON.stringify(wanted))}::jsonb`;
    return Object.entries(wanted)
      .map(([key, value]) => `EXISTS (SELECT 1 FROM json_each(metadata) m WHERE m.key = ${p(key)} AND m.value = ${p(value)})`)
      .join(' AND ');
  }

  /** The newest payments of several customers at once (at most `limit` each, older than the payment `after`). */
  async forCustomers(scope: Scope, customerIds: readonly string[], limit = NESTED_LIST_LIMIT, after?: string): Promise<Map<string, Payment[]>> {
    const rows = await newestPerParent<Record<string, unknown>>(this.db, {
      columns: PAYMENT_COLUMNS, from: 'payments', parentColumn: 'customer_id', accountId: scope.accountId, mode: scope.mode, parentIds: customerIds, limit, after,
    });
    return groupBy(rows.map(toApiPayment), (p) => p.customerId as string);
  }

  /** The newest payments of several invoices at once (at most `limit` each), for DataLoader. */
  async forInvoices(scope: Scope, invoiceIds: readonly string[], limit = NESTED_LIST_LIMIT): Promise<Map<string, Payment[]>> {
    const rows = await newestPerParent<Record<string, unknown>>(this.db, {
      columns: PAYMENT_COLUMNS, from: 'payments', parentColumn: 'invoice_id', accountId: scope.accountId, mode: scope.mode, parentIds: invoiceIds, limit,
    });
    return groupBy(rows.map(toApiPayment), (p) => p.invoiceId as string);
  }

  /**
   * Pending payments whose lease has run out on the database's clock, oldest lease first, with
   * what recovery needs: `pendingMs`, how long each has been pending, on that clock too. Those of
   * `held` (the ones this process's requests are still working on) are left out, whatever their
   * lease says.
   */
  async pendingPastLease(limit: number, held: readonly string[] = []): Promise<Array<{ id: string; payment: Payment; accountId: string; plan: string[]; idempotencyKey: string | null; pendingMs: number }>> {
    const now = this.db.nowSql;
    const rows = await this.db.select(
      `SELECT ${PAYMENT_COLUMNS}, account_id, routing_plan, idempotency_key, pending_since, ${now} AS db_now
         FROM payments WHERE status = 'pending' AND lease_until < ${now} AND ${this.db.notInJsonList('id', '$1')}
        ORDER BY lease_until LIMIT ${Number(limit)}`,
      [JSON.stringify(held)],
    );
    return rows.map((row) => ({
      id: row.id as string,
      payment: toApiPayment(row),
      accountId: row.account_id as string,
      plan: readJson<string[]>(row.routing_plan, []),
      idempotencyKey: (row.idempotency_key as string | null) ?? null,
      pendingMs: pendingForMs(readTime(row.db_now), readTime(row.pending_since)),
    }));
  }

  /** Several payments of the account and mode by id, in one statement whatever their number (GraphQL's `node` and links). */
  async findMany(scope: Scope, ids: readonly string[]): Promise<Payment[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.select(
      `SELECT ${PAYMENT_COLUMNS} FROM payments WHERE ${this.db.inJsonList('id', '$1')} AND account_id = $2 AND mode = $3`,
      [JSON.stringify([...new Set(ids)]), scope.accountId, scope.mode],
    );
    return rows.map(toApiPayment);
  }

  /** The newest payments of several subscriptions at once (at most `limit` each), for DataLoader (payments_subscription_idx). */
  async forSubscriptions(scope: Scope, subscriptionIds: readonly string[], limit = NESTED_LIST_LIMIT): Promise<Map<string, Payment[]>> {
    const rows = await newestPerParent<Record<string, unknown>>(this.db, {
      columns: PAYMENT_COLUMNS, from: 'payments', parentColumn: 'subscription_id', accountId: scope.accountId, mode: scope.mode, parentIds: subscriptionIds, limit,
    });
    return groupBy(rows.map(toApiPayment), (p) => p.subscriptionId as string);
  }
}

/** The settling write of a pending payment (nothing if recovery or a racing request settled it first). */
function outcomeUpdateSql(move: SettlingMove, done: Payment, reference: string | null, p: Params, captureWindowDays?: number): string {
  const row = settlingRow(done, reference, captureWindowDays);
  return `UPDATE payments SET ${SETTLING_COLUMNS.map(([c]) => `${c} = ${p.add(row[c])}`).join(', ')}
    WHERE id = ${p.add(done.id)} AND ${PAYMENT_MOVES.sqlFrom(move)}`;
}

/** The attempts recorded first, then those of the late writer not among them. */
function mergeAttempts(stored: PaymentAttempt[], late: PaymentAttempt[]): PaymentAttempt[] {
  const known = new Set(stored.map((a) => JSON.stringify(a)));
  return [...stored, ...late.filter((a) => !known.has(JSON.stringify(a)))];
}

/**
 * What the settling write does to the payment's hold: completes it (with its event) when the
 * payment succeeded or was authorised (manual capture: paid, from the payer's side), releases it
 * when the charge failed; nothing while the outcome is unknown, under review or waiting for the
 * payer's 3-D Secure answer (the payment row holds it, and its holder finishes it from the
 * payment later).
 */
function holdFinish(move: SettlingMove, done: Payment, hold: PaymentHold | undefined): FinalWrite['hold'] {
  if (!hold) return undefined;
  const base = { holdId: hold.id, token: hold.token, paymentId: done.id, customerId: done.customerId, now: new Date(done.updatedAt) };
  if (move === 'succeed' || move === 'authorize') {
    const event = hold.completion(done);
    return { ...base, outcome: 'complete', event, json: JSON.stringify(event.object) };
  }
  if (move === 'fail') return { ...base, outcome: 'release' };
  return undefined;
}
