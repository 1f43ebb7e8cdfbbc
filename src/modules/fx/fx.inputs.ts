import { z } from 'zod';
import { currencySchema } from '../../core/money';
import { exchangeRateSchema } from './fx-math';

/** PUT /v1/fx-rates: the account's whole rate list, replaced at once. */
export const putRatesInput = z
  .object({
    rates: z
      .array(
        z.object({ from: currencySchema, to: currencySchema, rate: exchangeRateSchema }).strict(),
        { error: 'rates must be an array of {from, to, rate}' },
      )
      .max(500),
  })
  .strict()
  .superRefine((v, ctx) => {
    const seen = new Set<string>();
    v.rates.forEach((r, i) => {
      if (r.from === r.to) ctx.addIssue({ code: 'custom', path: ['rates', i, 'to'], message: 'must differ from from' });
      const pair = `${r.from}:${r.to}`;
      if (seen.has(pair)) ctx.addIssue({ code: 'custom', path: ['rates', i], message: `${pair} is given twice` });
      seen.add(pair);
    });
  });
