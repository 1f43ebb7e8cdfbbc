import { Arg, Args, ArgsType, Ctx, Field, ID, Info, InputType, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import type { GraphQLResolveInfo } from 'graphql';
import type { GqlContext } from './context';
import { NodeInterface } from './types/node';
import { DateTime, PageArgs, defined, listOptions, connection, ListType } from './types/common';
import { GatewaySortField, GatewayType as GatewayTypeEnum } from './types/enums';

@ObjectType('Gateway', { implements: NodeInterface })
export class GatewayType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => String) name!: string;
  @Field(() => GatewayTypeEnum) type!: string;
  @Field(() => Boolean) enabled!: boolean;
  @Field(() => [String], { nullable: true }) currencies!: string[] | null;
  @Field(() => GraphQLJSONObject) settings!: Record<string, unknown>;
  @Field(() => Boolean) credentialsSet!: boolean;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
}

@ObjectType('GatewayList')
class GatewayList extends ListType(GatewayType, 'Gateway') {}

@InputType('CreateGatewayInput')
class CreateGatewayInput {
  @Field(() => String) name!: string;
  @Field(() => GatewayTypeEnum) type!: string;
  @Field(() => GraphQLJSONObject, { nullable: true }) credentials?: Record<string, string>;
  @Field(() => [String], { nullable: true }) currencies?: string[] | null;
  @Field(() => Boolean, { nullable: true }) enabled?: boolean;
  @Field(() => GraphQLJSONObject, { nullable: true }) settings?: Record<string, unknown>;
}

@InputType('UpdateGatewayInput')
class UpdateGatewayInput {
  @Field(() => String, { nullable: true }) name?: string;
  @Field(() => GraphQLJSONObject, { nullable: true }) credentials?: Record<string, string>;
  @Field(() => [String], { nullable: true }) currencies?: string[] | null;
  @Field(() => Boolean, { nullable: true }) enabled?: boolean;
  @Field(() => GraphQLJSONObject, { nullable: true }) settings?: Record<string, unknown>;
}

@ArgsType()
class GatewayListArgs extends PageArgs(GatewaySortField) {
  @Field(() => GatewayTypeEnum, { nullable: true }) type?: string;
  @Field(() => [GatewayTypeEnum], { nullable: true, description: 'Any of these (REST: type=a,b); not with type.' }) typeIn?: string[];
  @Field(() => Boolean, { nullable: true }) enabled?: boolean;
}

@Resolver(() => GatewayType)
export class GatewayResolver {
  @Query(() => GatewayType, { nullable: true })
  gateway(@Arg('id', () => ID) id: string, @Ctx() { services, rc }: GqlContext) {
    return services.gateways.retrieve(rc, id);
  }

  @Query(() => GatewayList, { nullable: true })
  async gateways(@Args(() => GatewayListArgs) args: GatewayListArgs, @Ctx() { services, rc }: GqlContext, @Info() info: GraphQLResolveInfo) {
    return connection(args, (input) => services.gateways.list(rc, input, listOptions(info)));
  }

  @Mutation(() => GatewayType, { nullable: true })
  createGateway(@Arg('input', () => CreateGatewayInput) input: CreateGatewayInput, @Ctx() { services, rc, idem }: GqlContext) {
    return services.gateways.create(rc, defined(input), idem);
  }

  @Mutation(() => GatewayType, { nullable: true })
  updateGateway(@Arg('id', () => ID) id: string, @Arg('input', () => UpdateGatewayInput) input: UpdateGatewayInput, @Ctx() { services, rc }: GqlContext) {
    return services.gateways.update(rc, id, defined(input));
  }

  @Mutation(() => GatewayType, { nullable: true })
  deleteGateway(@Arg('id', () => ID) id: string, @Ctx() { services, rc }: GqlContext) {
    return services.gateways.remove(rc, id);
  }
}
