import type { Context, Next } from 'koa';
import { Router } from '@koa/router';
import type { Services } from '../src/services';
import { DomainError } from '../src/core/errors';
import type { Transport } from '../src/http/app';
import { API_ROUTES } from './routes';
import { registerRoutes } from './route-table';
import { isPagePath, pageRoutes } from './pages/pages.routes';
import { renderErrorPage } from './pages/error.page';

const API_PREFIXES = ['/v1', '/api/v1'];

function stripPrefix(path: string): string | null {
  for (const prefix of API_PREFIXES) {
    if (path === prefix) return '/';
    if (path.startsWith(`${prefix}/`)) return path.slice(prefix.length);
  }
  return null;
}

/** Public routes outside /public (the OpenAPI document), as the route table marks them. */
const PUBLIC_FIXED_PATHS = new Set(API_ROUTES.filter((r) => r.public && !r.path.startsWith('/public/')).map((r) => r.path));

export function isPublicPath(path: string): boolean {
  const inner = stripPrefix(path);
  return inner !== null && (inner.startsWith('/public/') || PUBLIC_FIXED_PATHS.has(inner));
}

/**
 * The REST transport: the route table under /v1 and /api/v1, and the hosted pages, behind the
 * shared authentication, public-route guards, body parser and idempotency (src/http).
 */
export function restTransport(services: Services): Transport {
  const api = new Router();
  registerRoutes(api, services, API_ROUTES);
  // One pass over the route table whichever prefix the request used: the router matches the path
  // without its prefix (newRouterPath). Mounting the table under each prefix doubled the layers
  // every request is matched against (2 × 96 regular expressions, about 14 µs a request).
  const routes = api.routes();
  const dispatch = (ctx: Context, next: Next) => {
    const inner = stripPrefix(ctx.path);
    if (inner === null) return next();
    (ctx as Context & { newRouterPath?: string }).newRouterPath = inner;
    return routes(ctx as Parameters<typeof routes>[0], next);
  };
  return {
    isPublicPath,
    pages: { isPagePath, render: renderErrorPage },
    mount(app, shared) {
      app.use(async (ctx: Context, next: Next) => {
        // The API's namespace outside the routes (/graphql/x, /api/v2): JSON 404 before any key check.
        if (stripPrefix(ctx.path) === null && !isPagePath(ctx.path)) {
          throw new DomainError('route_not_found', `No route for ${ctx.method} ${ctx.path}`);
        }
        await next();
      });
      app.use(shared.auth);
      app.use(pageRoutes(services));
      app.use(shared.publicGuards);
      app.use(shared.jsonBody);
      app.use(shared.idempotency);
      app.use(dispatch);
      app.use(async (ctx: Context) => {
        if (ctx.body !== undefined || ctx.status !== 404) return;
        const inner = stripPrefix(ctx.path) as string;
        const match = api.match(inner, ctx.method);
        const allowed = [...new Set(match.path.flatMap((layer) => layer.methods))].filter((m) => m !== 'HEAD');
        if (allowed.length > 0) {
          ctx.set('Allow', allowed.join(', '));
          throw new DomainError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}; use ${allowed.join(', ')}`);
        }
        throw new DomainError('route_not_found', `No route for ${ctx.method} ${ctx.path}`);
      });
    },
  };
}
