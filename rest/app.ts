import type { Context, Next } from 'koa';
import { Router } from '@koa/router';
import type { Services } from '../src/services';
import { DomainError } from '../src/core/errors';
import type { Transport } from '../src/http/app';
import { API_ROUTES } from './routes';
import { registerRoutes } from './route-table';
import { isPagePath, pageRoutes } from './pages/pages.routes';
import { renderErrorPage } from './pages/error.page';
import { ASSET_ROUTE, isAssetPath } from './pages/page-assets';

const API_PREFIXES = ['/v1', '/api/v1'];

function stripPrefix(path: string): string | null {
  for (const prefix of API_PREFIXES) {
    if (path === prefix) return '/';
    if (path.startsWith(`${prefix}/`)) return path.slice(prefix.length);
  }
  return null;
}

/**
 * `payments` of `/payments/{id}/refunds` (and of `/Payments/…`: the router matches paths without
 * regard to case, so the segment that picks its router does too).
 */
function firstSegment(path: string): string {
  const end = path.indexOf('/', 1);
  return (end === -1 ? path.slice(1) : path.slice(1, end)).toLowerCase();
}

/** Public routes outside /public (the OpenAPI document), as the route table marks them. */
const PUBLIC_FIXED_PATHS = new Set(API_ROUTES.filter((r) => r.public && !r.path.startsWith('/public/')).map((r) => r.path.toLowerCase()));

/** Whether `path` is a public route's: as the routers match, without regard to case. */
export function isPublicPath(path: string): boolean {
  const inner = stripPrefix(path)?.toLowerCase();
  return inner !== undefined && (inner.startsWith('/public/') || PUBLIC_FIXED_PATHS.has(inner));
}

/**
 * The REST transport: the route table under /v1 and /api/v1, and the hosted pages, behind the
 * shared authentication, public-route guards, body parser and idempotency (src/http).
 */
export function restTransport(services: Services): Transport {
  // The route table split by its paths' first segment (/payments, /customers, …), one router
  // each: a request is matched against its segment's 2 to 13 routes, not all 96 twice (the
  // table mounted under each prefix), which took about 14 µs and 12 KB of regular-expression
  // results a request. The router sees the path without its prefix (newRouterPath).
  const bySegment = new Map<string, Router>();
  for (const route of API_ROUTES) {
    const segment = firstSegment(route.path);
    if (!bySegment.has(segment)) bySegment.set(segment, new Router());
  }
  for (const [segment, router] of bySegment) registerRoutes(router, services, API_ROUTES.filter((r) => firstSegment(r.path) === segment));
  const dispatchers = new Map([...bySegment].map(([segment, router]) => [segment, router.routes()]));
  const dispatch = (ctx: Context, next: Next) => {
    const inner = stripPrefix(ctx.path);
    const routes = inner === null ? undefined : dispatchers.get(firstSegment(inner));
    if (!routes) return next();
    (ctx as Context & { newRouterPath?: string }).newRouterPath = inner as string;
    return routes(ctx as Parameters<typeof routes>[0], next);
  };
  // Traced, the Koa instrumentation gives each route a span of its own (src/observability/tracing-sdk.ts).
  // It finds a mounted dispatcher's routes on its `router.stack`, as @koa/router's routes() has
  // them: here the stacks of all the segments' routers.
  Object.assign(dispatch, { router: { stack: [...bySegment.values()].flatMap((router) => router.stack) } });
  return {
    isPublicPath,
    pages: { isPagePath, render: renderErrorPage },
    // A request refused before the router ran (its key, its rate, its body): the route it asked for.
    routeTemplate(method, path) {
      const inner = stripPrefix(path);
      if (inner === null) return isAssetPath(path) ? ASSET_ROUTE : undefined;
      const layer = bySegment.get(firstSegment(inner))?.match(inner, method).pathAndMethod.filter((l) => l.methods.length > 0).at(-1);
      return layer ? `/v1${layer.path}` : undefined;
    },
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
        const match = bySegment.get(firstSegment(inner))?.match(inner, ctx.method);
        const allowed = [...new Set((match?.path ?? []).flatMap((layer) => layer.methods))].filter((m) => m !== 'HEAD');
        if (allowed.length > 0) {
          ctx.set('Allow', allowed.join(', '));
          throw new DomainError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}; use ${allowed.join(', ')}`);
        }
        throw new DomainError('route_not_found', `No route for ${ctx.method} ${ctx.path}`);
      });
    },
  };
}
