import { z } from 'zod';
import { currencySchema } from '../../core/money';
import { closedSetFilter, listSchema } from '../../core/pagination';
import { GATEWAY_TYPES } from '../../connectors/registry';

const credentialsSchema = z.record(z.string(), z.string().max(2000), { error: 'credentials must be an object of strings' });
const settingsSchema = z.record(z.string(), z.unknown(), { error: 'settings must be an object' });
/** Upper-cased, each once (`["usd", "USD"]` is `["USD"]`). */
const currenciesSchema = z.array(currencySchema).min(1).max(200).transform((list) => [...new Set(list)]).nullable();

export const createGatewayInput = z
  .object({
    name: z.string().trim().min(1).max(200),
    type: z.enum(GATEWAY_TYPES as unknown as [string, ...string[]], { error: `type must be one of ${GATEWAY_TYPES.join(', ')}` }),
    credentials: credentialsSchema.optional(),
    currencies: currenciesSchema.optional(),
    enabled: z.boolean().optional(),
    settings: settingsSchema.optional(),
  })
  .strict();

export const updateGatewayInput = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    credentials: credentialsSchema.optional(),
    currencies: currenciesSchema.optional(),
    enabled: z.boolean().optional(),
    settings: settingsSchema.optional(),
  })
  .strict();

export const listGatewaysInput = listSchema(['createdAt', 'name'] as const, {
  type: closedSetFilter('type', GATEWAY_TYPES as unknown as [string, ...string[]]),
  enabled: z.preprocess((v) => (v === 'true' ? true : v === 'false' ? false : v), z.boolean()).optional(),
});
