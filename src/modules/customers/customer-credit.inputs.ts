import { z } from 'zod';
import { MAX_AMOUNT, currencySchema } from '../../core/money';
import { listSchema } from '../../core/pagination';

/** What changed a credit balance (API.md §7). */
export const BALANCE_TRANSACTION_TYPES = ['invoice_credit', 'applied_to_invoice', 'adjustment'] as const;
export type BalanceTransactionType = (typeof BALANCE_TRANSACTION_TYPES)[number];

/** The longest description a balance transaction keeps (the column's width). */
export const MAX_BALANCE_DESCRIPTION = 500;

const AMOUNT_ERROR = 'must be a non-zero integer amount in the smallest currency unit: positive adds credit, negative takes it away';

/** POST /v1/customers/{id}/balance-transactions: a manual adjustment. */
export const adjustBalanceInput = z
  .object({
    currency: currencySchema,
    amount: z
      .number({ error: AMOUNT_ERROR })
      .int({ error: AMOUNT_ERROR })
      .min(-MAX_AMOUNT, { error: `must be at least -${MAX_AMOUNT}` })
      .max(MAX_AMOUNT, { error: `must be at most ${MAX_AMOUNT}` })
      .refine((v) => v !== 0, { error: AMOUNT_ERROR }),
    description: z
      .string({ error: 'must be a text saying why the balance changes' })
      .trim()
      .min(1, { error: 'must be a text saying why the balance changes' })
      .max(MAX_BALANCE_DESCRIPTION, { error: `must be at most ${MAX_BALANCE_DESCRIPTION} characters` }),
  })
  .strict();

export const listBalanceTransactionsInput = listSchema(['createdAt'] as const, {});

export type AdjustBalanceInput = z.infer<typeof adjustBalanceInput>;
