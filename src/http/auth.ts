import type { Context, Next } from 'koa';
import type { AccountService, AuthenticatedKey } from '../modules/accounts/account.service';
import type { Clock } from '../core/clock';
import { DomainError } from '../core/errors';
import type { RateDecision, RateLimiter } from '../core/rate-limit';
import type { PayorchState } from './context';

/** A rate budget: whom requests count against, and how many a minute it allows. */
export interface RateSubject {
  subject: string;
  limit: number;
}

/**
 * The budget of a key: its account's in the key's mode. All the keys of one mode share it, so
 * minting keys buys no extra requests, and test traffic cannot use up live traffic's budget. The
 * account's override applies to each mode's budget.
 */
export function keyBudget(auth: AuthenticatedKey, defaultLimit: number): RateSubject {
  return { subject: `account:${auth.accountId}:${auth.mode}`, limit: auth.rateLimitPerMinute ?? defaultLimit };
}

/** Whom a request counts against: the key's budget or, without a valid key, the client IP. */
export function rateBudget(auth: AuthenticatedKey | undefined, ip: string, defaultLimit: number): RateSubject {
  return auth ? keyBudget(auth, defaultLimit) : { subject: `ip:${ip}`, limit: defaultLimit };
}

/** The RateLimit-* headers of a decision, and Retry-After when it refused. */
export function setRateHeaders(ctx: Context, decision: RateDecision): void {
  ctx.set('RateLimit-Limit', String(decision.limit));
  ctx.set('RateLimit-Remaining', String(decision.remaining));
  ctx.set('RateLimit-Reset', String(decision.resetSeconds));
  if (!decision.allowed) ctx.set('Retry-After', String(decision.resetSeconds));
}

/**
 * Resolves the API key (without failing yet), applies the rate limit to the key's account and
 * mode or, when there is no valid key, to the client IP, and only then reports an auth failure. Public
 * routes are limited per IP and need no key.
 */
export function authAndRateLimit(deps: {
  accounts: AccountService;
  limiter: RateLimiter;
  clock: Clock;
  defaultLimit: number;
  isPublic: (path: string) => boolean;
}) {
  return async (ctx: Context, next: Next) => {
    const state = ctx.state as PayorchState;
    const isPublic = deps.isPublic(ctx.path);
    state.publicRoute = isPublic;
    if (!isPublic) {
      const header = ctx.get('authorization');
      const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!header) state.authError = new DomainError('missing_api_key', 'No API key provided; send Authorization: Bearer <key>');
      else if (!match) state.authError = new DomainError('invalid_api_key', 'Malformed Authorization header; expected Bearer <key>');
      else {
        const key = await deps.accounts.authenticate(match[1]);
        if (key) state.auth = key;
        else state.authError = new DomainError('invalid_api_key', 'Invalid API key provided');
      }
    }
    const { subject, limit } = rateBudget(state.auth, ctx.ip, deps.defaultLimit);
    const decision = await deps.limiter.consume(subject, limit);
    state.rateDecision = decision;
    setRateHeaders(ctx, decision);
    if (!decision.allowed) throw new DomainError('rate_limited', `Too many requests; retry in ${decision.resetSeconds} s`);
    if (state.authError) throw state.authError;
    if (state.auth) {
      state.rc = {
        accountId: state.auth.accountId,
        mode: state.auth.mode,
        permissions: state.auth.permissions,
        requestId: state.requestId,
        keyId: state.auth.keyId,
        clock: deps.clock,
      };
    }
    await next();
  };
}
