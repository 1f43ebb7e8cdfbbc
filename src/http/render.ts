import type { Context } from 'koa';
import { DomainError, isDomainError } from '../core/errors';
import { redactQuoted } from '../core/card';
import type { PayorchState } from './context';

/** Maps anything thrown below into the REST envelope (or GraphQL shape on /graphql). */
export function toErrorResponse(err: unknown, requestId: string): { status: number; error: Record<string, unknown> } {
  const domain = asDomainError(err);
  // Messages and params can quote the caller's text (an id, a field name): never a card number,
  // since the answer may be stored for an Idempotency-Key.
  const error: Record<string, unknown> = { code: domain.code, message: redactQuoted(domain.message), requestId };
  if (domain.param) error.param = redactQuoted(domain.param);
  return { status: domain.status, error };
}

export function asDomainError(err: unknown): DomainError {
  if (isDomainError(err)) return err;
  const e = err as { status?: number; type?: string; name?: string; expose?: boolean };
  if (e?.status === 413 || e?.type === 'entity.too.large') {
    return new DomainError('payload_too_large', 'Request body exceeds 1 MiB');
  }
  if (e?.type === 'entity.parse.failed' || (e?.status === 400 && e?.name === 'SyntaxError')) {
    return new DomainError('malformed_json', 'Request body is not valid JSON');
  }
  if (e?.status === 415 || e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    return new DomainError('unsupported_media_type', 'Unsupported request encoding');
  }
  // zlib refusing a body sent with Content-Encoding gzip/deflate/br (zlib's Z_DATA_ERROR, Z_BUF_ERROR, …; brotli's ERR__ERROR_…).
  if (/^(Z_|ERR__ERROR_)/.test(String((err as { code?: unknown })?.code ?? ''))) {
    return new DomainError('malformed_json', 'Request body could not be decompressed');
  }
  // Database and driver errors arrive already translated (src/db/database-errors.ts).
  return new DomainError('internal_error', 'An internal error occurred; quote the requestId to support');
}

/** Writes the error envelope (REST) or the GraphQL error shape onto the response. */
export function renderError(ctx: Context, err: unknown): void {
  const state = ctx.state as PayorchState;
  const { status, error } = toErrorResponse(err, state.requestId);
  ctx.status = status;
  ctx.type = 'application/json';
  ctx.body = state.graphql ? { errors: [graphqlError(error)] } : { data: null, error };
}

/**
 * A refusal before GraphQL ran (no key, rate limit, malformed body) in the shape of every other
 * GraphQL error (schema/errors.ts): the message once, `extensions` {code, param?, requestId}.
 */
function graphqlError(error: Record<string, unknown>): { message: unknown; extensions: Record<string, unknown> } {
  const extensions: Record<string, unknown> = { code: error.code };
  if (error.param !== undefined) extensions.param = error.param;
  extensions.requestId = error.requestId;
  return { message: error.message, extensions };
}
