import type { Context, Next } from 'koa';
import { createHash } from 'node:crypto';
import { DomainError } from '../core/errors';
import {
  IDEMPOTENCY_KEY_PATTERN, type IdempotencyService,
} from '../modules/idempotency/idempotency.service';
import { IdempotentReplay, idempotencyScope, storedRestBody, type IdempotencyKey } from '../core/idempotency';
import type { PayorchState } from './context';

/** /api/v1/x and /v1/x are the same operation, so they share one fingerprint. */
function canonicalPath(path: string): string {
  return path.replace(/^\/api\/v1(?=\/|$)/, '/v1');
}

/** Public pay routes are scoped by the session or link they act on (hashed: ids are caller text). */
function publicScope(path: string): string {
  const m = /^\/v1\/public\/([a-z-]+)\/([^/]+)/.exec(canonicalPath(path));
  const target = m ? `${m[1]}:${m[2]}` : canonicalPath(path);
  return `public:${createHash('sha256').update(target).digest('hex').slice(0, 40)}`;
}

/** The request's Idempotency-Key after checking its form, or undefined when none was sent. */
function sentKey(ctx: Context): string | undefined {
  // Absent is no key; sent empty (ctx.get cannot tell the two apart) is a malformed one.
  const sent = ctx.headers['idempotency-key'];
  if (ctx.method !== 'POST' || sent === undefined) return undefined;
  const key = Array.isArray(sent) ? sent.join(', ') : sent;
  if (!IDEMPOTENCY_KEY_PATTERN.test(key)) {
    throw new DomainError('invalid_parameter', 'Idempotency-Key must be 1 to 255 printable ASCII characters', 'Idempotency-Key');
  }
  return key;
}

/** Where a request's keys live: its account and mode, or for public routes the object it acts on. */
function keyScope(ctx: Context): { scope: string; requester?: string } {
  const state = ctx.state as PayorchState;
  return { scope: state.rc ? idempotencyScope(state.rc.accountId, state.rc.mode) : publicScope(ctx.path), requester: state.rc?.keyId };
}

/**
 * GraphQL: the request's key, checked, for the document's idempotent mutations to run under
 * (schema/idempotency.ts); undefined when none was sent.
 */
export function graphqlIdempotency(ctx: Context): { scope: string; key: string; requester?: string } | undefined {
  const key = sentKey(ctx);
  return key === undefined ? undefined : { ...keyScope(ctx), key };
}

function sendReplay(ctx: Context, status: number, body: string): void {
  ctx.status = status;
  ctx.type = 'application/json';
  ctx.body = body;
  ctx.set('Idempotent-Replayed', 'true');
}

/**
 * REST: the Idempotency-Key of a POST, checked and left on ctx.state for the route, which hands
 * it to its service operation as an argument (rest/route.ts `idempotent`). The operation claims
 * and answers the key in its own transaction; a key already answered comes back here as an
 * IdempotentReplay and is sent in the REST envelope. Nothing is claimed before the operation
 * starts, so a request refused first (validation, authentication, permissions, an unknown
 * parent) leaves its key free for the corrected retry. Routes that are not idempotent
 * operations (a read-only POST) ignore the key.
 */
export function restIdempotency(service: IdempotencyService) {
  return async (ctx: Context, next: Next) => {
    const key = sentKey(ctx);
    if (key === undefined) return next();
    const { scope, requester } = keyScope(ctx);
    const fingerprint = service.fingerprint(ctx.method, canonicalPath(ctx.path), requester, (ctx.request as { body?: unknown }).body);
    const idem: IdempotencyKey = { scope, key, fingerprint, requester };
    (ctx.state as PayorchState).idempotencyKey = idem;
    try {
      await next();
    } catch (err) {
      if (err instanceof IdempotentReplay) return sendReplay(ctx, err.status, storedRestBody(err.stored));
      throw err;
    }
  };
}
