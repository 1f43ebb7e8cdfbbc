import { Arg, Ctx, Field, ID, InputType, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import type { GqlContext } from './context';
import { NodeInterface } from './types/node';
import { DateTime, defined } from './types/common';
import { TestClockStatus } from './types/enums';

const INSTANT = 'An ISO 8601 instant with its offset, such as `2026-01-31T00:00:00Z`.';

@ObjectType('TestClock', { implements: NodeInterface, description: 'Test mode only: a frozen time that customers and subscriptions attached to it live on.' })
export class TestClockType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => String, { nullable: true }) name!: string | null;
  @Field(() => DateTime) frozenTime!: string;
  @Field(() => TestClockStatus, { description: 'advancing while an advance runs its billing steps.' }) status!: string;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
}

@InputType('CreateTestClockInput')
class CreateTestClockInput {
  @Field(() => String, { description: `${INSTANT} Any instant, past or future.` }) frozenTime!: string;
  @Field(() => String, { nullable: true }) name?: string;
}

/** Test clocks: a live key is refused (mode_mismatch) by the service, as over REST. */
@Resolver(() => TestClockType)
export class TestClockResolver {
  @Query(() => TestClockType, { nullable: true })
  testClock(@Arg('id', () => ID) id: string, @Ctx() { services, rc }: GqlContext) {
    return services.testClocks.retrieve(rc, id);
  }

  @Mutation(() => TestClockType, { nullable: true })
  createTestClock(@Arg('input', () => CreateTestClockInput) input: CreateTestClockInput, @Ctx() { services, rc, idem }: GqlContext) {
    return services.testClocks.create(rc, defined(input), idem);
  }

  @Mutation(() => TestClockType, {
    nullable: true,
    description: 'Moves the clock forward to frozenTime, running every billing step due on its subscriptions on the way, in order, before it answers.',
  })
  advanceTestClock(
    @Arg('id', () => ID) id: string,
    @Arg('frozenTime', () => String, { description: `${INSTANT} Not before the clock's time.` }) frozenTime: string,
    @Ctx() { services, rc, idem }: GqlContext,
  ) {
    return services.testClocks.advance(rc, id, { frozenTime }, idem);
  }
}
