import type { RequestContext } from '../src/core/context';
import type { IdempotencyKey } from '../src/core/idempotency';
import type { Services } from '../src/services';
import type { Loaders } from './loaders';

/** The Idempotency-Key a GraphQL request was sent with (see schema/idempotency.ts). */
export interface GraphQLIdempotency {
  scope: string;
  key: string;
  requester?: string;
  /** Set when a mutation answered from a stored answer (the response then says Idempotent-Replayed). */
  replayed: boolean;
}

export interface GqlContext {
  rc: RequestContext;
  services: Services;
  loaders: Loaders;
  idempotency?: GraphQLIdempotency;
  /** The key of the idempotent mutation being resolved, for its resolver to hand to the service. */
  idem?: IdempotencyKey;
}
