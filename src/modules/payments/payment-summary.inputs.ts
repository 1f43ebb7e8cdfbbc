import { z } from 'zod';
import { createdBound } from '../../core/created-range';

/** What a payment summary may be grouped by, besides the currency every row has. */
export const SUMMARY_GROUPS = ['currency', 'status', 'gateway', 'day'] as const;
export type SummaryGroup = (typeof SUMMARY_GROUPS)[number];

/** The longest window a summary by day covers (a row per day and group). */
export const SUMMARY_DAYS_MAX = 366;
const DAY_MS = 86_400_000;

const groupsMessage = `groupBy must be a comma-separated list of ${SUMMARY_GROUPS.join(', ')}`;

/** `currency,status` (GraphQL's list arrives joined the same way): each group once, in the order given. */
const groupBy = z
  .string({ error: groupsMessage })
  .max(100, { error: groupsMessage })
  .meta({ description: `Comma-separated: ${SUMMARY_GROUPS.join(', ')}. Rows are always split by currency.` })
  .transform((text, ctx) => {
    const names = text.split(',').map((name) => name.trim()).filter((name) => name !== '');
    const unknown = names.find((name) => !(SUMMARY_GROUPS as readonly string[]).includes(name));
    if (unknown !== undefined) {
      ctx.addIssue({ code: 'custom', message: `${groupsMessage}; '${unknown}' is not one` });
      return z.NEVER;
    }
    return [...new Set(names)] as SummaryGroup[];
  });

/**
 * `GET /v1/payments/summary`: the window [from, to) (ISO 8601 dates or instants), both required,
 * `from` before `to`; grouped by day, at most SUMMARY_DAYS_MAX days.
 */
export const paymentSummaryInput = z
  .object({
    from: createdBound('from').meta({ description: 'Start of the window, included: an ISO 8601 date (UTC midnight) or instant.' }),
    to: createdBound('to').meta({ description: 'End of the window, excluded: an ISO 8601 date (UTC midnight) or instant.' }),
    groupBy: groupBy.optional(),
  })
  .strict()
  .superRefine((input, ctx) => {
    if (input.to.getTime() <= input.from.getTime()) {
      ctx.addIssue({ code: 'custom', path: ['to'], message: 'to must be after from' });
    } else if (input.groupBy?.includes('day') && input.to.getTime() - input.from.getTime() > SUMMARY_DAYS_MAX * DAY_MS) {
      ctx.addIssue({ code: 'custom', path: ['to'], message: `A summary by day covers at most ${SUMMARY_DAYS_MAX} days` });
    }
  });

export type PaymentSummaryInput = z.output<typeof paymentSummaryInput>;
