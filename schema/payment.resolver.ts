import {
  Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, Info, InputType, Int, Mutation, ObjectType, Query, Resolver, Root,
} from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import type { GraphQLResolveInfo } from 'graphql';
import type { GqlContext } from './context';
import { NodeInterface } from './types/node';
import { Amount, DateTime, NESTED_LIST_DESCRIPTION, NestedCursorArgs, PageArgs, defined, nestedLimit, listOptions, connection, ListType } from './types/common';
import { CaptureMethod, PaymentSortField, PaymentStatus, RefundSortField, RefundStatus, Currency, CardBrand, GatewayTransactionOutcome } from './types/enums';
import { CustomerType } from './customer.resolver';
import type { Payment } from '../src/modules/payments/payment.service';
import type { Customer } from '../src/modules/customers/customer.service';
import type { Refund } from '../src/modules/payments/refund.service';

@ObjectType('PaymentMethodDetails')
class PaymentMethodDetailsType {
  @Field(() => String) type!: string;
  @Field(() => CardBrand) brand!: string;
  @Field(() => String) last4!: string;
  @Field(() => Int, { nullable: true }) expMonth!: number | null;
  @Field(() => Int, { nullable: true }) expYear!: number | null;
  @Field(() => String, { nullable: true }) fingerprint!: string | null;
}

@ObjectType('PaymentAttempt')
class PaymentAttemptType {
  @Field(() => String, { description: 'The gateway tried.' }) gateway!: string;
  @Field(() => GatewayTransactionOutcome) outcome!: string;
  @Field(() => String, { nullable: true }) code!: string | null;
  @Field(() => Int, { description: 'Milliseconds of wall time the attempt took (a repeated call or status look-up after a timeout included).' }) latency!: number;
}

@ObjectType('NextAction', { description: 'Where the customer authenticates a payment (3-D Secure) while it is requires_action.' })
class NextActionType {
  @Field(() => String, { description: 'redirect_to_url' }) type!: string;
  @Field(() => String) url!: string;
}

@ObjectType('Refund', { implements: NodeInterface })
export class RefundType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => String) paymentId!: string;
  @Field(() => Amount) amount!: number;
  @Field(() => Currency) currency!: string;
  @Field(() => String, { nullable: true }) reason!: string | null;
  @Field(() => RefundStatus) status!: Refund['status'];
  @Field(() => String, { nullable: true }) gatewayId!: string | null;
  @Field(() => String, { nullable: true }) failureCode!: string | null;
  @Field(() => String, { nullable: true }) failureMessage!: string | null;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
}

@ObjectType('Payment', { implements: NodeInterface })
export class PaymentType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => String, { nullable: true }) customerId!: string | null;
  @Field(() => Amount) amount!: number;
  @Field(() => Currency) currency!: string;
  @Field(() => Currency) originalCurrency!: string;
  @Field(() => Amount, { nullable: true }) originalAmount!: number | null;
  @Field(() => String, { nullable: true }) exchangeRate!: string | null;
  @Field(() => String) paymentMethod!: string;
  @Field(() => PaymentMethodDetailsType) paymentMethodDetails!: PaymentMethodDetailsType;
  @Field(() => String, { nullable: true }) description!: string | null;
  @Field(() => String, { nullable: true, description: 'The e-mail an anonymous payer gave on a hosted page for the receipt; such a payment attaches no customer.' }) receiptEmail!: string | null;
  @Field(() => GraphQLJSONObject) metadata!: Record<string, string>;
  @Field(() => PaymentStatus) status!: Payment['status'];
  @Field(() => String, { nullable: true }) failureCode!: string | null;
  @Field(() => String, { nullable: true }) failureMessage!: string | null;
  @Field(() => CaptureMethod) captureMethod!: Payment['captureMethod'];
  @Field(() => Amount, { description: 'What an uncaptured authorisation holds (requires_capture); 0 otherwise.' }) amountCapturable!: number;
  @Field(() => Amount, { description: 'What was taken from the card; refunds apply to it.' }) amountCaptured!: number;
  @Field(() => NextActionType, { nullable: true }) nextAction!: NextActionType | null;
  @Field(() => Amount) amountRefunded!: number;
  @Field(() => Boolean) refunded!: boolean;
  @Field(() => String, { nullable: true }) gatewayId!: string | null;
  @Field(() => [PaymentAttemptType]) attempts!: PaymentAttemptType[];
  @Field(() => String, { nullable: true }) invoiceId!: string | null;
  @Field(() => String, { nullable: true }) subscriptionId!: string | null;
  @Field(() => String, { nullable: true }) checkoutSessionId!: string | null;
  @Field(() => String, { nullable: true }) paymentLinkId!: string | null;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
}

@ObjectType('PaymentList')
class PaymentList extends ListType(PaymentType, 'Payment') {}

@ObjectType('RefundList')
class RefundList extends ListType(RefundType, 'Refund') {}

@InputType('CardInput')
export class CardInput {
  @Field(() => String) number!: string;
  @Field(() => Int) expMonth!: number;
  @Field(() => Int) expYear!: number;
  @Field(() => String) cvc!: string;
}

@InputType('CreatePaymentInput')
class CreatePaymentInput {
  @Field(() => String, { nullable: true }) customerId?: string;
  @Field(() => Amount) amount!: number;
  @Field(() => String) currency!: string;
  @Field(() => String, { nullable: true }) originalCurrency?: string;
  @Field(() => String) paymentMethod!: string;
  @Field(() => CardInput, { nullable: true }) card?: CardInput;
  @Field(() => String, { nullable: true }) description?: string | null;
  @Field(() => String, { nullable: true }) receiptEmail?: string | null;
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string>;
  @Field(() => CaptureMethod, { nullable: true }) captureMethod?: Payment['captureMethod'];
  @Field(() => String, { nullable: true, description: 'Where the customer goes once a 3-D Secure challenge is answered (https).' }) returnUrl?: string;
}

@InputType('UpdatePaymentInput')
class UpdatePaymentInput {
  @Field(() => String, { nullable: true }) description?: string | null;
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string | null>;
}

@ArgsType()
class PaymentListArgs extends PageArgs(PaymentSortField, { updatable: true }) {
  @Field(() => String, { nullable: true }) search?: string;
  @Field(() => PaymentStatus, { nullable: true }) status?: Payment['status'];
  @Field(() => [PaymentStatus], { nullable: true, description: 'Any of these (REST: status=a,b); not with status.' }) statusIn?: Array<Payment['status']>;
  @Field(() => String, { nullable: true }) customerId?: string;
  @Field(() => [String], { nullable: true, description: 'ISO 4217 codes: the payments in any of them.' }) currency?: string[];
  @Field(() => Amount, { nullable: true, description: 'At least this amount (minor units).' }) amountGte?: number;
  @Field(() => Amount, { nullable: true, description: 'At most this amount (minor units); not below amountGte.' }) amountLte?: number;
  @Field(() => String, { nullable: true }) failureCode?: string;
  @Field(() => String, { nullable: true }) gatewayId?: string;
  @Field(() => String, { nullable: true }) invoiceId?: string;
  @Field(() => String, { nullable: true }) subscriptionId?: string;
  @Field(() => String, { nullable: true }) checkoutSessionId?: string;
  @Field(() => String, { nullable: true }) paymentLinkId?: string;
  @Field(() => GraphQLJSONObject, { nullable: true, description: 'Keys and string values the payment\'s metadata must all hold, e.g. {"plan": "gold"}.' }) metadata?: Record<string, string>;
}

@ArgsType()
class RefundListArgs extends PageArgs(RefundSortField, { updatable: true }) {
  @Field(() => RefundStatus, { nullable: true }) status?: Refund['status'];
  @Field(() => [RefundStatus], { nullable: true, description: 'Any of these (REST: status=a,b); not with status.' }) statusIn?: Array<Refund['status']>;
  @Field(() => String, { nullable: true }) paymentId?: string;
  @Field(() => String, { nullable: true, description: 'The refunds of this customer\'s payments.' }) customerId?: string;
}

@Resolver(() => PaymentType)
export class PaymentResolver {
  @Query(() => PaymentType, { nullable: true })
  payment(@Arg('id', () => ID) id: string, @Ctx() { services, rc }: GqlContext) {
    return services.payments.retrieve(rc, id);
  }

  @Query(() => PaymentList, { nullable: true })
  async payments(@Args(() => PaymentListArgs) args: PaymentListArgs, @Ctx() { services, rc }: GqlContext, @Info() info: GraphQLResolveInfo) {
    return connection(args, (input) => services.payments.list(rc, input, {}, listOptions(info)));
  }

  @Mutation(() => PaymentType, { nullable: true })
  createPayment(@Arg('input', () => CreatePaymentInput) input: CreatePaymentInput, @Ctx() { services, rc, idem }: GqlContext) {
    const data = defined(input);
    if (input.card) data.card = defined(input.card);
    return services.payments.create(rc, data, idem);
  }

  @Mutation(() => PaymentType, { nullable: true, description: 'Captures an authorised payment (requires_capture), all of it unless amount is given; the rest is released.' })
  capturePayment(@Arg('id', () => ID) id: string, @Arg('amount', () => Amount, { nullable: true }) amount: number | null | undefined, @Ctx() { services, rc, idem }: GqlContext) {
    return services.paymentActions.capture(rc, id, amount == null ? {} : { amount }, idem);
  }

  @Mutation(() => PaymentType, { nullable: true, description: 'Voids an uncaptured authorisation, or a payment waiting for 3-D Secure.' })
  cancelPayment(@Arg('id', () => ID) id: string, @Ctx() { services, rc, idem }: GqlContext) {
    return services.paymentActions.cancel(rc, id, {}, idem);
  }

  @Mutation(() => PaymentType, { nullable: true })
  updatePayment(@Arg('id', () => ID) id: string, @Arg('input', () => UpdatePaymentInput) input: UpdatePaymentInput, @Ctx() { services, rc }: GqlContext) {
    return services.payments.update(rc, id, defined(input));
  }

  @FieldResolver(() => CustomerType, { nullable: true })
  customer(@Root() payment: Payment, @Ctx() { loaders }: GqlContext) {
    return payment.customerId ? loaders.customer.load(payment.customerId) : null;
  }

  @FieldResolver(() => [RefundType], { nullable: true, description: NESTED_LIST_DESCRIPTION })
  refunds(@Root() payment: Payment, @Args(() => NestedCursorArgs) args: NestedCursorArgs, @Ctx() { loaders }: GqlContext) {
    return loaders.refundsByPayment.load(payment.id, nestedLimit(args), args.after ?? undefined);
  }
}

@Resolver(() => RefundType)
export class RefundResolver {
  @Query(() => RefundType, { nullable: true })
  refund(@Arg('id', () => ID) id: string, @Ctx() { services, rc }: GqlContext) {
    return services.refunds.retrieve(rc, id);
  }

  @Query(() => RefundList, { nullable: true })
  async refunds(@Args(() => RefundListArgs) args: RefundListArgs, @Ctx() { services, rc }: GqlContext, @Info() info: GraphQLResolveInfo) {
    return connection(args, (input) => services.refunds.list(rc, input, undefined, listOptions(info)));
  }

  @Mutation(() => RefundType, { nullable: true })
  refundPayment(
    @Arg('paymentId', () => ID) paymentId: string,
    @Arg('amount', () => Amount, { nullable: true }) amount: number | undefined,
    @Arg('reason', () => String, { nullable: true }) reason: string | undefined,
    @Ctx() { services, rc, idem }: GqlContext,
  ) {
    return services.refunds.create(rc, defined({ paymentId, amount, reason }), idem);
  }
}

@Resolver(() => CustomerType)
export class CustomerPaymentsResolver {
  @FieldResolver(() => [PaymentType], { nullable: true, description: NESTED_LIST_DESCRIPTION })
  payments(@Root() customer: Customer, @Args(() => NestedCursorArgs) args: NestedCursorArgs, @Ctx() { loaders }: GqlContext) {
    return loaders.paymentsByCustomer.load(customer.id, nestedLimit(args), args.after ?? undefined);
  }
}
