import type Koa from 'koa';
import type https from 'node:https';
import { ApolloServer, HeaderMap, type ApolloServerPlugin } from '@apollo/server';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import {
  GraphQLError, parse, specifiedRules, validate, type GraphQLFormattedError, type ValidationContext,
} from 'graphql';
import { randomBytes } from 'node:crypto';
import { WebSocketServer } from 'ws';
import { useServer } from 'graphql-ws/use/ws';
import type { AuthenticatedKey } from '../src/modules/accounts/account.service';
import type { RequestContext } from '../src/core/context';
import type { Services } from '../src/services';
import type { SharedMiddleware } from '../rest/app';
import type { PayorchState } from '../rest/context';
import { DomainError, isDomainError } from '../src/core/errors';
import { findNul } from '../src/core/validation';
import { errorForLog } from '../src/logger';
import { buildPayorchSchema } from './build';
import { createLoaders } from './loaders';
import type { GqlContext, GraphQLIdempotency } from './context';
import { graphqlIdempotency } from '../rest/middleware/idempotency';
import { TooComplexError, formatGraphQLError } from './errors';
import { resultSizeRule } from './result-size';

/**
 * maxTokens bounds the document before anything walks it: the parser and the validation rules
 * (ours and graphql-armor's) recurse, and a flat chain of a few thousand fragments, each
 * spreading the next, overflowed the stack in validation (a 500 over HTTP, a 4500 close over
 * WebSocket). Real documents, introspection included, stay far below it.
 */
export const GRAPHQL_LIMITS = { maxDepth: 8, maxCost: 50_000, maxTokens: 5000 };

/** A limit's rejection becomes an ordinary validation error with our wording, pointing where it says. */
function reportTooComplex(context: ValidationContext | null, error: GraphQLError): void {
  context?.reportError(new TooComplexError(error.message.replace(/^Syntax Error: /, ''), error.nodes));
}

/**
 * Our size limits, the same for documents over HTTP and over WebSocket. The cost is the number
 * of fields the query can resolve, lists counted by their size argument (resultSizeRule):
 * graphql-armor's cost limit was dropped because it counts a list once unless `first` is a
 * literal, so it neither saw default or variable sizes nor could say which field cost most.
 */
function limitRules() {
  return [
    maxDepthRule({ n: GRAPHQL_LIMITS.maxDepth, exposeLimits: true, propagateOnRejection: false, onReject: [reportTooComplex] }),
    resultSizeRule(GRAPHQL_LIMITS.maxCost, reportTooComplex),
  ];
}

export interface GraphQLMount {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Logs an error that reaches the client only as `internal_error`, under the request's id. The
 * client's own mistakes are not logged: their messages quote the values sent, card fields too.
 */
function logIfInternal(services: Services, requestId: string, e: GraphQLError): void {
  const code = formatGraphQLError({ message: e.message, extensions: e.extensions }, e).extensions?.code;
  // A database outage too: REST logs its 503s, and the driver's error (the cause) is only here.
  if (code !== 'internal_error' && code !== 'service_unavailable') return;
  services.logger.error({ requestId, err: errorForLog(e.originalError ?? e) }, 'graphql resolver failed');
}

/**
 * Over WebSocket: the same mapping as over HTTP (REST codes, no internals, no quoted input
 * values), the operation's request id in every error, internal errors logged under it.
 */
function wsErrors(services: Services, requestId: string, errors: readonly GraphQLError[]): GraphQLFormattedError[] {
  return errors.map((e) => {
    logIfInternal(services, requestId, e);
    const formatted = formatGraphQLError(e.toJSON(), e);
    return { ...formatted, extensions: { ...(formatted.extensions ?? {}), requestId } };
  });
}

const wsRequestId = () => `ws_${randomBytes(12).toString('hex')}`;

/** Puts the request id into every error, whatever produced it. */
const requestIdPlugin: ApolloServerPlugin<GqlContext> = {
  async requestDidStart() {
    return {
      async willSendResponse({ contextValue, response }) {
        if (response.body.kind !== 'single') return;
        const requestId = contextValue?.rc?.requestId;
        for (const e of response.body.singleResult.errors ?? []) {
          (e as { extensions: Record<string, unknown> }).extensions = { ...(e.extensions ?? {}), requestId };
        }
      },
      async didEncounterErrors({ errors, contextValue }) {
        for (const e of errors) logIfInternal(contextValue.services, contextValue.rc.requestId, e);
      },
    };
  },
};

/**
 * Apollo refuses a malformed request (variables that are not an object, no query) before any
 * plugin runs, so requestIdPlugin never sees those errors: the id is added to them here.
 */
function withRequestId(text: string, requestId: string): string {
  let body: { errors?: Array<{ extensions?: Record<string, unknown> }> };
  try {
    body = JSON.parse(text);
  } catch {
    return text;
  }
  if (!Array.isArray(body?.errors) || body.errors.every((e) => e?.extensions?.requestId !== undefined)) return text;
  for (const e of body.errors) e.extensions = { ...(e.extensions ?? {}), requestId };
  return JSON.stringify(body);
}

/**
 * A subscription sent with POST is the client's mistake (they stream over graphql-ws); run as a
 * query, its field would have no event to resolve.
 */
const noSubscriptionOverHttp: ApolloServerPlugin<GqlContext> = {
  async requestDidStart() {
    return {
      async didResolveOperation({ operation }) {
        if (operation?.operation !== 'subscription') return;
        const refusal = new DomainError('invalid_parameter', 'Subscriptions stream over WebSocket (graphql-ws) at /graphql, not over HTTP POST');
        throw new GraphQLError(refusal.message, { originalError: refusal, extensions: { http: { status: 400 } } });
      },
    };
  },
};

// WebSocket close reasons are at most 123 bytes.
const WS_KEY_MISSING = 'Forbidden: no API key; send connectionParams {"authorization": "Bearer sk_..."}';
const WS_KEY_REFUSED = 'Forbidden: the API key in connectionParams.authorization is invalid or revoked';
const WS_KEY_REVOKED = 'Forbidden: the API key of this connection was revoked';

/** The key from graphql-ws connectionParams: "Bearer sk_…" or the bare key. */
function keyFromParams(params: Record<string, unknown> | undefined): string | null {
  const raw = params?.authorization ?? params?.Authorization;
  if (typeof raw !== 'string') return null;
  const m = /^(?:Bearer\s+)?(\S+)$/i.exec(raw.trim());
  return m ? m[1] : null;
}

/** Apollo mounted inside Koa at /graphql, behind the same auth, rate limit and body parser. */
export function mountGraphQL(app: Koa, services: Services, httpsServer: https.Server, shared: SharedMiddleware): GraphQLMount {
  const schema = buildPayorchSchema();
  const server = new ApolloServer<GqlContext>({
    schema,
    introspection: true,
    includeStacktraceInErrorResponses: false,
    formatError: formatGraphQLError,
    parseOptions: { maxTokens: GRAPHQL_LIMITS.maxTokens },
    validationRules: limitRules(),
    plugins: [requestIdPlugin, noSubscriptionOverHttp],
  });

  app.use(async (ctx, next) => {
    if (ctx.path !== '/graphql') return next();
    const state = ctx.state as PayorchState;
    state.graphql = true;
    if (ctx.method !== 'POST') {
      ctx.set('Allow', 'POST');
      throw new DomainError('method_not_allowed', 'GraphQL queries are sent with POST');
    }
    await shared.auth(ctx, async () => undefined);
    await shared.jsonBody(ctx, async () => undefined).catch((err: unknown) => {
      // A key refused inside `variables` is named by its variable path (`m.__proto__`), as every
      // other variable error is, not by its place in the request body.
      const inVariables = isDomainError(err) ? /^(?:\[\d+\]\.)?variables\.(.+)$/.exec(err.param ?? '') : null;
      if (isDomainError(err) && inVariables) throw new DomainError(err.code, err.message, inVariables[1]);
      throw err;
    });
    const nul = findNul((ctx.request as { body?: unknown }).body);
    if (nul !== null) throw new DomainError('invalid_parameter', 'Text may not contain NUL characters', nul || undefined);
    const rc = state.rc!;
    // Each idempotent mutation of the document runs under the key (schema/idempotency.ts).
    const sent = graphqlIdempotency(ctx);
    const idempotency: GraphQLIdempotency | undefined = sent && { ...sent, replayed: false };
    const headers = new HeaderMap();
    for (const [k, v] of Object.entries(ctx.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
    const result = await server.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: 'POST', headers, search: ctx.querystring, body: (ctx.request as { body?: unknown }).body },
      context: async () => ({ rc, services, loaders: createLoaders(services, rc), idempotency }),
    });
    for (const [k, v] of result.headers) ctx.set(k, v);
    ctx.status = result.status ?? 200;
    if (result.body.kind === 'complete') {
      ctx.body = ctx.status >= 400 ? withRequestId(result.body.string, rc.requestId) : result.body.string;
    } else {
      let text = '';
      for await (const chunk of result.body.asyncIterator) text += chunk;
      ctx.body = text;
    }
    if (idempotency?.replayed) ctx.set('Idempotent-Replayed', 'true');
  });

  // Subscriptions: graphql-ws on the same path; the key travels in connectionParams.
  const wss = new WebSocketServer({ server: httpsServer, path: '/graphql' });
  const ws = useServer<Record<string, unknown>, { auth?: AuthenticatedKey; recheck?: NodeJS.Timeout; socket: import('ws').WebSocket }>(
    {
      schema,
      onConnect: async (ctx) => {
        const key = keyFromParams(ctx.connectionParams);
        const auth = key ? await services.accounts.authenticate(key) : null;
        if (!auth) {
          // graphql-ws would close with a bare "Forbidden"; say what is wrong and where the key goes
          // (its own close after this one is ignored).
          ctx.extra.socket.close(4403, key ? WS_KEY_REFUSED : WS_KEY_MISSING);
          return false;
        }
        ctx.extra.auth = auth;
        // A key revoked (or narrowed) while the socket is open stops streaming within one period.
        ctx.extra.recheck = setInterval(() => {
          services.accounts.authenticate(key as string).then(
            (current) => {
              if (!current) ctx.extra.socket.close(4403, WS_KEY_REVOKED);
              else ctx.extra.auth = current;
            },
            () => undefined,
          );
        }, services.config.wsKeyRecheckMs);
        ctx.extra.recheck.unref();
        return true;
      },
      onClose: (ctx) => {
        clearInterval(ctx.extra.recheck);
      },
      context: (ctx) => {
        const auth = ctx.extra.auth as AuthenticatedKey;
        const rc: RequestContext = {
          accountId: auth.accountId, mode: auth.mode, permissions: auth.permissions, keyId: auth.keyId,
          requestId: wsRequestId(), clock: services.clock,
        };
        return { rc, services, loaders: createLoaders(services, rc, { cache: false }) };
      },
      onSubscribe: (_ctx, _id, payload) => {
        // A syntax error is the client's, answered like any invalid document (not a 4500 close).
        let document;
        try {
          document = parse(payload.query, { maxTokens: GRAPHQL_LIMITS.maxTokens });
        } catch (err) {
          if (err instanceof GraphQLError) return [err];
          if (err instanceof RangeError) return [new TooComplexError('the document nests too deeply to be read')];
          throw err;
        }
        // The same depth and cost limits as queries over HTTP.
        let errors: readonly GraphQLError[];
        try {
          errors = validate(schema, document, [...specifiedRules, ...limitRules()]);
        } catch (err) {
          // A document still too deep for the recursive rules is refused like any other too complex one.
          if (err instanceof RangeError) return [new TooComplexError('the document nests too deeply to be checked')];
          throw err;
        }
        return errors.length ? errors : undefined;
      },
      // A document refused before it ran, or a stream that broke: these errors get an id of their own.
      onError: (_ctx, _id, _payload, errors) => wsErrors(services, wsRequestId(), errors),
      onNext: (_ctx, _id, _payload, args, result) =>
        result.errors ? { ...result, errors: wsErrors(services, (args.contextValue as GqlContext).rc.requestId, result.errors) } : undefined,
    },
    wss,
  );

  return {
    start: () => server.start(),
    async stop() {
      await ws.dispose();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await server.stop();
    },
  };
}
