import type { Database } from '../../db/database';
import type { RequestContext } from '../../core/context';
import { requirePermission, systemContext } from '../../core/context';
import { DomainError, notFound } from '../../core/errors';
import { parseInput } from '../../core/validation';
import type { IdempotencyKey } from '../../core/idempotency';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';
import type { Clock } from '../../core/clock';
import type { GatewayResult, StatusResult } from '../../connectors/connector';
import { untilKnown } from '../../connectors/until-known';
import { errorForLog, type Logger } from '../../logger';
import type { EventService } from '../events/event.service';
import type { GatewayConfigService } from '../gateways/gateway-config.service';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import type { GatewayTransactionStore, PendingTransaction } from './gateway-transaction.store';
import { amountsAfter, chargeKey, failureMessageFor, toAttempt } from './payment-charging';
import { PaymentOperationStore, type OperationRow } from './payment-operation.store';
import { cancelPaymentInput, capturePaymentInput } from './payment.inputs';
import { PAYMENT_MOVES, movedPayment, type ActionMove, type AuthorizationMove } from './payment-states';
import type { Payment } from './payment.types';

/** The page a gateway sends the customer back to after a 3-D Secure challenge: `{base}{path}{paymentId}`. */
export const PAYMENT_RETURN_PATH = '/payment-return/';

/** How long a capture, cancel or 3-D Secure read holds its claim on a payment before recovery may take it over. */
export const OPERATION_LEASE_MS = 30_000;

const JOB_BATCH = 50;

/** The gateway idempotency keys of a payment's capture and cancel (one each: a repeat never captures or voids twice). */
export const captureKey = (paymentId: string) => `${paymentId}_capture`;
export const cancelKey = (paymentId: string) => `${paymentId}_cancel`;

/**
 * What happens to a payment after its charge (API.md §9): the merchant's capture and cancel of an
 * authorisation, the customer's answer to a 3-D Secure challenge, and the jobs that void
 * authorisations not captured in time, fail challenges left unanswered and finish operations
 * whose process died. Every status written is a move of PAYMENT_MOVES, with its event, the
 * gateway calls and the Idempotency-Key's answer in one transaction.
 */
export class PaymentActions {
  private readonly store: PaymentOperationStore;

  constructor(
    private readonly db: Database,
    private readonly events: EventService,
    private readonly gateways: GatewayConfigService,
    private readonly gtx: GatewayTransactionStore,
    private readonly idempotency: IdempotencyService,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {
    this.store = new PaymentOperationStore(db);
  }

  /**
   * POST /v1/payments/{id}/capture: takes `amount` (all of the authorisation by default) at the
   * gateway that authorised it; the rest is released. A gateway whose answer is unknown leaves
   * the payment `requires_capture` with its claim, which recovery finishes by asking the gateway.
   */
  async capture(ctx: RequestContext, id: string, input: unknown, idem?: IdempotencyKey): Promise<Payment> {
    requirePermission(ctx, 'payments', 'write');
    const data = parseInput(capturePaymentInput, input);
    await this.idempotency.replayIfAnswered(idem);
    const row = await this.readScoped(ctx, id);
    PAYMENT_MOVES.check(row.payment.status, 'capture');
    const amount = data.amount ?? row.payment.amountCapturable;
    if (amount > row.payment.amountCapturable) {
      throw new DomainError('capture_exceeds_authorized', `At most ${row.payment.amountCapturable} can be captured from this authorisation`, 'amount');
    }
    const operation = `capture:${amount}`;
    await this.claim(ctx, row, ['requires_capture'], operation, 'capture');
    const { result, known, log } = await this.askGateway(ctx, row, 'capture', (gateway) => gateway.capture({
      idempotencyKey: captureKey(id), paymentId: id, chargeReference: row.reference as string, amount, currency: row.payment.currency,
    }));
    if (!known) return row.payment;
    if (result.outcome !== 'succeeded') return this.refused(ctx, row, operation, log, result, 'capture_failed');
    return this.finishCapture(ctx, row, amount, operation, log, idem);
  }

  /** POST /v1/payments/{id}/cancel: voids an uncaptured authorisation, or a charge waiting for 3-D Secure. */
  async cancel(ctx: RequestContext, id: string, input: unknown, idem?: IdempotencyKey): Promise<Payment> {
    requirePermission(ctx, 'payments', 'write');
    parseInput(cancelPaymentInput, input ?? {});
    await this.idempotency.replayIfAnswered(idem);
    const row = await this.readScoped(ctx, id);
    PAYMENT_MOVES.check(row.payment.status, 'cancel');
    await this.claim(ctx, row, PAYMENT_MOVES.rule('cancel').from, 'cancel', 'cancel');
    return this.voidAndWrite(ctx, row, 'cancel', idem);
  }

  /**
   * The customer came back from a 3-D Secure challenge (the gateway's return URL): the payment
   * is finished as the gateway now tells, on the gateway it authenticates at (never another).
   * Returns it with where the customer goes next (the return URL it was made with).
   */
  async returned(id: string): Promise<{ payment: Payment; returnUrl: string | null } | null> {
    const row = await this.store.read(id);
    if (!row) return null;
    const ctx = systemContext(row.accountId, row.payment.livemode ? 'live' : 'test', this.clock.now(), `return_${id}`);
    const payment = row.payment.status === 'requires_action' ? (await this.resolveAction(ctx, row)).payment : row.payment;
    return { payment, returnUrl: row.returnUrl };
  }

  /**
   * Asks the gateway how a challenge ended and writes it: completed (captured or authorised),
   * failed or declined. Still open, or the gateway could not tell: left as it is. `gone`: the
   * gateway says for certain it has no such charge (a simulator that restarted forgets its
   * challenges), so nothing can be charged under it any more.
   */
  private async resolveAction(ctx: RequestContext, row: OperationRow): Promise<{ payment: Payment; gone: boolean }> {
    const operation = 'resolve';
    if (!(await this.store.claim(null, row.payment.id, ['requires_action'], operation, OPERATION_LEASE_MS))) return { payment: row.payment, gone: false };
    const status = await this.chargeStatus(ctx, row);
    const log = [status.call];
    const { result } = status;
    const gone = !result.found && result.outcome === 'declined' && result.declineCode === 'not_found' && result.definitive === true;
    const move: ActionMove | null = !result.found ? null
      : result.outcome === 'succeeded' ? (result.captured === false ? 'authorize_after_action' : 'complete_action')
        : result.outcome === 'declined' ? 'fail_action' : null;
    if (!move) {
      await this.store.release(row.payment.id, operation);
      await this.gtx.record(ctx, { paymentId: row.payment.id }, log);
      return { payment: row.payment, gone };
    }
    const failureCode = move === 'fail_action' ? (result.declineCode ?? 'authentication_failed') : null;
    const next = movedPayment(row.payment, move, ctx.clock.now(), {
      ...amountsAfter(row.payment, move === 'fail_action' ? 'fail' : move), nextAction: null, failureCode,
      failureMessage: failureCode ? failureMessageFor(failureCode, result.message) : null,
      attempts: [...row.payment.attempts, toAttempt(row.payment.gatewayId as string, result)],
    });
    return { payment: await this.write(ctx, row, move, next, operation, log, status.captureWindowDays), gone: false };
  }

  /** The charge as its gateway tells it now (under the attempt's key and the charge's reference). */
  private async chargeStatus(ctx: RequestContext, row: OperationRow): Promise<{ result: StatusResult; call: PendingTransaction; captureWindowDays?: number }> {
    const gatewayId = row.payment.gatewayId as string;
    const attempt = Math.max(0, row.plan.indexOf(gatewayId));
    const idempotencyKey = chargeKey(row.payment.id, attempt);
    const { gateway, type, captureWindowDays } = await this.gateways.connector(ctx, gatewayId);
    const result = await gateway.status({ idempotencyKey, kind: 'charge', objectId: row.payment.id, chargeReference: row.reference });
    return { result, call: { kind: 'status', gatewayId, gatewayType: type, attempt: attempt + 1, idempotencyKey, result }, captureWindowDays };
  }

  /**
   * The job: challenges left unanswered past their deadline fail (`authentication_expired`) once
   * the gateway confirms they are still open and voids them; authorisations not captured within
   * their gateway's window are voided (`canceled`). Returns how many payments it finished.
   */
  async expireDue(now: Date): Promise<{ challenges: number; authorizations: number }> {
    let challenges = 0;
    let authorizations = 0;
    for (const id of await this.store.actionsDue(now, JOB_BATCH)) {
      challenges += await this.guarded(id, 'expire a challenge', async () => {
        const row = await this.store.read(id);
        if (!row || row.payment.status !== 'requires_action') return false;
        const ctx = systemContext(row.accountId, row.payment.livemode ? 'live' : 'test', now, `expire_${id}`);
        // Answered meanwhile (the customer did not come back through the return page): as the gateway tells.
        const read = await this.resolveAction(ctx, row);
        if (read.payment.status !== 'requires_action') return true;
        if (!(await this.store.claim(null, id, ['requires_action'], 'expire', OPERATION_LEASE_MS))) return false;
        // No such charge at the gateway any more: nothing to void, nothing can be taken.
        if (read.gone) return (await this.writeVoid(ctx, { ...row, operation: 'expire' }, 'expire', [])).status === 'failed';
        return (await this.voidAndWrite(ctx, { ...row, operation: 'expire' }, 'expire')).status === 'failed';
      });
    }
    for (const id of await this.store.authorizationsDue(now, JOB_BATCH)) {
      authorizations += await this.guarded(id, 'void an authorisation', async () => {
        const row = await this.store.read(id);
        if (!row || row.payment.status !== 'requires_capture') return false;
        const ctx = systemContext(row.accountId, row.payment.livemode ? 'live' : 'test', now, `expire_${id}`);
        if (!(await this.store.claim(null, id, ['requires_capture'], 'expire', OPERATION_LEASE_MS))) return false;
        return (await this.voidAndWrite(ctx, row, 'expire')).status === 'canceled';
      });
    }
    return { challenges, authorizations };
  }

  /**
   * Recovery: a claim whose lease ran out (its process died between the gateway's answer and the
   * write, or the gateway never answered) is finished from what the gateway says under the
   * operation's own key: done there → the move is written now; not done → the claim is freed.
   */
  async recoverClaims(): Promise<number> {
    let finished = 0;
    for (const { id, operation } of await this.store.lapsedClaims(JOB_BATCH)) {
      finished += await this.guarded(id, 'recover an operation', async () => {
        const row = await this.store.read(id);
        if (!row || row.operation !== operation) return false;
        const ctx = systemContext(row.accountId, row.payment.livemode ? 'live' : 'test', this.clock.now(), `recover_${id}`);
        // Taken over: a fresh lease, so a second recovery does not ask at the same time (a
        // refusal: another took it over first).
        if (!(await this.store.claim(null, id, [row.payment.status], operation, OPERATION_LEASE_MS, true))) return false;
        if (operation === 'resolve') {
          // Only a read of the charge: nothing to finish; the return page or the job reads it again.
          await this.store.release(id, operation);
          return false;
        }
        const capture = operation.startsWith('capture:');
        const { gateway, type } = await this.gateways.connector(ctx, row.payment.gatewayId as string);
        const idempotencyKey = capture ? captureKey(id) : cancelKey(id);
        const status = await gateway.status({ idempotencyKey, kind: capture ? 'capture' : 'cancel', objectId: id, chargeReference: row.reference });
        const log: PendingTransaction[] = [{ kind: 'status', gatewayId: row.payment.gatewayId as string, gatewayType: type, attempt: 1, idempotencyKey, result: status }];
        if (status.found && status.outcome === 'succeeded') {
          if (capture) await this.finishCapture(ctx, row, Number(operation.slice('capture:'.length)), operation, log);
          else await this.writeVoid(ctx, row, operation, log);
          return true;
        }
        if (!status.found && status.outcome === 'declined' && status.definitive) {
          // Never done there: the operation can be asked for again.
          await this.store.release(id, operation);
          await this.gtx.record(ctx, { paymentId: id }, log);
          return false;
        }
        // Not known yet: the claim stays; asked again once its new lease runs out.
        await this.gtx.record(ctx, { paymentId: id }, log);
        return false;
      });
    }
    return finished;
  }

  private async readScoped(ctx: RequestContext, id: string): Promise<OperationRow> {
    const row = await this.store.read(id, ctx);
    if (!row) throw notFound('payment', id);
    return row;
  }

  /** Claims the payment for the operation; 409 `payment_in_progress` while another holds it, 422 when its status moved on. */
  private async claim(ctx: RequestContext, row: OperationRow, from: readonly Payment['status'][], operation: string, move: AuthorizationMove): Promise<void> {
    if (await this.store.claim(ctx, row.payment.id, from, operation, OPERATION_LEASE_MS)) return;
    const now = await this.store.read(row.payment.id, ctx);
    if (now) PAYMENT_MOVES.check(now.payment.status, move);
    throw new DomainError('payment_in_progress', 'Another capture or cancel of this payment is being processed; try again in a moment');
  }

  /** Runs a capture or cancel at the payment's gateway until its outcome is known (or stays unknown). */
  private async askGateway(
    ctx: RequestContext, row: OperationRow, kind: 'capture' | 'cancel',
    call: (gateway: Awaited<ReturnType<GatewayConfigService['connector']>>['gateway']) => Promise<GatewayResult>,
  ): Promise<{ result: GatewayResult; known: boolean; log: PendingTransaction[] }> {
    const gatewayId = row.payment.gatewayId as string;
    const { gateway, type } = await this.gateways.connector(ctx, gatewayId);
    const idempotencyKey = kind === 'capture' ? captureKey(row.payment.id) : cancelKey(row.payment.id);
    const log: PendingTransaction[] = [];
    const { result, known } = await untilKnown(
      () => call(gateway),
      () => gateway.status({ idempotencyKey, kind, objectId: row.payment.id, chargeReference: row.reference }),
      (c) => log.push({ kind: c.kind === 'operation' ? kind : 'status', gatewayId, gatewayType: type, attempt: 1, idempotencyKey, result: c.result }),
    );
    if (!known) {
      // The claim stays: recovery asks the gateway once its lease runs out.
      this.logger.warn({ paymentId: row.payment.id, gatewayId, operation: kind }, `payment ${kind}: the gateway's answer is unknown; left to recovery`);
      await this.gtx.record(ctx, { paymentId: row.payment.id }, log);
    }
    return { result, known, log };
  }

  private async voidAndWrite(ctx: RequestContext, row: OperationRow, operation: 'cancel' | 'expire', idem?: IdempotencyKey): Promise<Payment> {
    const { result, known, log } = await this.askGateway(ctx, row, 'cancel', (gateway) => gateway.cancel({
      idempotencyKey: cancelKey(row.payment.id), paymentId: row.payment.id, chargeReference: row.reference as string,
    }));
    if (!known) return row.payment;
    if (result.outcome !== 'succeeded') {
      // The gateway would not void it: it may have been captured or answered meanwhile; the
      // payment stays as recorded (recovery and the return page read the charge again).
      return this.refused(ctx, row, operation, log, result, 'invalid_state');
    }
    return this.writeVoid(ctx, row, operation, log, idem);
  }

  /**
   * The write of a void the gateway made: the merchant's cancel → `canceled`; the expiry job's →
   * `canceled` for an authorisation, `failed` (`authentication_expired`) for a challenge.
   */
  private writeVoid(ctx: RequestContext, row: OperationRow, operation: string, log: PendingTransaction[], idem?: IdempotencyKey): Promise<Payment> {
    const move = operation === 'cancel' ? 'cancel' : row.payment.status === 'requires_action' ? 'fail_action' : 'expire_authorization';
    const expired = move === 'fail_action';
    const next = movedPayment(row.payment, move, ctx.clock.now(), {
      amountCapturable: 0, nextAction: null,
      failureCode: expired ? 'authentication_expired' : null,
      failureMessage: expired ? failureMessageFor('authentication_expired') : null,
    });
    return this.write(ctx, row, move, next, operation, log, undefined, idem);
  }

  private finishCapture(ctx: RequestContext, row: OperationRow, amount: number, operation: string, log: PendingTransaction[], idem?: IdempotencyKey): Promise<Payment> {
    const next = movedPayment(row.payment, 'capture', ctx.clock.now(), { amountCaptured: amount, amountCapturable: 0 });
    return this.write(ctx, row, 'capture', next, operation, log, undefined, idem);
  }

  /** The gateway refused the operation: nothing happened there; the claim is freed and the calls written. */
  private async refused(ctx: RequestContext, row: OperationRow, operation: string, log: PendingTransaction[], result: GatewayResult, code: 'capture_failed' | 'invalid_state'): Promise<never> {
    await this.store.release(row.payment.id, operation);
    await this.gtx.record(ctx, { paymentId: row.payment.id }, log);
    if (result.outcome === 'retryable_error' || result.outcome === 'timeout') {
      throw new DomainError('gateway_unavailable', `The gateway could not be reached (${result.declineCode ?? 'error'}); nothing changed, try again`);
    }
    throw new DomainError(code, result.message ?? 'The gateway refused the operation');
  }

  /**
   * The move's write with its gateway calls, event and the key's answer, in one transaction; the
   * payment as stored when the move could not be made (another writer moved it first).
   */
  private async write(
    ctx: RequestContext, row: OperationRow, move: ActionMove | AuthorizationMove, next: Payment, operation: string, log: PendingTransaction[],
    captureWindowDays?: number, idem?: IdempotencyKey,
  ): Promise<Payment> {
    // Kept as settlingRow allows (a voided authorisation's too); dropped for a failed challenge.
    const reference = row.reference;
    const idempotent = move === 'capture' ? IDEMPOTENT_OPERATIONS.capturePayment : IDEMPOTENT_OPERATIONS.cancelPayment;
    return this.db.transaction(async (t) => {
      const written = await this.store.write(t, move, next, reference, operation, captureWindowDays);
      await this.gtx.insert(ctx, t, { paymentId: next.id }, log);
      if (!written) return (await this.store.read(next.id, undefined, t))?.payment ?? next;
      const { event } = PAYMENT_MOVES.rule(move);
      if (event) await this.events.record(ctx, t, event, next);
      if (idem) await this.idempotency.once(t, idem, idempotent, async () => next);
      return next;
    });
  }

  /** One payment of a job: a failure is logged and the job goes on with the next. */
  private async guarded(id: string, what: string, run: () => Promise<boolean>): Promise<number> {
    try {
      return (await run()) ? 1 : 0;
    } catch (err) {
      this.logger.error({ paymentId: id, err: errorForLog(err) }, `payment job could not ${what}`);
      return 0;
    }
  }
}
