import {
  Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, Info, InputType, Int, Mutation, ObjectType, Query, Resolver, Root,
} from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import type { GraphQLResolveInfo } from 'graphql';
import type { GqlContext } from './context';
import { NodeInterface } from './types/node';
import { Amount, DateTime, NESTED_LIST_DESCRIPTION, NestedListArgs, PageArgs, defined, nestedLimit, listOptions, connection, ListType } from './types/common';
import { PriceSortField, PriceType as PriceTypeEnum, ProductSortField, RecurringInterval, Currency } from './types/enums';
import type { Price } from '../src/modules/catalog/catalog.service';

@ObjectType('Product', { implements: NodeInterface })
export class ProductType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => String) name!: string;
  @Field(() => String, { nullable: true }) description!: string | null;
  @Field(() => Boolean) active!: boolean;
  @Field(() => GraphQLJSONObject) metadata!: Record<string, string>;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
}

@ObjectType('Recurring')
export class RecurringType {
  @Field(() => RecurringInterval) interval!: string;
  @Field(() => Int) intervalCount!: number;
}

@ObjectType('Price', { implements: NodeInterface })
export class PriceType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => String) productId!: string;
  @Field(() => Amount) unitAmount!: number;
  @Field(() => Currency) currency!: string;
  @Field(() => PriceTypeEnum) type!: Price['type'];
  @Field(() => RecurringType, { nullable: true }) recurring!: RecurringType | null;
  @Field(() => String, { nullable: true }) nickname!: string | null;
  @Field(() => Boolean) active!: boolean;
  @Field(() => GraphQLJSONObject) metadata!: Record<string, string>;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
}

@ObjectType('ProductList')
class ProductList extends ListType(ProductType, 'Product') {}

@ObjectType('PriceList')
class PriceList extends ListType(PriceType, 'Price') {}

@InputType('CreateProductInput')
class CreateProductInput {
  @Field(() => String) name!: string;
  @Field(() => String, { nullable: true }) description?: string | null;
  @Field(() => Boolean, { nullable: true }) active?: boolean;
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string>;
}

@InputType('UpdateProductInput')
class UpdateProductInput {
  @Field(() => String, { nullable: true }) name?: string;
  @Field(() => String, { nullable: true }) description?: string | null;
  @Field(() => Boolean, { nullable: true }) active?: boolean;
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string | null>;
}

@InputType('RecurringInput')
class RecurringInput {
  @Field(() => RecurringInterval) interval!: string;
  @Field(() => Int, { nullable: true }) intervalCount?: number;
}

@InputType('CreatePriceInput')
class CreatePriceInput {
  @Field(() => String) productId!: string;
  @Field(() => Amount) unitAmount!: number;
  @Field(() => String) currency!: string;
  @Field(() => RecurringInput, { nullable: true }) recurring?: RecurringInput | null;
  @Field(() => String, { nullable: true }) nickname?: string | null;
  @Field(() => Boolean, { nullable: true }) active?: boolean;
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string>;
}

@InputType('UpdatePriceInput')
class UpdatePriceInput {
  @Field(() => String, { nullable: true }) nickname?: string | null;
  @Field(() => Boolean, { nullable: true }) active?: boolean;
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string | null>;
}

@ArgsType()
class ProductListArgs extends PageArgs(ProductSortField) {
  @Field(() => String, { nullable: true }) search?: string;
  @Field(() => Boolean, { nullable: true }) active?: boolean;
}

@ArgsType()
class PriceListArgs extends PageArgs(PriceSortField) {
  @Field(() => String, { nullable: true }) productId?: string;
  @Field(() => Boolean, { nullable: true }) active?: boolean;
  @Field(() => String, { nullable: true }) currency?: string;
  @Field(() => PriceTypeEnum, { nullable: true }) type?: Price['type'];
  @Field(() => [PriceTypeEnum], { nullable: true, description: 'Any of these (REST: type=a,b); not with type.' }) typeIn?: Array<Price['type']>;
}

@Resolver(() => ProductType)
export class ProductResolver {
  @FieldResolver(() => [PriceType], { nullable: true, description: NESTED_LIST_DESCRIPTION })
  prices(@Root() product: { id: string }, @Args(() => NestedListArgs) args: NestedListArgs, @Ctx() { loaders }: GqlContext) {
    return loaders.pricesByProduct.load(product.id, nestedLimit(args));
  }

  @Query(() => ProductType, { nullable: true })
  product(@Arg('id', () => ID) id: string, @Ctx() { services, rc }: GqlContext) {
    return services.catalog.retrieveProduct(rc, id);
  }

  @Query(() => ProductList, { nullable: true })
  async products(@Args(() => ProductListArgs) args: ProductListArgs, @Ctx() { services, rc }: GqlContext, @Info() info: GraphQLResolveInfo) {
    return connection(args, (input) => services.catalog.listProducts(rc, input, listOptions(info)));
  }

  @Mutation(() => ProductType, { nullable: true })
  createProduct(@Arg('input', () => CreateProductInput) input: CreateProductInput, @Ctx() { services, rc, idem }: GqlContext) {
    return services.catalog.createProduct(rc, defined(input), idem);
  }

  @Mutation(() => ProductType, { nullable: true })
  updateProduct(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => UpdateProductInput) input: UpdateProductInput,
    @Ctx() { services, rc }: GqlContext,
  ) {
    return services.catalog.updateProduct(rc, id, defined(input));
  }
}

@Resolver(() => PriceType)
export class PriceResolver {
  @Query(() => PriceType, { nullable: true })
  price(@Arg('id', () => ID) id: string, @Ctx() { services, rc }: GqlContext) {
    return services.catalog.retrievePrice(rc, id);
  }

  @Query(() => PriceList, { nullable: true })
  async prices(@Args(() => PriceListArgs) args: PriceListArgs, @Ctx() { services, rc }: GqlContext, @Info() info: GraphQLResolveInfo) {
    return connection(args, (input) => services.catalog.listPrices(rc, input, listOptions(info)));
  }

  @Mutation(() => PriceType, { nullable: true })
  createPrice(@Arg('input', () => CreatePriceInput) input: CreatePriceInput, @Ctx() { services, rc, idem }: GqlContext) {
    const data = defined(input);
    if (input.recurring) data.recurring = defined(input.recurring);
    return services.catalog.createPrice(rc, data, idem);
  }

  @Mutation(() => PriceType, { nullable: true })
  updatePrice(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => UpdatePriceInput) input: UpdatePriceInput,
    @Ctx() { services, rc }: GqlContext,
  ) {
    return services.catalog.updatePrice(rc, id, defined(input));
  }

  @FieldResolver(() => ProductType, { nullable: true })
  product(@Root() price: Price, @Ctx() { loaders }: GqlContext) {
    return loaders.product.load(price.productId);
  }
}
