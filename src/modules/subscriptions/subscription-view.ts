import type { Metadata } from '../../core/validation';
import type { Plan, SubscriptionRecord } from './subscription.store';
import type { SubscriptionStatus } from './subscription-states';

/** A subscription as the API returns it (API.md §10). */
export interface Subscription {
  id: string;
  object: 'subscription';
  livemode: boolean;
  customerId: string;
  priceId: string;
  quantity: number;
  status: SubscriptionStatus;
  collectionMethod: 'charge_automatically' | 'send_invoice';
  currentPeriodStart: string;
  currentPeriodEnd: string;
  billingCycleAnchor: string;
  plan: Plan;
  cancelAtPeriodEnd: boolean;
  canceledAt: string | null;
  pausedAt: string | null;
  endedAt: string | null;
  latestInvoiceId: string | null;
  defaultPaymentMethodId: string | null;
  testClockId: string | null;
  /** While past due: when the failed invoice is charged again (dunning); null otherwise. */
  nextPaymentAttemptAt: string | null;
  /** The tax rates of its invoices' lines (API.md §12). */
  defaultTaxRateIds: string[];
  metadata: Metadata;
  createdAt: string;
  updatedAt: string;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** The API object of a stored subscription with its plan (billing state other than the next retry stays inside). */
export function toApiSubscription(r: SubscriptionRecord, plan: Plan): Subscription {
  return {
    id: r.id, object: 'subscription', livemode: r.mode === 'live', customerId: r.customerId, priceId: r.priceId, quantity: r.quantity,
    status: r.status, collectionMethod: r.collectionMethod, currentPeriodStart: r.currentPeriodStart.toISOString(),
    currentPeriodEnd: r.currentPeriodEnd.toISOString(), billingCycleAnchor: r.billingCycleAnchor.toISOString(), plan,
    cancelAtPeriodEnd: r.cancelAtPeriodEnd, canceledAt: iso(r.canceledAt), pausedAt: iso(r.pausedAt), endedAt: iso(r.endedAt),
    latestInvoiceId: r.latestInvoiceId, defaultPaymentMethodId: r.defaultPaymentMethodId, testClockId: r.testClockId,
    nextPaymentAttemptAt: r.status === 'past_due' ? iso(r.nextBillingAt) : null,
    defaultTaxRateIds: r.defaultTaxRateIds,
    metadata: r.metadata, createdAt: r.createdAt.toISOString(), updatedAt: r.updatedAt.toISOString(),
  };
}

/** The events that carry this module's objects (EventObjects: the events module's map of type to payload). */
declare module '../events/event-objects' {
  interface EventObjects {
    'subscription.created': Subscription;
    'subscription.updated': Subscription;
    'subscription.paused': Subscription;
    'subscription.resumed': Subscription;
    'subscription.canceled': Subscription;
    'subscription.past_due': Subscription;
  }
}
