import { z } from 'zod';
import { taxBreakdownSchema } from '../invoices/invoice.schemas';
import { amountOut, currencyOut, metadataOut, nullableTimestamp, objectBase, timestamp } from '../../core/api-schemas';
import { COLLECTION_METHODS, SUBSCRIPTION_STATUSES } from './subscription.inputs';

const plan = z.object({
  priceId: z.string(),
  productId: z.string(),
  productName: z.string(),
  unitAmount: amountOut,
  currency: currencyOut,
  interval: z.enum(['day', 'week', 'month', 'year']),
  intervalCount: z.number().int(),
});

/** A subscription as the API returns it (subscription-view.ts `Subscription`). */
export const subscriptionSchema = z
  .object({
    ...objectBase('subscription'),
    customerId: z.string(),
    priceId: z.string(),
    quantity: z.number().int(),
    status: z.enum(SUBSCRIPTION_STATUSES),
    collectionMethod: z.enum(COLLECTION_METHODS),
    currentPeriodStart: timestamp,
    currentPeriodEnd: timestamp,
    billingCycleAnchor: timestamp,
    plan,
    cancelAtPeriodEnd: z.boolean(),
    canceledAt: nullableTimestamp,
    pausedAt: nullableTimestamp,
    endedAt: nullableTimestamp,
    latestInvoiceId: z.string().nullable(),
    defaultPaymentMethodId: z.string().nullable(),
    testClockId: z.string().nullable(),
    nextPaymentAttemptAt: nullableTimestamp,
    defaultTaxRateIds: z.array(z.string()).meta({ description: 'The tax rates (txr_…) of its invoices\' lines, proration lines included.' }),
    metadata: metadataOut,
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Subscription' });

export const prorationPreviewSchema = z
  .object({
    object: z.literal('proration_preview'),
    subscriptionId: z.string(),
    prorationDate: timestamp,
    currency: currencyOut,
    lines: z.array(z.object({ description: z.string(), amount: amountOut, periodStart: nullableTimestamp, periodEnd: nullableTimestamp })),
    total: amountOut,
  })
  .meta({ id: 'ProrationPreview' });

export const upcomingInvoiceSchema = z
  .object({
    object: z.literal('upcoming_invoice'),
    subscriptionId: z.string(),
    currency: currencyOut,
    lineItems: z.array(
      z.object({
        description: z.string(),
        quantity: z.number().int(),
        unitAmount: amountOut,
        amount: amountOut,
        periodStart: nullableTimestamp,
        periodEnd: nullableTimestamp,
        proration: z.boolean(),
      }),
    ),
    subtotal: amountOut,
    tax: amountOut,
    taxBreakdown: taxBreakdownSchema,
    total: amountOut,
    periodStart: timestamp,
    periodEnd: timestamp,
    createsAt: timestamp,
  })
  .meta({ id: 'UpcomingInvoice' });

export const testClockSchema = z
  .object({
    ...objectBase('test_clock'),
    livemode: z.literal(false),
    name: z.string().nullable(),
    frozenTime: timestamp,
    status: z.enum(['ready', 'advancing']),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'TestClock' });
