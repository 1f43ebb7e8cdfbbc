import DataLoader from 'dataloader';
import type { Database } from '../../db/database';
import { NESTED_LIST_LIMIT, groupBy } from '../../db/list';
import type { Mode, RequestContext } from '../../core/context';
import { requirePermission, systemContext } from '../../core/context';
import { DomainError, invalidState, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { mergeMetadata, parseInput } from '../../core/validation';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';
import type { ChargeRequest, GatewayResult } from '../../connectors/connector';
import type { EventService } from '../events/event.service';
import type { CustomerService, CustomerRecord } from '../customers/customer.service';
import type { FxService } from '../fx/fx.service';
import { originalAmountFor } from '../fx/fx-math';
import type { RoutingService } from '../routing/routing.service';
import type { GatewayConfigService } from '../gateways/gateway-config.service';
import type { PaymentMethodService, ResolvedPaymentMethod } from './payment-method.service';
import { describeCard } from '../../core/card';
import { testTokenCard } from '../../connectors/card';
import { createPaymentInput, listPaymentsInput, updatePaymentInput, type CreatePaymentInput } from './payment.inputs';
import type { GatewayTransaction, GatewayTransactionStore, PendingTransaction } from './gateway-transaction.store';
import { errorForLog, type Logger } from '../../logger';
import { inSpan } from '../../observability/spans';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import type { IdempotencyStore } from '../idempotency/idempotency.store';
import { claimFor, recoveredKey, type IdempotencyKey, type ObjectClaim } from '../../core/idempotency';
import type { PaymentBatchOptions } from './payment-batch.store';
import type { LeaseKeeper } from './lease-keeper';
import { LeaseStore } from './lease.store';
import { PaymentCharger, chargeKey, chargeRequest, settledPayment, toAttempt, type ChargeOutcome } from './payment-charging';
import { PaymentStore } from './payment.store';
import type { PaymentHold, PaymentHoldStore } from './payment-hold';
import { NOT_FOUND_FINAL_AFTER_MS, UNKNOWN_OUTCOME_REVIEW_AFTER_MS, recoverRows } from './pending-recovery';
import { PAYMENT_MOVES, movedPayment } from './payment-states';
import { returnUrlChecker } from './public-urls';
import { PAYMENT_RETURN_PATH } from './payment-actions';
import { PAYMENT_CREATED_STATUS, type Payment, type PaymentAttempt, type PaymentLinks, type PaymentMethodDetails } from './payment.types';

export type { Payment, PaymentAttempt, PaymentLinks, PaymentMethodDetails } from './payment.types';
export { NOT_FOUND_FINAL_AFTER_MS, UNKNOWN_OUTCOME_REVIEW_AFTER_MS } from './pending-recovery';

type Scope = { accountId: string; mode: Mode };
type ScopedId = Scope & { id: string };

/**
 * A loader of rows by id within an account and mode: the ids asked for in the same tick are read
 * together, one `read` per scope; nothing is cached (each load reads the row as it is then).
 */
function scopedReads<V>(read: (scope: Scope, ids: string[]) => Promise<Map<string, V>>): DataLoader<ScopedId, V | null, string> {
  const keyOf = (k: ScopedId) => `${k.accountId}|${k.mode}|${k.id}`;
  return new DataLoader<ScopedId, V | null, string>(async (keys) => {
    const found = new Map<string, V>();
    await Promise.all([...groupBy(keys, (k) => `${k.accountId}|${k.mode}`).values()].map(async (group) => {
      const scope = { accountId: group[0].accountId, mode: group[0].mode };
      for (const [id, value] of await read(scope, group.map((k) => k.id))) found.set(keyOf({ ...scope, id }), value);
    }));
    return keys.map((k) => found.get(keyOf(k)) ?? null);
  }, { cache: false, maxBatchSize: 500 });
}

/** A pending payment recovery took over (PaymentStore.pendingPastLease). */
interface RecoveredPayment {
  payment: Payment;
  accountId: string;
  plan: string[];
  idempotencyKey: string | null;
  /** How long it has been pending, on the database's clock. */
  pendingMs: number;
}

interface ResolvedMethod {
  source: ChargeRequest['source'];
  details: PaymentMethodDetails;
  restrictTo?: string;
  customerId?: string;
}

/**
 * Payments: the operation a request runs (create, and reading or updating what it made) and the
 * recovery of payments whose request died. Persistence is the store's (PaymentStore), charging
 * along the routing plan the charger's (PaymentCharger).
 */
export class PaymentService {
  private readonly store: PaymentStore;
  private readonly leaseStore: LeaseStore;
  private readonly charger: PaymentCharger;

  constructor(
    private readonly db: Database,
    private readonly events: EventService,
    private readonly customers: CustomerService,
    private readonly fx: FxService,
    private readonly routing: RoutingService,
    private readonly gateways: GatewayConfigService,
    private readonly methods: PaymentMethodService,
    private readonly gtx: GatewayTransactionStore,
    private readonly idempotency: IdempotencyService,
    keys: IdempotencyStore,
    private readonly fingerprintKey: Buffer,
    private readonly logger: Logger,
    /** Heartbeats on the pending payments this process is charging (see LeaseKeeper). */
    private readonly leases: LeaseKeeper,
    batchOptions?: PaymentBatchOptions,
  ) {
    this.store = new PaymentStore(db, events, gtx, keys, logger, batchOptions);
    this.leaseStore = new LeaseStore(db);
    this.charger = new PaymentCharger(routing, gateways, leases, logger);
    this.customerReads = scopedReads((scope, ids) => this.customers.lookup(scope, ids));
    this.methodReads = scopedReads((scope, ids) => this.methods.resolveMany(scope, ids));
  }

  /**
   * The reads a payment's checks make (its customer, its saved method), shared by payments
   * created at the same moment (a billing batch's, concurrent requests'): one statement per
   * account and mode for all that asked in the same tick, never cached between them.
   */
  private readonly customerReads: DataLoader<ScopedId, CustomerRecord | null, string>;
  private readonly methodReads: DataLoader<ScopedId, ResolvedPaymentMethod | null, string>;

  /**
   * Writes the payment as pending, charges through the routed gateways (never past a
   * decline), then records the outcome, its gateway transactions and its event in one
   * transaction. The response is 201 whatever the outcome.
   *
   * `idem`, the request's Idempotency-Key, is claimed with the pending row and answered with
   * the settled payment; a key already answered throws IdempotentReplay before anything is
   * written. Input refused before that leaves the key unused.
   *
   * `hold`, a row the payment pays for (a checkout session: see PaymentHold), is claimed with the
   * pending row (HoldRefused, nothing written, when it cannot be) and finished with the settling
   * write: completed with its event on success, released on failure.
   */
  create(ctx: RequestContext, input: unknown, idem?: IdempotencyKey, links: PaymentLinks = {}, presetId?: string, hold?: PaymentHold): Promise<Payment> {
    return inSpan('payment.create', { 'payorch.account_id': ctx.accountId, 'payorch.mode': ctx.mode }, async (span) => {
      const payment = await this.createPayment(ctx, input, idem, links, presetId, hold);
      span.setAttributes({ 'payorch.payment.id': payment.id, 'payorch.payment.status': payment.status });
      return payment;
    });
  }

  private async createPayment(ctx: RequestContext, input: unknown, idem: IdempotencyKey | undefined, links: PaymentLinks, presetId?: string, hold?: PaymentHold): Promise<Payment> {
    requirePermission(ctx, 'payments', 'write');
    const data = parseInput(createPaymentInput, input);
    const returnUrl = data.returnUrl === undefined ? null : returnUrlChecker(ctx.mode)(data.returnUrl, 'returnUrl');
    // What is checked before the key is claimed: a retry refused here by state that moved on
    // since its first try succeeded gets that first answer instead (beforeClaim).
    const { customerId, method, originalCurrency, exchangeRate, originalAmount, plan } = await this.idempotency.beforeClaim(idem, async () => {
      const findCustomer = async (id: string): Promise<CustomerRecord> => {
        const found = await this.customerReads.load({ accountId: ctx.accountId, mode: ctx.mode, id });
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
      return { customerId, method, originalCurrency, exchangeRate, originalAmount, plan };
    });
    const now = ctx.clock.now();
    const payment: Payment = {
      // An invoice names its charge before making it (its settle then finds it by id).
      id: presetId ?? newId('pay'),
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
      receiptEmail: data.receiptEmail ?? null,
      metadata: data.metadata ?? {},
      status: PAYMENT_MOVES.rule('create').to,
      failureCode: null,
      failureMessage: null,
      captureMethod: data.captureMethod ?? 'automatic',
      amountCapturable: 0,
      amountCaptured: 0,
      nextAction: null,
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
    // Intent first: a crash after this leaves a pending row the recovery job resolves. The
    // lease is renewed while this request works on the payment; recovery takes over only once
    // it has run out (this process died, or lost the database for longer than a lease).
    const leaseStart = this.leases.leaseStart();
    // The key and the payment name each other: if this process dies before the settling write,
    // recovery stores the settled payment as the key's answer.
    const claim = idem ? claimFor(idem, payment.id, PAYMENT_CREATED_STATUS) : undefined;
    await this.insertPending(ctx, payment, JSON.stringify(plan), claim, idem?.requester, hold, returnUrl);
    const release = this.leases.hold('payments', payment.id, leaseStart);
    try {
      const outcome = await this.chargeAlongPlan(ctx, payment, plan, method.source);
      return await this.finish(ctx, payment, outcome, claim, hold);
    } catch (err) {
      // A gateway may already have charged: never answer 5xx (a retry would charge again).
      // The row stays pending and the recovery job settles it by asking the gateway.
      this.logger.error({ requestId: ctx.requestId, paymentId: payment.id, err: errorForLog(err) }, 'payment left pending for recovery');
      if (claim) await this.idempotency.answerIfRunning(claim, JSON.stringify(payment));
      return payment;
    } finally {
      release();
    }
  }

  // The three steps of a charge, each a seam where a crash can be simulated (tests replace them).
  private async insertPending(
    ctx: RequestContext, payment: Payment, plan: string, claim: ObjectClaim | undefined, requester: string | undefined, hold?: PaymentHold, returnUrl: string | null = null,
  ): Promise<void> {
    // A taken key ends the request with its stored answer or a 409, before anything is written.
    await this.idempotency.foldedClaim(claim, requester, async () => ((await this.store.insertPending(ctx, payment, plan, this.leases.leaseMs, claim, hold, returnUrl)) ? true : null));
  }

  private chargeAlongPlan(ctx: RequestContext, payment: Payment, plan: string[], source: ChargeRequest['source']): Promise<ChargeOutcome> {
    return this.charger.chargeAlongPlan(ctx, payment, plan, source, this.gatewayReturnUrl(payment.id));
  }

  /**
   * Where a gateway sends the customer after a 3-D Secure challenge: this service's return route,
   * which reads how the challenge ended and then sends the customer on (PaymentActions.returned).
   * The same for every attempt of a payment, so recovery rebuilds the very request.
   */
  private gatewayReturnUrl(paymentId: string): string | null {
    return this.publicBase ? `${this.publicBase()}${PAYMENT_RETURN_PATH}${encodeURIComponent(paymentId)}` : null;
  }

  private publicBase: (() => string) | undefined;

  /** The service's public address, for the gateways' return URL (PublicUrls.base); once, at startup. */
  usePublicBase(base: () => string): void {
    this.publicBase = base;
  }

  /** Records the outcome, gateway transactions, the event and the key's answer together; only once per payment. */
  private finish(ctx: RequestContext, payment: Payment, outcome: ChargeOutcome, claim: ObjectClaim | undefined, hold?: PaymentHold): Promise<Payment> {
    const { move, done } = settledPayment(payment, outcome, ctx.clock.now());
    return this.store.settle(ctx, move, done, outcome.log, outcome.result?.reference ?? null, claim, hold, outcome.captureWindowDays);
  }

  /** Registers the store of the rows payments may hold (see PaymentHold); once, at startup. */
  useHolds(holds: PaymentHoldStore): void {
    this.store.useHolds(holds);
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
    const saved = await this.methodReads.load({ accountId: ctx.accountId, mode: ctx.mode, id: data.paymentMethod });
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
    const payment = await this.store.find(ctx, id);
    if (!payment) throw notFound('payment', id);
    return payment;
  }

  async list<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, scope: { subscriptionId?: string } = {}, options?: O): Promise<PageFor<Payment, O>> {
    requirePermission(ctx, 'payments', 'read');
    return this.store.list(ctx, parseInput(listPaymentsInput, query), scope, options);
  }

  /** The newest payments of several customers at once (at most `limit` each, older than the payment `after`), for DataLoader. */
  async forCustomers(ctx: RequestContext, customerIds: readonly string[], limit = NESTED_LIST_LIMIT, after?: string): Promise<Map<string, Payment[]>> {
    requirePermission(ctx, 'payments', 'read');
    return this.store.forCustomers(ctx, customerIds, limit, after);
  }

  /** The newest payments of several invoices (Invoice.payments, batched). */
  async forInvoices(ctx: RequestContext, invoiceIds: readonly string[], limit = NESTED_LIST_LIMIT): Promise<Map<string, Payment[]>> {
    requirePermission(ctx, 'payments', 'read');
    return this.store.forInvoices(ctx, invoiceIds, limit);
  }

  async update(ctx: RequestContext, id: string, input: unknown): Promise<Payment> {
    requirePermission(ctx, 'payments', 'write');
    const data = parseInput(updatePaymentInput, input);
    return this.db.transaction(async (t) => {
      const current = await this.store.findForUpdate(ctx, id, t);
      if (!current) throw notFound('payment', id);
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
      await this.store.writeDetails(t, next);
      await this.events.record(ctx, t, 'payment.updated', next);
      return next;
    });
  }

  async gatewayTransactions<O extends ListOptions = Counted>(ctx: RequestContext, id: string, query: unknown, options?: O) {
    requirePermission(ctx, 'payments', 'read');
    await this.retrieve(ctx, id);
    return this.gtx.list(ctx, { paymentId: id }, query, options);
  }

  /** The account's gateway calls (`GET /v1/gateway-transactions`), filtered by payment, refund, gateway and outcome. */
  async listGatewayTransactions<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, options?: O) {
    requirePermission(ctx, 'payments', 'read');
    return this.gtx.listAll(ctx, query, options);
  }

  /** The gateway calls of a subscription's payments, newest first. */
  async gatewayTransactionsOfSubscription<O extends ListOptions = Counted>(ctx: RequestContext, subscriptionId: string, query: unknown, options?: O) {
    requirePermission(ctx, 'payments', 'read');
    return this.gtx.listForSubscription(ctx, subscriptionId, query, options);
  }

  /** The gateway calls of several payments at once, for DataLoader. */
  async gatewayTransactionsFor(ctx: RequestContext, paymentIds: readonly string[], limit = NESTED_LIST_LIMIT) {
    requirePermission(ctx, 'payments', 'read');
    return this.gtx.forPayments(ctx, paymentIds, limit);
  }

  /** Folds the payment count deltas written since the last fold into the counts (PaymentCountStore.fold). */
  foldCounts(): Promise<number> {
    return this.store.counts.fold();
  }

  /**
   * Resolves payments left pending (a crash or an unanswered gateway): the attempt that timed
   * out is first repeated under its idempotency key (where the gateway replays stored answers
   * and the request can be rebuilt), then each planned gateway is asked about the charge under
   * its key; never charges twice. Unknown past UNKNOWN_OUTCOME_REVIEW_AFTER_MS: `requires_review`.
   * Leases and ages are on the database's clock (LeaseStore); `now` is the business time the
   * changes are stamped with. Payments this process's own requests are still charging are never
   * taken, whatever their lease says (LeaseKeeper.heldIds): a jump of the database's clock (the
   * host's, on SQLite) must not fail a charge its request is still waiting for.
   */
  async recoverPending(now: Date, limit = 50): Promise<number> {
    const rows = await this.store.pendingPastLease(limit, this.leases.heldIds('payments'));
    return recoverRows(this.leaseStore, this.logger, { table: 'payments', idField: 'paymentId' }, rows, (row) => this.recoverOne(row, now));
  }

  private async recoverOne(row: RecoveredPayment, now: Date): Promise<boolean> {
    const ctx = systemContext(row.accountId, row.payment.livemode ? 'live' : 'test', now, `recovery_${row.payment.id}`);
    // Every call recovery makes is a gateway transaction, conclusive or not: written with the
    // settling write when there is one, else on its own (nothing else changes then).
    const log: PendingTransaction[] = [];
    let settling = false;
    try {
      const settled = await this.askGateways(ctx, row, now, log, () => {
        settling = true;
      });
      if (!settled) await this.gtx.record(ctx, { paymentId: row.payment.id }, log);
      return settled;
    } catch (err) {
      // A settling write that failed may still have committed (a connection lost after COMMIT):
      // its calls are not written a second time.
      if (!settling) await this.recordAfterFailure(ctx, { paymentId: row.payment.id }, log);
      throw err;
    }
  }

  /** The calls of a recovery round that failed midway; a failure to write them is logged, not thrown over the first. */
  private async recordAfterFailure(ctx: RequestContext, owner: { paymentId: string }, log: PendingTransaction[]): Promise<void> {
    try {
      await this.gtx.record(ctx, owner, log);
    } catch (err) {
      this.logger.error({ ...owner, calls: log.length, err: errorForLog(err) }, 'payment recovery: its gateway calls could not be recorded');
    }
  }

  /**
   * One recovery round of a payment: asks its gateways (each call pushed to `log`) and settles
   * it when they tell (`settling` is called just before the settling write); false when it stays pending.
   */
  private async askGateways(
    ctx: RequestContext,
    row: RecoveredPayment,
    now: Date,
    log: PendingTransaction[],
    settling: () => void,
  ): Promise<boolean> {
    const { payment, plan } = row;
    // The creating request's key: the settled payment becomes its answer if that request died.
    const claim = row.idempotencyKey ? recoveredKey(ctx, row.idempotencyKey, PAYMENT_CREATED_STATUS, payment.id) : undefined;
    const attempts: PaymentAttempt[] = [];
    let found: { result: GatewayResult; gatewayId: string; captureWindowDays?: number } | null = null;
    let unknown = false;
    // How long it has been pending, on the database's clock: a jump of this instance's clock
    // must not make a gateway's "not found" final while the charge may be on its way.
    const ageMs = row.pendingMs;
    const notFoundIsFinal = ageMs >= NOT_FOUND_FINAL_AFTER_MS;
    const timedOutAt = timedOutAttemptIndex(payment, plan);
    const unresolvedAt = (i: number, via: 'repeat' | 'status', result: GatewayResult, reason: 'unknown' | 'unavailable' | 'not_found_yet') =>
      this.logger.warn(
        { paymentId: payment.id, gatewayId: plan[i], attempt: i + 1, via, reason, outcome: result.outcome, code: result.declineCode },
        'payment recovery: the gateway did not tell the charge outcome',
      );
    for (let i = 0; i < plan.length && !found; i++) {
      const { gateway, type, captureWindowDays } = await this.gateways.connector(ctx, plan[i]);
      const idempotencyKey = chargeKey(payment.id, i);
      // First the charge itself again, under its key: the gateway answers with the stored result
      // and never charges twice. Only for the attempt known to have been sent (never a gateway
      // the request did not reach: that would charge it now) and within the gateway's replay window.
      if (i === timedOutAt && gateway.chargeReplayWindowMs !== undefined && ageMs < gateway.chargeReplayWindowMs) {
        const source = await this.originalSource(ctx, payment);
        if (source) {
          const repeat = await gateway.charge(chargeRequest(payment, i, source, this.gatewayReturnUrl(payment.id)));
          log.push({ kind: 'charge', gatewayId: plan[i], gatewayType: type, attempt: i + 1, idempotencyKey, result: repeat });
          if (repeat.outcome === 'succeeded' || repeat.outcome === 'declined' || repeat.outcome === 'requires_action') {
            attempts.push(toAttempt(plan[i], repeat));
            if (repeat.outcome !== 'declined') found = { result: repeat, gatewayId: plan[i], captureWindowDays };
            continue;
          }
          // A timeout, or an error the gateway does not store: says nothing about the first call.
          unresolvedAt(i, 'repeat', repeat, repeat.outcome === 'timeout' ? 'unknown' : 'unavailable');
        }
      }
      const status = await gateway.status({ idempotencyKey, kind: 'charge', objectId: payment.id });
      log.push({ kind: 'status', gatewayId: plan[i], gatewayType: type, attempt: i + 1, idempotencyKey, result: status });
      // Charged, authorised, or waiting for the customer's 3-D Secure answer there.
      if (status.found && (status.outcome === 'succeeded' || status.outcome === 'requires_action')) {
        attempts.push(toAttempt(plan[i], status));
        found = { result: status, gatewayId: plan[i], captureWindowDays };
      } else if (status.found && (status.outcome === 'declined' || status.outcome === 'retryable_error')) {
        // Declined, or failed without effect (a Stripe intent left needing a payment method):
        // no money moved there, and no later call under this key will change that.
        attempts.push(toAttempt(plan[i], status));
      } else if (!(status.outcome === 'declined' && status.declineCode === 'not_found' && (notFoundIsFinal || status.definitive))) {
        unknown = true; // the gateway could not tell (or may not have indexed it yet): ask again later
        unresolvedAt(i, 'status', status, status.found ? 'unknown' : status.outcome === 'declined' ? 'not_found_yet' : 'unavailable');
      }
    }
    if (!found && unknown) {
      if (ageMs < UNKNOWN_OUTCOME_REVIEW_AFTER_MS) return false;
      // Asked long enough: a person checks it at the gateway. Recovery stops here (it takes
      // pending payments only); the key's answer and the event go with the status.
      const review = movedPayment(payment, 'review', now, { failureCode: null, failureMessage: null, attempts: [...payment.attempts, ...attempts] });
      settling();
      const stored = await this.store.settle(ctx, 'review', review, log, null, claim);
      if (stored.status === 'requires_review') {
        this.logger.warn({ paymentId: payment.id, ageMs }, 'payment outcome still unknown; marked requires_review, recovery stops asking');
      }
      return true;
    }
    const result: GatewayResult = found?.result ?? {
      outcome: 'declined', reference: null, declineCode: 'processing_error', message: 'The payment was not completed.', latencyMs: 0, request: {}, response: {},
    };
    settling();
    await this.finish(ctx, payment, { result, gatewayId: found?.gatewayId ?? null, attempts, log, unresolved: false, captureWindowDays: found?.captureWindowDays }, claim);
    return true;
  }

  /**
   * The source the payment was charged with, when it can be rebuilt exactly: a test token or a
   * saved payment method. Card numbers are never stored, and `card` without one charged the
   * customer's default of the moment, which may have changed since.
   */
  private async originalSource(ctx: RequestContext, payment: Payment): Promise<ChargeRequest['source'] | null> {
    if (payment.paymentMethod === 'card') return null;
    if (testTokenCard(payment.paymentMethod)) return { kind: 'token', token: payment.paymentMethod };
    return (await this.methods.resolve(ctx, payment.paymentMethod))?.source ?? null;
  }

  /** Several payments by id (GraphQL's `node` and links, batched); ids of another account or mode are not found. */
  async findMany(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, Payment>> {
    requirePermission(ctx, 'payments', 'read');
    return new Map((await this.store.findMany(ctx, ids)).map((p) => [p.id, p]));
  }

  /** The newest payments of several subscriptions (BillingSubscription.payments, batched). */
  async forSubscriptions(ctx: RequestContext, subscriptionIds: readonly string[], limit = NESTED_LIST_LIMIT): Promise<Map<string, Payment[]>> {
    requirePermission(ctx, 'payments', 'read');
    return this.store.forSubscriptions(ctx, subscriptionIds, limit);
  }

  /** Several gateway calls by id (GraphQL's `node`, batched): read as a payment's calls are, with payments:read. */
  async findGatewayTransactions(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, GatewayTransaction>> {
    requirePermission(ctx, 'payments', 'read');
    return new Map((await this.gtx.findMany(ctx, ids)).map((tx) => [tx.id, tx]));
  }

  /** The newest gateway calls of several subscriptions' payments (BillingSubscription.gatewayTransactions, batched). */
  async gatewayTransactionsForSubscriptions(ctx: RequestContext, subscriptionIds: readonly string[], limit = NESTED_LIST_LIMIT): Promise<Map<string, GatewayTransaction[]>> {
    requirePermission(ctx, 'payments', 'read');
    return this.gtx.forSubscriptions(ctx, subscriptionIds, limit);
  }
}

/**
 * The plan index of the attempt that timed out, which the charging request recorded before it
 * left the payment pending (it stops at the first unknown outcome, so it is the last attempt);
 * -1 when none was recorded (the request died) or the gateway appears twice in the plan.
 */
function timedOutAttemptIndex(payment: Payment, plan: string[]): number {
  const last = payment.attempts[payment.attempts.length - 1];
  if (!last || last.outcome !== 'timeout') return -1;
  const i = plan.indexOf(last.gateway);
  return i !== -1 && plan.lastIndexOf(last.gateway) === i ? i : -1;
}
