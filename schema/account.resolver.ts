import { Arg, Ctx, Field, ID, InputType, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import type { GqlContext } from './context';
import { DateTime, defined } from './types/common';
import { AddressInput, AddressType, withParties } from './types/parties';

@ObjectType('Account')
export class AccountType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => String, { description: 'Shown on hosted pages, invoices and e-mails.' }) name!: string;
  @Field(() => String, { description: 'Invoice numbers read <prefix>-000042; shared by both modes, numbers counted per mode.' }) invoicePrefix!: string;
  @Field(() => [Int], { description: 'Days after a first failed subscription charge on which it is retried.' }) dunningRetryDays!: number[];
  @Field(() => Int, { nullable: true, description: 'Requests a minute in each mode (null: the service default). Read only here: the CLI changes it.' }) rateLimitPerMinute!: number | null;
  @Field(() => Int, { description: 'Failed public pays (hosted pages) per mode in a rolling hour, after which every public pay of that mode is refused until the hour has passed.' }) publicDeclinesPerHour!: number;
  @Field(() => AddressType, { nullable: true, description: "The seller's address, printed on invoices." }) address!: AddressType | null;
  @Field(() => String, { nullable: true, description: "The seller's tax id (e.g. a VAT number), printed on invoices." }) taxId!: string | null;
  @Field(() => String, { nullable: true, description: 'Where customers write with questions, printed on invoices.' }) supportEmail!: string | null;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
}

@InputType('UpdateAccountInput')
class UpdateAccountInput {
  @Field(() => String, { nullable: true }) name?: string;
  @Field(() => String, { nullable: true }) invoicePrefix?: string;
  @Field(() => [Int], { nullable: true }) dunningRetryDays?: number[];
  @Field(() => Int, { nullable: true }) publicDeclinesPerHour?: number;
  @Field(() => AddressInput, { nullable: true, description: 'Replaces the address; null removes it.' }) address?: AddressInput | null;
  @Field(() => String, { nullable: true, description: 'null removes it.' }) taxId?: string | null;
  @Field(() => String, { nullable: true, description: 'null removes it.' }) supportEmail?: string | null;
}

@Resolver(() => AccountType)
export class AccountResolver {
  @Query(() => AccountType, { nullable: true })
  account(@Ctx() { services, rc }: GqlContext) {
    return services.accounts.settings(rc);
  }

  @Mutation(() => AccountType, { nullable: true })
  updateAccount(@Arg('input', () => UpdateAccountInput) input: UpdateAccountInput, @Ctx() { services, rc }: GqlContext) {
    return services.accounts.updateSettings(rc, withParties(defined(input)));
  }
}
