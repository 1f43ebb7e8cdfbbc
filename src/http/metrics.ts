import type http from 'node:http';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, Middleware, Next } from 'koa';
import { DomainError } from '../core/errors';
import type { Metrics } from '../observability/metrics';
import { errorForLog, type Logger } from '../logger';
import { nameTracedRoute } from '../observability/tracing';

export const METRICS_PATH = '/metrics';

/** Paths answered before any transport, named as they are. */
const FIXED_ROUTES = new Set(['/health', '/ready', '/graphql']);

/** Names the route template of a request no router matched (refused before routing: 401, 413, 429…). */
export interface RouteNamer {
  routeTemplate?(method: string, path: string): string | undefined;
}

type RoutedContext = Context & { _matchedRoute?: unknown; newRouterPath?: string };

/**
 * The route template of a request, never its path: `@koa/router`'s matched route (an API route
 * as `/v1/payments/:id`, whichever prefix it came under; a page as `/checkout/:id`), the fixed
 * paths, a transport's match for a request refused before its router ran, or `(unmatched)`.
 */
export function routeTemplate(ctx: Context, namers: readonly RouteNamer[]): string {
  const routed = ctx as RoutedContext;
  if (typeof routed._matchedRoute === 'string') return routed.newRouterPath !== undefined ? `/v1${routed._matchedRoute}` : routed._matchedRoute;
  if (FIXED_ROUTES.has(ctx.path)) return ctx.path;
  for (const namer of namers) {
    const named = namer.routeTemplate?.(ctx.method, ctx.path);
    if (named !== undefined) return named;
  }
  return UNMATCHED;
}

const UNMATCHED = '(unmatched)';

/**
 * Times every request (the outermost middleware, so the status is the one answered, errors
 * included) into `payorch_http_request_duration_seconds{method,route,status}`. Scrapes of
 * /metrics are left out. Disabled metrics: a pass-through.
 */
export function recordHttpMetrics(metrics: Metrics, namers: readonly RouteNamer[]): Middleware {
  if (!metrics.enabled) return (_ctx, next) => next();
  return async (ctx: Context, next: Next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      if (ctx.path !== METRICS_PATH) metrics.observeHttp(ctx.method, routeTemplate(ctx, namers), ctx.status, (performance.now() - started) / 1000);
    }
  };
}

/**
 * Traced, names each request's server span by its route template (`POST /v1/payments/:id`), as
 * its metrics are named; untraced, not installed (see src/http/app.ts).
 */
export function nameTracedRoutes(namers: readonly RouteNamer[]): Middleware {
  return async (ctx: Context, next: Next) => {
    try {
      await next();
    } finally {
      const route = routeTemplate(ctx, namers);
      if (route !== UNMATCHED) nameTracedRoute(route);
    }
  };
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** Whether `authorization` carries `Bearer <token>`, compared in constant time (whatever the lengths). */
function tokenAccepted(authorization: string | undefined, expected: Buffer): 'missing' | 'wrong' | 'ok' {
  if (!authorization) return 'missing';
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  return match && timingSafeEqual(digest(match[1]), expected) ? 'ok' : 'wrong';
}

/**
 * `GET /metrics` on the HTTPS listener when METRICS_TOKEN is set, for `Authorization: Bearer
 * <METRICS_TOKEN>` only. Without a token it is not served there (the path answers 404).
 */
export function serveMetrics(metrics: Metrics, token: string | undefined): Middleware {
  if (!metrics.enabled || token === undefined) return (_ctx, next) => next();
  const expected = digest(token);
  return async (ctx: Context, next: Next) => {
    if (ctx.path !== METRICS_PATH) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      throw new DomainError('method_not_allowed', `${ctx.method} is not allowed on ${METRICS_PATH}; use GET`);
    }
    const accepted = tokenAccepted(ctx.get('authorization') || undefined, expected);
    if (accepted !== 'ok') {
      ctx.set('WWW-Authenticate', 'Bearer realm="metrics"');
      throw accepted === 'missing'
        ? new DomainError('missing_api_key', 'No metrics token provided; send Authorization: Bearer <METRICS_TOKEN>')
        : new DomainError('invalid_api_key', 'Invalid metrics token');
    }
    ctx.set('Cache-Control', 'no-store');
    ctx.type = metrics.contentType;
    ctx.body = await metrics.exposition();
  };
}

/**
 * The METRICS_PORT listener (plain HTTP on METRICS_HOST): GET /metrics and nothing else. With
 * METRICS_TOKEN set it asks for the token too.
 */
export function metricsListener(metrics: Metrics, token: string | undefined, logger: Logger): http.RequestListener {
  const expected = token === undefined ? undefined : digest(token);
  const answer = (res: http.ServerResponse, status: number, text: string, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store', ...headers });
    res.end(text);
  };
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== METRICS_PATH) return answer(res, 404, `Not found: this listener serves GET ${METRICS_PATH} only\n`);
    if (req.method !== 'GET' && req.method !== 'HEAD') return answer(res, 405, `${req.method} is not allowed on ${METRICS_PATH}; use GET\n`, { allow: 'GET, HEAD' });
    if (expected) {
      const accepted = tokenAccepted(req.headers.authorization, expected);
      if (accepted !== 'ok') {
        return answer(res, 401, accepted === 'missing' ? 'No metrics token provided; send Authorization: Bearer <METRICS_TOKEN>\n' : 'Invalid metrics token\n', {
          'www-authenticate': 'Bearer realm="metrics"',
        });
      }
    }
    metrics.exposition().then(
      (text) => {
        res.writeHead(200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        logger.error({ err: errorForLog(err) }, 'metrics could not be collected');
        answer(res, 500, 'The metrics could not be collected\n');
      },
    );
  };
}
