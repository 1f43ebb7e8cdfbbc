import {
  Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, Info, InputType, Int, Mutation, ObjectType, Query, Resolver, Root,
} from 'type-graphql';
import type { GraphQLResolveInfo } from 'graphql';
import type { GqlContext } from './context';
import { NodeInterface } from './types/node';
import { DateTime, PageArgs, defined, listOptions, connection, ListType } from './types/common';
import {
  WebhookDeliveryAttemptSortField, WebhookDeliveryAttemptStatus, WebhookDeliveryEventType, WebhookEndpointSortField, WebhookEndpointStatus,
  WebhookEventSelector,
} from './types/enums';
import type { EndpointStatus } from '../src/modules/webhooks/endpoint.service';
import type { WebhookAttempt } from '../src/modules/webhooks/webhook.store';

@ObjectType('WebhookEndpoint', { implements: NodeInterface })
export class WebhookEndpointType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => String) url!: string;
  @Field(() => [WebhookEventSelector]) events!: string[];
  @Field(() => String, { nullable: true }) description!: string | null;
  @Field(() => WebhookEndpointStatus) status!: EndpointStatus;
  @Field(() => String, { nullable: true }) disabledReason!: string | null;
  /** Only in the answers of createWebhookEndpoint and rotateWebhookSecret. */
  @Field(() => String, { nullable: true }) secret?: string | null;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
}

@ObjectType('WebhookEndpointList')
class WebhookEndpointList extends ListType(WebhookEndpointType, 'WebhookEndpoint') {}

@ObjectType('WebhookDeliveryAttempt', { implements: NodeInterface })
export class WebhookAttemptType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => String) endpointId!: string;
  @Field(() => String) deliveryId!: string;
  @Field(() => String) eventId!: string;
  @Field(() => WebhookDeliveryEventType) eventType!: string;
  @Field(() => Int) attempt!: number;
  @Field(() => WebhookDeliveryAttemptStatus) status!: 'succeeded' | 'failed';
  @Field(() => Int, { nullable: true }) statusCode!: number | null;
  @Field(() => Int) latencyMs!: number;
  @Field(() => String, { nullable: true }) error!: string | null;
  @Field(() => DateTime, { nullable: true }) nextRetryAt!: string | null;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
}

@ObjectType('WebhookDeliveryAttemptList')
class WebhookAttemptList extends ListType(WebhookAttemptType, 'WebhookDeliveryAttempt') {}

@ObjectType('EventResend')
class EventResendType {
  @Field(() => String) object!: string;
  @Field(() => String) eventId!: string;
  @Field(() => Int) deliveriesQueued!: number;
}

@ObjectType('WebhookEndpointTest', { description: 'A test ping queued for one endpoint (not an event: `events` does not list it).' })
class WebhookEndpointTestType {
  @Field(() => String) object!: string;
  @Field(() => String) endpointId!: string;
  @Field(() => ID, { description: 'The ping\'s id: its webhook-id and body id.' }) eventId!: string;
  @Field(() => WebhookDeliveryEventType) eventType!: string;
  @Field(() => String, { description: 'Its one attempt shows in the endpoint\'s `deliveries` (filter `eventId`).' }) deliveryId!: string;
  @Field(() => String) status!: string;
}

@InputType('CreateWebhookEndpointInput')
class CreateWebhookEndpointInput {
  @Field(() => String) url!: string;
  @Field(() => [WebhookEventSelector]) events!: string[];
  @Field(() => String, { nullable: true }) description?: string | null;
}

@InputType('UpdateWebhookEndpointInput')
class UpdateWebhookEndpointInput {
  @Field(() => String, { nullable: true }) url?: string;
  @Field(() => [WebhookEventSelector], { nullable: true }) events?: string[];
  @Field(() => String, { nullable: true }) description?: string | null;
  @Field(() => WebhookEndpointStatus, { nullable: true }) status?: EndpointStatus;
}

@ArgsType()
class WebhookEndpointListArgs extends PageArgs(WebhookEndpointSortField) {
  @Field(() => WebhookEndpointStatus, { nullable: true }) status?: EndpointStatus;
  @Field(() => [WebhookEndpointStatus], { nullable: true, description: 'Any of these (REST: status=a,b); not with status.' }) statusIn?: EndpointStatus[];
}

@ArgsType()
class WebhookAttemptListArgs extends PageArgs(WebhookDeliveryAttemptSortField) {
  @Field(() => WebhookDeliveryAttemptStatus, { nullable: true }) status?: WebhookAttempt['status'];
  @Field(() => [WebhookDeliveryAttemptStatus], { nullable: true, description: 'Any of these (REST: status=a,b); not with status.' }) statusIn?: Array<WebhookAttempt['status']>;
  @Field(() => String, { nullable: true }) eventId?: string;
}

@Resolver(() => WebhookEndpointType)
export class WebhookEndpointResolver {
  @Query(() => WebhookEndpointType, { nullable: true })
  webhookEndpoint(@Arg('id', () => ID) id: string, @Ctx() { services, rc }: GqlContext) {
    return services.webhooks.endpoints.retrieve(rc, id);
  }

  @Query(() => WebhookEndpointList, { nullable: true })
  async webhookEndpoints(@Args(() => WebhookEndpointListArgs) args: WebhookEndpointListArgs, @Ctx() { services, rc }: GqlContext, @Info() info: GraphQLResolveInfo) {
    return connection(args, (input) => services.webhooks.endpoints.list(rc, input, listOptions(info)));
  }

  @Mutation(() => WebhookEndpointType, { nullable: true })
  createWebhookEndpoint(@Arg('input', () => CreateWebhookEndpointInput) input: CreateWebhookEndpointInput, @Ctx() { services, rc, idem }: GqlContext) {
    return services.webhooks.endpoints.create(rc, defined(input), idem);
  }

  @Mutation(() => WebhookEndpointType, { nullable: true })
  updateWebhookEndpoint(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => UpdateWebhookEndpointInput) input: UpdateWebhookEndpointInput,
    @Ctx() { services, rc }: GqlContext,
  ) {
    return services.webhooks.endpoints.update(rc, id, defined(input));
  }

  @Mutation(() => WebhookEndpointType, { nullable: true })
  deleteWebhookEndpoint(@Arg('id', () => ID) id: string, @Ctx() { services, rc }: GqlContext) {
    return services.webhooks.endpoints.remove(rc, id);
  }

  @Mutation(() => WebhookEndpointType, { nullable: true })
  rotateWebhookSecret(
    @Arg('id', () => ID) id: string,
    @Arg('overlapSeconds', () => Int, { nullable: true, description: 'How long the old secret keeps signing X-Service-Signature (default 86400; 0: at once)' })
    overlapSeconds: number | null | undefined,
    @Ctx() { services, rc, idem }: GqlContext,
  ) {
    return services.webhooks.endpoints.rotateSecret(rc, id, defined({ overlapSeconds }), idem);
  }

  @Mutation(() => EventResendType, { nullable: true })
  resendEvent(@Arg('id', () => ID) id: string, @Ctx() { services, rc, idem }: GqlContext) {
    return services.webhooks.deliveries.resend(rc, id, {}, idem);
  }

  @Mutation(() => WebhookEndpointTestType, { nullable: true, description: 'Sends the endpoint a signed `ping` (POST /v1/webhook-endpoints/{id}/test).' })
  testWebhookEndpoint(@Arg('id', () => ID) id: string, @Ctx() { services, rc, idem }: GqlContext) {
    return services.webhooks.deliveries.sendTest(rc, id, {}, idem);
  }

  /** Batched over the endpoints of a list: one statement for the pages (and one for the totals), however many endpoints. */
  @FieldResolver(() => WebhookAttemptList, { nullable: true, description: 'The attempt log, newest first (`GET /v1/webhook-endpoints/{id}/deliveries`).' })
  async deliveries(
    @Root() endpoint: { id: string },
    @Args(() => WebhookAttemptListArgs) args: WebhookAttemptListArgs,
    @Ctx() { loaders }: GqlContext,
    @Info() info: GraphQLResolveInfo,
  ) {
    return connection(args, (input) => loaders.deliveriesByEndpoint.load(endpoint.id, input, listOptions(info)));
  }
}
