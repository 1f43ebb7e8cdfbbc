import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, Info, InputType, Int, Mutation, ObjectType, Query, Resolver, Root } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import type { GraphQLResolveInfo } from 'graphql';
import type { GqlContext } from './context';
import { NodeInterface } from './types/node';
import { DateTime, PageArgs, Amount, defined, listOptions, connection, ListType } from './types/common';
import { CaptureMethod, CheckoutSessionMode, CheckoutSessionSortField, CheckoutSessionStatus, Currency } from './types/enums';
import { PaymentType } from './payment.resolver';
import type { Payment } from '../src/modules/payments/payment.service';

@ObjectType('CheckoutSession', { implements: NodeInterface })
export class CheckoutSessionType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => CheckoutSessionMode) mode!: string;
  @Field(() => CheckoutSessionStatus, { description: 'A session past expiresAt is expired, whether or not the expiry job has run.' }) status!: string;
  @Field(() => String, { description: 'The hosted page the customer pays on.' }) url!: string;
  @Field(() => Amount, { nullable: true }) amount!: number | null;
  @Field(() => Currency, { nullable: true }) currency!: string | null;
  @Field(() => String, { nullable: true }) priceId!: string | null;
  @Field(() => String, { nullable: true }) description!: string | null;
  @Field(() => String, { nullable: true }) customerId!: string | null;
  @Field(() => String, { nullable: true }) customerEmail!: string | null;
  @Field(() => String, { nullable: true }) successUrl!: string | null;
  @Field(() => String, { nullable: true }) cancelUrl!: string | null;
  @Field(() => DateTime) expiresAt!: string;
  @Field(() => String, { nullable: true }) paymentId!: string | null;
  @Field(() => String, { nullable: true }) paymentMethodId!: string | null;
  @Field(() => String, { nullable: true }) subscriptionId!: string | null;
  @Field(() => String, { nullable: true }) invoiceId!: string | null;
  @Field(() => CaptureMethod, { description: 'How the payment of the session is captured; manual: authorised only (requires_capture), which completes the session.' }) captureMethod!: string;
  @Field(() => GraphQLJSONObject) metadata!: Record<string, string>;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
  @Field(() => DateTime, { nullable: true }) completedAt!: string | null;
  @Field(() => DateTime, { nullable: true }) expiredAt!: string | null;
}

@ObjectType('CheckoutSessionList')
class CheckoutSessionList extends ListType(CheckoutSessionType, 'CheckoutSession') {}

@InputType('CreateCheckoutSessionInput')
class CreateCheckoutSessionInput {
  @Field(() => CheckoutSessionMode) mode!: string;
  @Field(() => String, { nullable: true }) customerId?: string;
  @Field(() => String, { nullable: true }) customerEmail?: string;
  @Field(() => Amount, { nullable: true }) amount?: number;
  @Field(() => String, { nullable: true }) currency?: string;
  @Field(() => String, { nullable: true }) priceId?: string;
  @Field(() => String, { nullable: true }) description?: string;
  @Field(() => String, { nullable: true }) successUrl?: string;
  @Field(() => String, { nullable: true }) cancelUrl?: string;
  @Field(() => Int, { nullable: true, description: 'From 1800 (30 minutes) to 86400 (24 hours, the default).' }) expiresInSeconds?: number;
  @Field(() => CaptureMethod, { nullable: true, description: 'automatic (the default) or manual (payment sessions only).' }) captureMethod?: string;
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string>;
}

@ArgsType()
class CheckoutSessionListArgs extends PageArgs(CheckoutSessionSortField, { updatable: true }) {
  @Field(() => CheckoutSessionStatus, { nullable: true }) status?: string;
  @Field(() => [CheckoutSessionStatus], { nullable: true, description: 'Any of these (REST: status=a,b); not with status.' }) statusIn?: string[];
  @Field(() => CheckoutSessionMode, { nullable: true }) mode?: string;
  @Field(() => [CheckoutSessionMode], { nullable: true, description: 'Any of these (REST: mode=a,b); not with mode.' }) modeIn?: string[];
  @Field(() => String, { nullable: true }) customerId?: string;
}

@Resolver(() => CheckoutSessionType)
export class CheckoutSessionResolver {
  @Query(() => CheckoutSessionType, { nullable: true })
  checkoutSession(@Arg('id', () => ID) id: string, @Ctx() { services, rc }: GqlContext) {
    return services.checkoutSessions.retrieve(rc, id);
  }

  @Query(() => CheckoutSessionList, { nullable: true })
  async checkoutSessions(@Args(() => CheckoutSessionListArgs) args: CheckoutSessionListArgs, @Ctx() { services, rc }: GqlContext, @Info() info: GraphQLResolveInfo) {
    return connection(args, (input) => services.checkoutSessions.list(rc, input, listOptions(info)));
  }

  @Mutation(() => CheckoutSessionType, { nullable: true })
  createCheckoutSession(@Arg('input', () => CreateCheckoutSessionInput) input: CreateCheckoutSessionInput, @Ctx() { services, rc, idem }: GqlContext) {
    return services.checkoutSessions.create(rc, defined(input), idem);
  }

  @Mutation(() => CheckoutSessionType, { nullable: true })
  expireCheckoutSession(@Arg('id', () => ID) id: string, @Ctx() { services, rc, idem }: GqlContext) {
    return services.checkoutSessions.expire(rc, id, idem);
  }
}

/** Payment.checkoutSession, batched: one lookup for every payment of the answer. */
@Resolver(() => PaymentType)
export class PaymentCheckoutSessionResolver {
  @FieldResolver(() => CheckoutSessionType, { nullable: true })
  checkoutSession(@Root() payment: Payment, @Ctx() { loaders }: GqlContext) {
    return payment.checkoutSessionId ? loaders.checkoutSession.load(payment.checkoutSessionId) : null;
  }
}
