import { setTimeout as sleep } from 'node:timers/promises';
import type {
  ChargeRequest,
  Gateway,
  GatewayResult,
  RefundRequest,
  SaveCardRequest,
  SaveCardResult,
  StatusRequest,
  StatusResult,
} from '../connector';
import {
  elapsedMs,
  summarizeChargeRequest,
  summarizeRefundRequest,
  summarizeSaveCardRequest,
  summarizeStatusRequest,
} from '../redaction';
import {
  countCharge,
  rememberCharge,
  rememberOperation,
  failureDraw,
  operationKey,
  simulatorState,
  type SimulatorOperation,
} from './simulator.state';
import {
  decideCharge,
  decideSaveCard,
  encodeSavedToken,
  isSimulatorChargeReference,
  newChargeReference,
  newRefundReference,
  sourceCard,
} from './simulator.transformers';

export interface SimulatorSettings {
  latencyMs?: number;
  outage?: boolean;
  failureRate?: number;
  seed?: number;
}

export interface SimulatorGatewayOptions {
  gatewayId: string;
  settings?: SimulatorSettings;
  /** Calls slower than this (settings.latencyMs) come back as `timeout`; the operation still happens. */
  timeoutMs?: number;
  /** Decides which expiry dates count as past; test clocks inject theirs. */
  clock?: { now(): Date };
}

/** What an operation decides up front; latency and request summary are added around it. */
type Decided<T extends GatewayResult> = Omit<T, 'latencyMs' | 'request'>;

const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * In-process gateway with deterministic outcomes (API.md §8). Its state is process-global so a
 * second app instance in the same process sees the same charges and idempotency keys.
 */
export class SimulatorGateway implements Gateway {
  readonly type = 'simulator';
  private readonly gatewayId: string;
  private readonly settings: SimulatorSettings;
  private readonly timeoutMs: number;
  private readonly clock: { now(): Date };

  constructor(opts: SimulatorGatewayOptions) {
    this.gatewayId = opts.gatewayId;
    this.settings = opts.settings ?? {};
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.clock = opts.clock ?? { now: () => new Date() };
  }

  charge(r: ChargeRequest): Promise<GatewayResult> {
    return this.perform<GatewayResult>('charge', r.idempotencyKey, summarizeChargeRequest(r), () => {
      countCharge(this.gatewayId, r.idempotencyKey);
      const card = sourceCard(r.source);
      const failureRate = this.settings.failureRate ?? 0;
      // Drawn for every executed charge so the sequence does not depend on which cards are used.
      if (failureRate > 0 && failureDraw(this.gatewayId, this.settings.seed) < failureRate) {
        return {
          outcome: 'retryable_error', reference: null, declineCode: 'gateway_error',
          message: 'Simulated gateway failure; try again.',
          response: { object: 'charge', status: 'retryable_error', code: 'gateway_error', card },
        };
      }
      const decision = decideCharge(r.source, this.clock.now());
      // A retryable error means the gateway did nothing, so no charge object exists.
      const reference = decision.outcome === 'retryable_error' ? null : newChargeReference();
      if (reference) {
        rememberCharge(reference, {
          at: this.clock.now().getTime(), gatewayId: this.gatewayId, amount: r.amount, currency: r.currency.toUpperCase(),
          succeeded: decision.outcome === 'succeeded', refunded: 0,
        });
      }
      return {
        ...decision,
        reference,
        response: { object: 'charge', id: reference, status: decision.outcome, code: decision.declineCode, amount: r.amount, currency: r.currency, card },
      };
    });
  }

  refund(r: RefundRequest): Promise<GatewayResult> {
    return this.perform<GatewayResult>('refund', r.idempotencyKey, summarizeRefundRequest(r), () => {
      const refused = this.refundRefusal(r);
      if (refused) {
        return {
          outcome: 'declined', reference: null, declineCode: refused.code, message: refused.message,
          response: { object: 'refund', id: null, status: 'declined', code: refused.code },
        };
      }
      const reference = newRefundReference();
      return {
        outcome: 'succeeded', reference, declineCode: null, message: null,
        response: { object: 'refund', id: reference, status: 'succeeded', charge: r.chargeReference, amount: r.amount, currency: r.currency },
      };
    });
  }

  saveCard(r: SaveCardRequest): Promise<SaveCardResult> {
    return this.perform<SaveCardResult>('save_card', r.idempotencyKey, summarizeSaveCardRequest(r), () => {
      const decision = decideSaveCard(r.card, this.clock.now());
      const token = decision.behaviour ? encodeSavedToken(decision.behaviour) : null;
      return {
        outcome: decision.outcome, declineCode: decision.declineCode, message: decision.message,
        reference: token, token,
        response: { object: 'payment_method', id: token, status: decision.outcome, code: decision.declineCode, card: sourceCard({ kind: 'card', card: r.card }) },
      };
    });
  }

  async status(r: StatusRequest): Promise<StatusResult> {
    const started = performance.now();
    const request = summarizeStatusRequest(r);
    const slow = await this.delay();
    if (slow) return { ...this.timeoutResult(started, request), found: false };
    if (this.settings.outage) return { ...this.outageResult(started, request), found: false };
    const stored = simulatorState().operations.get(operationKey(this.gatewayId, r.idempotencyKey));
    const wanted: SimulatorOperation = r.kind;
    if (!stored || stored.operation !== wanted) {
      return {
        outcome: 'declined', reference: null, declineCode: 'not_found',
        message: `No ${r.kind} was made with this idempotency key.`,
        latencyMs: elapsedMs(started), request, response: { found: false }, found: false, definitive: true,
      };
    }
    const first = await stored.result;
    return { ...structuredClone(first), latencyMs: elapsedMs(started), request, response: { ...first.response, found: true }, found: true };
  }

  /**
   * Runs one idempotent operation: a repeat (or a concurrent duplicate) with the same key gets
   * the first result; only retryable errors are forgotten, since nothing happened for them.
   */
  private async perform<T extends GatewayResult>(
    operation: SimulatorOperation,
    idempotencyKey: string,
    request: Record<string, unknown>,
    decide: () => Decided<T>,
  ): Promise<T> {
    const started = performance.now();
    const state = simulatorState();
    const key = operationKey(this.gatewayId, idempotencyKey);
    const stored = state.operations.get(key);
    if (stored) {
      const first = await stored.result;
      if (stored.operation !== operation) {
        return this.failure<T>(operation, {
          outcome: 'declined', reference: null, declineCode: 'processing_error',
          message: `This idempotency key was already used for a ${stored.operation.replace('_', ' ')}.`,
          latencyMs: elapsedMs(started), request, response: { error: 'idempotency_key_reused' },
        });
      }
      return {
        ...(structuredClone(first) as T),
        latencyMs: elapsedMs(started),
        request,
        response: { ...first.response, idempotentReplayed: true },
      };
    }
    if (this.settings.outage) {
      const slow = await this.delay();
      return this.failure<T>(operation, slow ? this.timeoutResult(started, request) : this.outageResult(started, request));
    }

    // Decided synchronously so concurrent refunds see each other's effect on the charge.
    const decided = decide();
    const latency = this.settings.latencyMs ?? 0;
    const result = (async (): Promise<T> => {
      if (latency > 0) await sleep(latency);
      return { ...decided, latencyMs: latency, request } as T;
    })();
    if (decided.outcome !== 'retryable_error') rememberOperation(key, { operation, result, at: this.clock.now().getTime() });

    if (latency > this.timeoutMs) {
      await sleep(this.timeoutMs);
      return this.failure<T>(operation, this.timeoutResult(started, request));
    }
    const settled = await result;
    return { ...settled, latencyMs: elapsedMs(started) };
  }

  private refundRefusal(r: RefundRequest): { code: string; message: string } | null {
    if (!Number.isInteger(r.amount) || r.amount < 1) return { code: 'processing_error', message: 'The refund amount must be a positive integer.' };
    const charge = simulatorState().charges.get(r.chargeReference);
    if (!charge) {
      // Charges from an earlier process are not in memory; a well-formed reference is trusted.
      return isSimulatorChargeReference(r.chargeReference) ? null : { code: 'charge_not_found', message: 'No such charge on this gateway.' };
    }
    if (charge.gatewayId !== this.gatewayId) return { code: 'charge_not_found', message: 'No such charge on this gateway.' };
    if (!charge.succeeded) return { code: 'charge_not_refundable', message: 'The charge did not succeed, so it cannot be refunded.' };
    if (charge.currency !== r.currency.toUpperCase()) return { code: 'processing_error', message: 'The refund currency differs from the charge currency.' };
    if (charge.refunded + r.amount > charge.amount) return { code: 'refund_exceeds_charge', message: 'The refund exceeds what is left of the charge.' };
    charge.refunded += r.amount;
    return null;
  }

  /** Waits the configured latency, capped at the timeout; true when the call timed out. */
  private async delay(): Promise<boolean> {
    const latency = this.settings.latencyMs ?? 0;
    const waited = Math.min(latency, this.timeoutMs);
    if (waited > 0) await sleep(waited);
    return latency > this.timeoutMs;
  }

  private outageResult(started: number, request: Record<string, unknown>): GatewayResult {
    return {
      outcome: 'retryable_error', reference: null, declineCode: 'gateway_unavailable',
      message: 'The gateway is unavailable (simulated outage).',
      latencyMs: elapsedMs(started), request, response: { status: 'unavailable' },
    };
  }

  private timeoutResult(started: number, request: Record<string, unknown>): GatewayResult {
    return {
      outcome: 'timeout', reference: null, declineCode: 'timeout',
      message: `The gateway did not answer within ${this.timeoutMs} ms.`,
      latencyMs: elapsedMs(started), request, response: {},
    };
  }

  /** A failure fits every operation's result type; a failed saveCard just has no token. */
  private failure<T extends GatewayResult>(operation: SimulatorOperation, result: GatewayResult): T {
    return (operation === 'save_card' ? { ...result, token: null } : result) as T;
  }
}
