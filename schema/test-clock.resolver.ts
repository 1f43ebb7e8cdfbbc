import { Arg, Args, ArgsType, Ctx, Field, ID, Info, InputType, Mutation, ObjectType, Query, Resolver, registerEnumType } from 'type-graphql';
import type { GraphQLResolveInfo } from 'graphql';
import type { GqlContext } from './context';
import { NodeInterface } from './types/node';
import { DateTime, ListType, PageArgs, connection, defined, listOptions } from './types/common';
import { TestClockStatus } from './types/enums';
import { listTestClocksInput } from '../src/modules/subscriptions/subscription.inputs';

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

@ObjectType('TestClockList')
class TestClockList extends ListType(TestClockType, 'TestClock') {}

/** The list's sort fields, read from its service's list schema (REST's `sortField`). */
const TestClockSortField = Object.fromEntries(listTestClocksInput.shape.sortField.unwrap().options.map((v) => [v, v])) as { createdAt: 'createdAt' };
registerEnumType(TestClockSortField, { name: 'TestClockSortField' });

@ArgsType()
class TestClockListArgs extends PageArgs(TestClockSortField) {}

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

  @Query(() => TestClockList, { nullable: true, description: 'The account\'s test clocks, newest first (test mode).' })
  async testClocks(@Args(() => TestClockListArgs) args: TestClockListArgs, @Ctx() { services, rc }: GqlContext, @Info() info: GraphQLResolveInfo) {
    return connection(args, (input) => services.testClocks.list(rc, input, listOptions(info)));
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
