import { Arg, ID, Resolver, Root, Subscription } from 'type-graphql';
import type { SubscribeResolverData } from 'type-graphql';
import type { GqlContext } from './context';
import { EventType } from './event.resolver';
import { eventTypesArgument } from './types/enums';
import { PaymentType } from './payment.resolver';
import { CustomerType } from './customer.resolver';
import { CheckoutSessionType } from './checkout-session.resolver';
import { SubscriptionType } from './subscription.resolver';
import { requirePermission } from '../src/core/context';
import type { PublishedEvent } from '../src/core/event-bus';

type Data = SubscribeResolverData<unknown, { types?: string[] | null; id?: string | null }, GqlContext>;

/**
 * Only the subscriber's own account and mode, only the types asked for, and only events whose
 * object the key may read (as GET /v1/events filters them).
 */
function streamFor(data: Data, resource: string, accepts: (type: string) => boolean, about: (e: PublishedEvent) => boolean = () => true) {
  const { rc, services } = data.context;
  requirePermission(rc, resource, 'read');
  const livemode = rc.mode === 'live';
  return services.bus.stream({ accountId: rc.accountId, livemode }, (e) => accepts(e.type) && about(e) && services.events.canSee(rc, e.type));
}

function asEvent(e: PublishedEvent) {
  return { id: e.id, object: 'event', type: e.type, createdAt: e.createdAt, livemode: e.livemode, data: e.data };
}

@Resolver()
export class LiveEventsResolver {
  @Subscription(() => EventType, {
    subscribe: (data: Data) => {
      const types = eventTypesArgument(data.args.types);
      return streamFor(data, 'events', (type) => !types || types.includes(type));
    },
    description: "The account and mode's events as they are committed, optionally only some types.",
  })
  events(
    @Root() event: PublishedEvent,
    // [String!] as API.md fixes it; an unknown type or a wildcard (`payment.*`) is refused before
    // the stream starts, as REST refuses it in a webhook endpoint's `events` (eventTypesArgument).
    @Arg('types', () => [String], { nullable: true, description: 'Only these types, as REST writes them (`payment.succeeded`; see EventTypeName); absent or empty: every type. An unknown type or a wildcard is refused.' }) _types?: string[],
  ) {
    return asEvent(event);
  }

  @Subscription(() => PaymentType, {
    subscribe: (data: Data) => streamFor(data, 'payments', (type) => type.startsWith('payment.')),
    description: 'Each payment as it is after a payment.* event.',
  })
  paymentUpdated(@Root() event: PublishedEvent) {
    return event.data.object;
  }

  @Subscription(() => CheckoutSessionType, {
    subscribe: (data: Data) => streamFor(data, 'checkout_sessions', (type) => type.startsWith('checkout.session.')),
    description: 'Each checkout session as it is after a checkout.session.* event (completed, expired).',
  })
  checkoutSessionUpdated(@Root() event: PublishedEvent) {
    return event.data.object;
  }

  @Subscription(() => SubscriptionType, {
    subscribe: (data: Data) => {
      const id = data.args.id ?? null;
      return streamFor(data, 'subscriptions', (type) => type.startsWith('subscription.'), (e) => id === null || (e.data.object as { id?: unknown }).id === id);
    },
    description: 'Each subscription as it is after a subscription.* event (created, updated, paused, resumed, canceled, past_due); only one subscription\'s with id.',
  })
  subscriptionUpdated(
    @Root() event: PublishedEvent,
    @Arg('id', () => ID, { nullable: true, description: 'Only this subscription (sub_…); absent: every subscription of the account and mode.' }) _id?: string,
  ) {
    return event.data.object;
  }

  @Subscription(() => CustomerType, {
    subscribe: (data: Data) => streamFor(data, 'customers', (type) => type.startsWith('customer.')),
    description: 'Each customer as it is after a customer.* event.',
  })
  customerUpdated(@Root() event: PublishedEvent) {
    return event.data.object;
  }
}
