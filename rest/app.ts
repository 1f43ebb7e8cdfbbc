import Koa, { type Context, type Next } from 'koa';
import { Router } from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import type { Services } from '../src/services';
import { DomainError } from '../src/core/errors';
import { refuseDeepInput, refuseProtoKey } from '../src/core/validation';
import { logAppError, requestLifecycle } from './middleware/errors';
import { asDomainError } from './middleware/render';
import { requireHttpsBehindProxy } from './middleware/https';
import { securityHeaders } from './middleware/security-headers';
import { authAndRateLimit } from './middleware/auth';
import { restIdempotency } from './middleware/idempotency';
import { API_ROUTES } from './routes';
import { registerRoutes } from './route-table';
import { isPagePath, pageRoutes } from './pages/pages.routes';

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

/** Middleware the extra mounts (GraphQL) share with the REST routes. */
export interface SharedMiddleware {
  auth: Koa.Middleware;
  jsonBody: Koa.Middleware;
}

/** Extra mounts (GraphQL) are added by the server before the callback is taken. */
export interface AppExtension {
  (app: Koa, services: Services, shared: SharedMiddleware): void;
}

/** The largest request body, 1 MiB; also the largest graphql-ws message (schema/server.ts). */
export const MAX_BODY_BYTES = 1024 * 1024;

/** JSON bodies, refused when nested too deep for the walks over them (the fingerprint, NUL checks). */
function jsonBody(): Koa.Middleware {
  const parse = bodyParser({
    enableTypes: ['json'],
    jsonLimit: MAX_BODY_BYTES,
    // Bodies are JSON whatever the Content-Type says; a form post is malformed JSON.
    detectJSON: (ctx) => Number(ctx.get('content-length') || 0) > 0 || Boolean(ctx.get('transfer-encoding')),
    onError: (err, ctx) => {
      // The parser refuses a valid body holding a "__proto__" key as if it were not JSON; say
      // which key instead (JSON.parse keeps it an own property, and refuseProtoKey throws).
      const raw = (err as { body?: unknown }).body;
      if (/prototype property/.test(err.message) && typeof raw === 'string') {
        const parsed: unknown = JSON.parse(raw);
        refuseDeepInput(parsed, 'body');
        refuseProtoKey(parsed);
      }
      // A form post (curl -d, an HTML form) is not JSON: say what the API takes.
      const sent = ctx.get('content-type').split(';')[0].trim();
      if (asDomainError(err).code === 'malformed_json' && !ctx.is('json')) {
        throw new DomainError(
          'malformed_json',
          `Request body must be JSON sent with Content-Type: application/json${sent ? ` (this one is ${sent.slice(0, 100)})` : ''}`,
        );
      }
      throw err;
    },
  }) as unknown as Koa.Middleware;
  return (ctx, next) =>
    parse(ctx, async () => {
      refuseDeepInput((ctx.request as { body?: unknown }).body, 'body');
      await next();
    });
}

export function createApp(services: Services, extensions: AppExtension[] = []): Koa {
  const { config, logger } = services;
  const app = new Koa();
  app.proxy = config.trustProxy;
  // The client address is the entry our proxy appended to X-Forwarded-For (the last one); those
  // before it are whatever the client sent, and per-IP limits must not be escapable by them.
  app.maxIpsCount = 1;
  app.on('error', logAppError(logger));

  const api = new Router();
  registerRoutes(api, services, API_ROUTES);

  const root = new Router();
  for (const prefix of API_PREFIXES) root.use(prefix, api.routes());

  const shared: SharedMiddleware = {
    auth: authAndRateLimit({
      accounts: services.accounts,
      limiter: services.limiter,
      clock: services.clock,
      defaultLimit: config.defaultRateLimitPerMinute,
      // Pages are public too: limited per client IP like the public API routes.
      isPublic: (path) => isPublicPath(path) || isPagePath(path),
    }),
    jsonBody: jsonBody(),
  };

  app.use(requestLifecycle(logger, isPagePath));
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
        ctx.body = { data: { status: 'ready' }, error: null };
      } catch {
        throw new DomainError('service_unavailable', 'The database is not reachable');
      }
      return;
    }
    await next();
  });

  for (const extend of extensions) extend(app, services, shared);

  app.use(async (ctx: Context, next: Next) => {
    // The API's namespace outside the routes (/graphql/x, /api/v2): JSON 404 before any key check.
    if (stripPrefix(ctx.path) === null && !isPagePath(ctx.path)) {
      throw new DomainError('route_not_found', `No route for ${ctx.method} ${ctx.path}`);
    }
    await next();
  });
  app.use(shared.auth);
  app.use(pageRoutes(services));
  app.use(shared.jsonBody);
  app.use(restIdempotency(services.idempotency));
  app.use(root.routes());
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
  return app;
}
