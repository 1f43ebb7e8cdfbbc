import { Arg, Ctx, Field, InputType, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import type { GqlContext } from './context';
import { DateTime, defined } from './types/common';

@ObjectType('FxRate')
class FxRateType {
  @Field(() => String) from!: string;
  @Field(() => String) to!: string;
  @Field(() => String) rate!: string;
  @Field(() => DateTime, { nullable: true }) updatedAt!: string | null;
}

@ObjectType('FxRateSet')
class FxRateSetType {
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => [FxRateType]) rates!: FxRateType[];
  @Field(() => Boolean) demoRatesAvailable!: boolean;
  @Field(() => [FxRateType]) demoRates!: FxRateType[];
}

@InputType('FxRateInput')
class FxRateInput {
  @Field(() => String) from!: string;
  @Field(() => String) to!: string;
  @Field(() => String) rate!: string;
  @Field(() => String, { nullable: true, description: 'Ignored: what `fxRates` returns may be sent back as it is.' }) updatedAt?: string | null;
}

@Resolver()
export class FxRateResolver {
  @Query(() => FxRateSetType, { nullable: true })
  fxRates(@Ctx() { services, rc }: GqlContext) {
    return services.fx.list(rc);
  }

  @Mutation(() => FxRateSetType, { nullable: true })
  setFxRates(@Arg('rates', () => [FxRateInput]) rates: FxRateInput[], @Ctx() { services, rc }: GqlContext) {
    return services.fx.replace(rc, { rates: rates.map((r) => defined(r)) });
  }
}
