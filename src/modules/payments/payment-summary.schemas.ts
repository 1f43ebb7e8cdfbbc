import { z } from 'zod';
import { amountOut, currencyOut } from '../../core/api-schemas';

/** One group of a payment summary: its group fields (those asked for), then the sums. */
export const paymentSummaryRowSchema = z.object({
  currency: currencyOut,
  status: z.string().optional().meta({ description: "The payment's status (a refund counts under its payment's status). Only when grouped by status." }),
  gateway: z.string().nullable().optional().meta({ description: "The gateway's id (a refund's own, else its payment's); null when none was reached. Only when grouped by gateway." }),
  day: z.string().regex(/^\d{4}-\d{2}-\d{2}$/).optional().meta({ description: 'The UTC date (a payment counts on its creation day, a refund on its own). Only when grouped by day.' }),
  count: z.number().int().meta({ description: 'Payments created in the window, of every status.' }),
  amount: amountOut.meta({ description: 'What the succeeded payments created in the window captured (amountCaptured: a partial capture counts what was taken).' }),
  amountRefunded: amountOut.meta({ description: 'Succeeded refunds made in the window, whenever their payment was made.' }),
  net: amountOut.meta({ description: 'amount − amountRefunded (negative when refunds outweigh the window\'s payments).' }),
});

export const paymentSummarySchema = z.array(paymentSummaryRowSchema).meta({ id: 'PaymentSummary' });

export type PaymentSummaryRow = z.output<typeof paymentSummaryRowSchema>;
