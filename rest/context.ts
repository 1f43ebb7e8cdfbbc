import type { Context } from 'koa';
import type { RequestContext } from '../src/core/context';
import type { AuthenticatedKey } from '../src/modules/accounts/account.service';
import type { DomainError } from '../src/core/errors';
import type { AdoptObject } from '../src/modules/idempotency/idempotency.service';

/** What the middleware chain leaves on ctx.state for the routes. */
export interface PayorchState {
  requestId: string;
  startedAt: bigint;
  auth?: AuthenticatedKey;
  authError?: DomainError;
  rc?: RequestContext;
  graphql?: boolean;
  /**
   * A GraphQL document that is a single payment or refund creation: how a retry of it decides to
   * answer with the object its key recorded (see DocumentKey).
   */
  adoptObject?: AdoptObject;
  publicRoute?: boolean;
}

export type PayorchContext = Context & { state: PayorchState };

export function requestContext(ctx: Context): RequestContext {
  const rc = (ctx.state as PayorchState).rc;
  if (!rc) throw new Error('route reached without an authenticated request context');
  return rc;
}
