import { notFoundAs } from './errors';
import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, Info, InputType, Int, Mutation, ObjectType, Query, Resolver, Root } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import type { GraphQLResolveInfo } from 'graphql';
import type { GqlContext } from './context';
import { NodeInterface } from './types/node';
import { DateTime, NESTED_LIST_DESCRIPTION, NestedListArgs, PageArgs, defined, nestedLimit, listOptions, connection, ListType } from './types/common';
import { GatewayTransactionKind, GatewayTransactionSortField, GatewayType, PaymentMethodSortField, CardBrand, GatewayTransactionOutcome } from './types/enums';
import type { PendingTransaction } from '../src/modules/payments/gateway-transaction.store';
import { DomainError } from '../src/core/errors';
import { CustomerType } from './customer.resolver';
import { CardInput, PaymentType } from './payment.resolver';
import type { Payment } from '../src/modules/payments/payment.service';
import type { Customer } from '../src/modules/customers/customer.service';

@ObjectType('SavedCard')
class SavedCardType {
  @Field(() => CardBrand) brand!: string;
  @Field(() => String) last4!: string;
  @Field(() => Int) expMonth!: number;
  @Field(() => Int) expYear!: number;
  @Field(() => String) fingerprint!: string;
}

@ObjectType('PaymentMethod', { implements: NodeInterface })
export class PaymentMethodType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => String) customerId!: string;
  @Field(() => String) gatewayId!: string;
  @Field(() => String) type!: string;
  @Field(() => SavedCardType) card!: SavedCardType;
  @Field(() => Boolean) isDefault!: boolean;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
}

@ObjectType('PaymentMethodList')
class PaymentMethodList extends ListType(PaymentMethodType, 'PaymentMethod') {}

@InputType('SavePaymentMethodInput')
class SavePaymentMethodInput {
  @Field(() => CardInput) card!: CardInput;
  @Field(() => String, { nullable: true }) gatewayId?: string;
  @Field(() => String, { nullable: true }) currency?: string;
  @Field(() => Boolean, { nullable: true }) setDefault?: boolean;
}

@ObjectType('GatewayTransaction', { implements: NodeInterface })
export class GatewayTransactionType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => String, { nullable: true }) paymentId!: string | null;
  @Field(() => String, { nullable: true }) refundId!: string | null;
  @Field(() => String) gatewayId!: string;
  @Field(() => GatewayType) gatewayType!: string;
  @Field(() => GatewayTransactionKind) kind!: PendingTransaction['kind'];
  @Field(() => Int) attempt!: number;
  @Field(() => String) idempotencyKey!: string;
  @Field(() => GatewayTransactionOutcome) outcome!: string;
  @Field(() => String, { nullable: true }) code!: string | null;
  @Field(() => String, { nullable: true }) message!: string | null;
  @Field(() => String, { nullable: true }) reference!: string | null;
  @Field(() => Int) latencyMs!: number;
  @Field(() => GraphQLJSONObject) request!: Record<string, unknown>;
  @Field(() => GraphQLJSONObject) response!: Record<string, unknown>;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
}

@ObjectType('GatewayTransactionList')
class GatewayTransactionList extends ListType(GatewayTransactionType, 'GatewayTransaction') {}

const PaymentMethodPageArgs = PageArgs(PaymentMethodSortField);

/** What a gateway call came to (REST's `outcome` filter values). */

@ArgsType()
class GatewayTransactionListArgs extends PageArgs(GatewayTransactionSortField) {
  @Field(() => String, { nullable: true }) gatewayId?: string;
  @Field(() => [GatewayTransactionOutcome], { nullable: true, description: 'One or more (a single value is a list of one).' }) outcome?: string[];
  @Field(() => String, { nullable: true, description: 'The calls made for this refund (not with paymentId).' }) refundId?: string;
}

/**
 * Saved cards (`/v1/customers/{id}/payment-methods`) and the gateway calls of a payment
 * (`/v1/payments/{id}/gateway-transactions`), through the same services as REST.
 */
@Resolver(() => PaymentMethodType)
export class PaymentMethodResolver {
  @Query(() => PaymentMethodList, { nullable: true })
  async paymentMethods(
    @Arg('customerId', () => ID) customerId: string,
    @Args(() => PaymentMethodPageArgs) args: InstanceType<typeof PaymentMethodPageArgs>,
    @Ctx() { services, rc }: GqlContext,
    @Info() info: GraphQLResolveInfo,
  ) {
    return connection(args, (input) => notFoundAs('customerId', 'customer', services.paymentMethods.list(rc, customerId, input, listOptions(info))));
  }

  @Mutation(() => PaymentMethodType, { nullable: true })
  savePaymentMethod(
    @Arg('customerId', () => ID) customerId: string,
    @Arg('input', () => SavePaymentMethodInput) input: SavePaymentMethodInput,
    @Ctx() { services, rc, idem }: GqlContext,
  ) {
    return notFoundAs('customerId', 'customer', services.paymentMethods.save(rc, customerId, { ...defined(input), card: defined(input.card) }, idem));
  }

  @Query(() => GatewayTransactionList, {
    nullable: true,
    description: "The account's gateway calls, newest first; with paymentId, that payment's (an unknown payment is an error, as REST's 404).",
  })
  async gatewayTransactions(
    @Arg('paymentId', () => ID, { nullable: true }) paymentId: string | null | undefined,
    @Args(() => GatewayTransactionListArgs) args: GatewayTransactionListArgs,
    @Ctx() { services, rc }: GqlContext,
    @Info() info: GraphQLResolveInfo,
  ) {
    if (paymentId == null) return connection(args, (input) => services.payments.listGatewayTransactions(rc, input, listOptions(info)));
    if (args.refundId != null) throw new DomainError('invalid_parameter', 'refundId cannot be combined with paymentId', 'refundId');
    return connection(args, (input) => notFoundAs('paymentId', 'payment', services.payments.gatewayTransactions(rc, paymentId, input, listOptions(info))));
  }
}

@Resolver(() => CustomerType)
export class CustomerPaymentMethodsResolver {
  /** Newest first, as the REST list; batched over the customers of a list. */
  @FieldResolver(() => [PaymentMethodType], { nullable: true, description: NESTED_LIST_DESCRIPTION })
  paymentMethods(@Root() customer: Customer, @Args(() => NestedListArgs) args: NestedListArgs, @Ctx() { loaders }: GqlContext) {
    return loaders.paymentMethodsByCustomer.load(customer.id, nestedLimit(args));
  }
}

@Resolver(() => PaymentType)
export class PaymentGatewayTransactionsResolver {
  /** Newest first, as the REST list; batched over the payments of a list. */
  @FieldResolver(() => [GatewayTransactionType], { nullable: true, description: NESTED_LIST_DESCRIPTION })
  gatewayTransactions(@Root() payment: Payment, @Args(() => NestedListArgs) args: NestedListArgs, @Ctx() { loaders }: GqlContext) {
    return loaders.gatewayTransactionsByPayment.load(payment.id, nestedLimit(args));
  }
}
