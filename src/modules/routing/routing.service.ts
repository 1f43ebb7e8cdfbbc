import type { GatewayOutcome } from '../../connectors/connector';
import { z } from 'zod';
import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { isoTime, readJson } from '../../db/database';
import type { Clock } from '../../core/clock';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { DomainError } from '../../core/errors';
import { parseInput, withoutReadOnly } from '../../core/validation';
import { routingConfigSchema, simulateRoutingInput } from './routing.inputs';
import { orderCandidates } from './candidates';
import type { RoutingInput } from './rules';
import { SuccessRateTracker } from './success-rate';
import { CircuitBreaker, type CircuitState } from './circuit-breaker';
import type { Rng } from './rng';
import { BUILTIN_SIMULATOR_ID, type GatewayConfigService } from '../gateways/gateway-config.service';
import { RoutingConfigModel } from './routing-config.model';
import { inSpan } from '../../observability/spans';

export type RoutingConfig = z.output<typeof routingConfigSchema>;

export interface RoutingView extends RoutingConfig {
  object: 'routing';
  livemode: boolean;
  updatedAt: string | null;
}

export interface RoutingDecision {
  object: 'routing_decision';
  rule: string | null;
  gateways: string[];
  maxAttempts: number;
  skipped: Array<{ gatewayId: string; reason: string }>;
  usesBuiltinSimulator: boolean;
}

const EMPTY: RoutingConfig = { rules: [], fallback: [], maxAttempts: 3 } as RoutingConfig;

/**
 * Owns the rule set and the per-instance health signals (recent success rate and circuit
 * breaker per gateway) that the success_rate strategy and the breaker read.
 */
export class RoutingService {
  readonly successRates = new SuccessRateTracker();
  readonly breaker: CircuitBreaker;
  // The rule set and gateway list change rarely and are read on every payment: keep them for a
  // second (changes made through this instance drop the entry at once).
  private readonly inputsCache = new Map<string, { expires: number; value: Promise<[{ config: RoutingConfig }, Awaited<ReturnType<GatewayConfigService['routable']>>]> }>();
  private static readonly CACHE_MS = 1000;

  constructor(
    private readonly db: Database,
    private readonly gateways: GatewayConfigService,
    clock: Clock,
    private readonly rng: Rng = Math.random,
  ) {
    this.breaker = new CircuitBreaker({ clock });
    gateways.onChange((accountId, mode) => this.forget(accountId, mode));
    gateways.guardRemoval((ctx, id, t) => this.references(ctx, id, t));
  }

  private forget(accountId: string, mode: string): void {
    this.inputsCache.delete(`${accountId}:${mode}`);
  }

  private routingInputs(ctx: RequestContext) {
    const key = `${ctx.accountId}:${ctx.mode}`;
    // Cache age, not business time: monotonic, so a test clock (frozen or jumping) cannot keep
    // another instance's rule change out of here. The breaker's cooldown runs on the clock.
    const now = performance.now();
    const hit = this.inputsCache.get(key);
    if (hit && hit.expires > now) return hit.value;
    const value = Promise.all([this.load(ctx), this.gateways.routable(ctx)]);
    this.inputsCache.set(key, { expires: now + RoutingService.CACHE_MS, value });
    value.catch(() => this.inputsCache.delete(key));
    return value;
  }

  async get(ctx: RequestContext): Promise<RoutingView> {
    requirePermission(ctx, 'routing', 'read');
    const { config, updatedAt } = await this.load(ctx);
    return { object: 'routing', livemode: ctx.mode === 'live', ...config, updatedAt };
  }

  async replace(ctx: RequestContext, input: unknown): Promise<RoutingView> {
    requirePermission(ctx, 'routing', 'write');
    const config = parseInput(routingConfigSchema, withoutReadOnly(input, ['object', 'livemode', 'updatedAt']));
    const named = [...config.rules.flatMap((r) => r.gateways.map((g) => g.gatewayId)), ...config.fallback];
    const now = ctx.clock.now();
    await this.db.transaction(async (t) => {
      // The named gateways are checked and kept locked until the rules are written; removing a
      // gateway locks its row too and reads the rules after, so one of the two waits for the
      // other and sees its outcome: rules never name a deleted gateway.
      const known = await this.gateways.lockLive(ctx, [...new Set(named)], t);
      config.rules.forEach((rule, i) =>
        rule.gateways.forEach((g, j) => {
          if (!known.has(g.gatewayId)) throw unknownGateway(`rules[${i}].gateways[${j}].gatewayId`, g.gatewayId);
        }),
      );
      config.fallback.forEach((id, i) => {
        if (!known.has(id)) throw unknownGateway(`fallback[${i}]`, id);
      });
      // One statement: concurrent replaces of one rule set each win in turn, never collide.
      await RoutingConfigModel.upsert(
        { accountId: ctx.accountId, mode: ctx.mode, config: JSON.stringify(config), updatedAt: now },
        { transaction: t, conflictFields: ['account_id', 'mode'], returning: false },
      );
    });
    this.forget(ctx.accountId, ctx.mode);
    return { object: 'routing', livemode: ctx.mode === 'live', ...config, updatedAt: now.toISOString() };
  }

  /** Whether the rules name the gateway, read in the caller's transaction (see replace). */
  async references(ctx: RequestContext, gatewayId: string, t?: Transaction): Promise<boolean> {
    const { config } = await this.load(ctx, t);
    return config.fallback.includes(gatewayId) || config.rules.some((r) => r.gateways.some((g) => g.gatewayId === gatewayId));
  }

  async simulate(ctx: RequestContext, input: unknown): Promise<RoutingDecision> {
    requirePermission(ctx, 'routing', 'read');
    return this.decide(ctx, parseInput(simulateRoutingInput, input));
  }

  /**
   * The ordered gateways a payment tries. Without any rule set, every enabled gateway is a
   * candidate in creation order. Test mode without an eligible gateway (none configured, none
   * enabled for this payment, every circuit open) falls back to the built-in simulator; live
   * mode gets none. A saved card's own gateway is the only one it can use.
   */
  decide(ctx: RequestContext, input: RoutingInput, restrictTo?: string): Promise<RoutingDecision> {
    return inSpan('routing.decide', {}, async (span) => {
      const decision = await this.decideRoute(ctx, input, restrictTo);
      if (span.isRecording()) span.setAttributes({
        'payorch.routing.rule': decision.rule ?? '',
        'payorch.routing.gateways': decision.gateways,
        'payorch.routing.max_attempts': decision.maxAttempts,
        'payorch.routing.skipped': decision.skipped.map((s) => `${s.gatewayId}:${s.reason}`),
      });
      return decision;
    });
  }

  private async decideRoute(ctx: RequestContext, input: RoutingInput, restrictTo?: string): Promise<RoutingDecision> {
    const [{ config }, gateways] = await this.routingInputs(ctx);
    let effective = config;
    if (config.rules.length === 0 && config.fallback.length === 0) {
      effective = { ...config, fallback: gateways.map((g) => g.id) };
    }
    if (restrictTo) {
      // A saved card only works on the gateway that tokenised it.
      effective = { ...effective, rules: [], fallback: [restrictTo] };
    }
    const ordered = orderCandidates({
      config: effective,
      input: { amount: input.amount, currency: input.currency, country: input.country ?? null, cardBrand: input.cardBrand ?? null, metadata: input.metadata ?? {} },
      gateways,
      stats: this.successRates,
      breaker: this.breaker,
      rng: this.rng,
      now: ctx.clock.now(),
    });
    let candidates = ordered.candidates;
    let builtin = false;
    if (candidates.length === 0 && ctx.mode === 'test' && (restrictTo === undefined || restrictTo === BUILTIN_SIMULATOR_ID)) {
      candidates = [BUILTIN_SIMULATOR_ID];
      builtin = true;
    }
    return {
      object: 'routing_decision',
      rule: ordered.rule,
      gateways: candidates,
      maxAttempts: effective.maxAttempts,
      skipped: ordered.skipped,
      usesBuiltinSimulator: builtin,
    };
  }

  /**
   * Whether an attempt may go to the gateway now (a half-open circuit lets one trial through).
   * The built-in simulator has no circuit: its errors are test cards' fixed answers, not its
   * health, and as test mode's last resort an open circuit would only refuse later test payments.
   */
  tryAcquire(gatewayId: string): boolean {
    return gatewayId === BUILTIN_SIMULATOR_ID || this.breaker.tryAcquire(gatewayId);
  }

  /** A configured gateway's outcome, for its circuit and its success rate (see tryAcquire). */
  recordOutcome(gatewayId: string, outcome: GatewayOutcome): void {
    if (gatewayId === BUILTIN_SIMULATOR_ID) return;
    if (outcome === 'succeeded' || outcome === 'declined' || outcome === 'requires_action') {
      // A decline is the card's answer, not a gateway fault: the gateway worked (and so did one
      // that asked for authentication; it counts as a success for routing until it ends).
      this.breaker.recordSuccess(gatewayId);
      this.successRates.record(gatewayId, outcome === 'succeeded');
    } else {
      this.breaker.recordFailure(gatewayId);
      this.successRates.record(gatewayId, false);
    }
  }

  /**
   * The circuit state of every gateway with one on record and of `also` (metrics: the gateways
   * called here), read at scrape time; the built-in simulator has no circuit.
   */
  circuitStates(also: Iterable<string>): Array<[string, CircuitState]> {
    const ids = new Set([...this.breaker.known(), ...also]);
    ids.delete(BUILTIN_SIMULATOR_ID);
    return [...ids].map((id) => [id, this.breaker.state(id)]);
  }

  private async load(ctx: { accountId: string; mode: string }, t?: Transaction): Promise<{ config: RoutingConfig; updatedAt: string | null }> {
    const row = await RoutingConfigModel.findOne({
      attributes: ['config', 'updatedAt'], where: { accountId: ctx.accountId, mode: ctx.mode }, transaction: t, raw: true,
    });
    if (!row) return { config: EMPTY, updatedAt: null };
    return { config: readJson<RoutingConfig>(row.config, EMPTY), updatedAt: isoTime(row.updatedAt) };
  }
}

function unknownGateway(param: string, id: string): DomainError {
  return new DomainError('invalid_parameter', `Unknown gateway '${id}'`, param);
}
