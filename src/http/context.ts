import type { Context } from 'koa';
import type { RequestContext } from '../core/context';
import type { AuthenticatedKey } from '../modules/accounts/account.service';
import type { DomainError } from '../core/errors';
import type { IdempotencyKey } from '../core/idempotency';
import type { RateDecision } from '../core/rate-limit';

/** What the middleware chain leaves on ctx.state for the routes. */
export interface PayorchState {
  requestId: string;
  startedAt: bigint;
  auth?: AuthenticatedKey;
  authError?: DomainError;
  rc?: RequestContext;
  graphql?: boolean;
  publicRoute?: boolean;
  /** The rate limit's decision on this request (GraphQL counts its cost on from it). */
  rateDecision?: RateDecision;
  /** A POST's Idempotency-Key, for the route to hand to its service operation (rest/route.ts). */
  idempotencyKey?: IdempotencyKey;
}

export type PayorchContext = Context & { state: PayorchState };

export function requestContext(ctx: Context): RequestContext {
  const rc = (ctx.state as PayorchState).rc;
  if (!rc) throw new Error('route reached without an authenticated request context');
  return rc;
}
