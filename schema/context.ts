import type { RequestContext } from '../src/core/context';
import type { IdempotencyKey } from '../src/core/idempotency';
import type { RateDecision } from '../src/core/rate-limit';
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

/** Whom a request's rate limit counts against (see src/http/auth.ts), and its latest decision. */
export interface RateBudget {
  subject: string;
  limit: number;
  /** The latest decision on this budget (the request's, then its cost's): the RateLimit-* headers tell this one. */
  decision?: RateDecision;
}

/** An operation's rate cost (API.md §14), counted before it runs; `extensions.cost` reports it. */
export interface OperationCost {
  /** The points every operation costs whatever it returns: 1, or one per mutation of a mutation document. */
  base: number;
  /** What it was counted as: `base` plus one per 100 objects its connections may return. */
  requested: number;
  /** The rate budget left once it was counted. */
  remaining: number;
}

export interface GqlContext {
  rc: RequestContext;
  services: Services;
  loaders: Loaders;
  idempotency?: GraphQLIdempotency;
  /** Over HTTP: the budget the request was counted against, for its mutations to count too. */
  rate?: RateBudget;
  /** The key of the idempotent mutation being resolved, for its resolver to hand to the service. */
  idem?: IdempotencyKey;
  /** Set once the operation's cost was counted (preflight). */
  cost?: OperationCost;
}
