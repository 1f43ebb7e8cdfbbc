import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { NESTED_LIST_LIMIT } from '../../db/list';
import type { RequestContext } from '../../core/context';
import { requirePermission, systemContext } from '../../core/context';
import { DomainError, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { formatAmount } from '../../core/money';
import { parseInput } from '../../core/validation';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';
import type { GatewayResult } from '../../connectors/connector';
import { untilKnown } from '../../connectors/until-known';
import type { EventService } from '../events/event.service';
import type { GatewayConfigService } from '../gateways/gateway-config.service';
import { createRefundInput, listRefundsInput } from './payment.inputs';
import type { Payment } from './payment.types';
import { NOT_FOUND_FINAL_AFTER_MS, recoverRows } from './pending-recovery';
import type { LeaseKeeper } from './lease-keeper';
import { LeaseStore } from './lease.store';
import { RefundStore, type RefundExportFilters } from './refund.store';
import type { KeysetCursor } from '../../db/keyset';
import type { Refund } from './refund.types';
import { REFUND_MOVES, movedRefund, type RefundMove } from './refund-states';
import type { GatewayTransactionStore, PendingTransaction } from './gateway-transaction.store';
import { errorForLog, type Logger } from '../../logger';
import { claimFor, recoveredKey, type IdempotencyKey, type ObjectClaim } from '../../core/idempotency';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';
import type { IdempotencyService } from '../idempotency/idempotency.service';

export type { Refund } from './refund.types';

/** What creating a refund answers with: the status its Idempotency-Key's stored response carries. */
const REFUND_CREATED_STATUS = IDEMPOTENT_OPERATIONS.createRefund.status;

/**
 * Refunds reserve their amount on the payment row inside a transaction (the UPDATE only
 * succeeds while the total stays within the payment), so concurrent refunds can never exceed
 * what was captured; a failed refund gives its reservation back.
 */
export class RefundService {
  private readonly store: RefundStore;
  private readonly leaseStore: LeaseStore;

  constructor(
    private readonly db: Database,
    private readonly events: EventService,
    private readonly gateways: GatewayConfigService,
    private readonly gtx: GatewayTransactionStore,
    private readonly idempotency: IdempotencyService,
    private readonly logger: Logger,
    /** Heartbeats on the pending refunds this process is making (see LeaseKeeper). */
    private readonly leases: LeaseKeeper,
  ) {
    this.store = new RefundStore(db);
    this.leaseStore = new LeaseStore(db);
  }

  async create(ctx: RequestContext, input: unknown, idem?: IdempotencyKey, paymentIdFromPath?: string): Promise<Refund> {
    requirePermission(ctx, 'refunds', 'write');
    const body = (input ?? {}) as Record<string, unknown>;
    refusePaymentIdBesidePath(body, paymentIdFromPath);
    const data = parseInput(createRefundInput, paymentIdFromPath !== undefined ? { ...body, paymentId: paymentIdFromPath } : body);
    const refundId = newId('re');
    // The Idempotency-Key is claimed in the reservation's transaction and the refund names it:
    // if this process dies before settling, recovery stores the settled refund as its answer.
    const claim = idem ? claimFor(idem, refundId, REFUND_CREATED_STATUS) : undefined;
    // Read before the reservation writes the lease (LeaseKeeper.leaseStart).
    const leaseStart = this.leases.leaseStart();
    const reserved = await this.idempotency.foldedClaim(claim, idem?.requester, () => this.reserve(ctx, data, refundId, claim))
      .catch((err) => {
        throw paymentAtPath(err, paymentIdFromPath);
      });
    const release = this.leases.hold('refunds', refundId, leaseStart);
    let refund: Refund;
    try {
      refund = await this.execute(ctx, reserved.refund, reserved.payment, reserved.chargeReference, claim);
    } finally {
      release();
    }
    // Left pending (unanswered, or no time left for the call): that is this request's answer,
    // unless recovery has already stored the settled refund.
    if (claim && refund.status === 'pending') await this.idempotency.answerIfRunning(claim, JSON.stringify(refund));
    return refund;
  }

  /**
   * The refund row, pending, with its amount reserved on the payment, `refund.created` and
   * `payment.updated`, and the claim of the request's key (first: a key already answered is
   * answered again whatever the payment now allows) in one transaction. Null, with nothing
   * written, when the key is taken.
   */
  private async reserve(
    ctx: RequestContext, data: { paymentId: string; amount?: number; reason?: string | null }, refundId: string, idem?: ObjectClaim,
  ) {
    return this.db.transaction(async (t) => {
      if (idem && !(await this.idempotency.claimIn(t, idem))) return null;
      const locked = await this.store.paymentForUpdate(ctx, data.paymentId, t);
      if (!locked) throw notFound('payment', data.paymentId, 'paymentId');
      const { payment, chargeReference } = locked;
      if (payment.status !== 'succeeded') {
        throw new DomainError('payment_not_refundable', `Only succeeded payments can be refunded; this one is ${payment.status}`, 'paymentId');
      }
      // Refunds apply to what was captured (less than the amount after a partial capture).
      const remaining = payment.amountCaptured - payment.amountRefunded;
      if (remaining <= 0) {
        // An amount asked for is above what is left (0), racing refunds included; with none
        // given, there is simply nothing left to refund.
        if (data.amount !== undefined) throw new DomainError('refund_exceeds_remaining', `Nothing is left to refund on this payment`, 'amount');
        throw new DomainError('payment_not_refundable', 'This payment is already fully refunded', 'paymentId');
      }
      const amount = data.amount ?? remaining;
      if (!(await this.store.reserve(t, payment.id, amount, ctx.clock.now()))) {
        throw new DomainError('refund_exceeds_remaining', `At most ${remaining} (${formatAmount(remaining, payment.currency)}) can still be refunded`, 'amount');
      }
      const now = ctx.clock.now();
      const created = REFUND_MOVES.rule('create');
      const refund: Refund = {
        id: refundId, object: 'refund', livemode: ctx.mode === 'live', paymentId: payment.id, amount, currency: payment.currency,
        reason: data.reason ?? null, status: created.to, gatewayId: payment.gatewayId, failureCode: null, failureMessage: null,
        createdAt: now.toISOString(), updatedAt: now.toISOString(),
      };
      await this.store.insertPending(t, ctx, refund, this.leases.leaseMs, idem?.key ?? null);
      if (created.event) await this.events.record(ctx, t, created.event, refund);
      // The reservation is what changes the payment (amountRefunded, refunded).
      await this.recordPaymentUpdated(ctx, t, payment.id);
      return { refund, payment, chargeReference };
    });
  }

  /** The refund runs on the gateway that captured the payment, keyed by the refund id. */
  private async execute(
    ctx: RequestContext, refund: Refund, payment: Payment, chargeReference: string, claim: ObjectClaim | undefined,
  ): Promise<Refund> {
    const gatewayId = payment.gatewayId as string;
    let connector;
    try {
      connector = await this.gateways.connector(ctx, gatewayId);
    } catch (err) {
      // Nothing was sent: give the reserved amount back at once.
      this.logger.error({ requestId: ctx.requestId, refundId: refund.id, err: errorForLog(err) }, 'refund gateway unavailable');
      return this.settle(ctx, refund, notSent('The gateway that captured the payment is not available'), [], claim);
    }
    const { gateway, type } = connector;
    if (!this.leases.holds('refunds', refund.id)) {
      this.logger.warn({ requestId: ctx.requestId, refundId: refund.id }, 'refund lease no longer fresh; left to recovery');
      return refund;
    }
    const log: PendingTransaction[] = [];
    try {
      const request = { idempotencyKey: refund.id, refundId: refund.id, chargeReference, amount: refund.amount, currency: refund.currency, reason: refund.reason };
      const learned = await untilKnown(
        () => gateway.refund(request),
        () => gateway.status({ idempotencyKey: refund.id, kind: 'refund', objectId: refund.id, chargeReference }),
        (call) => log.push({ kind: call.kind === 'operation' ? 'refund' : 'status', gatewayId, gatewayType: type, attempt: 1, idempotencyKey: refund.id, result: call.result }),
      );
      // Unknown: the refund may have been made, so it stays pending (amount kept reserved) for
      // recovery. A retryable error known to have done nothing fails it and frees the amount.
      let result = learned.result;
      if (learned.known && result.outcome === 'retryable_error') result = { ...result, outcome: 'declined', declineCode: result.declineCode ?? 'gateway_unavailable' };
      return await this.settle(ctx, refund, result, log, claim);
    } catch (err) {
      // The request may have reached the gateway: leave it pending for recovery, never 5xx.
      this.logger.error({ requestId: ctx.requestId, refundId: refund.id, err: errorForLog(err) }, 'refund left pending for recovery');
      return refund;
    }
  }

  private async settle(ctx: RequestContext, refund: Refund, result: GatewayResult, log: PendingTransaction[], claim: ObjectClaim | undefined): Promise<Refund> {
    const now = ctx.clock.now();
    const move = result.outcome === 'succeeded' ? 'succeed' : result.outcome === 'declined' ? 'fail' : null;
    return this.db.transaction(async (t) => {
      await this.gtx.insert(ctx, t, { paymentId: refund.paymentId, refundId: refund.id }, log);
      // Unanswered: it stays pending (only the calls are written); the recovery job asks again later.
      if (move === null) return { ...refund, updatedAt: now.toISOString() };
      const done = movedRefund(refund, move, now, {
        failureCode: move === 'fail' ? (result.declineCode ?? 'refund_failed') : null,
        failureMessage: move === 'fail' ? (result.message ?? 'The gateway refused the refund') : null,
      });
      if (!(await this.move(ctx, t, move, done, result.reference))) return this.settledElsewhere(ctx, t, move, done, result.reference, claim);
      if (move === 'fail') {
        // The reservation is given back: the payment changes again. (A success leaves it as
        // the reservation made it.)
        await this.store.release(t, refund, new Date(done.updatedAt));
        await this.recordPaymentUpdated(ctx, t, refund.paymentId);
      }
      // The key's answer with the settling write.
      if (claim) await this.idempotency.completeIn(t, claim, JSON.stringify(done));
      return done;
    });
  }

  /**
   * A settling write that found the refund no longer pending: another writer settled it first
   * (recovery, or the request it took over from). Returns it as stored, except when the gateway
   * reports the refund made while it is recorded failed (recovery found nothing at the gateway,
   * its "not found" looking final, and gave the amount back): that money left, so the success is
   * never dropped. The refund becomes `requires_review` and its amount is counted on the payment
   * again (it cannot be refunded a second time), with `refund.requires_review` and
   * `payment.updated`, in this transaction; a warning is logged. The refund's Idempotency-Key
   * (`claim`), when its answer is that refund as recorded (`failed`, stored by recovery), answers
   * the `requires_review` refund from then on, in the same transaction: a retry replaying
   * `failed` could lead its client to refund again some other way.
   */
  private async settledElsewhere(
    ctx: RequestContext, t: Transaction, move: 'succeed' | 'fail', done: Refund, reference: string | null, claim: ObjectClaim | undefined,
  ): Promise<Refund> {
    const stored = (await this.store.find(ctx, done.id, t)) as Refund;
    if (move !== 'succeed') return stored;
    if (stored.status === 'requires_review') {
      this.logger.warn({ refundId: done.id, paymentId: done.paymentId, reference }, 'gateway reported a refund made for a refund already in requires_review');
      return stored;
    }
    if (!REFUND_MOVES.can(stored.status, 'review_late_success')) return stored;
    const review = movedRefund(stored, 'review_late_success', new Date(done.updatedAt), { failureCode: null, failureMessage: null });
    if (!(await this.move(ctx, t, 'review_late_success', review, reference))) return (await this.store.find(ctx, done.id, t)) as Refund;
    await this.store.reserveAgain(t, review, new Date(review.updatedAt));
    if (claim) await this.idempotency.reviseIn(t, claim, stored.status, JSON.stringify(review));
    await this.recordPaymentUpdated(ctx, t, review.paymentId);
    this.logger.warn(
      { refundId: done.id, paymentId: done.paymentId, amount: done.amount, reference, recordedAs: stored.status, failureCode: stored.failureCode },
      'gateway reported a refund made that was recorded failed; its amount is counted refunded again and it is marked requires_review',
    );
    return review;
  }

  /**
   * The one write of a refund's status after its creation: the move (REFUND_MOVES) with its
   * event, in `t`; false when the refund was not where the move starts (another writer moved it).
   */
  private async move(ctx: RequestContext, t: Transaction, move: Exclude<RefundMove, 'create'>, next: Refund, reference: string | null): Promise<boolean> {
    if (!(await this.store.move(t, move, next, reference))) return false;
    const { event } = REFUND_MOVES.rule(move);
    if (event) await this.events.record(ctx, t, event, next);
    return true;
  }

  /** `payment.updated` with the payment as this transaction has just left it. */
  private async recordPaymentUpdated(ctx: RequestContext, t: Transaction, paymentId: string): Promise<void> {
    await this.events.record(ctx, t, 'payment.updated', (await this.store.paymentAsWritten(t, paymentId)));
  }

  async retrieve(ctx: RequestContext, id: string): Promise<Refund> {
    requirePermission(ctx, 'refunds', 'read');
    const refund = await this.store.find(ctx, id);
    if (!refund) throw notFound('refund', id);
    return refund;
  }

  async list<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, paymentIdFromPath?: string, options?: O): Promise<PageFor<Refund, O>> {
    requirePermission(ctx, 'refunds', 'read');
    refusePaymentIdBesidePath(query, paymentIdFromPath);
    const input = parseInput(listRefundsInput, query);
    if (paymentIdFromPath && !(await this.store.paymentExists(ctx, paymentIdFromPath))) throw notFound('payment', paymentIdFromPath);
    return this.store.list(ctx, { ...input, paymentId: paymentIdFromPath ?? input.paymentId }, options);
  }

  /** The newest refunds of several payments at once (at most `limit` each), for DataLoader. */
  async forPayments(ctx: RequestContext, paymentIds: readonly string[], limit = NESTED_LIST_LIMIT): Promise<Map<string, Refund[]>> {
    requirePermission(ctx, 'refunds', 'read');
    return this.store.forPayments(ctx, paymentIds, limit);
  }

  /**
   * Asks the gateway about refunds left pending; settles the ones it can answer for. Leases and
   * ages are on the database's clock (LeaseStore); `now` is the business time changes are stamped
   * with. Refunds this process's own requests are still making are never taken, whatever their
   * lease says (LeaseKeeper.heldIds), as for payments.
   */
  async recoverPending(now: Date): Promise<number> {
    const rows = await this.store.pendingPastLease(50, this.leases.heldIds('refunds'));
    return recoverRows(this.leaseStore, this.logger, { table: 'refunds', idField: 'refundId' }, rows, async ({ refund, accountId, idempotencyKey, chargeReference, pendingMs }) => {
      const ctx = systemContext(accountId, refund.livemode ? 'live' : 'test', now, `recovery_${refund.id}`);
      // The creating request's key: the settled refund becomes its answer if that request died.
      const claim = idempotencyKey ? recoveredKey(ctx, idempotencyKey, REFUND_CREATED_STATUS, refund.id) : undefined;
      const { gateway, type } = await this.gateways.connector(ctx, refund.gatewayId as string);
      const status = await gateway.status({ idempotencyKey: refund.id, kind: 'refund', objectId: refund.id, chargeReference });
      const log: PendingTransaction[] = [{ kind: 'status', gatewayId: refund.gatewayId as string, gatewayType: type, attempt: 1, idempotencyKey: refund.id, result: status }];
      // "Not found" is final only once the refund has been pending long enough on the database's
      // clock (its request may still be on its way to the gateway, from an instance whose
      // heartbeats stalled), or when the gateway says so.
      const notFoundIsFinal = pendingMs >= NOT_FOUND_FINAL_AFTER_MS || status.definitive === true;
      const definite = status.found ? status.outcome !== 'timeout' : status.declineCode === 'not_found' && notFoundIsFinal;
      if (!definite) {
        // The look-up is a gateway call like any other, though it settles nothing.
        await this.gtx.record(ctx, { paymentId: refund.paymentId, refundId: refund.id }, log);
        return false;
      }
      // Found and failed without effect, or not found: no money moved; the refund fails.
      const result: GatewayResult = status.found && status.outcome !== 'retryable_error' ? status : { ...status, outcome: 'declined', declineCode: 'refund_failed' };
      await this.settle(ctx, refund, result, log, claim);
      return true;
    });
  }

  /** A page of an export of refunds (ExportService): the list's filters, newest first, by keyset after `after`. */
  async exportPage(ctx: RequestContext, filters: RefundExportFilters, after: KeysetCursor | null, limit: number): Promise<Refund[]> {
    requirePermission(ctx, 'refunds', 'read');
    return this.store.exportPage(ctx, filters, after, limit);
  }
}

/** On `/v1/payments/{id}/refunds` an error about the payment names the path's `id`, as the list does. */
function paymentAtPath(err: unknown, paymentIdFromPath: string | undefined): unknown {
  if (paymentIdFromPath === undefined || !(err instanceof DomainError) || err.param !== 'paymentId') return err;
  return new DomainError(err.code, err.message, 'id', { cause: err.cause });
}

/** On `/v1/payments/{id}/refunds` the payment is the path's: a `paymentId` beside it is refused. */
function refusePaymentIdBesidePath(input: unknown, paymentIdFromPath: string | undefined): void {
  if (paymentIdFromPath !== undefined && input !== null && typeof input === 'object' && 'paymentId' in input) {
    throw new DomainError('unknown_parameter', 'paymentId comes from the path on this route', 'paymentId');
  }
}

function notSent(message: string): GatewayResult {
  return { outcome: 'declined', reference: null, declineCode: 'gateway_unavailable', message, latencyMs: 0, request: {}, response: {} };
}
