import type { Context, Next } from 'koa';
import { createHash } from 'node:crypto';
import { DomainError, isDomainError } from '../../src/core/errors';
import {
  IDEMPOTENCY_KEY_PATTERN, type IdempotencyService,
} from '../../src/modules/idempotency/idempotency.service';
import { IdempotentReplay, idempotencyScope, type IdempotencyHandle } from '../../src/core/idempotency';
import { PAYMENT_CREATED_STATUS } from '../../src/modules/payments/payment.service';
import { REFUND_CREATED_STATUS } from '../../src/modules/payments/refund.service';
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

/**
 * Operations whose service claims the key in its own first write and stores the response with
 * its last (see IdempotencyHandle): the hot path then spends no statements on idempotency.
 */
const FOLDED: Array<[RegExp, number]> = [
  [/^POST \/v1\/payments$/i, PAYMENT_CREATED_STATUS],
  [/^POST \/v1\/(?:refunds|payments\/[^/]+\/refunds)$/i, REFUND_CREATED_STATUS],
];

/**
 * Matched as the router matches: it ignores case and a trailing slash, so `POST /v1/refunds/`
 * runs the same handler and must fold the same way (else its key is freed by a 5xx).
 */
function foldedStatus(method: string, path: string): number | undefined {
  const operation = `${method} ${canonicalPath(path).replace(/\/+$/, '')}`;
  return FOLDED.find(([pattern]) => pattern.test(operation))?.[1];
}

/**
 * GraphQL answers a resolver's internal error with HTTP 200. Like a 5xx it is not an outcome to
 * keep: the key is released when such an error came back and nothing else did (no top-level
 * field has data). A document whose other mutations went through is stored as answered, since
 * running it again would repeat them.
 */
function failedGraphQL(ctx: Context): boolean {
  if (!(ctx.state as PayorchState).graphql) return false;
  let body: unknown = ctx.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      return false;
    }
  }
  const { errors, data } = (body ?? {}) as { errors?: Array<{ extensions?: { code?: unknown } }>; data?: Record<string, unknown> | null };
  if (!Array.isArray(errors) || !errors.some((e) => e?.extensions?.code === 'internal_error')) return false;
  return data === null || data === undefined || Object.values(data).every((v) => v === null);
}

export function idempotency(service: IdempotencyService, onServerError: (err: unknown, ctx: Context) => void) {
  return async (ctx: Context, next: Next) => {
    // Absent is no key; sent empty (ctx.get cannot tell the two apart) is a malformed one.
    const sent = ctx.headers['idempotency-key'];
    if (ctx.method !== 'POST' || sent === undefined) return next();
    const key = Array.isArray(sent) ? sent.join(', ') : sent;
    if (!IDEMPOTENCY_KEY_PATTERN.test(key)) {
      throw new DomainError('invalid_parameter', 'Idempotency-Key must be 1 to 255 printable ASCII characters', 'Idempotency-Key');
    }
    const state = ctx.state as PayorchState;
    const scope = state.rc ? idempotencyScope(state.rc.accountId, state.rc.mode) : publicScope(ctx.path);
    const requester = state.rc?.keyId;
    const fingerprint = service.fingerprint(ctx.method, canonicalPath(ctx.path), requester, (ctx.request as { body?: unknown }).body);
    const replay = (status: number, body: string) => {
      ctx.status = status;
      ctx.type = 'application/json';
      ctx.body = body;
      ctx.set('Idempotent-Replayed', 'true');
    };
    const folded = state.rc ? foldedStatus(ctx.method, ctx.path) : undefined;
    const handle: IdempotencyHandle = { scope, key, fingerprint, status: folded ?? 200, claimed: false };
    if (state.rc && folded !== undefined) {
      state.rc.idempotency = handle;
    } else {
      const claim = await service.claim(scope, key, fingerprint, requester, state.adoptObject, state.graphql === true);
      if (claim.kind === 'replay') return replay(claim.status, claim.body);
      handle.claimed = true;
      // A GraphQL document runs any mutation under the one key: those that create a payment or
      // a refund record it there (see DocumentKey).
      if (state.graphql && state.rc) {
        state.rc.documentKey = claim.kind === 'adopted' ? { scope, key, adopted: claim.objectId } : { scope, key, claimedAt: claim.claimedAt };
      }
    }
    try {
      await next();
    } catch (err) {
      if (err instanceof IdempotentReplay) return replay(err.status, err.body);
      renderError(ctx, err);
      if (ctx.status >= 500) onServerError(err, ctx);
      // The folded claim found the key taken: that answer is about the key, not an outcome to store.
      if (!handle.claimed && isDomainError(err) && (err.code === 'idempotency_key_in_use' || err.code === 'idempotency_key_reused')) return;
    }
    // A key the service claimed for its object is answered only while it is still running for
    // it: recovery may have stored that object's settled answer first, and that one stands.
    const doc = state.rc?.documentKey;
    const owner = handle.claimed ? (handle.objectId ?? doc?.objectId ?? doc?.adopted) : undefined;
    // An answer for an object an earlier request made is not this request's own doing.
    if (doc?.adopted) ctx.set('Idempotent-Replayed', 'true');
    if (!handle.claimed) {
      // A folded operation that stopped before writing anything (a 4xx): claim now, so the
      // outcome is stored like any other; a request that got there first decides instead.
      if (ctx.status >= 500) return;
      const claim = await service.claim(scope, key, fingerprint, requester);
      if (claim.kind === 'replay') return replay(claim.status, claim.body);
      handle.claimed = true;
    }
    if (ctx.status >= 500 || failedGraphQL(ctx)) {
      // A key claimed with its object's first write, or a GraphQL key its mutation recorded an
      // object on, stays running: the object exists (a reservation, a pending charge), and
      // recovery stores its settled answer (REST) or a retry answers with it once settled
      // (GraphQL, see DocumentKey). Freed, a retry would make a second one.
      if (!owner) await service.release(scope, key, doc?.claimedAt);
      return;
    }
    if (handle.completed && handle.completed.status === ctx.status) {
      // Stored by the service with its last write: send exactly those bytes.
      ctx.type = 'application/json';
      ctx.body = handle.completed.body;
      return;
    }
    // Serialise once and store exactly the bytes sent, so a replay is byte for byte.
    const text = typeof ctx.body === 'string' ? ctx.body : JSON.stringify(ctx.body ?? null);
    ctx.type = 'application/json';
    ctx.body = text;
    // Secrets (new API keys, webhook secrets) are kept sealed and replayed only to their creator.
    const sensitive = state.rc?.sensitiveResponse ? { owner: state.rc.keyId ?? null } : undefined;
    try {
      await service.complete(scope, key, ctx.status, text, sensitive, { objectId: owner, claimedAt: doc?.claimedAt });
    } catch (err) {
      // The operation happened; answer it. The key stays claimed until it expires.
      onServerError(err, ctx);
    }
  };
}
