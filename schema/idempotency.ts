import { createHash } from 'node:crypto';
import type { GraphQLFieldResolver, GraphQLResolveInfo, GraphQLSchema } from 'graphql';
import { IdempotentReplay, type IdempotencyKey } from '../src/core/idempotency';
import { IDEMPOTENT_OPERATIONS } from '../src/core/idempotent-operations';
import type { GqlContext } from './context';
import { mutationCount } from './operation-fields';

/** The mutations that are idempotent operations (IDEMPOTENT_OPERATIONS, shared with REST). */
const IDEMPOTENT_MUTATIONS = new Set<string>(
  Object.values(IDEMPOTENT_OPERATIONS).flatMap((op) => ('graphqlMutation' in op ? [op.graphqlMutation] : [])),
);

/**
 * The Idempotency-Key of one mutation field. A document holding one mutation uses the request's
 * key as is; one holding several (fragments expanded) gives each its own, named after the
 * field's place in the answer (its alias), so a retry of the document replays each of them. The
 * fingerprint is the field and its arguments, so the same key with other arguments is
 * `idempotency_key_reused`.
 */
function mutationKey(context: GqlContext, info: GraphQLResolveInfo, args: unknown): IdempotencyKey | undefined {
  const sent = context.idempotency;
  if (!sent) return undefined;
  // Every mutation written, fragments expanded (two in one fragment are two) and `@skip`/`@include`
  // not applied: with them applied, a retry with other variables could run a mutation under the
  // other form of the key, and charge it again.
  const sole = mutationCount(info.parentType, info.operation, (name) => info.fragments[name]) === 1;
  const named = `${sent.key}#${String(info.path.key)}`;
  // Keys are at most 255 characters; a long key with an alias is kept unique by its hash.
  const key = sole ? sent.key : named.length <= 255 ? named : `sha256:${createHash('sha256').update(named).digest('hex')}`;
  const fingerprint = context.services.idempotency.fingerprint('POST', `/graphql ${info.fieldName}`, sent.requester, args);
  return { scope: sent.scope, key, fingerprint, requester: sent.requester };
}

/**
 * Wraps each idempotent mutation's resolver (once, when the schema is built): it resolves with
 * its own key in the context (`idem`), which the resolver hands to the service operation; a key
 * already answered resolves to the stored object, whose fields the document then selects.
 */
export function idempotentMutations(schema: GraphQLSchema): void {
  for (const field of Object.values(schema.getMutationType()?.getFields() ?? {})) {
    const resolve = field.resolve as GraphQLFieldResolver<unknown, GqlContext> | undefined;
    if (!resolve || !IDEMPOTENT_MUTATIONS.has(field.name)) continue;
    field.resolve = async (source, args, context: GqlContext, info) => {
      const idem = mutationKey(context, info, args);
      try {
        return await resolve(source, args, idem ? { ...context, idem } : context, info);
      } catch (err) {
        if (!(err instanceof IdempotentReplay)) throw err;
        if (context.idempotency) context.idempotency.replayed = true;
        return JSON.parse(err.stored) as unknown;
      }
    };
  }
}
