import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { isoTime, readJson } from '../../db/database';
import { Filter, NESTED_LIST_LIMIT, claimExpiredLease, groupBy, likePattern, newestPerParent, rawPage } from '../../db/list';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { DomainError, invalidState, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { mergeMetadata, parseInput, type Metadata } from '../../core/validation';
import type { Page } from '../../core/pagination';
import type { ChargeRequest, GatewayResult } from '../../gateways/gateway';
import { untilKnown } from '../../gateways/until-known';
import type { EventService } from '../events/event.service';
import type { CustomerService, Customer } from '../customers/customer.service';
import type { FxService } from '../fx/fx.service';
import { originalAmountFor } from '../fx/fx-math';
import type { RoutingService } from '../routing/routing.service';
import type { GatewayConfigService } from '../gateways/gateway-config.service';
import type { PaymentMethodService } from './payment-method.service';
import { describeCard } from '../../core/card';
import { testTokenCard } from '../../gateways/card';
import { createPaymentInput, listPaymentsInput, updatePaymentInput, type CreatePaymentInput } from './payment.inputs';
import { GatewayTransactionLog, type PendingTransaction } from './gateway-transaction.log';
import { errorForLog, type Logger } from '../../logger';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import { adoptedObject, dataEnvelope, keyToRecord, recoveredKey, type DocumentKey, type IdempotencyHandle } from '../../core/idempotency';
import { Params } from '../../db/params';
import { PaymentBatchWrites, type PaymentBatchOptions } from './payment-batch.writes';
import { PENDING_COLUMNS, SETTLING_COLUMNS, columnList, pendingRow, settlingRow } from './payment.rows';

export interface PaymentMethodDetails {
  type: 'card';
  brand: string;
  last4: string;
  expMonth: number | null;
  expYear: number | null;
  fingerprint: string | null;
}

/**
 * One gateway tried. API.md names the fields "gateway, outcome, code, latency"; `gatewayId` and
 * `latencyMs` carry the same values under the names the rest of the API uses.
 */
export interface PaymentAttempt {
  gateway: string;
  gatewayId: string;
  outcome: string;
  code: string | null;
  latency: number;
  latencyMs: number;
}

export interface Payment {
  id: string;
  object: 'payment';
  livemode: boolean;
  customerId: string | null;
  amount: number;
  currency: string;
  originalCurrency: string;
  originalAmount: number | null;
  exchangeRate: string | null;
  paymentMethod: string;
  paymentMethodDetails: PaymentMethodDetails;
  description: string | null;
  metadata: Metadata;
  status: 'pending' | 'succeeded' | 'failed' | 'canceled';
  failureCode: string | null;
  failureMessage: string | null;
  amountRefunded: number;
  refunded: boolean;
  gatewayId: string | null;
  attempts: PaymentAttempt[];
  invoiceId: string | null;
  subscriptionId: string | null;
  checkoutSessionId: string | null;
  paymentLinkId: string | null;
  createdAt: string;
  updatedAt: string;
}

/** Links a payment to what caused it (invoices, checkout sessions, … in later features). */
export interface PaymentLinks {
  invoiceId?: string | null;
  subscriptionId?: string | null;
  checkoutSessionId?: string | null;
  paymentLinkId?: string | null;
}

interface ResolvedMethod {
  source: ChargeRequest['source'];
  details: PaymentMethodDetails;
  restrictTo?: string;
  customerId?: string;
}

const FAILURE_MESSAGES: Record<string, string> = {
  card_declined: 'The card was declined.',
  insufficient_funds: 'The card has insufficient funds.',
  expired_card: 'The card has expired.',
  incorrect_cvc: 'The card security code is incorrect.',
  processing_error: 'The payment could not be processed.',
  gateway_error: 'The payment gateway failed; no charge was made.',
  gateway_unavailable: 'No payment gateway was available; no charge was made.',
  timeout: 'The payment gateway did not answer in time.',
};

export const PAYMENT_COLUMNS =
  'id, mode, customer_id, amount, currency, original_currency, original_amount, exchange_rate, payment_method, payment_method_details, description, metadata, status, failure_code, failure_message, amount_refunded, gateway_id, attempts, invoice_id, subscription_id, checkout_session_id, payment_link_id, created_at, updated_at';

/** Lease time beyond the attempts' budget: the settling write, and delays in the process or database. */
export const LEASE_SLACK_MS = 60_000;

/**
 * Recovery may take a pending payment or refund over once its lease ends: a request starts a
 * gateway call only while the lease still covers the call's budget and the settling write
 * (slow writes or a stalled process use up the slack). Otherwise it leaves the row to recovery.
 */
export function leaseCoversAttempt(now: Date, attemptBudgetMs: number, leaseUntil: Date): boolean {
  return now.getTime() + attemptBudgetMs + LEASE_SLACK_MS / 2 <= leaseUntil.getTime();
}

/**
 * A gateway's "no such charge" is taken as final only for payments at least this old: search
 * indexes (Stripe's) can trail a charge by a minute or more, longer during incidents.
 */
export const NOT_FOUND_FINAL_AFTER_MS = 15 * 60_000;

/** How long recovery waits before asking again about an operation it could not settle. */
export const PENDING_RECOVERY_AFTER_MS = 2 * 60_000;

/** What `POST /v1/payments` answers with: the status its Idempotency-Key's stored response carries. */
export const PAYMENT_CREATED_STATUS = 201;

export class PaymentService {
  constructor(
    private readonly db: Database,
    private readonly events: EventService,
    private readonly customers: CustomerService,
    private readonly fx: FxService,
    private readonly routing: RoutingService,
    private readonly gateways: GatewayConfigService,
    private readonly methods: PaymentMethodService,
    private readonly gtx: GatewayTransactionLog,
    private readonly idempotency: IdempotencyService,
    private readonly fingerprintKey: Buffer,
    private readonly logger: Logger,
    /** Longest one gateway attempt can take (charge, repeat, status lookup). */
    private readonly attemptBudgetMs = 3 * 10_000,
    // One statement of each kind at a time: measured best on a 2-core machine (bench/README.md),
    // since larger batches cost less per payment than statements run side by side.
    batchOptions: PaymentBatchOptions = { maxBatch: 64, maxInFlight: 1 },
  ) {
    this.batch = new PaymentBatchWrites(db, events, gtx, idempotency, {
      onPublishError: (err) => logger.error({ err: errorForLog(err) }, 'event listener failed after a payment was recorded'),
      ...batchOptions,
    });
  }

  private readonly batch: PaymentBatchWrites;

  /**
   * Writes the payment as pending, charges through the routed gateways (never past a
   * decline), then records the outcome, its gateway transactions and its event in one
   * transaction. The response is 201 whatever the outcome.
   */
  async create(ctx: RequestContext, input: unknown, links: PaymentLinks = {}): Promise<Payment> {
    requirePermission(ctx, 'payments', 'write');
    // A retried GraphQL document whose first run made this payment (see DocumentKey).
    const adopted = adoptedObject(ctx, 'pay');
    if (adopted) return this.retrieve(ctx, adopted);
    const data = parseInput(createPaymentInput, input);
    const findCustomer = async (id: string): Promise<Customer> => {
      const found = (await this.customers.lookup(ctx, [id])).get(id);
      if (!found) throw notFound('customer', id, 'customerId');
      return found;
    };
    // A customer named in the request is looked up first: an unknown one is the error to
    // report, whatever the payment method then says about it.
    let customer = data.customerId ? await findCustomer(data.customerId) : undefined;
    const method = await this.resolveMethod(ctx, data);
    const customerId = data.customerId ?? method.customerId ?? null;
    if (customerId && !customer) customer = await findCustomer(customerId);
    const originalCurrency = data.originalCurrency ?? data.currency;
    let exchangeRate: string | null = null;
    let originalAmount: number | null = null;
    if (originalCurrency !== data.currency) {
      exchangeRate = await this.fx.rateFor(ctx, originalCurrency, data.currency);
      originalAmount = originalAmountFor(data.amount, data.currency, originalCurrency, exchangeRate);
    }
    const decision = await this.routing.decide(
      ctx,
      { amount: data.amount, currency: data.currency, country: customer?.country, cardBrand: method.details.brand, metadata: data.metadata },
      method.restrictTo,
    );
    if (decision.gateways.length === 0) {
      throw new DomainError('no_gateway_available', `No enabled gateway can take a ${data.currency} payment for this account`);
    }
    const plan = decision.gateways.slice(0, decision.maxAttempts);
    const now = ctx.clock.now();
    const payment: Payment = {
      id: newId('pay'),
      object: 'payment',
      livemode: ctx.mode === 'live',
      customerId,
      amount: data.amount,
      currency: data.currency,
      originalCurrency,
      originalAmount,
      exchangeRate,
      paymentMethod: data.paymentMethod,
      paymentMethodDetails: method.details,
      description: data.description ?? null,
      metadata: data.metadata ?? {},
      status: 'pending',
      failureCode: null,
      failureMessage: null,
      amountRefunded: 0,
      refunded: false,
      gatewayId: null,
      attempts: [],
      invoiceId: links.invoiceId ?? null,
      subscriptionId: links.subscriptionId ?? null,
      checkoutSessionId: links.checkoutSessionId ?? null,
      paymentLinkId: links.paymentLinkId ?? null,
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
    };
    // Intent first: a crash after this leaves a pending row the recovery job resolves.
    // Recovery leaves the row alone until this request has certainly finished with it.
    const leaseUntil = new Date(now.getTime() + plan.length * this.attemptBudgetMs + LEASE_SLACK_MS);
    await this.insertPending(ctx, payment, JSON.stringify(plan), leaseUntil);
    try {
      const outcome = await this.chargeAlongPlan(ctx, payment, plan, method.source, leaseUntil);
      return await this.finish(ctx, payment, outcome);
    } catch (err) {
      // A gateway may already have charged: never answer 5xx (a retry would charge again).
      // The row stays pending and the recovery job settles it by asking the gateway.
      this.logger.error({ requestId: ctx.requestId, paymentId: payment.id, err: errorForLog(err) }, 'payment left pending for recovery');
      return payment;
    }
  }

  private async chargeAlongPlan(
    ctx: RequestContext,
    payment: Payment,
    plan: string[],
    source: ChargeRequest['source'],
    leaseUntil: Date,
  ): Promise<{ result: GatewayResult | null; gatewayId: string | null; attempts: PaymentAttempt[]; log: PendingTransaction[]; unresolved: boolean }> {
    const attempts: PaymentAttempt[] = [];
    const log: PendingTransaction[] = [];
    let last: { result: GatewayResult; gatewayId: string } | null = null;
    for (let i = 0; i < plan.length; i++) {
      if (!leaseCoversAttempt(ctx.clock.now(), this.attemptBudgetMs, leaseUntil)) {
        this.logger.warn({ requestId: ctx.requestId, paymentId: payment.id, attempt: i + 1 }, 'payment lease too short for another attempt; left to recovery');
        return { result: last?.result ?? null, gatewayId: last?.gatewayId ?? null, attempts, log, unresolved: true };
      }
      const gatewayId = plan[i];
      // A half-open circuit lets exactly one trial through; concurrent payments move on.
      if (!this.routing.tryAcquire(gatewayId)) continue;
      const idempotencyKey = chargeKey(payment.id, i);
      const { gateway, type } = await this.gateways.connector(ctx, gatewayId);
      const request: ChargeRequest = {
        idempotencyKey,
        paymentId: payment.id,
        amount: payment.amount,
        currency: payment.currency,
        source,
        description: payment.description,
        metadata: payment.metadata,
      };
      const { result, known } = await untilKnown(
        () => gateway.charge(request),
        () => gateway.status({ idempotencyKey, kind: 'charge', objectId: payment.id }),
        (call) => log.push({ kind: call.kind === 'operation' ? 'charge' : 'status', gatewayId, gatewayType: type, attempt: i + 1, idempotencyKey, result: call.result }),
      );
      if (!known) {
        // The card may have been charged here: another gateway could charge it a second time,
        // so stop and let recovery ask this gateway again later.
        attempts.push(toAttempt(gatewayId, result));
        this.routing.recordOutcome(gatewayId, 'timeout');
        return { result, gatewayId, attempts, log, unresolved: true };
      }
      this.routing.recordOutcome(gatewayId, result.outcome);
      attempts.push(toAttempt(gatewayId, result));
      last = { result, gatewayId };
      if (result.outcome === 'succeeded' || result.outcome === 'declined') break;
    }
    return { result: last?.result ?? null, gatewayId: last?.gatewayId ?? null, attempts, log, unresolved: false };
  }

  /** Records the outcome, gateway transactions and the event together; only once per payment. */
  private async finish(
    ctx: RequestContext,
    payment: Payment,
    outcome: { result: GatewayResult | null; gatewayId: string | null; attempts: PaymentAttempt[]; log: PendingTransaction[]; unresolved: boolean },
  ): Promise<Payment> {
    const { result } = outcome;
    const status: Payment['status'] = outcome.unresolved ? 'pending' : result?.outcome === 'succeeded' ? 'succeeded' : 'failed';
    const failureCode = status === 'failed' ? (result ? (result.declineCode ?? 'processing_error') : 'gateway_unavailable') : null;
    const done: Payment = {
      ...payment,
      status,
      failureCode,
      failureMessage: failureCode ? (FAILURE_MESSAGES[failureCode] ?? result?.message ?? 'The payment failed.') : null,
      gatewayId: status === 'succeeded' ? outcome.gatewayId : (outcome.gatewayId ?? null),
      attempts: [...payment.attempts, ...outcome.attempts],
      updatedAt: ctx.clock.now().toISOString(),
    };
    const reference = result?.reference ?? null;
    if (this.db.dialect === 'postgres') return this.finishInOneStatement(ctx, done, outcome.log, reference);
    const idem = foldedKey(ctx);
    let stored: { status: number; body: string } | undefined;
    const final = await this.db.transaction(async (t) => {
      const p = new Params();
      const changed = await this.db.execute(outcomeUpdateSql(done, reference, p), p.values, t);
      await this.gtx.insert(ctx, t, { paymentId: payment.id }, outcome.log);
      const eventType = outcomeEvent(done);
      if (changed === 1 && eventType) await this.events.record(ctx, t, eventType, done as unknown as Record<string, unknown>);
      if (changed === 0) return (await this.retrieveRow(ctx, done.id, t)) as Payment;
      if (idem) stored = await this.idempotency.completeIn(t, idem, JSON.stringify(done));
      return done;
    });
    if (idem && stored) idem.completed = stored;
    return final;
  }

  /**
   * PostgreSQL: the outcome, its gateway transactions, its event with the webhook deliveries and
   * the Idempotency-Key's stored response in one statement (atomic on its own), shared with the
   * other payments settling at the same moment (PaymentBatchWrites).
   */
  private async finishInOneStatement(ctx: RequestContext, done: Payment, log: PendingTransaction[], reference: string | null): Promise<Payment> {
    const doneJson = JSON.stringify(done);
    const handle = foldedKey(ctx);
    const idem = handle ? { handle, status: handle.status } : undefined;
    const changed = await this.batch.writeFinal({ ctx, done, doneJson, reference, log, eventType: outcomeEvent(done), idem });
    if (!changed) return (await this.retrieveRow(ctx, done.id)) as Payment;
    // The bytes the statement stored (dataEnvelopeSql over the same JSON).
    if (handle) handle.completed = { status: handle.status, body: dataEnvelope(doneJson) };
    return done;
  }

  /**
   * The pending row. With a folded Idempotency-Key the key is claimed in the same write (one
   * statement on PostgreSQL, one transaction on SQLite); a key already taken ends the request
   * with its stored answer or a 409 before anything is written.
   */
  private async insertPending(ctx: RequestContext, payment: Payment, plan: string, leaseUntil: Date): Promise<void> {
    const idem = ctx.idempotency && !ctx.idempotency.claimed ? ctx.idempotency : undefined;
    // The key and the payment name each other: if this process dies before the settling write,
    // recovery stores the settled payment as the key's response.
    if (idem) idem.objectId = payment.id;
    // A GraphQL request's key records the payment with the same write (no batching: not the hot path).
    const doc = keyToRecord(ctx);
    await this.idempotency.foldedClaim(idem, ctx.keyId, async () => {
      const claimed = this.db.dialect === 'postgres' && !doc
        ? await this.batch.writePending({ ctx, payment, plan, leaseUntil, searchText: searchText(payment), idem })
        : await this.insertPendingAlone(ctx, payment, plan, leaseUntil, idem, doc);
      return claimed ? true : null;
    });
  }

  /**
   * SQLite, and a GraphQL request's payment: the claim of a folded key (if any), or the record of
   * the payment on a document key (if any), and the insert in one transaction; false when the
   * folded key is taken.
   */
  private async insertPendingAlone(
    ctx: RequestContext, payment: Payment, plan: string, leaseUntil: Date, idem?: IdempotencyHandle, doc?: DocumentKey,
  ): Promise<boolean> {
    const p = new Params();
    const row = pendingRow(ctx, payment, plan, leaseUntil, searchText(payment), idem?.key ?? null);
    const insert = `INSERT INTO payments (${columnList(PENDING_COLUMNS)}) VALUES (${PENDING_COLUMNS.map(([c]) => p.add(row[c])).join(', ')})`;
    if (!idem && !doc) {
      await this.db.execute(insert, p.values);
      return true;
    }
    const inserted = await this.db.transaction(async (t) => {
      if (idem) {
        const claimParams = new Params();
        if ((await this.db.execute(this.idempotency.claimSql(idem, claimParams), claimParams.values, t)) !== 1) return false;
      }
      if (doc) await this.idempotency.recordObjectIn(t, doc, payment.id);
      await this.db.execute(insert, p.values, t);
      return true;
    });
    if (doc) doc.objectId = payment.id;
    return inserted;
  }

  /** Whether a payment of the account exists and is no longer pending (see AdoptObject). */
  async settled(ctx: RequestContext, id: string): Promise<boolean> {
    const payment = await this.retrieveRow(ctx, id);
    return payment !== null && payment.status !== 'pending';
  }

  private async resolveMethod(ctx: RequestContext, data: CreatePaymentInput): Promise<ResolvedMethod> {
    if (data.paymentMethod === 'card') {
      if (data.card) {
        const { number, expMonth, expYear, cvc } = data.card;
        return { source: { kind: 'card', card: { number, expMonth, expYear, cvc } }, details: describeCard(data.card, this.fingerprintKey) };
      }
      if (data.customerId) {
        const saved = await this.methods.defaultFor(ctx, data.customerId);
        if (saved) return saved;
      }
      if (ctx.mode === 'live') {
        throw new DomainError('missing_parameter', 'paymentMethod "card" needs a card object or a customer with a saved card', 'card');
      }
      return this.testToken('pm_card_visa');
    }
    if (testTokenCard(data.paymentMethod)) {
      if (ctx.mode === 'live') throw new DomainError('invalid_parameter', 'Test tokens only work with a test key', 'paymentMethod');
      return this.testToken(data.paymentMethod);
    }
    const saved = await this.methods.resolve(ctx, data.paymentMethod);
    if (!saved) throw notFound('payment method', data.paymentMethod, 'paymentMethod');
    if (data.customerId && saved.customerId !== data.customerId) {
      throw new DomainError('invalid_parameter', 'That payment method belongs to another customer', 'paymentMethod');
    }
    return saved;
  }

  private testToken(token: string): ResolvedMethod {
    const card = testTokenCard(token) as { brand: string; last4: string };
    return {
      source: { kind: 'token', token },
      details: { type: 'card', brand: card.brand, last4: card.last4, expMonth: null, expYear: null, fingerprint: null },
    };
  }

  async retrieve(ctx: RequestContext, id: string): Promise<Payment> {
    requirePermission(ctx, 'payments', 'read');
    const payment = await this.retrieveRow(ctx, id);
    if (!payment) throw notFound('payment', id);
    return payment;
  }

  private async retrieveRow(ctx: { accountId: string; mode: string }, id: string, t?: Transaction): Promise<Payment | null> {
    const [row] = await this.db.select(`SELECT ${PAYMENT_COLUMNS} FROM payments WHERE id = $1 AND account_id = $2 AND mode = $3`, [
      id, ctx.accountId, ctx.mode,
    ], t);
    return row ? toApiPayment(row) : null;
  }

  async list(ctx: RequestContext, query: unknown, scope: { subscriptionId?: string } = {}): Promise<Page<Payment>> {
    requirePermission(ctx, 'payments', 'read');
    const input = parseInput(listPaymentsInput, query);
    const filter = new Filter({
      account_id: ctx.accountId, mode: ctx.mode, status: input.status, customer_id: input.customerId, subscription_id: scope.subscriptionId,
    });
    if (input.search) {
      const pattern = likePattern(input.search);
      filter.raw((p) => {
        const like = p(pattern);
        // The customer's current e-mail, not a copy: it may have changed since the payment.
        return `(id = ${p(input.search)} OR search_text LIKE ${like} ESCAPE '\\' OR customer_id IN (
          SELECT c.id FROM customers c WHERE c.account_id = ${p(ctx.accountId)} AND c.mode = ${p(ctx.mode)} AND c.email_normalized LIKE ${like} ESCAPE '\\'))`;
      });
    }
    const { rows, total } = await rawPage<Record<string, unknown>>(this.db, {
      table: 'payments', columns: PAYMENT_COLUMNS, filter, sortColumn: input.sortField === 'amount' ? 'amount' : 'created_at', params: input,
    });
    return { data: rows.map(toApiPayment), total, page: input.page, pageSize: input.pageSize };
  }

  /** The newest payments of several customers at once (at most `limit` each), for DataLoader. */
  async forCustomers(ctx: RequestContext, customerIds: readonly string[], limit = NESTED_LIST_LIMIT): Promise<Map<string, Payment[]>> {
    requirePermission(ctx, 'payments', 'read');
    const rows = await newestPerParent<Record<string, unknown>>(this.db, {
      columns: PAYMENT_COLUMNS, from: 'payments', parentColumn: 'customer_id', accountId: ctx.accountId, mode: ctx.mode, parentIds: customerIds, limit,
    });
    return groupBy(rows.map(toApiPayment), (p) => p.customerId as string);
  }

  async update(ctx: RequestContext, id: string, input: unknown): Promise<Payment> {
    requirePermission(ctx, 'payments', 'write');
    const data = parseInput(updatePaymentInput, input);
    return this.db.transaction(async (t) => {
      const [row] = await this.db.select(
        `SELECT ${PAYMENT_COLUMNS} FROM payments WHERE id = $1 AND account_id = $2 AND mode = $3${this.db.forUpdate}`,
        [id, ctx.accountId, ctx.mode],
        t,
      );
      if (!row) throw notFound('payment', id);
      const current = toApiPayment(row);
      // The request charging it settles from its own copy (the answer, the event, the stored
      // Idempotency-Key response): a change made meanwhile would be lost from all three. The
      // row is locked here, so the status read is the one the settling write will see.
      if (current.status === 'pending') {
        throw invalidState('This payment is still being processed; update it once it has succeeded or failed');
      }
      const description = data.description !== undefined ? data.description : current.description;
      const metadata = data.metadata !== undefined ? mergeMetadata(current.metadata, data.metadata) : current.metadata;
      // Nothing changes: no write, no event, the same updatedAt.
      if (description === current.description && JSON.stringify(metadata) === JSON.stringify(current.metadata)) return current;
      const next: Payment = { ...current, description, metadata, updatedAt: ctx.clock.now().toISOString() };
      await this.db.execute('UPDATE payments SET description = $1, metadata = $2, updated_at = $3, search_text = $4 WHERE id = $5', [
        next.description, JSON.stringify(next.metadata), new Date(next.updatedAt), searchText(next), id,
      ], t);
      await this.events.record(ctx, t, 'payment.updated', next as unknown as Record<string, unknown>);
      return next;
    });
  }

  async gatewayTransactions(ctx: RequestContext, id: string, query: unknown) {
    requirePermission(ctx, 'payments', 'read');
    await this.retrieve(ctx, id);
    return this.gtx.list(ctx, { paymentId: id }, query);
  }

  /** The gateway calls of several payments at once, for DataLoader. */
  async gatewayTransactionsFor(ctx: RequestContext, paymentIds: readonly string[]) {
    requirePermission(ctx, 'payments', 'read');
    return this.gtx.forPayments(ctx, paymentIds);
  }

  /**
   * Resolves payments left pending (a crash or an unanswered gateway) by asking each planned
   * gateway about the charge under the same idempotency key; never charges again.
   */
  async recoverPending(now: Date, limit = 50): Promise<number> {
    const rows = await this.db.select(
      `SELECT ${PAYMENT_COLUMNS}, account_id, routing_plan, idempotency_key FROM payments WHERE status = 'pending' AND lease_until < $1 ORDER BY lease_until LIMIT ${limit}`,
      [now],
    );
    let resolved = 0;
    for (const row of rows) {
      // Claim the row: of several instances exactly one asks the gateways; the others skip it.
      if (!(await claimExpiredLease(this.db, 'payments', row.id as string, now, PENDING_RECOVERY_AFTER_MS))) continue;
      try {
        if (await this.recoverOne(row, now)) resolved++;
      } catch (err) {
        this.logger.error({ paymentId: row.id, err: errorForLog(err) }, 'payment recovery failed; will retry');
      }
    }
    return resolved;
  }

  private async recoverOne(row: Record<string, unknown>, now: Date): Promise<boolean> {
    const payment = toApiPayment(row);
    const ctx: RequestContext = {
      accountId: row.account_id as string, mode: payment.livemode ? 'live' : 'test', permissions: ['*'],
      requestId: `recovery_${payment.id}`, clock: { now: () => now },
    };
    // The creating request's key: the settled payment becomes its answer if that request died.
    if (row.idempotency_key) ctx.idempotency = recoveredKey(ctx, row.idempotency_key as string, PAYMENT_CREATED_STATUS, payment.id);
    const plan = readJson<string[]>(row.routing_plan, []);
    const log: PendingTransaction[] = [];
    const attempts: PaymentAttempt[] = [];
    let found: { result: GatewayResult; gatewayId: string } | null = null;
    let unknown = false;
    const notFoundIsFinal = now.getTime() - new Date(payment.createdAt).getTime() >= NOT_FOUND_FINAL_AFTER_MS;
    for (let i = 0; i < plan.length && !found; i++) {
      const { gateway, type } = await this.gateways.connector(ctx, plan[i]);
      const idempotencyKey = chargeKey(payment.id, i);
      const status = await gateway.status({ idempotencyKey, kind: 'charge', objectId: payment.id });
      log.push({ kind: 'status', gatewayId: plan[i], gatewayType: type, attempt: i + 1, idempotencyKey, result: status });
      if (status.found && status.outcome === 'succeeded') {
        attempts.push(toAttempt(plan[i], status));
        found = { result: status, gatewayId: plan[i] };
      } else if (status.found && (status.outcome === 'declined' || status.outcome === 'retryable_error')) {
        // Declined, or failed without effect (a Stripe intent left needing a payment method):
        // no money moved there, and no later call under this key will change that.
        attempts.push(toAttempt(plan[i], status));
      } else if (!(status.outcome === 'declined' && status.declineCode === 'not_found' && notFoundIsFinal)) {
        unknown = true; // the gateway could not tell (or may not have indexed it yet): ask again later
      }
    }
    if (!found && unknown) return false;
    const result: GatewayResult = found?.result ?? {
      outcome: 'declined', reference: null, declineCode: 'processing_error', message: 'The payment was not completed.', latencyMs: 0, request: {}, response: {},
    };
    await this.finish(ctx, payment, { result, gatewayId: found?.gatewayId ?? null, attempts, log, unresolved: false });
    return true;
  }
}

/** The settling write of a pending payment (nothing if recovery or a racing request settled it first). */
function outcomeUpdateSql(done: Payment, reference: string | null, p: Params): string {
  const row = settlingRow(done, reference);
  return `UPDATE payments SET ${SETTLING_COLUMNS.map(([c]) => `${c} = ${p.add(row[c])}`).join(', ')}
    WHERE id = ${p.add(done.id)} AND status = 'pending'`;
}

/** The event a settled payment records; a payment still pending records none. */
function outcomeEvent(done: Payment): 'payment.succeeded' | 'payment.failed' | undefined {
  if (done.status === 'succeeded') return 'payment.succeeded';
  return done.status === 'failed' ? 'payment.failed' : undefined;
}

/** The request's Idempotency-Key when this service stores the response itself (claimed, not yet stored). */
function foldedKey(ctx: RequestContext): IdempotencyHandle | undefined {
  const handle = ctx.idempotency;
  return handle?.claimed && !handle.completed ? handle : undefined;
}

/** One key per payment and attempt: the same attempt repeated never charges twice. */
export function chargeKey(paymentId: string, attemptIndex: number): string {
  return `${paymentId}_a${attemptIndex + 1}`;
}

function toAttempt(gatewayId: string, r: GatewayResult): PaymentAttempt {
  const latency = Math.round(r.latencyMs);
  return { gateway: gatewayId, gatewayId, outcome: r.outcome, code: r.declineCode, latency, latencyMs: latency };
}

/** Attempts as stored; rows written before the `gateway`/`latency` names get them here. */
function readAttempts(raw: unknown): PaymentAttempt[] {
  const stored = readJson<Array<Partial<PaymentAttempt>>>(raw, []);
  return stored.map((a) => {
    const gatewayId = a.gatewayId ?? a.gateway ?? '';
    const latency = a.latencyMs ?? a.latency ?? 0;
    return { gateway: gatewayId, gatewayId, outcome: a.outcome ?? '', code: a.code ?? null, latency, latencyMs: latency };
  });
}

/** What `search` matches besides the id and the customer's e-mail: description and metadata values. */
function searchText(p: Pick<Payment, 'description' | 'metadata'>): string {
  return [p.description ?? '', ...Object.values(p.metadata)].join('\n').toLowerCase();
}

export function toApiPayment(row: Record<string, unknown>): Payment {
  const amount = Number(row.amount);
  const refundedAmount = Number(row.amount_refunded ?? 0);
  return {
    id: row.id as string,
    object: 'payment',
    livemode: row.mode === 'live',
    customerId: (row.customer_id as string | null) ?? null,
    amount,
    currency: row.currency as string,
    originalCurrency: row.original_currency as string,
    originalAmount: row.original_amount == null ? null : Number(row.original_amount),
    exchangeRate: (row.exchange_rate as string | null) ?? null,
    paymentMethod: row.payment_method as string,
    paymentMethodDetails: readJson<PaymentMethodDetails>(row.payment_method_details, { type: 'card', brand: 'unknown', last4: '', expMonth: null, expYear: null, fingerprint: null }),
    description: (row.description as string | null) ?? null,
    metadata: readJson<Metadata>(row.metadata, {}),
    status: row.status as Payment['status'],
    failureCode: (row.failure_code as string | null) ?? null,
    failureMessage: (row.failure_message as string | null) ?? null,
    amountRefunded: refundedAmount,
    refunded: refundedAmount >= amount,
    gatewayId: (row.gateway_id as string | null) ?? null,
    attempts: readAttempts(row.attempts),
    invoiceId: (row.invoice_id as string | null) ?? null,
    subscriptionId: (row.subscription_id as string | null) ?? null,
    checkoutSessionId: (row.checkout_session_id as string | null) ?? null,
    paymentLinkId: (row.payment_link_id as string | null) ?? null,
    createdAt: isoTime(row.created_at) as string,
    updatedAt: isoTime(row.updated_at) as string,
  };
}
