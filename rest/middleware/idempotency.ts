import type { Context, Next } from 'koa';
import { createHash } from 'node:crypto';
import { DomainError } from '../../src/core/errors';
import {
  IDEMPOTENCY_KEY_PATTERN, requestFingerprint, type IdempotencyService,
} from '../../src/modules/idempotency/idempotency.service';
import type { PayorchState } from '../context';
import { renderError } from './render';

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

export function idempotency(service: IdempotencyService, onServerError: (err: unknown, ctx: Context) => void) {
  return async (ctx: Context, next: Next) => {
    const key = ctx.get('idempotency-key');
    if (ctx.method !== 'POST' || key === '') return next();
    if (!IDEMPOTENCY_KEY_PATTERN.test(key)) {
      throw new DomainError('invalid_parameter', 'Idempotency-Key must be 1 to 255 printable ASCII characters', 'Idempotency-Key');
    }
    const state = ctx.state as PayorchState;
    const scope = state.rc ? `${state.rc.accountId}:${state.rc.mode}` : publicScope(ctx.path);
    const fingerprint = requestFingerprint(ctx.method, canonicalPath(ctx.path), (ctx.request as { body?: unknown }).body);
    const claim = await service.claim(scope, key, fingerprint, state.rc?.keyId);
    if (claim.kind === 'replay') {
      ctx.status = claim.status;
      ctx.type = 'application/json';
      ctx.body = claim.body;
      ctx.set('Idempotent-Replayed', 'true');
      return;
    }
    try {
      await next();
    } catch (err) {
      renderError(ctx, err);
      if (ctx.status >= 500) onServerError(err, ctx);
    }
    if (ctx.status >= 500) {
      await service.release(scope, key);
      return;
    }
    // Serialise once and store exactly the bytes sent, so a replay is byte for byte.
    const text = typeof ctx.body === 'string' ? ctx.body : JSON.stringify(ctx.body ?? null);
    ctx.type = 'application/json';
    ctx.body = text;
    // Secrets (new API keys, webhook secrets) are kept sealed and replayed only to their creator.
    const sensitive = state.rc?.sensitiveResponse ? { owner: state.rc.keyId ?? null } : undefined;
    try {
      await service.complete(scope, key, ctx.status, text, sensitive);
    } catch (err) {
      // The operation happened; answer it. The key stays claimed until it expires.
      onServerError(err, ctx);
    }
  };
}
