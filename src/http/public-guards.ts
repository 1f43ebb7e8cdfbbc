import type { Context, Next } from 'koa';
import { DomainError } from '../core/errors';
import type { PayorchState } from './context';

/**
 * Public POST routes (a hosted page's pay) take `application/json` only. A browser sends a
 * cross-site `text/plain`, form or multipart POST without asking first (a CORS "simple
 * request"), so accepting them would let any website make its visitors' browsers post card
 * attempts, each from the visitor's own address; a JSON post from another origin needs a
 * preflight, which the service never grants (it sends no Access-Control-Allow-* header).
 * Checked before the body is read.
 */
export function jsonOnlyPublicPosts() {
  return async (ctx: Context, next: Next) => {
    const state = ctx.state as PayorchState;
    if (state.publicRoute && ctx.method === 'POST' && !isJson(ctx.get('content-type'))) {
      const sent = ctx.get('content-type').split(';')[0].trim();
      throw new DomainError(
        'unsupported_media_type',
        `Send this request with Content-Type: application/json${sent ? ` (this one is ${sent.slice(0, 100)})` : ''}`,
        'Content-Type',
      );
    }
    await next();
  };
}

/** `application/json`, with parameters (`; charset=utf-8`) but no `+json` or other type dressed as it. */
function isJson(contentType: string): boolean {
  return contentType.split(';')[0].trim().toLowerCase() === 'application/json';
}
