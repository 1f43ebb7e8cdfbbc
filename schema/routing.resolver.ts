import { Arg, Ctx, Field, FieldResolver, InputType, Int, Mutation, ObjectType, Query, Resolver, Root } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import type { GqlContext } from './context';
import { Amount, DateTime, defined, plainInput } from './types/common';
import { CardBrand, Country, knownCountry, RoutingSkipReason, RoutingStrategy } from './types/enums';
import type { RoutingStrategy as Strategy } from '../src/modules/routing/routing.inputs';
import type { SkipReason } from '../src/modules/routing/candidates';

/** The conditions of a rule (`when`): every one given must match. */
@ObjectType('RoutingConditions')
class RoutingConditionsType {
  @Field(() => [String], { nullable: true, description: 'ISO 4217 codes.' }) currency?: string[];
  /** The stored codes: the Country field resolver (RoutingConditionsResolver) returns them. */
  country?: string[];
  @Field(() => Amount, { nullable: true }) amountGte?: number;
  @Field(() => Amount, { nullable: true }) amountLte?: number;
  @Field(() => [CardBrand], { nullable: true }) cardBrand?: string[];
  @Field(() => GraphQLJSONObject, { nullable: true, description: 'Metadata keys and the values they must have.' }) metadata?: Record<string, string>;
}

@Resolver(() => RoutingConditionsType)
export class RoutingConditionsResolver {
  @FieldResolver(() => [Country], {
    nullable: true,
    description: 'ISO 3166-1 alpha-2 codes of the customer. A code stored before codes were checked against the list that names no country is left out (REST returns it as stored).',
  })
  country(@Root() when: RoutingConditionsType): string[] | null {
    return when.country === undefined ? null : when.country.filter((code) => knownCountry(code) !== null);
  }
}

@ObjectType('RoutingRuleGateway')
class RoutingRuleGatewayType {
  @Field(() => String) gatewayId!: string;
  @Field(() => Int, { nullable: true, description: 'Share of first attempts under the weighted strategy.' }) weight?: number;
}

@ObjectType('RoutingRule')
class RoutingRuleType {
  @Field(() => String) name!: string;
  @Field(() => RoutingConditionsType, { nullable: true, description: 'Absent: the rule matches every payment.' }) when?: RoutingConditionsType;
  @Field(() => RoutingStrategy) strategy!: Strategy;
  @Field(() => [RoutingRuleGatewayType]) gateways!: RoutingRuleGatewayType[];
}

/** The rule set, as `GET /v1/routing` gives it. */
@ObjectType('RoutingRuleSet')
class RoutingRuleSetType {
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => [RoutingRuleType], { description: 'The first rule whose conditions match picks the candidates.' }) rules!: RoutingRuleType[];
  @Field(() => [String], { description: 'Gateway ids tried after the rule\'s candidates.' }) fallback!: string[];
  @Field(() => Int) maxAttempts!: number;
  @Field(() => DateTime, { nullable: true, description: 'Null until a rule set is saved.' }) updatedAt!: string | null;
}

@InputType('RoutingConditionsInput')
class RoutingConditionsInput {
  @Field(() => [String], { nullable: true }) currency?: string[];
  @Field(() => [String], { nullable: true }) country?: string[];
  @Field(() => Amount, { nullable: true }) amountGte?: number;
  @Field(() => Amount, { nullable: true }) amountLte?: number;
  @Field(() => [CardBrand], { nullable: true }) cardBrand?: string[];
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string>;
}

@InputType('RoutingRuleGatewayInput')
class RoutingRuleGatewayInput {
  @Field(() => String) gatewayId!: string;
  @Field(() => Int, { nullable: true, description: 'Required (≥ 1) under the weighted strategy.' }) weight?: number;
}

@InputType('RoutingRuleInput')
class RoutingRuleInput {
  @Field(() => String) name!: string;
  @Field(() => RoutingConditionsInput, { nullable: true }) when?: RoutingConditionsInput;
  @Field(() => RoutingStrategy) strategy!: Strategy;
  @Field(() => [RoutingRuleGatewayInput]) gateways!: RoutingRuleGatewayInput[];
}

/** The whole rule set `PUT /v1/routing` takes; it replaces the one in place. */
@InputType('RoutingRuleSetInput')
class RoutingRuleSetInput {
  @Field(() => [RoutingRuleInput]) rules!: RoutingRuleInput[];
  @Field(() => [String], { nullable: true, description: 'Default: none.' }) fallback?: string[];
  @Field(() => Int, { nullable: true, description: '1 to 10, default 3.' }) maxAttempts?: number;
}

@ObjectType('RoutingSkip', { description: 'A gateway the rules name that a payment would not try now, and why.' })
class RoutingSkipType {
  @Field(() => String) gatewayId!: string;
  @Field(() => RoutingSkipReason) reason!: SkipReason;
}

@ObjectType('RoutingDecision')
class RoutingDecisionType {
  @Field(() => String) object!: string;
  @Field(() => String, { nullable: true }) rule!: string | null;
  @Field(() => [String]) gateways!: string[];
  @Field(() => Int) maxAttempts!: number;
  @Field(() => [RoutingSkipType]) skipped!: RoutingSkipType[];
  @Field(() => Boolean) usesBuiltinSimulator!: boolean;
}

@InputType('RoutingSimulationInput')
class RoutingSimulationInput {
  @Field(() => Amount) amount!: number;
  @Field(() => String) currency!: string;
  @Field(() => String, { nullable: true }) country?: string;
  @Field(() => CardBrand, { nullable: true }) cardBrand?: string;
  @Field(() => GraphQLJSONObject, { nullable: true }) metadata?: Record<string, string>;
}

/** `GET`/`PUT /v1/routing` and `POST /v1/routing/simulate`, through the same service. */
@Resolver()
export class RoutingResolver {
  @Query(() => RoutingRuleSetType, { nullable: true })
  routing(@Ctx() { services, rc }: GqlContext) {
    return services.routing.get(rc);
  }

  @Mutation(() => RoutingRuleSetType, { nullable: true })
  setRouting(@Arg('config', () => RoutingRuleSetInput) config: RoutingRuleSetInput, @Ctx() { services, rc }: GqlContext) {
    return services.routing.replace(rc, plainInput(config));
  }

  @Query(() => RoutingDecisionType, { nullable: true })
  simulateRouting(@Arg('input', () => RoutingSimulationInput) input: RoutingSimulationInput, @Ctx() { services, rc }: GqlContext) {
    return services.routing.simulate(rc, defined(input));
  }
}
