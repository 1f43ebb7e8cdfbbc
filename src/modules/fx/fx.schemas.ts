import { z } from 'zod';
import { currencyOut, nullableTimestamp } from '../../core/api-schemas';

const fxRate = z.object({ from: currencyOut, to: currencyOut, rate: z.string(), updatedAt: nullableTimestamp });

export const fxRateSetSchema = z
  .object({
    object: z.literal('fx_rates'),
    livemode: z.boolean(),
    rates: z.array(fxRate),
    demoRatesAvailable: z.boolean(),
    demoRates: z.array(fxRate),
  })
  .meta({ id: 'FxRates' });
