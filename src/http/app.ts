import Koa, { type Context, type Next } from 'koa';
import type { Services } from '../services';
import { DomainError } from '../core/errors';
import { logAppError, requestLifecycle, type ErrorPages } from './errors';
import { requireHttpsBehindProxy } from './https';
import { securityHeaders } from './security-headers';
import { authAndRateLimit } from './auth';
import { jsonBody } from './body';
import { restIdempotency } from './idempotency';
import { jsonOnlyPublicPosts } from './public-guards';
import { nameTracedRoutes, recordHttpMetrics, serveMetrics, type RouteNamer } from './metrics';
import { tracingOn } from '../observability/tracing';
import { readRoutingMiddleware } from './read-routing';

/**
 * What both transports (REST and GraphQL) run a request through, built once per app: each
 * transport mounts its routes behind these rather than writing its own.
 */
export interface SharedMiddleware {
  /** The API key (or, on public paths, the client address) and the rate budget it counts against. */
  auth: Koa.Middleware;
  /** Public POST routes take application/json only (415), before the body is read. */
  publicGuards: Koa.Middleware;
  /** The JSON body, at most MAX_BODY_BYTES. */
  jsonBody: Koa.Middleware;
  /** A POST's Idempotency-Key, checked and left on ctx.state for the operation. */
  idempotency: Koa.Middleware;
}

/**
 * A transport: where its requests go, which of its paths are public, its HTML error pages if it
 * has any, and (metrics) the route template of a request refused before its router ran.
 */
export interface Transport extends RouteNamer {
  /** Paths that need no key (limited per client address instead). */
  isPublicPath?(path: string): boolean;
  /** Paths answered with HTML, errors included. */
  pages?: ErrorPages;
  mount(app: Koa, shared: SharedMiddleware): void;
}

/**
 * The Koa app: request ids and the access log, security headers, HTTPS behind a proxy, the
 * health routes, then each transport in order (the first that answers a path ends it).
 */
export function createHttpApp(services: Services, transports: Transport[]): Koa {
  const { config, logger } = services;
  const app = new Koa();
  app.proxy = config.trustProxy;
  // The client address is the entry our proxy appended to X-Forwarded-For (the last one); those
  // before it are whatever the client sent, and per-IP limits must not be escapable by them.
  app.maxIpsCount = 1;
  app.on('error', logAppError(logger));

  const isPagePath = (path: string) => transports.some((t) => t.pages?.isPagePath(path));
  const pages: ErrorPages = {
    isPagePath,
    render: (ctx, err) => transports.find((t) => t.pages?.isPagePath(ctx.path))?.pages?.render(ctx, err),
  };
  const shared: SharedMiddleware = {
    auth: authAndRateLimit({
      accounts: services.accounts,
      limiter: services.limiter,
      clock: services.clock,
      defaultLimit: config.defaultRateLimitPerMinute,
      // Pages are public too: limited per client IP like the public API routes.
      isPublic: (path) => isPagePath(path) || transports.some((t) => t.isPublicPath?.(path)),
    }),
    publicGuards: jsonOnlyPublicPosts(),
    jsonBody: jsonBody(),
    idempotency: restIdempotency(services.idempotency),
  };

  app.use(recordHttpMetrics(services.metrics, transports));
  if (tracingOn()) app.use(nameTracedRoutes(transports));
  app.use(requestLifecycle(logger, pages));
  app.use(securityHeaders(isPagePath));
  app.use(requireHttpsBehindProxy(config.trustProxy, config.publicUrl));
  app.use(async (ctx: Context, next: Next) => {
    // A NUL in an id or query value can reach no stored object and breaks SQL drivers.
    if (/%00/i.test(ctx.path) || /%00/i.test(ctx.querystring)) {
      throw new DomainError('invalid_parameter', 'The path and query may not contain NUL characters');
    }
    await next();
  });
  app.use(async (ctx: Context, next: Next) => {
    if (ctx.path === '/health' && ctx.method === 'GET') {
      ctx.body = { data: { status: 'ok' }, error: null };
      return;
    }
    if (ctx.path === '/ready' && ctx.method === 'GET') {
      try {
        await services.db.ping();
        // Without Redis the service still serves (per-instance rate limits): degraded, not down.
        const redis = services.redisBreaker && (services.redisBreaker.available ? 'ok' : 'degraded');
        // The read replicas' health and lag; the primary serves the reads when none is usable.
        // Anonymous: healthy and lag only, in DATABASE_REPLICA_URLS's order. Hosts, database
        // names and why one is skipped (an error's text) are for the log, not for anyone asking.
        const replicas = services.db.replicas?.status().map(({ healthy, lagMs }) => ({ healthy, lagMs }));
        ctx.body = { data: { status: 'ready', ...(redis && { redis }), ...(replicas ? { replicas } : {}) }, error: null };
      } catch {
        throw new DomainError('service_unavailable', 'The database is not reachable');
      }
      return;
    }
    await next();
  });
  app.use(serveMetrics(services.metrics, config.metricsToken));
  // With read replicas, each request's reads go where its route allows (src/db/read-routing.ts).
  if (services.db.readRouting) app.use(readRoutingMiddleware(services.db.readRouting));
  for (const transport of transports) transport.mount(app, shared);
  return app;
}
