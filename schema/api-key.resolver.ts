import { Arg, Args, ArgsType, Ctx, Field, ID, Info, InputType, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import type { GraphQLResolveInfo } from 'graphql';
import type { GqlContext } from './context';
import { NodeInterface } from './types/node';
import { DateTime, PageArgs, defined, listOptions, connection, ListType } from './types/common';
import { ApiKeySortField } from './types/enums';

@ObjectType('ApiKey', { implements: NodeInterface })
export class ApiKeyType {
  @Field(() => ID) id!: string;
  @Field(() => String) object!: string;
  @Field(() => Boolean) livemode!: boolean;
  @Field(() => String, { nullable: true }) name!: string | null;
  @Field(() => [String], { description: '["*"] (every permission) or "<resource>:read|write" entries; write implies read.' }) permissions!: string[];
  @Field(() => String, { description: 'The mode prefix and the last four characters: `sk_test_…Q7xP`.' }) keyHint!: string;
  @Field(() => Boolean) revoked!: boolean;
  @Field(() => DateTime, { nullable: true }) revokedAt!: string | null;
  @Field(() => DateTime) createdAt!: string;
  @Field(() => DateTime) updatedAt!: string;
  /** Only in the answer of createApiKey. */
  @Field(() => String, { nullable: true, description: 'The key itself: only in the answer of createApiKey.' }) secret?: string | null;
}

@ObjectType('ApiKeyList')
class ApiKeyList extends ListType(ApiKeyType, 'ApiKey') {}

@InputType('CreateApiKeyInput')
class CreateApiKeyInput {
  @Field(() => String, { nullable: true }) name?: string;
  @Field(() => [String], { nullable: true, description: 'Default ["*"]; only permissions the calling key holds itself.' }) permissions?: string[];
}

@ArgsType()
class ApiKeyListArgs extends PageArgs(ApiKeySortField) {}

/** The keys of the caller's mode, as `/v1/api-keys`: the service checks permissions and escalation. */
@Resolver(() => ApiKeyType)
export class ApiKeyResolver {
  @Query(() => ApiKeyList, { nullable: true })
  async apiKeys(@Args(() => ApiKeyListArgs) args: ApiKeyListArgs, @Ctx() { services, rc }: GqlContext, @Info() info: GraphQLResolveInfo) {
    return connection(args, (input) => services.accounts.listKeys(rc, input, listOptions(info)));
  }

  @Mutation(() => ApiKeyType, { nullable: true })
  createApiKey(@Arg('input', () => CreateApiKeyInput, { nullable: true }) input: CreateApiKeyInput | undefined, @Ctx() { services, rc, idem }: GqlContext) {
    return services.accounts.createKey(rc, defined(input), idem);
  }

  @Mutation(() => ApiKeyType, { nullable: true, description: 'Only a key whose permissions are within the calling key\'s own (itself included).' })
  revokeApiKey(@Arg('id', () => ID) id: string, @Ctx() { services, rc }: GqlContext) {
    return services.accounts.revokeKey(rc, id);
  }
}
