import { Arg, ID, Resolver, Root, Subscription } from 'type-graphql';
import type { SubscribeResolverData } from 'type-graphql';
import type { GqlContext } from './context';
import { EventType } from './event.resolver';
import { eventTypesArgument } from './types/enums';
import { PaymentType } from './payment.resolver';
import { CustomerType } from './customer.resolver';
import { CheckoutSessionType } from './checkout-session.resolver';
import { SubscriptionType } from './subscription.resolver';
import { EVENT_TYPES } from '../src/modules/events/event-types';
import type { PublishedEvent } from '../src/core/event-bus';

type Data = SubscribeResolverData<unknown, { types?: string[] | null; id?: string | null; after?: string | null }, GqlContext>;

/** The event types whose type name starts with `prefix` (`payment.`): what a typed subscription streams. */
const typesStartingWith = (prefix: string) => EVENT_TYPES.filter((type) => type.startsWith(prefix));

/**
 * Only the subscriber's own account and mode, only the types asked for, and only events whose
 * object the key may read (as GET /v1/events filters them); with `after`, the events since that
 * one first (EventService.stream).
 */
function streamFor(data: Data, resource: string, types: readonly string[] | null, about?: (e: PublishedEvent) => boolean, after?: string | null) {
  const { rc, services } = data.context;
  // The events subscription is the one resumed after its last event: it streams in write order.
  return services.events.stream(rc, { after }, { resource, types, about, ordered: resource === 'events' });
}

function asEvent(e: PublishedEvent) {
  return { id: e.id, object: 'event', type: e.type, createdAt: e.createdAt, livemode: e.livemode, data: e.data };
}

@Resolver()
export class LiveEventsResolver {
  @Subscription(() => EventType, {
    subscribe: (data: Data) => streamFor(data, 'events', eventTypesArgument(data.args.types), undefined, data.args.after),
    description: "The account and mode's events as they are committed, optionally only some types. With `after` (the id of the last event received), "
      + 'first every event written after that one, oldest first, then live: no gap and no duplicate across a reconnection.',
  })
  events(
    @Root() event: PublishedEvent,
    // [String!] as API.md fixes it; an unknown type or a wildcard (`payment.*`) is refused before
    // the stream starts, as REST refuses it in a webhook endpoint's `events` (eventTypesArgument).
    @Arg('types', () => [String], { nullable: true, description: 'Only these types, as REST writes them (`payment.succeeded`; see EventTypeName); absent or empty: every type. An unknown type or a wildcard is refused.' }) _types?: string[],
    @Arg('after', () => ID, {
      nullable: true,
      description: 'Resume after this event (evt_…, of this account and mode; else invalid_parameter): its successors (of the types asked for) are replayed in the order they were written, before live events.',
    }) _after?: string,
  ) {
    return asEvent(event);
  }

  @Subscription(() => PaymentType, {
    subscribe: (data: Data) => streamFor(data, 'payments', typesStartingWith('payment.')),
    description: 'Each payment as it is after a payment.* event.',
  })
  paymentUpdated(@Root() event: PublishedEvent) {
    return event.data.object;
  }

  @Subscription(() => CheckoutSessionType, {
    subscribe: (data: Data) => streamFor(data, 'checkout_sessions', typesStartingWith('checkout.session.')),
    description: 'Each checkout session as it is after a checkout.session.* event (completed, expired).',
  })
  checkoutSessionUpdated(@Root() event: PublishedEvent) {
    return event.data.object;
  }

  @Subscription(() => SubscriptionType, {
    subscribe: (data: Data) => {
      const id = data.args.id ?? null;
      return streamFor(data, 'subscriptions', typesStartingWith('subscription.'), (e) => id === null || (e.data.object as { id?: unknown }).id === id);
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
    subscribe: (data: Data) => streamFor(data, 'customers', typesStartingWith('customer.')),
    description: 'Each customer as it is after a customer.* event.',
  })
  customerUpdated(@Root() event: PublishedEvent) {
    return event.data.object;
  }
}
