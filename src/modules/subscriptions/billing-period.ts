import { DomainError } from '../../core/errors';

export type Interval = 'day' | 'week' | 'month' | 'year';

/** A price's billing interval: `intervalCount` × `interval`. */
export interface Recurrence {
  interval: Interval;
  intervalCount: number;
}

const DAY_MS = 86_400_000;

/**
 * The instant `n` periods after the anchor, in UTC. Days and weeks are fixed lengths; months and
 * years keep the anchor's day of the month, clamped to the month's last day and restored in the
 * months that have it (anchor Jan 31: Feb 29, Mar 31, Apr 30 in a leap year), always counted from
 * the anchor, never from the previous (clamped) period end.
 */
export function periodBoundary(anchor: Date, recurrence: Recurrence, n: number): Date {
  const { interval, intervalCount } = recurrence;
  if (interval === 'day') return new Date(anchor.getTime() + n * intervalCount * DAY_MS);
  if (interval === 'week') return new Date(anchor.getTime() + n * intervalCount * 7 * DAY_MS);
  const months = n * intervalCount * (interval === 'year' ? 12 : 1);
  const y = anchor.getUTCFullYear();
  const m = anchor.getUTCMonth() + months;
  const targetYear = y + Math.floor(m / 12);
  const targetMonth = ((m % 12) + 12) % 12;
  const lastDay = new Date(Date.UTC(targetYear, targetMonth + 1, 0)).getUTCDate();
  const day = Math.min(anchor.getUTCDate(), lastDay);
  return new Date(Date.UTC(targetYear, targetMonth, day, anchor.getUTCHours(), anchor.getUTCMinutes(), anchor.getUTCSeconds(), anchor.getUTCMilliseconds()));
}

/**
 * The period that starts at `start` on an anchor: its end is the first boundary after `start`.
 * Periods are counted from the anchor so a clamped month end never drifts the day.
 */
export function periodEndAfter(anchor: Date, recurrence: Recurrence, start: Date): Date {
  // An estimate of how many periods lie between anchor and start, then a walk to the exact one.
  const approxMs = { day: DAY_MS, week: 7 * DAY_MS, month: 28 * DAY_MS, year: 365 * DAY_MS }[recurrence.interval] * recurrence.intervalCount;
  let n = Math.max(1, Math.floor((start.getTime() - anchor.getTime()) / approxMs) - 1);
  while (n > 1 && periodBoundary(anchor, recurrence, n - 1).getTime() > start.getTime()) n--;
  while (periodBoundary(anchor, recurrence, n).getTime() <= start.getTime()) n++;
  return periodBoundary(anchor, recurrence, n);
}

/**
 * The start of the whole period that ends at `end` (a boundary of the anchor): the last boundary
 * before it. A first period shorter than the interval (a later `billingCycleAnchor`) is a part
 * of that whole period, and prorations in it are measured against the whole period's length.
 */
export function periodStartBefore(anchor: Date, recurrence: Recurrence, end: Date): Date {
  const approxMs = { day: DAY_MS, week: 7 * DAY_MS, month: 28 * DAY_MS, year: 365 * DAY_MS }[recurrence.interval] * recurrence.intervalCount;
  let n = Math.floor((end.getTime() - anchor.getTime()) / approxMs) + 1;
  while (periodBoundary(anchor, recurrence, n).getTime() >= end.getTime()) n--;
  while (periodBoundary(anchor, recurrence, n + 1).getTime() < end.getTime()) n++;
  return periodBoundary(anchor, recurrence, n);
}

/**
 * The part of `amount` that `remainingMs` of a `periodMs` period is worth, rounded half away from
 * zero to the minor unit: exact integer arithmetic (BigInt), to the second.
 */
export function prorate(amount: number, remainingMs: number, periodMs: number): number {
  if (periodMs <= 0) throw new Error('a period has a length');
  const remaining = BigInt(Math.floor(remainingMs / 1000));
  const whole = BigInt(Math.floor(periodMs / 1000));
  if (whole === 0n) return 0;
  const numerator = BigInt(amount) * remaining;
  const sign = numerator < 0n ? -1n : 1n;
  const abs = numerator * sign;
  const rounded = (abs * 2n + whole) / (whole * 2n);
  return Number(rounded * sign);
}

/** A plan change that cannot be prorated: a different currency or billing interval. */
export function refuseUnproratable(from: { currency: string } & Recurrence, to: { currency: string } & Recurrence): void {
  if (from.currency !== to.currency) {
    throw new DomainError('proration_unavailable', `The new price is in ${to.currency.toUpperCase()} but the subscription bills in ${from.currency.toUpperCase()}; a currency change cannot be prorated: cancel and create a new subscription`, 'priceId');
  }
  if (from.interval !== to.interval || from.intervalCount !== to.intervalCount) {
    throw new DomainError('proration_unavailable', `The new price bills every ${to.intervalCount} ${to.interval}(s) but the subscription every ${from.intervalCount} ${from.interval}(s); an interval change cannot be prorated: cancel and create a new subscription`, 'priceId');
  }
}
