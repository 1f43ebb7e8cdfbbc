import { periodEndAfter, periodStartBefore, prorate } from './billing-period';
import type { PendingLine, Plan, SubscriptionRecord } from './subscription.store';

/** A line of a subscription's invoice (or of a proration preview). */
export interface BillingLine {
  description: string;
  quantity: number;
  unitAmount: number;
  amount: number;
  periodStart: Date | null;
  periodEnd: Date | null;
  proration: boolean;
}

/** The plan's charge for one whole period. */
export function planLine(plan: Plan, quantity: number, periodStart: Date, periodEnd: Date): BillingLine {
  return {
    description: `${plan.productName || plan.priceId} × ${quantity} (${day(periodStart)} – ${day(periodEnd)})`,
    quantity, unitAmount: plan.unitAmount, amount: plan.unitAmount * quantity, periodStart, periodEnd, proration: false,
  };
}

/**
 * The lines of the invoice a period starts with: the prorations waiting for it, then the plan for
 * the period. The billing run and the upcoming-invoice dry run both build it here.
 */
export function cycleLines(plan: Plan, quantity: number, pending: readonly PendingLine[], periodStart: Date, periodEnd: Date): BillingLine[] {
  return [
    ...pending.map((p) => ({ description: p.description, quantity: p.quantity, unitAmount: p.unitAmount, amount: p.amount, periodStart: p.periodStart, periodEnd: p.periodEnd, proration: p.proration })),
    planLine(plan, quantity, periodStart, periodEnd),
  ];
}

/**
 * The period that starts where the subscription's current one ends, and the lines of its invoice:
 * what the billing run renews (one by one and in batches) and the upcoming invoice shows.
 */
export function nextCycle(
  sub: Pick<SubscriptionRecord, 'currentPeriodEnd' | 'billingCycleAnchor' | 'quantity'>, plan: Plan, pending: readonly PendingLine[],
): { start: Date; end: Date; lines: BillingLine[] } {
  const start = sub.currentPeriodEnd;
  const end = periodEndAfter(sub.billingCycleAnchor, plan, start);
  return { start, end, lines: cycleLines(plan, sub.quantity, pending, start, end) };
}

/**
 * The period prorations in the current period are measured against: the whole period that ends
 * at the current one's end. For a first period shorter than the interval (a later
 * `billingCycleAnchor`) it starts before the current period does, so a change in a short period
 * credits and charges by the second at the plan's own rate (its price ÷ a whole period), as the
 * short period's invoice charged it, never scaled up by whole period ÷ short period.
 */
export function prorationPeriod(sub: Pick<SubscriptionRecord, 'billingCycleAnchor' | 'currentPeriodEnd'>, plan: Plan): { start: Date; end: Date } {
  return { start: periodStartBefore(sub.billingCycleAnchor, plan, sub.currentPeriodEnd), end: sub.currentPeriodEnd };
}

/**
 * What changing from (`from`, `fromQuantity`) to (`to`, `toQuantity`) at `at` is worth, to the
 * second: a credit for the unused rest of the period on the old plan and a charge for the same
 * rest on the new one, each the plan's period amount × remaining seconds / period seconds,
 * rounded half away from zero to the minor unit. Both the preview and the applied change call
 * this, so a change given the preview's `prorationDate` gets exactly the preview's lines.
 */
export function prorationLines(
  period: { start: Date; end: Date },
  from: Plan, fromQuantity: number,
  to: Plan, toQuantity: number,
  at: Date,
): BillingLine[] {
  if (from.priceId === to.priceId && fromQuantity === toQuantity) return [];
  const remainingMs = period.end.getTime() - at.getTime();
  const periodMs = period.end.getTime() - period.start.getTime();
  const charge = prorate(to.unitAmount * toQuantity, remainingMs, periodMs);
  return [
    unusedTimeLine(period, from, fromQuantity, at),
    { description: `Remaining time on ${to.productName || to.priceId} × ${toQuantity} after ${minute(at)}`, quantity: 1, unitAmount: charge, amount: charge, periodStart: at, periodEnd: period.end, proration: true },
  ];
}

/**
 * The credit for the unused rest of the period on a plan from `at` (the first line of
 * `prorationLines`): what a period ended early at `at` gives back, also when the plan stays
 * the same (`billingCycleAnchor: now`).
 */
export function unusedTimeLine(period: { start: Date; end: Date }, from: Plan, fromQuantity: number, at: Date): BillingLine {
  const credit = -prorate(from.unitAmount * fromQuantity, period.end.getTime() - at.getTime(), period.end.getTime() - period.start.getTime());
  return { description: `Unused time on ${from.productName || from.priceId} × ${fromQuantity} after ${minute(at)}`, quantity: 1, unitAmount: credit, amount: credit, periodStart: at, periodEnd: period.end, proration: true };
}

export function total(lines: readonly BillingLine[]): number {
  return lines.reduce((sum, l) => sum + l.amount, 0);
}

function day(d: Date): string {
  return d.toISOString().slice(0, 10);
}

function minute(d: Date): string {
  return `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
