import type { Context, Next } from 'koa';
import { DomainError } from '../core/errors';

/**
 * Behind a TLS-terminating proxy, a request that reached the proxy over http is redirected to
 * PUBLIC_URL (required with TRUST_PROXY: the Host or X-Forwarded-Host the proxy passes on is the
 * client's to write, so it never makes the Location).
 */
export function requireHttpsBehindProxy(trustProxy: boolean, publicUrl?: string) {
  return async (ctx: Context, next: Next) => {
    if (trustProxy && publicUrl) {
      const proto = (ctx.get('x-forwarded-proto').split(',')[0] ?? '').trim().toLowerCase();
      if (proto === 'http') {
        ctx.set('Location', `${publicUrl}${ctx.originalUrl}`);
        throw new DomainError('https_required', 'HTTPS is required; use the https:// address');
      }
    }
    await next();
  };
}
