import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, Float, ID, Info, InputType, Mutation, ObjectType, Query, Resolver, Root } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import type { GraphQLResolveInfo } from 'graphql';
import type { GqlContext } from './context';
import { NodeInterface } from './types/node';
import { Amount, DateTime, PageArgs, defined, listOptions, connection, ListType } from './types/common';
import { Country, COUNTRY_OUT, knownCountry, TaxRateSortField } from './types/enums';

@ObjectType('TaxRate', { implements: NodeInterface })
export class TaxRateType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => String) displayName!: string;
  @Field(() => String, { nullable: true }) description!: string | null;
  @Field(() => Float, { description: 'Percent, up to 4 decimals (19.5 is 19.5 %); never changes.' }) percentage!: number;
  @Field(() => Boolean, { description: 'true: the tax is part of the line amounts; false: it is added on top.' }) inclusive!: boolean;
  /** The stored code: the Country field resolver (TaxRateResolver) returns it. */
  country!: string | null;
  @Field(() => String, { nullable: true }) jurisdiction!: string | null;
  @Field(() => Boolean, { description: 'Only active rates can be put on new invoices and subscriptions.' }) active!: boolean;
  @Field(() => GraphQLJSONObject) metadata!: Record<string, string>;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
}

/** One tax rate's share of an invoice (Invoice.taxBreakdown, UpcomingInvoice.taxBreakdown). */
@ObjectType('TaxBreakdownEntry')
export class TaxBreakdownEntryType {
  @Field(() => String) taxRateId!: string;
  @Field(() => String) displayName!: string;
  @Field(() => Float) percentage!: number;
  @Field(() => Boolean) inclusive!: boolean;
  @Field(() => Amount, { description: "The amount taxed: the rate's lines' sum, or for an inclusive rate that sum less the tax in it." }) taxableAmount!: number;
  @Field(() => Amount, { description: 'The tax, rounded once for the rate and invoice (0 for a customer exempt or reverse charge).' }) amount!: number;
}

@ObjectType('TaxRateList')
class TaxRateList extends ListType(TaxRateType, 'TaxRate') {}

@InputType('CreateTaxRateInput')
class CreateTaxRateInput {
  @Field(() => String) displayName!: string;
  @Field(() => Float, { description: '0 to 100, at most 4 decimals.' }) percentage!: number;
  @Field(() => Boolean) inclusive!: boolean;
  @Field(() => String, { nullable: true, description: 'ISO 3166-1 alpha-2.' }) country?: string | null;
  @Field(() => String, { nullable: true }) jurisdiction?: string | null;
  @Field(() => String, { nullable: true }) description?: string | null;
  @Field(() => Boolean, { nullable: true }) active?: boolean;
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string>;
}

@InputType('UpdateTaxRateInput', { description: 'The percentage and inclusive never change: make a new rate.' })
class UpdateTaxRateInput {
  @Field(() => String, { nullable: true }) displayName?: string;
  @Field(() => String, { nullable: true }) description?: string | null;
  @Field(() => Boolean, { nullable: true }) active?: boolean;
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string | null>;
}

@ArgsType()
class TaxRateListArgs extends PageArgs(TaxRateSortField) {
  @Field(() => Boolean, { nullable: true }) active?: boolean;
  @Field(() => Boolean, { nullable: true }) inclusive?: boolean;
}

@Resolver(() => TaxRateType)
export class TaxRateResolver {
  @FieldResolver(() => Country, { nullable: true, description: COUNTRY_OUT })
  country(@Root() rate: TaxRateType): string | null {
    return knownCountry(rate.country);
  }

  @Query(() => TaxRateType, { nullable: true })
  taxRate(@Arg('id', () => ID) id: string, @Ctx() { services, rc }: GqlContext) {
    return services.taxRates.retrieve(rc, id);
  }

  @Query(() => TaxRateList, { nullable: true })
  async taxRates(@Args(() => TaxRateListArgs) args: TaxRateListArgs, @Ctx() { services, rc }: GqlContext, @Info() info: GraphQLResolveInfo) {
    return connection(args, (input) => services.taxRates.list(rc, input, listOptions(info)));
  }

  @Mutation(() => TaxRateType, { nullable: true })
  createTaxRate(@Arg('input', () => CreateTaxRateInput) input: CreateTaxRateInput, @Ctx() { services, rc, idem }: GqlContext) {
    return services.taxRates.create(rc, defined(input), idem);
  }

  @Mutation(() => TaxRateType, { nullable: true })
  updateTaxRate(@Arg('id', () => ID) id: string, @Arg('input', () => UpdateTaxRateInput) input: UpdateTaxRateInput, @Ctx() { services, rc }: GqlContext) {
    return services.taxRates.update(rc, id, defined(input));
  }
}
