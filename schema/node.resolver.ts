import { Arg, Ctx, ID, Query, Resolver } from 'type-graphql';
import type { GqlContext } from './context';
import type { Loaders } from './loaders';
import { NodeInterface, nodePrefix, type NodePrefix } from './types/node';
import { DomainError } from '../src/core/errors';
import { NESTED_LIST_LIMIT } from '../src/db/list';

/** The most ids one `nodes` takes (the cost limit counts the list as this many). */
export const NODES_MAX = NESTED_LIST_LIMIT;

/**
 * Where each prefix's objects are loaded: the per-request loaders (schema/loaders.ts), each
 * scoped to the key's account and mode and checking the read permission of the type's own query,
 * so ids asked together are read one statement per type, and an object another field of the
 * request loaded already is not read again.
 */
const NODE_LOADERS: { [P in NodePrefix]: (loaders: Loaders) => { load(id: string): Promise<unknown> } } = {
  cus: (l) => l.customer,
  prod: (l) => l.product,
  price: (l) => l.price,
  pay: (l) => l.payment,
  re: (l) => l.refund,
  gtx: (l) => l.gatewayTransaction,
  pm: (l) => l.paymentMethod,
  cs: (l) => l.checkoutSession,
  plink: (l) => l.paymentLink,
  in: (l) => l.invoice,
  sub: (l) => l.subscription,
  txr: (l) => l.taxRate,
  evt: (l) => l.event,
  we: (l) => l.webhookEndpoint,
  wha: (l) => l.webhookAttempt,
  gw: (l) => l.gateway,
  clock: (l) => l.testClock,
  key: (l) => l.apiKey,
  cbtxn: (l) => l.balanceTransaction,
};

/**
 * The object of a prefixed id in the key's account and mode, or null: for an id of another
 * account or mode, one that does not exist, or a prefix no node type has (never an error). A key
 * without the read permission the type's own query needs gets that query's permission_denied.
 */
function loadNode(loaders: Loaders, id: string): Promise<unknown> {
  const prefix = nodePrefix(id);
  return prefix ? NODE_LOADERS[prefix](loaders).load(id) : Promise.resolve(null);
}

/** Relay's object identification: any object by its id, alone or many at once. */
@Resolver()
export class NodeResolver {
  @Query(() => NodeInterface, {
    nullable: true,
    description: 'The object of this id (`pay_…`, `cus_…`, …) in the key\'s account and mode; null when there is none (another account\'s or mode\'s id, an unknown prefix). Needs the read permission of the type\'s own query.',
  })
  node(@Arg('id', () => ID) id: string, @Ctx() { loaders }: GqlContext) {
    return loadNode(loaders, id);
  }

  @Query(() => [NodeInterface], {
    nullable: 'itemsAndList',
    description: `The objects of these ids (at most ${NODES_MAX}), in their order, each as \`node\` answers it: null for an id with no object, null with its error at its index for one the key may not read. Batched: one read per type, however many ids.`,
  })
  nodes(@Arg('ids', () => [ID]) ids: string[], @Ctx() { loaders }: GqlContext) {
    if (ids.length > NODES_MAX) throw new DomainError('invalid_parameter', `ids must hold at most ${NODES_MAX} ids`, 'ids');
    return ids.map((id) => loadNode(loaders, id));
  }
}
