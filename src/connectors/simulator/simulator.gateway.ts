import { setTimeout as sleep } from 'node:timers/promises';
import type {
  CancelRequest,
  CaptureRequest,
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
  summarizeCancelRequest,
  summarizeCaptureRequest,
  summarizeChargeRequest,
  summarizeRefundRequest,
  summarizeSaveCardRequest,
  summarizeStatusRequest,
} from '../redaction';
import {
  ChargeLife,
  KnownOperation,
  failureDraw,
  flat,
  forgetsNothing,
  intern,
  operationKey,
  queueSettled,
  rememberOperation,
  simulatorState,
  type SimulatorOperation,
} from './simulator.state';
import {
  AUTHENTICATION_FAILED,
  SIMULATED_FAILURE,
  SUCCESS,
  type SimulatorDecision,
  decideCharge,
  decideSaveCard,
  encodeSavedToken,
  isSimulatorChargeReference,
  newChallengeId,
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
  /**
   * The service's public https address: the simulator's 3-D Secure challenge page is served there
   * (`/simulator/3ds/{id}`, see SIMULATOR_CHALLENGE_PATH) for a charge made without a return URL.
   */
  publicBaseUrl?: () => string;
}

/** Where the simulator's challenge page is served, under the service's public address. */
export const SIMULATOR_CHALLENGE_PATH = '/simulator/3ds/';

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
  private readonly publicBaseUrl: (() => string) | undefined;

  constructor(opts: SimulatorGatewayOptions) {
    this.publicBaseUrl = opts.publicBaseUrl;
    this.gatewayId = opts.gatewayId;
    this.settings = opts.settings ?? {};
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.clock = opts.clock ?? { now: () => new Date() };
  }

  charge(r: ChargeRequest): Promise<GatewayResult> {
    return this.perform<GatewayResult>('charge', r.idempotencyKey, summarizeChargeRequest(r), (key, runs) => {
      const card = sourceCard(r.source);
      const made = (decision: SimulatorDecision, reference: string | null) =>
        new KnownOperation(
          key, this.gatewayId, 'charge', runs, decision.outcome, decision.declineCode, decision.message, reference,
          r.amount, intern(r.currency), intern(card?.brand ?? null), intern(card?.last4 ?? null), null,
        );
      const failureRate = this.settings.failureRate ?? 0;
      // Drawn for every executed charge so the sequence does not depend on which cards are used.
      if (failureRate > 0 && failureDraw(this.gatewayId, this.settings.seed) < failureRate) return made(SIMULATED_FAILURE, null);
      const decision = decideCharge(r.source, this.clock.now());
      // A retryable error means the gateway did nothing, so no charge object exists.
      const known = made(decision, decision.outcome === 'retryable_error' ? null : flat(newChargeReference()));
      const captureAtOnce = r.capture !== false;
      if (decision.outcome === 'requires_action' && decision.afterChallenge) {
        const { outcome, declineCode, message } = decision.afterChallenge;
        known.life = new ChargeLife(captureAtOnce, { id: newChallengeId(), returnUrl: r.returnUrl ?? null, completed: { outcome, declineCode, message } });
      } else if (!captureAtOnce && decision.outcome === 'succeeded') {
        known.life = new ChargeLife(false, null);
      }
      return known;
    });
  }

  capture(r: CaptureRequest): Promise<GatewayResult> {
    return this.perform<GatewayResult>('capture', r.idempotencyKey, summarizeCaptureRequest(r), (key, runs) => {
      const charge = this.ownCharge(r.chargeReference);
      const refusal = !charge ? 'No such charge on this gateway.'
        : charge.outcome !== 'succeeded' || !charge.life || charge.life.captureAtOnce ? 'The charge is not an authorisation waiting for capture.'
          : charge.life.voided ? 'The authorisation was voided.'
            : charge.life.captured > 0 ? 'The authorisation was already captured.'
              : !Number.isInteger(r.amount) || r.amount < 1 || r.amount > charge.amount ? 'The capture amount must be between 1 and the authorised amount.'
                : null;
      if (charge?.life && refusal === null) charge.life.captured = r.amount;
      return new KnownOperation(
        key, this.gatewayId, 'capture', runs, refusal ? 'declined' : 'succeeded', refusal ? 'capture_failed' : null, refusal, refusal ? null : r.chargeReference,
        r.amount, intern(r.currency), null, null, r.chargeReference,
      );
    });
  }

  cancel(r: CancelRequest): Promise<GatewayResult> {
    return this.perform<GatewayResult>('cancel', r.idempotencyKey, summarizeCancelRequest(r), (key, runs) => {
      const charge = this.ownCharge(r.chargeReference);
      const life = charge?.life;
      const voidable = charge && life && !life.voided && life.captured === 0 &&
        (charge.outcome === 'requires_action' || (charge.outcome === 'succeeded' && !life.captureAtOnce));
      if (voidable) {
        life.voided = true;
        if (life.challenge) {
          simulatorState().challenges.delete(life.challenge.id);
          life.challenge = null;
          charge.outcome = 'declined';
          charge.declineCode = 'canceled';
          charge.message = 'The payment was canceled before the customer authenticated it.';
        }
      }
      const refusal = voidable ? null : !charge ? 'No such charge on this gateway.' : 'Only an uncaptured authorisation or a charge waiting for authentication can be voided.';
      return new KnownOperation(
        key, this.gatewayId, 'cancel', runs, refusal ? 'declined' : 'succeeded', refusal ? 'processing_error' : null, refusal, refusal ? null : r.chargeReference,
        0, null, null, null, r.chargeReference,
      );
    });
  }

  private ownCharge(reference: string): KnownOperation | null {
    const charge = simulatorState().charges.get(reference);
    return charge && charge.gatewayId === this.gatewayId ? charge : null;
  }

  /** The challenge page of a charge waiting for 3-D Secure: under the return URL's origin, else the service's public address. */
  private challengeUrl(known: KnownOperation): string | null {
    const challenge = known.life?.challenge;
    if (!challenge) return null;
    const base = challenge.returnUrl ? new URL(challenge.returnUrl).origin : (this.publicBaseUrl?.() ?? 'https://localhost');
    return `${base}${SIMULATOR_CHALLENGE_PATH}${challenge.id}`;
  }

  refund(r: RefundRequest): Promise<GatewayResult> {
    return this.perform<GatewayResult>('refund', r.idempotencyKey, summarizeRefundRequest(r), (key, runs) => {
      const refused = this.refundRefusal(r);
      const decision: SimulatorDecision = refused ? { outcome: 'declined', declineCode: refused.code, message: refused.message } : SUCCESS;
      return new KnownOperation(
        key, this.gatewayId, 'refund', runs, decision.outcome, decision.declineCode, decision.message, refused ? null : flat(newRefundReference()),
        r.amount, intern(r.currency), null, null, r.chargeReference,
      );
    });
  }

  saveCard(r: SaveCardRequest): Promise<SaveCardResult> {
    return this.perform<SaveCardResult>('save_card', r.idempotencyKey, summarizeSaveCardRequest(r), (key, runs) => {
      const decision = decideSaveCard(r.card, this.clock.now());
      const card = sourceCard({ kind: 'card', card: r.card });
      return new KnownOperation(
        key, this.gatewayId, 'save_card', runs, decision.outcome, decision.declineCode, decision.message,
        decision.behaviour ? flat(encodeSavedToken(decision.behaviour)) : null, 0, null, intern(card?.brand ?? null), intern(card?.last4 ?? null), null,
      );
    });
  }

  async status(r: StatusRequest): Promise<StatusResult> {
    const started = performance.now();
    const request = summarizeStatusRequest(r);
    const slow = await this.delay();
    if (slow) return { ...this.timeoutResult(started, request), found: false };
    if (this.settings.outage) return { ...this.outageResult(started, request), found: false };
    const known = simulatorState().operations.get(operationKey(this.gatewayId, r.idempotencyKey));
    if (known?.pending) await known.pending;
    const wanted = r.kind as SimulatorOperation;
    if (!known || !known.final || known.operation !== wanted) {
      return {
        outcome: 'declined', reference: null, declineCode: 'not_found',
        message: `No ${r.kind} was made with this idempotency key.`,
        latencyMs: elapsedMs(started), request, response: { found: false }, found: false,
        // Once the simulator has forgotten operations (SIMULATOR_MEMORY), this may be one of them.
        definitive: forgetsNothing(),
      };
    }
    const answer = answerOf(known, elapsedMs(started), request, this.challengeUrl(known));
    return { ...answer, response: { ...answer.response, found: true }, found: true };
  }

  /**
   * Runs one idempotent operation: a repeat (or a concurrent duplicate) with the same key gets
   * the first answer, rebuilt from what the simulator remembers of it; only retryable errors
   * run again, since nothing happened for them.
   */
  private async perform<T extends GatewayResult>(
    operation: SimulatorOperation,
    idempotencyKey: string,
    request: Record<string, unknown>,
    decide: (key: string, runs: number) => KnownOperation,
  ): Promise<T> {
    const started = performance.now();
    const key = operationKey(this.gatewayId, idempotencyKey);
    const known = simulatorState().operations.get(key);
    if (known?.pending) await known.pending;
    if (known?.final) {
      if (known.operation !== operation) {
        return this.failure<T>(operation, {
          outcome: 'declined', reference: null, declineCode: 'processing_error',
          message: `This idempotency key was already used for a ${known.operation.replace('_', ' ')}.`,
          latencyMs: elapsedMs(started), request, response: { error: 'idempotency_key_reused' },
        });
      }
      const first = answerOf(known, elapsedMs(started), request, this.challengeUrl(known));
      const replay: GatewayResult = { ...first, response: { ...first.response, idempotentReplayed: true } };
      return replay as T;
    }
    if (this.settings.outage) {
      const slow = await this.delay();
      return this.failure<T>(operation, slow ? this.timeoutResult(started, request) : this.outageResult(started, request));
    }

    // Decided and remembered synchronously, so concurrent refunds see each other's effect on the
    // charge and a concurrent repeat waits for this one. The key is kept flat (see flat()).
    const made = decide(flat(key), known?.operation === operation ? known.runs + 1 : 1);
    const latency = this.settings.latencyMs ?? 0;
    const settled = latency > 0 ? sleep(latency) : null;
    if (settled && made.final) {
      made.pending = settled.then(() => {
        made.pending = null;
        queueSettled(made);
      });
    }
    rememberOperation(made);

    if (latency > this.timeoutMs) {
      await sleep(this.timeoutMs);
      return this.failure<T>(operation, this.timeoutResult(started, request));
    }
    if (settled) await (made.pending ?? settled);
    return answerOf(made, elapsedMs(started), request, this.challengeUrl(made)) as T;
  }

  private refundRefusal(r: RefundRequest): { code: string; message: string } | null {
    if (!Number.isInteger(r.amount) || r.amount < 1) return { code: 'processing_error', message: 'The refund amount must be a positive integer.' };
    const charge = simulatorState().charges.get(r.chargeReference);
    if (!charge) {
      // Charges from an earlier process are not in memory; a well-formed reference is trusted.
      return isSimulatorChargeReference(r.chargeReference) ? null : { code: 'charge_not_found', message: 'No such charge on this gateway.' };
    }
    if (charge.gatewayId !== this.gatewayId) return { code: 'charge_not_found', message: 'No such charge on this gateway.' };
    if (charge.outcome !== 'succeeded') return { code: 'charge_not_refundable', message: 'The charge did not succeed, so it cannot be refunded.' };
    // An authorisation is refundable once captured, and only what was captured.
    const taken = charge.life && !charge.life.captureAtOnce ? charge.life.captured : charge.amount;
    if (taken === 0) return { code: 'charge_not_refundable', message: 'The authorisation was not captured, so it cannot be refunded.' };
    if (charge.currency?.toUpperCase() !== r.currency.toUpperCase()) return { code: 'processing_error', message: 'The refund currency differs from the charge currency.' };
    if (charge.refunded + r.amount > taken) return { code: 'refund_exceeds_charge', message: 'The refund exceeds what is left of the charge.' };
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

/** An operation's answer, the same whenever it is given: first, replayed, or looked up. */
function answerOf(known: KnownOperation, latencyMs: number, request: Record<string, unknown>, challengeUrl: string | null): GatewayResult {
  const { outcome, reference, declineCode: code, message } = known;
  const card = known.brand === null ? null : { brand: known.brand, last4: known.last4 };
  let response: Record<string, unknown>;
  switch (known.operation) {
    case 'charge': {
      response = { object: 'charge', id: reference, status: outcome, code, amount: known.amount, currency: known.currency, card };
      const life = known.life;
      if (!life) break;
      const captured = life.captureAtOnce || life.captured > 0;
      response = { ...response, captured, amountCaptured: life.captureAtOnce ? known.amount : life.captured, voided: life.voided };
      const result: GatewayResult = { outcome, reference, declineCode: code, message, latencyMs, request, response };
      if (outcome === 'succeeded') result.captured = captured;
      if (outcome === 'requires_action' && challengeUrl) result.nextAction = { type: 'redirect_to_url', url: challengeUrl };
      return result;
    }
    case 'capture':
    case 'cancel':
      response = { object: known.operation, status: outcome, code, charge: known.chargeReference, ...(known.operation === 'capture' ? { amount: known.amount } : {}) };
      break;
    case 'refund':
      response = reference === null
        ? { object: 'refund', id: null, status: outcome, code }
        : { object: 'refund', id: reference, status: outcome, charge: known.chargeReference, amount: known.amount, currency: known.currency };
      break;
    case 'save_card': {
      const saved: SaveCardResult = {
        outcome, reference, declineCode: code, message, latencyMs, request,
        response: { object: 'payment_method', id: reference, status: outcome, code, card }, token: reference,
      };
      return saved;
    }
  }
  return { outcome, reference, declineCode: code, message, latencyMs, request, response };
}

/** A charge waiting on the simulator's 3-D Secure challenge, as its page shows it (no card number: brand and last four). */
export interface SimulatorChallenge {
  id: string;
  amount: number;
  currency: string | null;
  brand: string | null;
  last4: string | null;
  returnUrl: string | null;
}

/** The open challenge `id`, or null when there is none (answered, voided, forgotten, or never made). */
export function simulatorChallenge(id: string): SimulatorChallenge | null {
  const known = simulatorState().challenges.get(id);
  const challenge = known?.life?.challenge;
  if (!known || !challenge || known.outcome !== 'requires_action') return null;
  return { id, amount: known.amount, currency: known.currency, brand: known.brand, last4: known.last4, returnUrl: challenge.returnUrl };
}

/**
 * The customer's answer on the challenge page: `complete` ends the charge as the card does after
 * authentication (captured at once, authorised only, or declined), `fail` declines it with
 * `authentication_failed`. Answered once; null when the challenge is not open.
 */
export function answerSimulatorChallenge(id: string, answer: 'complete' | 'fail'): { returnUrl: string | null } | null {
  const state = simulatorState();
  const known = state.challenges.get(id);
  const challenge = known?.life?.challenge;
  if (!known || !challenge || known.outcome !== 'requires_action') return null;
  const ending = answer === 'complete' ? challenge.completed : AUTHENTICATION_FAILED;
  known.outcome = ending.outcome;
  known.declineCode = ending.declineCode;
  known.message = ending.message;
  state.challenges.delete(id);
  (known.life as ChargeLife).challenge = null;
  return { returnUrl: challenge.returnUrl };
}
