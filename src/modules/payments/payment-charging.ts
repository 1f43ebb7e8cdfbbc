import type { RequestContext } from '../../core/context';
import type { ChargeRequest, GatewayResult } from '../../connectors/connector';
import { untilKnown } from '../../connectors/until-known';
import type { Logger } from '../../logger';
import type { GatewayConfigService } from '../gateways/gateway-config.service';
import type { RoutingService } from '../routing/routing.service';
import { MAX_ATTEMPTS } from '../routing/routing.inputs';
import type { PendingTransaction } from './gateway-transaction.store';
import type { LeaseKeeper } from './lease-keeper';
import type { Payment, PaymentAttempt } from './payment.types';
import { movedPayment, type SettlingMove } from './payment-states';
import { inSpan } from '../../observability/spans';

/**
 * The most entries a payment's `attempts` can hold: the charge records one per gateway it tried
 * (at most MAX_ATTEMPTS), and recovery, when that outcome stayed unknown, at most one more per
 * gateway of the same plan.
 */
export const MAX_ATTEMPT_ENTRIES = 2 * MAX_ATTEMPTS;

/** What charging along a plan (or recovery's look-ups) learned about a pending payment. */
export interface ChargeOutcome {
  result: GatewayResult | null;
  gatewayId: string | null;
  attempts: PaymentAttempt[];
  log: PendingTransaction[];
  /** The card may have been charged, or no gateway was asked in time: the payment stays pending. */
  unresolved: boolean;
  /** The answering gateway's `captureWindowDays` (an authorisation's deadline), when it sets one. */
  captureWindowDays?: number;
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
  authentication_failed: 'The customer did not authenticate the payment (3-D Secure).',
  authentication_expired: 'The customer did not answer the authentication (3-D Secure) in time.',
};

/** A failure code's message as payments carry it. */
export function failureMessageFor(code: string, gatewayMessage?: string | null): string {
  return FAILURE_MESSAGES[code] ?? gatewayMessage ?? 'The payment failed.';
}

/** One key per payment and attempt: the same attempt repeated never charges twice. */
export function chargeKey(paymentId: string, attemptIndex: number): string {
  return `${paymentId}_a${attemptIndex + 1}`;
}

/**
 * The charge request of a payment's attempt. Recovery rebuilds it with this to repeat it under
 * the same key: the gateway replays its stored answer only for the very same request.
 */
export function chargeRequest(payment: Payment, attemptIndex: number, source: ChargeRequest['source'], returnUrl: string | null = null): ChargeRequest {
  const request: ChargeRequest = {
    idempotencyKey: chargeKey(payment.id, attemptIndex),
    paymentId: payment.id,
    amount: payment.amount,
    currency: payment.currency,
    source,
    description: payment.description,
    metadata: payment.metadata,
  };
  if (payment.captureMethod === 'manual') request.capture = false;
  if (returnUrl) request.returnUrl = returnUrl;
  return request;
}

export function toAttempt(gatewayId: string, r: GatewayResult): PaymentAttempt {
  const latency = Math.round(r.latencyMs);
  return { gateway: gatewayId, outcome: r.outcome, code: r.declineCode, latency };
}

/** The settling move an outcome makes, and the payment as it leaves it (still pending when unresolved). */
export function settledPayment(payment: Payment, outcome: ChargeOutcome, now: Date): { move: SettlingMove; done: Payment } {
  const { result } = outcome;
  const move: SettlingMove = outcome.unresolved ? 'leave_pending'
    : result?.outcome === 'succeeded' ? (result.captured === false ? 'authorize' : 'succeed')
      : result?.outcome === 'requires_action' ? 'require_action'
        : 'fail';
  const failureCode = move === 'fail' ? (result ? (result.declineCode ?? 'processing_error') : 'gateway_unavailable') : null;
  return {
    move,
    done: movedPayment(payment, move, now, {
      failureCode,
      failureMessage: failureCode ? failureMessageFor(failureCode, result?.message) : null,
      gatewayId: outcome.gatewayId ?? null,
      attempts: [...payment.attempts, ...outcome.attempts],
      ...amountsAfter(payment, move),
      nextAction: move === 'require_action' ? (result?.nextAction ?? null) : null,
    }),
  };
}

/** What a move leaves captured and capturable: all of the amount when captured or authorised, nothing else. */
export function amountsAfter(payment: Payment, move: SettlingMove | 'complete_action' | 'authorize_after_action'): Pick<Payment, 'amountCaptured' | 'amountCapturable'> {
  if (move === 'succeed' || move === 'complete_action') return { amountCaptured: payment.amount, amountCapturable: 0 };
  if (move === 'authorize' || move === 'authorize_after_action') return { amountCaptured: 0, amountCapturable: payment.amount };
  return { amountCaptured: payment.amountCaptured, amountCapturable: payment.amountCapturable };
}

/**
 * The charging loop: the routed gateways in order, each attempt under its own gateway
 * idempotency key, never past a decline, and never on to another gateway once one may have
 * charged (an unknown outcome stops the loop and leaves the payment to recovery).
 */
export class PaymentCharger {
  constructor(
    private readonly routing: RoutingService,
    private readonly gateways: GatewayConfigService,
    private readonly leases: LeaseKeeper,
    private readonly logger: Logger,
  ) {}

  async chargeAlongPlan(ctx: RequestContext, payment: Payment, plan: string[], source: ChargeRequest['source'], returnUrl: string | null = null): Promise<ChargeOutcome> {
    const attempts: PaymentAttempt[] = [];
    const log: PendingTransaction[] = [];
    let last: { result: GatewayResult; gatewayId: string; captureWindowDays?: number } | null = null;
    for (let i = 0; i < plan.length; i++) {
      if (!this.leases.holds('payments', payment.id)) {
        this.logger.warn({ requestId: ctx.requestId, paymentId: payment.id, attempt: i + 1 }, 'payment lease no longer fresh (heartbeats failing or the process stalled); left to recovery');
        return { result: last?.result ?? null, gatewayId: last?.gatewayId ?? null, attempts, log, unresolved: true };
      }
      const gatewayId = plan[i];
      // A half-open circuit lets exactly one trial through; concurrent payments move on.
      if (!this.routing.tryAcquire(gatewayId)) continue;
      const { result, known, captureWindowDays } = await this.attempt(ctx, payment, i, gatewayId, source, returnUrl, log);
      if (!known) {
        // The card may have been charged here: another gateway could charge it a second time,
        // so stop and let recovery ask this gateway again later.
        attempts.push(toAttempt(gatewayId, result));
        this.routing.recordOutcome(gatewayId, 'timeout');
        return { result, gatewayId, attempts, log, unresolved: true };
      }
      this.routing.recordOutcome(gatewayId, result.outcome);
      attempts.push(toAttempt(gatewayId, result));
      last = { result, gatewayId, captureWindowDays };
      // Authenticating at this gateway: the payment stays with it whatever the customer answers.
      if (result.outcome === 'succeeded' || result.outcome === 'declined' || result.outcome === 'requires_action') break;
    }
    return { result: last?.result ?? null, gatewayId: last?.gatewayId ?? null, attempts, log, unresolved: false, captureWindowDays: last?.captureWindowDays };
  }

  /** One gateway's charge (and the status calls that learn its outcome), a span of its own. */
  private attempt(
    ctx: RequestContext, payment: Payment, i: number, gatewayId: string, source: ChargeRequest['source'], returnUrl: string | null, log: PendingTransaction[],
  ): Promise<{ result: GatewayResult; known: boolean; captureWindowDays?: number }> {
    return inSpan('gateway.charge', { 'payorch.gateway.id': gatewayId, 'payorch.payment.id': payment.id, 'payorch.attempt': i + 1 }, async (span) => {
      const idempotencyKey = chargeKey(payment.id, i);
      const { gateway, type, captureWindowDays } = await this.gateways.connector(ctx, gatewayId);
      const request = chargeRequest(payment, i, source, returnUrl);
      const { result, known } = await untilKnown(
        () => gateway.charge(request),
        () => gateway.status({ idempotencyKey, kind: 'charge', objectId: payment.id }),
        (call) => log.push({ kind: call.kind === 'operation' ? 'charge' : 'status', gatewayId, gatewayType: type, attempt: i + 1, idempotencyKey, result: call.result }),
      );
      if (span.isRecording()) {
        span.setAttributes({
          'payorch.gateway.type': type,
          // Unknown: the gateway never told whether it charged (recovery asks it again later).
          'payorch.gateway.outcome': known ? result.outcome : 'unknown',
          ...(result.declineCode ? { 'payorch.gateway.decline_code': result.declineCode } : {}),
        });
      }
      return { result, known, captureWindowDays };
    });
  }
}
