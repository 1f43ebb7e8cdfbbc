import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, Info, InputType, Mutation, ObjectType, Query, Resolver, Root } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import type { GraphQLResolveInfo } from 'graphql';
import type { GqlContext } from './context';
import { NodeInterface } from './types/node';
import { DateTime, PageArgs, defined, listOptions, connection, ListType } from './types/common';
import { Country, COUNTRY_OUT, CustomerSortField, knownCountry, TaxExempt } from './types/enums';
import { AddressInput, AddressType, TaxIdInput, TaxIdObject, withParties } from './types/parties';

@ObjectType('Customer', { implements: NodeInterface })
export class CustomerType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => String) email!: string;
  @Field(() => String, { nullable: true }) name!: string | null;
  /** The stored code: the Country field resolver (CustomerResolver) returns it. */
  country!: string | null;
  @Field(() => String, { nullable: true }) phone!: string | null;
  @Field(() => String, { nullable: true }) defaultPaymentMethodId!: string | null;
  @Field(() => String, { nullable: true }) testClockId!: string | null;
  @Field(() => String, { description: "BCP 47 tag of the customer's invoices, e-mails and hosted invoice page (en unless set): its language picks the words (en, de, fr), its region the date and number formats." }) locale!: string;
  @Field(() => AddressType, { nullable: true, description: "The buyer's address, printed on the customer's invoices." }) address!: AddressType | null;
  @Field(() => [TaxIdObject], { description: "The customer's tax ids, printed on its invoices ([] when none)." }) taxIds!: TaxIdObject[];
  @Field(() => TaxExempt, { description: 'Whether its invoices carry tax: none (default), exempt, or reverse (reverse charge).' }) taxExempt!: string;
  @Field(() => GraphQLJSONObject) metadata!: Record<string, string>;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
}

@ObjectType('CustomerList')
export class CustomerList extends ListType(CustomerType, 'Customer') {}

@InputType('CreateCustomerInput')
export class CreateCustomerInput {
  @Field(() => String) email!: string;
  @Field(() => String, { nullable: true }) name?: string | null;
  @Field(() => String, { nullable: true }) country?: string | null;
  @Field(() => String, { nullable: true }) phone?: string | null;
  @Field(() => String, { nullable: true }) locale?: string | null;
  @Field(() => AddressInput, { nullable: true }) address?: AddressInput | null;
  @Field(() => [TaxIdInput], { nullable: true, description: 'At most 5.' }) taxIds?: TaxIdInput[] | null;
  @Field(() => TaxExempt, { nullable: true }) taxExempt?: string;
  @Field(() => String, { nullable: true, description: 'Test mode: a test clock (clock_…) the customer, its subscriptions, invoices and payments live on.' }) testClockId?: string;
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string>;
}

@InputType('UpdateCustomerInput')
export class UpdateCustomerInput {
  @Field(() => String, { nullable: true }) email?: string;
  @Field(() => String, { nullable: true }) name?: string | null;
  @Field(() => String, { nullable: true }) country?: string | null;
  @Field(() => String, { nullable: true }) phone?: string | null;
  @Field(() => String, { nullable: true }) locale?: string | null;
  @Field(() => AddressInput, { nullable: true, description: 'Replaces the address; null removes it.' }) address?: AddressInput | null;
  @Field(() => [TaxIdInput], { nullable: true, description: 'Replaces the list; null or [] removes every tax id.' }) taxIds?: TaxIdInput[] | null;
  @Field(() => TaxExempt, { nullable: true }) taxExempt?: string;
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string | null>;
}

@ArgsType()
export class CustomerListArgs extends PageArgs(CustomerSortField, { updatable: true }) {
  @Field(() => String, { nullable: true }) search?: string;
  @Field(() => String, { nullable: true }) email?: string;
}

@Resolver(() => CustomerType)
export class CustomerResolver {
  @FieldResolver(() => Country, { nullable: true, description: COUNTRY_OUT })
  country(@Root() customer: CustomerType): string | null {
    return knownCountry(customer.country);
  }

  @Query(() => CustomerType, { nullable: true })
  customer(@Arg('id', () => ID) id: string, @Ctx() { services, rc }: GqlContext) {
    return services.customers.retrieve(rc, id);
  }

  @Query(() => CustomerList, { nullable: true })
  async customers(@Args(() => CustomerListArgs) args: CustomerListArgs, @Ctx() { services, rc }: GqlContext, @Info() info: GraphQLResolveInfo) {
    return connection(args, (input) => services.customers.list(rc, input, listOptions(info)));
  }

  @Mutation(() => CustomerType, { nullable: true })
  createCustomer(@Arg('input', () => CreateCustomerInput) input: CreateCustomerInput, @Ctx() { services, rc, idem }: GqlContext) {
    return services.customers.create(rc, withParties(defined(input)), idem);
  }

  @Mutation(() => CustomerType, { nullable: true })
  updateCustomer(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => UpdateCustomerInput) input: UpdateCustomerInput,
    @Ctx() { services, rc }: GqlContext,
  ) {
    return services.customers.update(rc, id, withParties(defined(input)));
  }
}
