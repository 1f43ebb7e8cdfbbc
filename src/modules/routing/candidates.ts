import type { CircuitBreaker } from './circuit-breaker';
import type { Rng } from './rng';
import type { RoutingStrategy } from './routing.inputs';
import { matchRule, type RoutingInput } from './rules';
import type { RuleConditions } from './routing.inputs';
import type { SuccessRateTracker } from './success-rate';

/** What routing needs to know about a configured gateway. */
export interface CandidateGateway {
  id: string;
  enabled: boolean;
  /** Currencies it accepts; null means any. */
  currencies: string[] | null;
}

export type SkipReason = 'disabled' | 'currency' | 'circuit_open' | 'unknown';

export interface CandidateOrder {
  /** Name of the matched rule, or null when only the fallback applied. */
  rule: string | null;
  /** Gateways to try, in order, at most `maxAttempts`. */
  candidates: string[];
  /** Named gateways left out, each once, with why. */
  skipped: Array<{ gatewayId: string; reason: SkipReason }>;
}

/** The parts of a routing config ordering reads (a parsed `RoutingConfig` fits). */
export interface CandidateConfig {
  rules: ReadonlyArray<{
    name: string;
    when?: RuleConditions;
    strategy: RoutingStrategy;
    gateways: ReadonlyArray<{ gatewayId: string; weight?: number }>;
  }>;
  fallback: readonly string[];
  maxAttempts: number;
}

export interface OrderCandidatesArgs {
  config: CandidateConfig;
  input: RoutingInput;
  /** Every configured gateway of the account and mode. */
  gateways: readonly CandidateGateway[];
  stats: Pick<SuccessRateTracker, 'rate'>;
  breaker: Pick<CircuitBreaker, 'isOpen'>;
  rng: Rng;
  /** When the decision is made (for the record; the breaker reads its own clock). */
  now?: Date;
  /** Share of success_rate decisions that put a gateway other than the best first (default 0.1). */
  explorationRate?: number;
}

type Weighted = { gatewayId: string; weight?: number };

/** Stable sort, highest key first: ties keep the rule's order. */
function byDescending<T>(items: readonly T[], key: (item: T) => number): T[] {
  return items
    .map((item, index) => ({ item, index, k: key(item) }))
    .sort((a, b) => b.k - a.k || a.index - b.index)
    .map((e) => e.item);
}

/** First pick drawn in proportion to weight (so traffic splits by weight); the rest by weight. */
function orderWeighted(gateways: readonly Weighted[], rng: Rng): string[] {
  const total = gateways.reduce((sum, g) => sum + (g.weight ?? 1), 0);
  let draw = rng() * total;
  let first = gateways[gateways.length - 1];
  for (const g of gateways) {
    draw -= g.weight ?? 1;
    if (draw < 0) {
      first = g;
      break;
    }
  }
  const rest = byDescending(gateways.filter((g) => g !== first), (g) => g.weight ?? 1);
  return [first, ...rest].map((g) => g.gatewayId);
}

/**
 * Epsilon-greedy: usually the best recent success rate goes first; otherwise a uniformly chosen
 * other gateway does, so a recovering or new gateway keeps getting some traffic and data.
 */
function orderBySuccessRate(gateways: readonly Weighted[], stats: Pick<SuccessRateTracker, 'rate'>, rng: Rng, explorationRate: number): string[] {
  const ranked = byDescending(gateways, (g) => stats.rate(g.gatewayId)).map((g) => g.gatewayId);
  if (ranked.length < 2) return ranked;
  if (rng() >= explorationRate) return ranked;
  const others = ranked.slice(1);
  const explored = others[Math.min(others.length - 1, Math.floor(rng() * others.length))];
  return [explored, ...ranked.filter((id) => id !== explored)];
}

/**
 * The ordered gateways a payment tries: the first matching rule's gateways ordered by its
 * strategy, then `fallback`; duplicates removed, unusable gateways skipped (unknown, disabled,
 * currency not accepted, circuit open), at most `maxAttempts`. No rule and no fallback → empty
 * (the caller decides what that means).
 */
export function orderCandidates(args: OrderCandidatesArgs): CandidateOrder {
  const { config, input, stats, breaker, rng } = args;
  const currency = input.currency.toUpperCase();
  const known = new Map(args.gateways.map((g) => [g.id, g]));
  const skipped: CandidateOrder['skipped'] = [];
  const skippedIds = new Set<string>();

  const usable = (gatewayId: string): boolean => {
    const gateway = known.get(gatewayId);
    const reason: SkipReason | null = !gateway
      ? 'unknown'
      : !gateway.enabled
        ? 'disabled'
        : gateway.currencies !== null && !gateway.currencies.some((c) => c.toUpperCase() === currency)
          ? 'currency'
          : breaker.isOpen(gatewayId)
            ? 'circuit_open'
            : null;
    if (reason && !skippedIds.has(gatewayId)) {
      skippedIds.add(gatewayId);
      skipped.push({ gatewayId, reason });
    }
    return reason === null;
  };

  const rule = matchRule(config.rules, input);
  const ordered: string[] = [];
  if (rule) {
    // Filter before ordering so a weighted or success-rate pick never lands on a skipped gateway.
    const eligible = rule.gateways.filter((g) => usable(g.gatewayId));
    if (eligible.length > 0) {
      switch (rule.strategy) {
        case 'priority':
          ordered.push(...eligible.map((g) => g.gatewayId));
          break;
        case 'weighted':
          ordered.push(...orderWeighted(eligible, rng));
          break;
        case 'success_rate':
          ordered.push(...orderBySuccessRate(eligible, stats, rng, args.explorationRate ?? 0.1));
          break;
      }
    }
  }
  for (const gatewayId of config.fallback) {
    if (!ordered.includes(gatewayId) && !skippedIds.has(gatewayId) && usable(gatewayId)) ordered.push(gatewayId);
  }
  return { rule: rule?.name ?? null, candidates: [...new Set(ordered)].slice(0, Math.max(0, config.maxAttempts)), skipped };
}
