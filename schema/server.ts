import type Koa from 'koa';
import type https from 'node:https';
import { ApolloServer, HeaderMap, type ApolloServerPlugin } from '@apollo/server';
import { ApolloServerPluginCacheControlDisabled } from '@apollo/server/plugin/disabled';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import {
  GraphQLError, execute, getOperationAST, getVariableValues, parse, specifiedRules, validate,
  type DocumentNode, type ExecutionArgs, type ExecutionResult, type FormattedExecutionResult, type GraphQLFormattedError, type GraphQLSchema, type OperationDefinitionNode, type ValidationContext,
} from 'graphql';
import type { IncomingMessage } from 'node:http';
import { randomBytes } from 'node:crypto';
import WebSocket, { WebSocketServer } from 'ws';
import { CloseCode, handleProtocols, type Context as WsProtocolContext, type SubscribePayload } from 'graphql-ws';
import type { AuthenticatedKey } from '../src/modules/accounts/account.service';
import type { RequestContext } from '../src/core/context';
import type { Services } from '../src/services';
import type { SharedMiddleware } from '../src/http/app';
import { MAX_BODY_BYTES } from '../src/http/body';
import type { PayorchState } from '../src/http/context';
import { DomainError, isDomainError } from '../src/core/errors';
import { findNul } from '../src/core/validation';
import { errorForLog } from '../src/logger';
import { buildPayorchSchema } from './build';
import { EventLoaders, createLoaders } from './loaders';
import { LiveBroadcast, type LiveTarget } from './live-broadcast';
import type { GqlContext, GraphQLIdempotency, OperationCost, RateBudget } from './context';
import { graphqlIdempotency } from '../src/http/idempotency';
import { TooComplexError, formatGraphQLError } from './errors';
import { OBJECTS_PER_POINT, rateCost, requestedObjects, resultSizeRule, returnedObjects } from './result-size';
import { checkMutationArguments, fragmentsOf, maxMutationsRule } from './mutation-checks';
import { mutationCount } from './operation-fields';
import { keyBudget, rateBudget, setRateHeaders } from '../src/http/auth';
import { serveGraphQLWs, type WsExtra } from './ws-transport';
import { KeyedQueue } from '../src/core/keyed-queue';
import { graphqlOperationReads, keyCaller } from '../src/http/read-routing';
import { allowReplicaReads } from '../src/db/read-routing';

/**
 * maxTokens bounds the document before anything walks it: the parser and the validation rules
 * (ours and graphql-armor's) recurse, and a flat chain of a few thousand fragments, each
 * spreading the next, overflowed the stack in validation (a 500 over HTTP, a 4500 close over
 * WebSocket). Real documents, introspection included, stay far below it.
 */
export const GRAPHQL_LIMITS = { maxDepth: 8, maxCost: 50_000, maxStatements: 50, maxTokens: 5000, maxMutations: 20 };

/** A limit's rejection becomes an ordinary validation error with our wording, pointing where it says. */
function reportTooComplex(context: ValidationContext | null, error: GraphQLError): void {
  context?.reportError(new TooComplexError(error.message.replace(/^Syntax Error: /, ''), error.nodes));
}

/**
 * Our size limits, the same for documents over HTTP and over WebSocket. The cost is the number
 * of fields the query can resolve, lists counted by their size argument, and the database
 * statements it can run (resultSizeRule): graphql-armor's cost limit was dropped because it
 * counts a list once unless `first` is a literal, so it neither saw default or variable sizes nor
 * could say which field cost most. Mutations per document are capped (each is a write, often a
 * charge, and counts against the rate limit on its own).
 */
function limitRules() {
  return [
    maxDepthRule({ n: GRAPHQL_LIMITS.maxDepth, exposeLimits: true, propagateOnRejection: false, onReject: [reportTooComplex] }),
    resultSizeRule({ maxFields: GRAPHQL_LIMITS.maxCost, maxStatements: GRAPHQL_LIMITS.maxStatements }, reportTooComplex),
    maxMutationsRule(GRAPHQL_LIMITS.maxMutations, reportTooComplex),
  ];
}

/** A DomainError refusing a whole document before it runs, as the GraphQLError both transports map. */
function refusal(error: DomainError, nodes?: GraphQLError['nodes'], httpStatus = error.status): GraphQLError {
  return new GraphQLError(error.message, { nodes, originalError: error, extensions: { http: { status: httpStatus } } });
}

/**
 * What an operation is checked for after validation and before any of it runs, over HTTP and
 * WebSocket alike: a mutation's arguments, everything it selects included
 * (checkMutationArguments); then its rate cost (rateCost: one point, one per mutation of a
 * mutation document, plus one per 100 objects its connections may return, with the sizes its
 * variables give) counted against the rate budget, of which `counted.points` were already (the
 * request or message itself), leaving `counted.remaining`. Answers the cost, and the refusal
 * when it may not run.
 */
async function preflight(
  services: Services, schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode,
  rawVariables: Record<string, unknown> | undefined, rate: RateBudget, counted: { points: number; remaining: number },
): Promise<{ cost: OperationCost; refused?: GraphQLError }> {
  const unchecked = { cost: { base: 1, requested: counted.points, remaining: counted.remaining } };
  const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], rawVariables ?? {});
  if (coerced.errors) return unchecked; // execution refuses them, as it always has
  const fragments = fragmentsOf(document);
  const mutationRoot = schema.getMutationType();
  let mutations = 0;
  if (operation.operation === 'mutation' && mutationRoot) {
    try {
      checkMutationArguments(schema, operation, fragments, coerced.coerced);
    } catch (err) {
      if (err instanceof GraphQLError && isDomainError(err.originalError)) return { ...unchecked, refused: refusal(err.originalError, err.nodes, 400) };
      throw err;
    }
    mutations = mutationCount(mutationRoot, operation, (name) => fragments[name], coerced.coerced);
  }
  const objects = requestedObjects(schema, (name) => fragments[name], operation, coerced.coerced);
  const base = Math.max(1, mutations);
  const requested = rateCost(base, objects);
  const points = requested - counted.points;
  if (points <= 0) return { cost: { base, requested, remaining: counted.remaining } };
  const decision = await services.limiter.consume(rate.subject, rate.limit, points, 'graphql_cost');
  rate.decision = decision;
  const cost = { base, requested, remaining: decision.remaining };
  if (decision.allowed) return { cost };
  const why = objects < OBJECTS_PER_POINT
    ? `this document's ${mutations} mutations count as ${mutations} requests`
    : `this ${mutations > 0 ? 'document' : 'query'} costs ${requested} points (${base}, plus 1 per ${OBJECTS_PER_POINT} of the up to ${objects} objects its lists may return)`;
  return {
    cost,
    refused: refusal(new DomainError(
      'rate_limited',
      `Too many requests: ${why}, more than are left of the ${decision.limit} a minute; retry in ${decision.resetSeconds} s${objects >= OBJECTS_PER_POINT ? ', or ask for smaller pages' : ''}`,
    )),
  };
}

/** `extensions.cost` of a response: what the operation was counted as, what it returned by the same rule, and the budget left. */
function costExtension(schema: GraphQLSchema, document: DocumentNode | undefined, operation: OperationDefinitionNode | undefined, cost: OperationCost | undefined, data: unknown, remaining: number) {
  if (!cost || !document || !operation) return { requested: 1, actual: 1, remaining };
  const fragments = fragmentsOf(document);
  const returned = data === null || data === undefined ? 0 : returnedObjects(schema, (name) => fragments[name], operation, data);
  return { requested: cost.requested, actual: rateCost(cost.base, returned), remaining: cost.remaining };
}

/**
 * Refuses an operation that fails preflight, before Apollo executes it, and answers every response
 * with its `extensions.cost` (the remaining budget is the RateLimit-Remaining header's).
 */
function costPlugin(services: Services): ApolloServerPlugin<GqlContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ schema, document, operation, request, contextValue }) {
          if (!operation || !contextValue.rate) return;
          // The request itself was counted as one (the auth middleware).
          const counted = { points: 1, remaining: contextValue.rate.decision?.remaining ?? 0 };
          const checked = await preflight(services, schema, document, operation, request.variables, contextValue.rate, counted);
          contextValue.cost = checked.cost;
          if (checked.refused) throw checked.refused;
        },
        async willSendResponse({ schema, document, operation, contextValue, response }) {
          if (response.body.kind !== 'single' || !contextValue?.rate) return;
          const result = response.body.singleResult;
          const remaining = contextValue.rate.decision?.remaining ?? 0;
          result.extensions = { ...(result.extensions ?? {}), cost: costExtension(schema, document, operation ?? undefined, contextValue.cost, result.data, remaining) };
        },
      };
    },
  };
}

/** With read replicas, a query's reads may go to one (a mutation's never): src/db/read-routing.ts. */
const replicaReadsPlugin: ApolloServerPlugin<GqlContext> = {
  async requestDidStart() {
    return {
      async didResolveOperation({ operation, contextValue }) {
        const keyId = contextValue.rc.keyId;
        if (operation?.operation === 'query' && keyId !== undefined) allowReplicaReads(keyCaller(keyId));
      },
    };
  },
};

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
 * values), the operation's request id in every error, internal errors logged under it. An error
 * raised with a request id of its own (a hook that failed, and logged it there) keeps it.
 */
function wsErrors(services: Services, requestId: string, errors: readonly GraphQLError[]): GraphQLFormattedError[] {
  return errors.map((e) => {
    const own = typeof e.extensions?.requestId === 'string' ? e.extensions.requestId : undefined;
    if (own === undefined) logIfInternal(services, requestId, e);
    const formatted = formatGraphQLError(e.toJSON(), e);
    return { ...formatted, extensions: { ...(formatted.extensions ?? {}), requestId: own ?? requestId } };
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

/**
 * The client's address as Koa's `ctx.ip` gives it for HTTP requests: behind a trusted proxy the
 * last X-Forwarded-For entry (the one the proxy added), else the socket's peer.
 */
function clientAddress(request: IncomingMessage, trustProxy: boolean): string {
  const forwarded = trustProxy ? String(request.headers['x-forwarded-for'] ?? '').split(',').map((a) => a.trim()).filter(Boolean) : [];
  return forwarded[forwarded.length - 1] ?? request.socket.remoteAddress ?? 'unknown';
}

/** The key from graphql-ws connectionParams: "Bearer sk_…" or the bare key. */
function keyFromParams(params: Record<string, unknown> | undefined): string | null {
  const raw = params?.authorization ?? params?.Authorization;
  if (typeof raw !== 'string') return null;
  const m = /^(?:Bearer\s+)?(\S+)$/i.exec(raw.trim());
  return m ? m[1] : null;
}

/** What a graphql-ws socket carries from its connection to its hooks. */
interface WsSocket extends WsExtra {
  auth?: AuthenticatedKey;
  recheck?: NodeJS.Timeout;
  /** The key this socket is counted under (socketsByKey). */
  countedKey?: string;
  /** The socket's subscriptions counted against its account (subscriptionsByAccount), by their subscribe message. */
  countedSubscriptions?: Map<SubscribePayload, { id: string; accountId: string }>;
}
type WsContext = WsProtocolContext<Record<string, unknown>, WsSocket>;

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
    // Apollo's cache-control plugin, on by default, hooks every resolved field (and so makes
    // Apollo wrap every resolver) to compute a Cache-Control header from @cacheControl hints
    // this schema does not have: about a tenth of a connection query's CPU, for nothing.
    plugins: [requestIdPlugin, noSubscriptionOverHttp, costPlugin(services), replicaReadsPlugin, ApolloServerPluginCacheControlDisabled()],
    // The process's signals are the CLI's (src/cli.ts): it stops the listeners, then Apollo, then
    // the workers. Apollo's own handler (installed unless NODE_ENV is `test`) stopped it first,
    // and the CLI's stop then waited on it until the 25 s forced exit.
    stopOnTerminationSignals: false,
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
    // The request was counted (the auth middleware): its decision is where the cost starts from.
    const rate: RateBudget = { ...rateBudget(state.auth, ctx.ip, services.config.defaultRateLimitPerMinute), decision: state.rateDecision };
    const headers = new HeaderMap();
    for (const [k, v] of Object.entries(ctx.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
    const result = await server.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: 'POST', headers, search: ctx.querystring, body: (ctx.request as { body?: unknown }).body },
      context: async () => ({ rc, services, loaders: createLoaders(services, rc), idempotency, rate }),
    });
    for (const [k, v] of result.headers) ctx.set(k, v);
    if (rate.decision) setRateHeaders(ctx, rate.decision);
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

  // Subscriptions: graphql-ws on the same path; the key travels in connectionParams. A message is
  // held whole and parsed before its key is checked: no larger than a request body.
  const { config, logger } = services;
  const wss = new WebSocketServer({ server: httpsServer, path: '/graphql', maxPayload: MAX_BODY_BYTES, handleProtocols });
  const eventLoaders = new EventLoaders(services);
  /** Open sockets per API key on this instance. */
  const socketsByKey = new Map<string, number>();
  /** Open subscriptions per account on this instance, over all its keys and sockets. */
  const subscriptionsByAccount = new Map<string, number>();
  /** The budget a socket's key counts against: its account's in its mode, as over HTTP. */
  const accountBudget = (auth: AuthenticatedKey): RateBudget => keyBudget(auth, config.defaultRateLimitPerMinute);
  /** Gives back the account's count for one subscription of the socket, once. */
  const releaseSubscription = (extra: WsSocket, payload: SubscribePayload) => {
    const counted = extra.countedSubscriptions?.get(payload);
    if (!counted || !extra.countedSubscriptions?.delete(payload)) return;
    const open = (subscriptionsByAccount.get(counted.accountId) ?? 1) - 1;
    if (open > 0) subscriptionsByAccount.set(counted.accountId, open);
    else subscriptionsByAccount.delete(counted.accountId);
  };
  /** Key checks of connection attempts, one at a time per client address (checkKey). */
  const keyChecks = new KeyedQueue();
  /**
   * The key of a connection attempt, checked against the address's budget of failed attempts: the
   * key, or null once the socket is closed with why (4429 over budget, 4403 missing or refused).
   *
   * An attempt is counted as failed before its key is checked and given back once it passes, so
   * attempts sent at once cannot all pass a count only finished failures had reached; and an
   * address's checks run one after another, so a burst of valid attempts (dashboards behind one
   * NAT reconnecting after a deploy) is let in: at any moment at most one of them is counted
   * without being given back. Checked side by side, a burst larger than the budget was refused
   * and, the refusals never given back, locked the address out for the rest of the minute.
   */
  function checkKey(address: string, key: string | null, socket: WebSocket): Promise<AuthenticatedKey | null> {
    return keyChecks.run(address, async () => {
      // Closed while it waited its turn: nothing to check or count.
      if (socket.readyState !== WebSocket.OPEN) return null;
      const failures = `ws-connect:ip:${address}`;
      const attempt = await services.limiter.consume(failures, config.wsFailedConnectsPerMinute);
      if (!attempt.allowed) {
        socket.close(4429, `Too many failed connection attempts from this address; retry in ${attempt.resetSeconds} s`);
        return null;
      }
      const auth = key ? await services.accounts.authenticate(key) : null;
      if (!key || !auth) {
        socket.close(4403, key ? WS_KEY_REFUSED : WS_KEY_MISSING);
        return null;
      }
      await services.limiter.refund(failures, config.wsFailedConnectsPerMinute);
      return auth;
    });
  }
  /** A subscription's result as graphql-ws sends it: with its cost, and its errors each under the operation's request id. */
  const formatNext = (args: ExecutionArgs, result: ExecutionResult): FormattedExecutionResult => {
    const context = args.contextValue as GqlContext;
    const operation = getOperationAST(args.document, args.operationName);
    const cost = costExtension(schema, args.document, operation ?? undefined, context.cost, result.data, context.cost?.remaining ?? 0);
    const extensions = { ...(result.extensions ?? {}), cost };
    return result.errors ? { ...result, extensions, errors: wsErrors(services, context.rc.requestId, result.errors) } : { ...result, extensions } as FormattedExecutionResult;
  };
  /** With replicas: the key's next reads must hold what the event sent to it announced. */
  const noteSent = (args: ExecutionArgs) => {
    const { keyId } = (args.contextValue as GqlContext).rc;
    if (keyId !== undefined) services.db.readRouting?.noteSeen(keyCaller(keyId));
  };
  const broadcast = new LiveBroadcast(services.bus, eventLoaders, {
    sent: noteSent,
    cost: (args, data) => {
      const { requested, actual } = costExtension(schema, args.document, getOperationAST(args.document, args.operationName) ?? undefined, (args.contextValue as GqlContext).cost, data, 0);
      return { requested, actual };
    },
    formatted: formatNext,
  });
  const ws = serveGraphQLWs<Record<string, unknown>, WsSocket>(
    wss,
    {
      schema,
      onConnect: async (ctx) => {
        const { socket, request } = ctx.extra;
        // graphql-ws runs onClose as soon as the socket closes, even while this still awaits:
        // what is counted after that is never given back, so each step after an await asks.
        const gone = () => socket.readyState !== WebSocket.OPEN;
        // graphql-ws would close with a bare "Forbidden"; each refusal says what is wrong (its own
        // close after ours is ignored).
        try {
          const key = keyFromParams(ctx.connectionParams);
          const auth = await checkKey(clientAddress(request, config.trustProxy), key, socket);
          if (!key || !auth || gone()) return false;
          const open = socketsByKey.get(auth.keyId) ?? 0;
          if (open >= config.wsMaxSocketsPerKey) {
            socket.close(4429, `Too many open sockets for this API key (at most ${config.wsMaxSocketsPerKey}); close one first`);
            return false;
          }
          // Taken before anything else is awaited, so sockets opening at once cannot all pass the
          // same count; onClose gives it back, whatever closes the socket.
          socketsByKey.set(auth.keyId, open + 1);
          ctx.extra.countedKey = auth.keyId;
          // Opening a socket is a request like any other: connect-and-drop loops count too.
          const rate = accountBudget(auth);
          const decision = await services.limiter.consume(rate.subject, rate.limit);
          if (!decision.allowed) {
            socket.close(4429, `Too many requests; retry in ${decision.resetSeconds} s`);
            return false;
          }
          // Closed meanwhile: onClose gave the count back; no key check for a socket that is gone.
          if (gone()) return false;
          ctx.extra.auth = auth;
          // A key revoked (or narrowed) while the socket is open stops streaming within one period.
          ctx.extra.recheck = setInterval(() => {
            services.accounts.authenticate(key).then(
              (current) => {
                if (!current) socket.close(4403, WS_KEY_REVOKED);
                else ctx.extra.auth = current;
              },
              () => undefined,
            );
          }, config.wsKeyRecheckMs);
          ctx.extra.recheck.unref();
          return true;
        } catch (err) {
          // The limiter or the database failing: logged here as JSON (graphql-ws would print it).
          logger.error({ err: errorForLog(err), remoteAddress: request.socket.remoteAddress }, 'graphql-ws connection check failed');
          if (!gone()) socket.close(CloseCode.InternalServerError, 'Internal server error; retry later');
          return false;
        }
      },
      onClose: (ctx) => {
        clearInterval(ctx.extra.recheck);
        for (const payload of [...(ctx.extra.countedSubscriptions?.keys() ?? [])]) releaseSubscription(ctx.extra, payload);
        const keyId = ctx.extra.countedKey;
        if (keyId === undefined) return;
        ctx.extra.countedKey = undefined;
        const open = (socketsByKey.get(keyId) ?? 1) - 1;
        if (open > 0) socketsByKey.set(keyId, open);
        else socketsByKey.delete(keyId);
      },
      // Subscribers asking the same thing share one run per event and one text per result
      // (LiveBroadcast); each event a subscription runs alone uses the loaders of that event,
      // shared by every subscriber of the account and mode it is delivered to (EventLoaders).
      subscribe: (args) => broadcast.subscribe(args),
      // A query may read from a replica, a mutation is its key's write (read-your-writes).
      execute: (args) => graphqlOperationReads(
        services.db.readRouting, (args.contextValue as GqlContext).rc.keyId ?? '', getOperationAST(args.document, args.operationName)?.operation, () => execute(args),
      ),
      onSubscribe: async (ctx, id, payload) => {
        try {
          return await checkOperation(ctx, id, payload);
        } catch (err) {
          // The limiter or the database failing: this operation is answered internal_error under
          // the id logged here; the socket and its other operations go on.
          const requestId = wsRequestId();
          logger.error({ requestId, err: errorForLog(err) }, 'graphql-ws operation check failed');
          return [new GraphQLError('graphql-ws operation check failed', { originalError: err instanceof Error ? err : new Error(String(err)), extensions: { requestId } })];
        }
      },
      onComplete: (ctx, _id, payload) => releaseSubscription(ctx.extra, payload),
      // A document refused before it ran, or a stream that broke: these errors get an id of their own.
      onError: (_ctx, _id, _payload, errors) => wsErrors(services, wsRequestId(), errors),
      // Each result carries its cost: what the operation was counted as when it started (and the
      // budget left then), and what this result returned by the same rule.
      onNext: (_ctx, _id, _payload, args, result) => {
        if (getOperationAST(args.document, args.operationName)?.operation === 'subscription') noteSent(args);
        return formatNext(args, result);
      },
    },
    logger,
  );

  /** What onSubscribe decides: the operation's refusal, or the parsed document graphql-ws then runs as is. */
  async function checkOperation(ctx: WsContext, id: string, payload: SubscribePayload): Promise<readonly GraphQLError[] | ExecutionArgs> {
    const auth = ctx.extra.auth as AuthenticatedKey;
    // This operation is already among them (graphql-ws registers it before asking here).
    if (Object.keys(ctx.subscriptions).length > config.wsMaxSubscriptions) {
      return [refusal(new DomainError(
        'limit_exceeded',
        `At most ${config.wsMaxSubscriptions} operations at once on one socket (subscriptions included); complete one first`,
      ))];
    }
    // Every operation is a request, counted as over HTTP against the account's budget in its mode.
    const rate = accountBudget(auth);
    const decision = await services.limiter.consume(rate.subject, rate.limit);
    if (!decision.allowed) return [refusal(new DomainError('rate_limited', `Too many requests; retry in ${decision.resetSeconds} s`))];
    const rc: RequestContext = {
      accountId: auth.accountId, mode: auth.mode, permissions: auth.permissions, keyId: auth.keyId,
      requestId: wsRequestId(), clock: services.clock,
    };
    const contextValue: GqlContext = { rc, services, loaders: createLoaders(services, rc, { cache: false }) };
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
    if (errors.length) return errors;
    const operation = getOperationAST(document, payload.operationName);
    if (operation) {
      // This message was counted as one point above.
      const checked = await preflight(services, schema, document, operation, payload.variables ?? undefined, rate, { points: 1, remaining: decision.remaining });
      if (checked.refused) return [checked.refused];
      contextValue.cost = checked.cost;
    }
    if (operation?.operation === 'subscription') {
      // Each event runs every open subscription's selection: the account's are capped on the
      // instance, over all its keys and sockets. Counted after the last await, so operations
      // checked at once cannot all pass the same count.
      for (const [counted, { id: countedId }] of ctx.extra.countedSubscriptions ?? []) {
        // Ended without graphql-ws's onComplete (a stream that could not send): given back here.
        if (!(countedId in ctx.subscriptions)) releaseSubscription(ctx.extra, counted);
      }
      // Completed, or its socket closed, while it was checked: nothing is counted, nothing runs.
      if (!(id in ctx.subscriptions)) return [new GraphQLError('The operation ended before it started')];
      const open = subscriptionsByAccount.get(auth.accountId) ?? 0;
      if (open >= config.wsMaxSubscriptionsPerAccount) {
        return [refusal(new DomainError(
          'limit_exceeded',
          `At most ${config.wsMaxSubscriptionsPerAccount} subscriptions open at once for this account on one instance (all its keys and sockets); complete one first`,
        ))];
      }
      subscriptionsByAccount.set(auth.accountId, open + 1);
      (ctx.extra.countedSubscriptions ??= new Map()).set(payload, { id, accountId: auth.accountId });
    }
    // A subscription's results may be written straight to its socket (LiveBroadcast).
    if (operation?.operation === 'subscription') (contextValue as GqlContext & { live?: LiveTarget }).live = { socket: ctx.extra.socket, id };
    // Parsed and validated here: graphql-ws runs it as is.
    return { schema, document, operationName: payload.operationName, variableValues: payload.variables, contextValue };
  }

  return {
    start: () => server.start(),
    async stop() {
      ws.dispose();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await server.stop();
    },
  };
}
