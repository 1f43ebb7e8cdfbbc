import { Arg, Args, ArgsType, Ctx, Field, ID, Info, ObjectType, Query, Resolver } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import type { GraphQLResolveInfo } from 'graphql';
import type { GqlContext } from './context';
import { NodeInterface } from './types/node';
import { DateTime, PageArgs, listOptions, connection, ListType } from './types/common';
import { EventSortField, EventTypeName } from './types/enums';
import { OBJECT_IDS_MAX } from '../src/modules/events/event.inputs';

@ObjectType('Event', { implements: NodeInterface })
export class EventType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => EventTypeName) type!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => GraphQLJSONObject) data!: Record<string, unknown>;
}

@ObjectType('EventList')
class EventList extends ListType(EventType, 'Event') {}

@ArgsType()
class EventListArgs extends PageArgs(EventSortField) {
  @Field(() => EventTypeName, { nullable: true, description: 'Only events of this type. Not with types.' }) type?: string;
  @Field(() => [EventTypeName], { nullable: true, description: 'Only events of any of these types. Not with type.' }) types?: string[];
  @Field(() => ID, { nullable: true, description: 'Only the events of this object (`data.object.id`), e.g. a payment\'s.' }) objectId?: string;
  @Field(() => [ID], {
    nullable: true,
    description: `Only the events of any of these objects (at most ${OBJECT_IDS_MAX}), e.g. a payment and its refunds; empty: none. Not with objectId.`,
  })
  objectIds?: string[];
  @Field(() => DateTime, { nullable: true, description: 'Only events created strictly after this instant.' }) createdAfter?: Date;
  @Field(() => DateTime, { nullable: true, description: 'Only events created strictly before this instant.' }) createdBefore?: Date;
}

@Resolver(() => EventType)
export class EventResolver {
  @Query(() => EventType, { nullable: true })
  event(@Arg('id', () => ID) id: string, @Ctx() { services, rc }: GqlContext) {
    return services.events.retrieve(rc, id);
  }

  @Query(() => EventList, { nullable: true })
  async events(@Args(() => EventListArgs) args: EventListArgs, @Ctx() { services, rc }: GqlContext, @Info() info: GraphQLResolveInfo) {
    return connection(args, (input) => services.events.list(rc, input, listOptions(info), { byObject: true }));
  }
}
