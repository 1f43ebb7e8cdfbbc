import type { RuleConditions } from './routing.inputs';

/** What a payment looks like to the rules. */
export interface RoutingInput {
  amount: number;
  currency: string;
  country?: string | null;
  cardBrand?: string | null;
  metadata?: Record<string, string>;
}

/**
 * Every given condition must hold; an absent condition matches anything. A condition on
 * country, card brand or metadata never matches a payment that does not carry that fact.
 */
export function ruleMatches(when: RuleConditions | undefined, input: RoutingInput): boolean {
  if (!when) return true;
  if (when.currency && !when.currency.includes(input.currency.toUpperCase())) return false;
  if (when.country && !(input.country && when.country.includes(input.country.toUpperCase()))) return false;
  if (when.amountGte !== undefined && input.amount < when.amountGte) return false;
  if (when.amountLte !== undefined && input.amount > when.amountLte) return false;
  if (when.cardBrand && !(input.cardBrand && (when.cardBrand as readonly string[]).includes(input.cardBrand.toLowerCase()))) return false;
  if (when.metadata) {
    const metadata = input.metadata ?? {};
    for (const [key, value] of Object.entries(when.metadata)) {
      if (!Object.prototype.hasOwnProperty.call(metadata, key) || metadata[key] !== value) return false;
    }
  }
  return true;
}

/** The first rule whose conditions all match, or null. */
export function matchRule<R extends { when?: RuleConditions }>(rules: readonly R[], input: RoutingInput): R | null {
  return rules.find((rule) => ruleMatches(rule.when, input)) ?? null;
}
