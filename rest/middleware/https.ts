import type { Context, Next } from 'koa';
import { DomainError } from '../../src/core/errors';

/** Behind a TLS-terminating proxy, a request that reached the proxy over http is redirected. */
export function requireHttpsBehindProxy(trustProxy: boolean, publicUrl?: string) {
  return async (ctx: Context, next: Next) => {
    if (trustProxy) {
      const proto = (ctx.get('x-forwarded-proto').split(',')[0] ?? '').trim().toLowerCase();
      if (proto === 'http') {
        const base = publicUrl ?? `https://${ctx.hostname}`;
        ctx.set('Location', `${base}${ctx.originalUrl}`);
        throw new DomainError('https_required', 'HTTPS is required; use the https:// address');
      }
    }
    await next();
  };
}
