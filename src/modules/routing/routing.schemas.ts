import { z } from 'zod';
import { nullableTimestamp } from '../../core/api-schemas';

const rule = z.object({
  name: z.string(),
  when: z
    .object({
      currency: z.array(z.string()).optional(),
      country: z.array(z.string()).optional(),
      amountGte: z.number().int().optional(),
      amountLte: z.number().int().optional(),
      cardBrand: z.array(z.string()).optional(),
      metadata: z.record(z.string(), z.string()).optional(),
    })
    .optional(),
  strategy: z.enum(['priority', 'weighted', 'success_rate']),
  gateways: z.array(z.object({ gatewayId: z.string(), weight: z.number().int().optional() })),
});

export const routingSchema = z
  .object({
    object: z.literal('routing'),
    livemode: z.boolean(),
    rules: z.array(rule),
    fallback: z.array(z.string()),
    maxAttempts: z.number().int(),
    updatedAt: nullableTimestamp,
  })
  .meta({ id: 'Routing' });

export const routingDecisionSchema = z
  .object({
    object: z.literal('routing_decision'),
    rule: z.string().nullable(),
    gateways: z.array(z.string()),
    maxAttempts: z.number().int(),
    skipped: z.array(z.object({ gatewayId: z.string(), reason: z.string() })),
    usesBuiltinSimulator: z.boolean(),
  })
  .meta({ id: 'RoutingDecision' });
