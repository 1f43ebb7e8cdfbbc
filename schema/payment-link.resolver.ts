import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, Info, InputType, Mutation, ObjectType, Query, Resolver, Root } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import type { GraphQLResolveInfo } from 'graphql';
import type { GqlContext } from './context';
import { NodeInterface } from './types/node';
import { DateTime, PageArgs, Amount, defined, listOptions, connection, ListType } from './types/common';
import { CaptureMethod, PaymentLinkSortField, PaymentLinkStatus, Currency } from './types/enums';
import { PaymentType } from './payment.resolver';
import type { Payment } from '../src/modules/payments/payment.service';

@ObjectType('PaymentLink', { implements: NodeInterface })
export class PaymentLinkType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => String, { description: 'The unguessable public name of the link (its page is `url`).' }) slug!: string;
  @Field(() => String) url!: string;
  @Field(() => String) name!: string;
  @Field(() => String, { nullable: true }) description!: string | null;
  @Field(() => Amount) amount!: number;
  @Field(() => Currency) currency!: string;
  @Field(() => String, { nullable: true }) priceId!: string | null;
  @Field(() => PaymentLinkStatus) status!: string;
  @Field(() => CaptureMethod, { description: 'How each payment of the link is captured; manual: authorised only (requires_capture).' }) captureMethod!: string;
  @Field(() => GraphQLJSONObject) metadata!: Record<string, string>;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
}

@ObjectType('PaymentLinkList')
class PaymentLinkList extends ListType(PaymentLinkType, 'PaymentLink') {}

@InputType('CreatePaymentLinkInput')
class CreatePaymentLinkInput {
  @Field(() => String) name!: string;
  @Field(() => String, { nullable: true }) description?: string | null;
  @Field(() => Amount, { nullable: true }) amount?: number;
  @Field(() => String, { nullable: true }) currency?: string;
  @Field(() => String, { nullable: true }) priceId?: string;
  @Field(() => CaptureMethod, { nullable: true, description: 'automatic (the default) or manual.' }) captureMethod?: string;
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string>;
}

@InputType('UpdatePaymentLinkInput')
class UpdatePaymentLinkInput {
  @Field(() => String, { nullable: true }) name?: string;
  @Field(() => String, { nullable: true }) description?: string | null;
  @Field(() => PaymentLinkStatus, { nullable: true }) status?: string;
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string | null>;
}

@ArgsType()
class PaymentLinkListArgs extends PageArgs(PaymentLinkSortField, { updatable: true }) {
  @Field(() => String, { nullable: true }) search?: string;
  @Field(() => PaymentLinkStatus, { nullable: true }) status?: string;
  @Field(() => [PaymentLinkStatus], { nullable: true, description: 'Any of these (REST: status=a,b); not with status.' }) statusIn?: string[];
}

@Resolver(() => PaymentLinkType)
export class PaymentLinkResolver {
  @Query(() => PaymentLinkType, { nullable: true })
  paymentLink(@Arg('id', () => ID) id: string, @Ctx() { services, rc }: GqlContext) {
    return services.paymentLinks.retrieve(rc, id);
  }

  @Query(() => PaymentLinkList, { nullable: true })
  async paymentLinks(@Args(() => PaymentLinkListArgs) args: PaymentLinkListArgs, @Ctx() { services, rc }: GqlContext, @Info() info: GraphQLResolveInfo) {
    return connection(args, (input) => services.paymentLinks.list(rc, input, listOptions(info)));
  }

  @Mutation(() => PaymentLinkType, { nullable: true })
  createPaymentLink(@Arg('input', () => CreatePaymentLinkInput) input: CreatePaymentLinkInput, @Ctx() { services, rc, idem }: GqlContext) {
    return services.paymentLinks.create(rc, defined(input), idem);
  }

  @Mutation(() => PaymentLinkType, { nullable: true })
  updatePaymentLink(@Arg('id', () => ID) id: string, @Arg('input', () => UpdatePaymentLinkInput) input: UpdatePaymentLinkInput, @Ctx() { services, rc }: GqlContext) {
    return services.paymentLinks.update(rc, id, defined(input));
  }
}

/** Payment.paymentLink, batched: one lookup for every payment of the answer. */
@Resolver(() => PaymentType)
export class PaymentPaymentLinkResolver {
  @FieldResolver(() => PaymentLinkType, { nullable: true })
  paymentLink(@Root() payment: Payment, @Ctx() { loaders }: GqlContext) {
    return payment.paymentLinkId ? loaders.paymentLink.load(payment.paymentLinkId) : null;
  }
}
