import { Args, ArgsType, Ctx, Field, Int, ObjectType, Query, Resolver, registerEnumType } from 'type-graphql';
import type { GqlContext } from './context';
import { Amount, DateTime } from './types/common';
import { SUMMARY_GROUPS, type SummaryGroup as Group } from '../src/modules/payments/payment-summary.inputs';

export const SummaryGroup = Object.fromEntries(SUMMARY_GROUPS.map((g) => [g, g])) as { [K in Group]: K };
registerEnumType(SummaryGroup, { name: 'SummaryGroup', description: 'What a payment summary groups by, besides the currency every row has.' });

@ObjectType('PaymentSummaryRow', { description: 'One group of a payment summary; the group fields not asked for are null.' })
export class PaymentSummaryRowType {
  @Field(() => String) currency!: string;
  @Field(() => String, { nullable: true, description: "The payment's status (a refund counts under its payment's)." }) status?: string | null;
  @Field(() => String, { nullable: true, description: "The gateway's id (a refund's own, else its payment's)." }) gateway?: string | null;
  @Field(() => String, { nullable: true, description: 'The UTC date, YYYY-MM-DD.' }) day?: string | null;
  @Field(() => Int, { description: 'Payments created in the window, of every status.' }) count!: number;
  @Field(() => Amount, { description: 'What the succeeded payments of the window captured.' }) amount!: number;
  @Field(() => Amount, { description: 'Succeeded refunds made in the window, whenever their payment was made.' }) amountRefunded!: number;
  @Field(() => Amount, { description: 'amount − amountRefunded.' }) net!: number;
}

@ArgsType()
class PaymentSummaryArgs {
  @Field(() => DateTime, { description: 'Start of the window, included.' }) from!: Date;
  @Field(() => DateTime, { description: 'End of the window, excluded.' }) to!: Date;
  @Field(() => [SummaryGroup], { nullable: true, description: 'Rows are always per currency.' }) groupBy?: Group[] | null;
}

@Resolver()
export class PaymentSummaryResolver {
  @Query(() => [PaymentSummaryRowType], { description: 'The payments and refunds of [from, to), counted and summed per group (REST GET /v1/payments/summary).' })
  paymentSummary(@Args(() => PaymentSummaryArgs) { from, to, groupBy }: PaymentSummaryArgs, @Ctx() { services, rc }: GqlContext) {
    // REST's comma-separated list: the service reads both transports' groups the same way.
    return services.paymentSummary.summarize(rc, { from, to, ...(groupBy ? { groupBy: groupBy.join(',') } : {}) });
  }
}
