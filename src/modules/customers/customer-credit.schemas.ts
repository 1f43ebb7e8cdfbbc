import { z } from 'zod';
import { amountOut, currencyOut, objectBase, timestamp } from '../../core/api-schemas';
import { BALANCE_TRANSACTION_TYPES } from './customer-credit.inputs';

/** A change of a customer's credit balance as the API returns it (customer-credit.store.ts `BalanceTransaction`). */
export const balanceTransactionSchema = z
  .object({
    ...objectBase('balance_transaction'),
    customerId: z.string(),
    currency: currencyOut,
    amount: amountOut.meta({ description: 'Positive adds credit, negative takes it away (minor units).' }),
    type: z.enum(BALANCE_TRANSACTION_TYPES).meta({
      description: '`invoice_credit`: the rest of a negative invoice total; `applied_to_invoice`: an invoice took credit; `adjustment`: changed by hand (POST).',
    }),
    invoiceId: z.string().nullable(),
    description: z.string().nullable(),
    createdAt: timestamp,
    /** A balance transaction never changes: always `createdAt`. */
    updatedAt: timestamp,
  })
  .meta({ id: 'BalanceTransaction' });

/** A customer's `creditBalance`: currency → minor units, only the currencies with credit. */
export const creditBalanceSchema = z
  .record(currencyOut, amountOut)
  .meta({ description: 'The credit the customer holds, per currency (minor units); `{}` when none. Read only: invoices take it first; change it with POST /customers/{id}/balance-transactions.' });
