import type { Context, Next } from 'koa';

/** One year; without includeSubDomains, which would bind an operator's other hosts too. */
const HSTS = 'max-age=31536000';

/**
 * Headers on every answer of the HTTPS listener (the app never serves the plain-HTTP one, whose
 * redirect must not carry HSTS), set before the handler so error answers carry them too. API
 * answers hold customer data and one-time secrets: never stored by a cache. Pages set their
 * own fuller set (rest/pages/page-layout.ts); the referrer rule is repeated here so a page path's
 * redirect or error carries it as well.
 */
export function securityHeaders(isPagePath: (path: string) => boolean) {
  return async (ctx: Context, next: Next) => {
    ctx.set('Strict-Transport-Security', HSTS);
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Cache-Control', 'no-store');
    if (isPagePath(ctx.path)) ctx.set('Referrer-Policy', 'no-referrer');
    await next();
  };
}
