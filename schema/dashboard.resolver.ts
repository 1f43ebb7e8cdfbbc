import { Ctx, Field, FieldResolver, Float, Int, ObjectType, Query, Resolver } from 'type-graphql';
import type { GqlContext } from './context';
import { Amount, DateTime } from './types/common';
import { Currency } from './types/enums';

@ObjectType('DashboardCurrencyTotal', { description: 'One currency of an aggregate: how many objects and their amount in minor units.' })
class CurrencyTotalType {
  @Field(() => Currency) currency!: string;
  @Field(() => Int) count!: number;
  @Field(() => Amount) amount!: number;
}

@ObjectType('DashboardPaymentsMinute')
class PaymentsMinuteType {
  @Field(() => DateTime, { description: 'Start of the UTC minute.' }) minute!: string;
  @Field(() => Int) succeeded!: number;
  @Field(() => Int) failed!: number;
  @Field(() => Int, { description: 'Every payment created in the minute, whatever its status.' }) total!: number;
}

@ObjectType('DashboardGatewayAuthorization')
class GatewayAuthorizationType {
  @Field(() => String) gatewayId!: string;
  @Field(() => String) gatewayType!: string;
  @Field(() => String, { nullable: true }) name!: string | null;
  @Field(() => Int, { description: 'Charge calls to the gateway in the last hour.' }) attempts!: number;
  @Field(() => Int, { description: 'Of those, the ones the gateway authorised.' }) succeeded!: number;
  @Field(() => Float, { description: 'succeeded / attempts, from 0 to 1.' }) rate!: number;
}

@ObjectType('DashboardPayments')
class PaymentsOverviewType {
  @Field(() => DateTime, { description: 'Start of the first minute of perMinute.' }) since!: string;
  @Field(() => [PaymentsMinuteType], { description: 'The last 60 UTC minutes, oldest first, the current one last.' }) perMinute!: PaymentsMinuteType[];
  @Field(() => [GatewayAuthorizationType], { description: 'Authorisation rate per gateway over the last hour.' }) gateways!: GatewayAuthorizationType[];
  @Field(() => [CurrencyTotalType], { description: 'Succeeded payments created today (UTC), per currency.' }) volumeToday!: CurrencyTotalType[];
}

@ObjectType('DashboardRefunds')
class RefundsOverviewType {
  @Field(() => Int, { description: 'Succeeded refunds created today (UTC).' }) count!: number;
  @Field(() => [CurrencyTotalType]) byCurrency!: CurrencyTotalType[];
}

@ObjectType('DashboardSubscriptions')
class SubscriptionsOverviewType {
  @Field(() => Int) active!: number;
  @Field(() => Int) pastDue!: number;
  @Field(() => [CurrencyTotalType], { description: "Per currency: active subscriptions (count) and monthly recurring revenue (amount: each price's amount × quantity over its interval, in months)." })
  mrr!: CurrencyTotalType[];
}

@ObjectType('DashboardInvoices')
class InvoicesOverviewType {
  @Field(() => Int, { description: 'Sent invoices not yet paid or voided.' }) unpaid!: number;
  @Field(() => [CurrencyTotalType]) amountDue!: CurrencyTotalType[];
}

@ObjectType('Dashboard', { description: "The key's account and mode at a glance. Each section is null, with a permission_denied error, when the key cannot read its resource." })
class DashboardType {
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => DateTime) generatedAt!: string;
}

@Resolver(() => DashboardType)
export class DashboardResolver {
  @Query(() => DashboardType, { description: 'Figures for the live dashboard (GET /dashboard), computed by the database.' })
  dashboard(@Ctx() { rc }: GqlContext): DashboardType {
    return { livemode: rc.mode === 'live', generatedAt: rc.clock.now().toISOString() };
  }

  @FieldResolver(() => PaymentsOverviewType, { nullable: true, description: 'Needs payments:read.' })
  payments(@Ctx() { services, rc }: GqlContext) {
    return services.dashboard.payments(rc);
  }

  @FieldResolver(() => RefundsOverviewType, { nullable: true, description: 'Needs refunds:read.' })
  refunds(@Ctx() { services, rc }: GqlContext) {
    return services.dashboard.refunds(rc);
  }

  @FieldResolver(() => SubscriptionsOverviewType, { nullable: true, description: 'Needs subscriptions:read.' })
  subscriptions(@Ctx() { services, rc }: GqlContext) {
    return services.dashboard.subscriptions(rc);
  }

  @FieldResolver(() => InvoicesOverviewType, { nullable: true, description: 'Needs invoices:read.' })
  invoices(@Ctx() { services, rc }: GqlContext) {
    return services.dashboard.invoices(rc);
  }
}
