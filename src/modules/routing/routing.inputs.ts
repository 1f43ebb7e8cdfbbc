import { z } from 'zod';
import { amountSchema, currencySchema } from '../../core/money';
import { countrySchema, metadataSchema } from '../../core/validation';
import { CARD_BRANDS } from '../../connectors/card';

export const ROUTING_STRATEGIES = ['priority', 'weighted', 'success_rate'] as const;
export type RoutingStrategy = (typeof ROUTING_STRATEGIES)[number];

/** A card brand as rules name them (case and spaces ignored). */
export const cardBrandSchema = z
  .string({ error: `must be a card brand (${CARD_BRANDS.join(', ')})` })
  .transform((v) => v.trim().toLowerCase())
  .pipe(z.enum(CARD_BRANDS, { error: `must be a card brand (${CARD_BRANDS.join(', ')})` }));

const gatewayIdSchema = z.string({ error: 'must be a gateway id' }).trim().min(1, { error: 'must be a gateway id' }).max(64);

const conditionsSchema = z
  .object({
    currency: z.array(currencySchema).min(1).max(200).optional(),
    country: z.array(countrySchema).min(1).max(300).optional(),
    amountGte: z.number().int().min(0).optional(),
    amountLte: z.number().int().min(0).optional(),
    cardBrand: z.array(cardBrandSchema).min(1).max(CARD_BRANDS.length).optional(),
    metadata: metadataSchema.optional(),
  })
  .strict()
  .superRefine((when, ctx) => {
    if (when.amountGte !== undefined && when.amountLte !== undefined && when.amountGte > when.amountLte) {
      ctx.addIssue({ code: 'custom', message: 'amountGte must not exceed amountLte', path: ['amountGte'] });
    }
  });

const ruleGatewaySchema = z
  .object({
    gatewayId: gatewayIdSchema,
    weight: z.number().int().min(1).max(1_000_000).optional(),
  })
  .strict();

const ruleSchema = z
  .object({
    name: z.string({ error: 'must be a rule name' }).trim().min(1, { error: 'must not be empty' }).max(100, { error: 'must be at most 100 characters' }),
    when: conditionsSchema.optional(),
    strategy: z.enum(ROUTING_STRATEGIES, { error: `must be one of ${ROUTING_STRATEGIES.join(', ')}` }),
    gateways: z.array(ruleGatewaySchema).min(1, { error: 'a rule needs at least one gateway' }).max(20),
  })
  .strict()
  .superRefine((rule, ctx) => {
    const seen = new Set<string>();
    rule.gateways.forEach((g, i) => {
      if (seen.has(g.gatewayId)) ctx.addIssue({ code: 'custom', message: 'a gateway may appear once per rule', path: ['gateways', i, 'gatewayId'] });
      seen.add(g.gatewayId);
      if (rule.strategy === 'weighted' && g.weight === undefined) {
        ctx.addIssue({ code: 'custom', message: 'weighted rules need a weight (≥ 1) on every gateway', path: ['gateways', i, 'weight'] });
      }
    });
  });

/** The most gateways one payment may try (`maxAttempts`). */
export const MAX_ATTEMPTS = 10;

/** PUT /v1/routing: the whole rule set, replaced at once. */
export const routingConfigSchema = z
  .object({
    rules: z.array(ruleSchema).max(100),
    fallback: z.array(gatewayIdSchema).max(20).default([]),
    maxAttempts: z.number().int().min(1).max(MAX_ATTEMPTS).default(3),
  })
  .strict()
  .superRefine((config, ctx) => {
    const names = new Set<string>();
    config.rules.forEach((rule, i) => {
      if (names.has(rule.name)) ctx.addIssue({ code: 'custom', message: 'rule names must be unique', path: ['rules', i, 'name'] });
      names.add(rule.name);
    });
    const fallback = new Set<string>();
    config.fallback.forEach((id, i) => {
      if (fallback.has(id)) ctx.addIssue({ code: 'custom', message: 'a gateway may appear once in fallback', path: ['fallback', i] });
      fallback.add(id);
    });
  });

export type RoutingConfig = z.output<typeof routingConfigSchema>;
export type RoutingConfigInput = z.input<typeof routingConfigSchema>;
export type RoutingRule = RoutingConfig['rules'][number];
export type RuleConditions = NonNullable<RoutingRule['when']>;

/** POST /v1/routing/simulate: the payment whose route is asked. */
export const simulateRoutingInput = z
  .object({
    amount: amountSchema,
    currency: currencySchema,
    country: countrySchema.optional(),
    // Only brands a rule can name: simulate refuses what PUT /v1/routing would.
    cardBrand: cardBrandSchema.optional(),
    metadata: metadataSchema.optional(),
  })
  .strict();
