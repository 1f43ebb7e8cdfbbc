import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, Info, InputType, Int, Mutation, ObjectType, Query, Resolver, Root } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import type { GraphQLResolveInfo } from 'graphql';
import type { GqlContext } from './context';
import { NodeInterface } from './types/node';
import { TaxBreakdownEntryType } from './tax-rate.resolver';
import { Amount, DateTime, NESTED_LIST_DESCRIPTION, NestedListArgs, PageArgs, defined, listOptions, nestedLimit, connection, ListType } from './types/common';
import {
  BillingCycleAnchorChange, ProrationBehavior, RecurringInterval, SubscriptionCollectionMethod, SubscriptionSortField, SubscriptionStatus, Currency,
} from './types/enums';
import { CustomerType } from './customer.resolver';
import { InvoiceType } from './invoice.resolver';
import { CheckoutSessionType } from './checkout-session.resolver';
import type { Customer } from '../src/modules/customers/customer.service';
import type { Subscription } from '../src/modules/subscriptions/subscription.service';

const INSTANT = 'An ISO 8601 instant with its offset, such as `2026-01-31T00:00:00Z`.';

@ObjectType('SubscriptionPlan', { description: 'What a subscription bills each period: its price with the product\'s name.' })
class SubscriptionPlanType {
  @Field(() => String) priceId!: string;
  @Field(() => String) productId!: string;
  @Field(() => String) productName!: string;
  @Field(() => Amount) unitAmount!: number;
  @Field(() => Currency) currency!: string;
  @Field(() => RecurringInterval) interval!: string;
  @Field(() => Int) intervalCount!: number;
}

/**
 * REST's subscription. Not named `Subscription`: GraphQL gives that name to the root type of
 * live operations (`subscription { events }`), and a schema cannot hold two types of one name.
 */
@ObjectType('BillingSubscription', { implements: NodeInterface, description: 'A customer\'s subscription to a recurring price (REST: /v1/subscriptions).' })
export class SubscriptionType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => String) customerId!: string;
  @Field(() => String) priceId!: string;
  @Field(() => Int) quantity!: number;
  @Field(() => SubscriptionStatus) status!: string;
  @Field(() => SubscriptionCollectionMethod) collectionMethod!: string;
  @Field(() => DateTime) currentPeriodStart!: string;
  @Field(() => DateTime) currentPeriodEnd!: string;
  @Field(() => DateTime, { description: 'The instant periods are counted from (month ends keep its day, clamped to shorter months).' }) billingCycleAnchor!: string;
  @Field(() => SubscriptionPlanType) plan!: SubscriptionPlanType;
  @Field(() => Boolean, { description: 'Canceled when the current period ends.' }) cancelAtPeriodEnd!: boolean;
  @Field(() => DateTime, { nullable: true }) canceledAt!: string | null;
  @Field(() => DateTime, { nullable: true }) pausedAt!: string | null;
  @Field(() => DateTime, { nullable: true }) endedAt!: string | null;
  @Field(() => String, { nullable: true }) latestInvoiceId!: string | null;
  @Field(() => String, { nullable: true }) defaultPaymentMethodId!: string | null;
  @Field(() => String, { nullable: true }) testClockId!: string | null;
  @Field(() => DateTime, { nullable: true, description: 'While past_due: when the failed invoice is charged again (dunning); null otherwise.' }) nextPaymentAttemptAt!: string | null;
  @Field(() => [String], { description: "The tax rates (txr_…) of its invoices' lines, proration lines included." }) defaultTaxRateIds!: string[];
  @Field(() => GraphQLJSONObject) metadata!: Record<string, string>;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
}

@ObjectType('BillingSubscriptionList')
class SubscriptionList extends ListType(SubscriptionType, 'BillingSubscription') {}

@ObjectType('ProrationLine')
class ProrationLineType {
  @Field(() => String) description!: string;
  @Field(() => Amount, { description: 'Negative for the credit of the old plan\'s unused time.' }) amount!: number;
  @Field(() => DateTime, { nullable: true }) periodStart!: string | null;
  @Field(() => DateTime, { nullable: true }) periodEnd!: string | null;
}

@ObjectType('ProrationPreview', { description: 'What a plan change would bill at prorationDate; nothing is written.' })
class ProrationPreviewType {
  @Field(() => String) object!: string;
  @Field(() => String) subscriptionId!: string;
  @Field(() => DateTime) prorationDate!: string;
  @Field(() => Currency) currency!: string;
  @Field(() => [ProrationLineType]) lines!: ProrationLineType[];
  @Field(() => Amount) total!: number;
}

@ObjectType('UpcomingInvoiceLineItem')
class UpcomingInvoiceLineItemType {
  @Field(() => String) description!: string;
  @Field(() => Int) quantity!: number;
  @Field(() => Amount) unitAmount!: number;
  @Field(() => Amount) amount!: number;
  @Field(() => DateTime, { nullable: true }) periodStart!: string | null;
  @Field(() => DateTime, { nullable: true }) periodEnd!: string | null;
  @Field(() => Boolean) proration!: boolean;
}

@ObjectType('UpcomingInvoice', { description: 'The invoice the next billing run will create for the subscription, built by the same code; nothing is written.' })
class UpcomingInvoiceType {
  @Field(() => String) object!: string;
  @Field(() => String) subscriptionId!: string;
  @Field(() => Currency) currency!: string;
  @Field(() => [UpcomingInvoiceLineItemType]) lineItems!: UpcomingInvoiceLineItemType[];
  @Field(() => Amount) subtotal!: number;
  @Field(() => Amount) tax!: number;
  @Field(() => [TaxBreakdownEntryType]) taxBreakdown!: TaxBreakdownEntryType[];
  @Field(() => Amount) total!: number;
  @Field(() => DateTime) periodStart!: string;
  @Field(() => DateTime) periodEnd!: string;
  @Field(() => DateTime, { description: 'When the run creates it: the end of the current period, on the subscription\'s clock.' }) createsAt!: string;
}

@InputType('CreateSubscriptionInput')
class CreateSubscriptionInput {
  @Field(() => String) customerId!: string;
  @Field(() => String, { description: 'A recurring, active price.' }) priceId!: string;
  @Field(() => Int, { nullable: true, description: '1 to 10000 (default 1).' }) quantity?: number;
  @Field(() => String, { nullable: true, description: 'A saved card (pm_…) of the customer; default: the customer\'s default card.' }) paymentMethodId?: string;
  @Field(() => String, { nullable: true, description: `${INSTANT} Later than now and within one interval: a shorter, prorated first period.` }) billingCycleAnchor?: string;
  @Field(() => SubscriptionCollectionMethod, { nullable: true, description: 'Default charge_automatically.' }) collectionMethod?: string;
  @Field(() => String, { nullable: true, description: 'Test mode: the test clock (clock_…) the subscription lives on; default the customer\'s.' }) testClockId?: string;
  @Field(() => [String], { nullable: true, description: "Tax rates (txr_…) of its invoices' lines, proration lines included." }) defaultTaxRateIds?: string[];
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string>;
}

@InputType('UpdateSubscriptionInput')
class UpdateSubscriptionInput {
  @Field(() => String, { nullable: true }) priceId?: string;
  @Field(() => Int, { nullable: true }) quantity?: number;
  @Field(() => BillingCycleAnchorChange, { nullable: true, description: 'now: a new period starts at the proration date and is invoiced at once.' }) billingCycleAnchor?: string;
  @Field(() => ProrationBehavior, { nullable: true, description: 'Default create_prorations.' }) prorationBehavior?: string;
  @Field(() => String, { nullable: true, description: `${INSTANT} Within the current period and not after the subscription's now (default now); a preview's prorationDate gives the preview's lines.` }) prorationDate?: string;
  @Field(() => [String], { nullable: true, description: 'Tax rates of the invoices made from now on (empty: none).' }) defaultTaxRateIds?: string[];
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string | null>;
}

@ArgsType()
class SubscriptionListArgs extends PageArgs(SubscriptionSortField, { updatable: true }) {
  @Field(() => String, { nullable: true }) customerId?: string;
  @Field(() => SubscriptionStatus, { nullable: true }) status?: string;
  @Field(() => [SubscriptionStatus], { nullable: true, description: 'Any of these (REST: status=a,b); not with status.' }) statusIn?: string[];
}

@ArgsType()
class PreviewProrationArgs {
  @Field(() => ID) subscriptionId!: string;
  @Field(() => String) priceId!: string;
  @Field(() => Int, { nullable: true }) quantity?: number;
  @Field(() => String, { nullable: true, description: INSTANT }) prorationDate?: string;
}

@Resolver(() => SubscriptionType)
export class SubscriptionResolver {
  @Query(() => SubscriptionType, { nullable: true })
  subscription(@Arg('id', () => ID) id: string, @Ctx() { services, rc }: GqlContext) {
    return services.subscriptions.retrieve(rc, id);
  }

  @Query(() => SubscriptionList, { nullable: true })
  async subscriptions(@Args(() => SubscriptionListArgs) args: SubscriptionListArgs, @Ctx() { services, rc }: GqlContext, @Info() info: GraphQLResolveInfo) {
    return connection(args, (input) => services.subscriptions.list(rc, input, listOptions(info)));
  }

  @Query(() => UpcomingInvoiceType, { nullable: true, description: 'Refused (invalid_state) for a paused or canceled subscription, or one ending at period end.' })
  upcomingInvoice(@Arg('subscriptionId', () => ID) subscriptionId: string, @Ctx() { services, rc }: GqlContext) {
    return services.subscriptions.upcomingInvoice(rc, subscriptionId);
  }

  @Query(() => ProrationPreviewType, { nullable: true, description: 'What updateSubscription with this price and quantity would prorate; refused with proration_unavailable when the two plans\' intervals or currencies differ.' })
  previewProration(@Args(() => PreviewProrationArgs) args: PreviewProrationArgs, @Ctx() { services, rc }: GqlContext) {
    const { subscriptionId, ...input } = defined(args);
    return services.subscriptions.previewProration(rc, subscriptionId as string, input);
  }

  @Mutation(() => SubscriptionType, { nullable: true, description: 'The first invoice is created and charged before it answers: a failed charge answers past_due.' })
  createSubscription(@Arg('input', () => CreateSubscriptionInput) input: CreateSubscriptionInput, @Ctx() { services, rc, idem }: GqlContext) {
    return services.subscriptions.create(rc, defined(input), idem);
  }

  @Mutation(() => SubscriptionType, { nullable: true })
  updateSubscription(@Arg('id', () => ID) id: string, @Arg('input', () => UpdateSubscriptionInput) input: UpdateSubscriptionInput, @Ctx() { services, rc, idem }: GqlContext) {
    return services.subscriptions.update(rc, id, defined(input), idem);
  }

  @Mutation(() => SubscriptionType, { nullable: true, description: 'Billing stops at once.' })
  pauseSubscription(@Arg('id', () => ID) id: string, @Ctx() { services, rc, idem }: GqlContext) {
    return services.subscriptions.pause(rc, id, idem);
  }

  @Mutation(() => SubscriptionType, { nullable: true, description: 'Only from paused: a new period starts now and is invoiced.' })
  resumeSubscription(@Arg('id', () => ID) id: string, @Ctx() { services, rc, idem }: GqlContext) {
    return services.subscriptions.resume(rc, id, idem);
  }

  @Mutation(() => SubscriptionType, { nullable: true })
  cancelSubscription(
    @Arg('id', () => ID) id: string,
    @Arg('atPeriodEnd', () => Boolean, { nullable: true, description: 'true: cancelAtPeriodEnd until the period ends; default false: canceled now.' }) atPeriodEnd: boolean | undefined,
    @Ctx() { services, rc, idem }: GqlContext,
  ) {
    return services.subscriptions.cancel(rc, id, atPeriodEnd === undefined || atPeriodEnd === null ? {} : { atPeriodEnd }, idem);
  }

  @Mutation(() => CheckoutSessionType, {
    nullable: true,
    description: 'Only past_due: charges the open invoice now and answers a payment-mode checkout session tied to it (complete when the retry paid it) where the customer can pay with a new card.',
  })
  retrySubscriptionPayment(@Arg('id', () => ID) id: string, @Ctx() { services, rc, idem }: GqlContext) {
    return services.subscriptions.retryPayment(rc, id, idem);
  }

  @FieldResolver(() => CustomerType, { nullable: true })
  customer(@Root() subscription: Subscription, @Ctx() { loaders }: GqlContext) {
    return loaders.customer.load(subscription.customerId);
  }

  @FieldResolver(() => [InvoiceType], { nullable: true, description: NESTED_LIST_DESCRIPTION })
  invoices(@Root() subscription: Subscription, @Args(() => NestedListArgs) args: NestedListArgs, @Ctx() { loaders }: GqlContext) {
    return loaders.invoicesBySubscription.load(subscription.id, nestedLimit(args));
  }
}

/** Customer.subscriptions, batched: the newest of every customer of the answer in one statement. */
@Resolver(() => CustomerType)
export class CustomerSubscriptionsResolver {
  @FieldResolver(() => [SubscriptionType], { nullable: true, description: NESTED_LIST_DESCRIPTION })
  subscriptions(@Root() customer: Customer, @Args(() => NestedListArgs) args: NestedListArgs, @Ctx() { loaders }: GqlContext) {
    return loaders.subscriptionsByCustomer.load(customer.id, nestedLimit(args));
  }
}
