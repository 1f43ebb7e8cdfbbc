import { Field, ID, InterfaceType } from 'type-graphql';

/**
 * The GraphQL type of an object, by the prefix of its id (`pay_…` is a Payment): every object
 * type whose id is prefixed implements Node, and `node(id:)` finds its object by this prefix.
 * Ids of nothing `node` can read (an account's `acct_`, a request's `req_`, an invoice line's
 * `il_`, a webhook delivery's `whd_`) are not listed: `node` answers null for them.
 */
export const NODE_TYPES = {
  cus: 'Customer',
  prod: 'Product',
  price: 'Price',
  pay: 'Payment',
  re: 'Refund',
  gtx: 'GatewayTransaction',
  pm: 'PaymentMethod',
  cs: 'CheckoutSession',
  plink: 'PaymentLink',
  in: 'Invoice',
  sub: 'BillingSubscription',
  txr: 'TaxRate',
  evt: 'Event',
  we: 'WebhookEndpoint',
  wha: 'WebhookDeliveryAttempt',
  gw: 'Gateway',
  clock: 'TestClock',
  key: 'ApiKey',
  cbtxn: 'BalanceTransaction',
} as const;

export type NodePrefix = keyof typeof NODE_TYPES;

/** The prefix of a node's id (`pay` of `pay_…`), or null for an id no node type has. */
export function nodePrefix(id: string): NodePrefix | null {
  const end = id.indexOf('_');
  const prefix = end > 0 ? id.slice(0, end) : '';
  return Object.hasOwn(NODE_TYPES, prefix) ? (prefix as NodePrefix) : null;
}

/** The Relay object identification interface: `node(id:)` and `nodes(ids:)` answer it. */
@InterfaceType('Node', {
  // Every implementation is reachable from the root types anyway; registered, they would print before Query.
  autoRegisterImplementations: false,
  description: 'An object with a prefixed id (`pay_…`, `cus_…`, …) that `node(id:)` finds.',
  resolveType: (value: { id: string }) => {
    const prefix = nodePrefix(value.id);
    return prefix ? NODE_TYPES[prefix] : undefined;
  },
})
export abstract class NodeInterface {
  @Field(() => ID) id!: string;
}
