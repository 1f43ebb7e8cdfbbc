import type { Context } from 'koa';
import type { Router } from '@koa/router';
import type { z } from 'zod';
import type { Services } from '../src/services';
import type { RequestContext } from '../src/core/context';
import type { PERMISSION_RESOURCES } from '../src/core/context';
import type { ErrorCode } from '../src/core/errors';
import type { Page } from '../src/core/pagination';
import type { IdempotencyKey } from '../src/core/idempotency';
import type { PublicRequest } from '../src/modules/payments/public-pay';
import { IDEMPOTENT_OPERATIONS, type IdempotentOperationName } from '../src/core/idempotent-operations';
import { requestContext, type PayorchState } from '../src/http/context';
import { callerOf } from '../src/http/read-routing';
import { allowReplicaReads } from '../src/db/read-routing';
import { body, file, list, noBody, one, oneWithQuery, param, publicRoute, refuseQuery, type FileAnswer } from './route';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type Permission = `${(typeof PERMISSION_RESOURCES)[number]}:${'read' | 'write'}`;

/** What a route's handler is given: each part read when asked for, as the routes always did. */
export interface RouteRequest {
  /** The caller's context (authenticated routes only). */
  readonly rc: RequestContext;
  /** The JSON object body (anything else is a 400 naming the body). */
  readonly body: Record<string, unknown>;
  /** A list's query string, each parameter once. */
  readonly query: Record<string, unknown>;
  readonly idem: IdempotencyKey | undefined;
  readonly requestId: string;
  /** A public route's caller: the request id and the client's address (the public pays' attempt caps). */
  readonly client: PublicRequest;
  param(name: string): string;
  readonly ctx: Context;
}

interface RouteBase {
  method: HttpMethod;
  /** The path under /v1, with `{name}` parameters as the document writes them. */
  path: string;
  /** The service operation, also the document's operationId. */
  operationId: string;
  summary: string;
  tag: string;
  /** The JSON body the operation validates (its zod schema in the module's inputs). */
  body?: z.ZodType;
  /** An action that takes no body: any field sent is refused, by name. */
  noBody?: true;
  /** The error codes this operation itself can answer, besides those every route of its kind can. */
  errors: readonly ErrorCode[];
  /** The operation honours an Idempotency-Key, answering with the operation's status. */
  idempotent?: IdempotentOperationName;
  /** An example request body for the document (it must pass `body`). */
  example?: Record<string, unknown>;
  /**
   * The success answer's example `data` when it differs from its response schema's example
   * (rest/response-examples.ts), e.g. the secret only a create answers with.
   */
  responseExample?: unknown;
  description?: string;
}

interface AuthRoute {
  /** The permission the operation checks (a key with `<resource>:write` reads too). */
  permission: Permission;
  public?: undefined;
}

interface PublicRoute {
  /** No key: the route acts on the object its path names, in that object's account and mode. */
  public: true;
  permission?: undefined;
}

/** One object in the `{data, error}` envelope. */
export type OneRoute = RouteBase & (AuthRoute | PublicRoute) & {
  kind: 'one';
  response: z.ZodType;
  /** The query string the operation validates (a summary's window); without it any query parameter is refused. */
  query?: z.ZodType;
  /** Success status when the route is not idempotent (200 unless given). */
  status?: number;
  handle: (s: Services, r: RouteRequest) => Promise<unknown>;
};

/** A page of objects in the envelope with `meta` {total, page, pageSize}; the query validated by `query`. */
export type ListRoute = RouteBase & AuthRoute & {
  kind: 'list';
  query: z.ZodType;
  /** One item of the page. */
  response: z.ZodType;
  handle: (s: Services, r: RouteRequest) => Promise<Page<unknown>>;
};

/** A file instead of the envelope (an invoice's PDF); errors still answer the JSON envelope. */
export type FileRoute = RouteBase & AuthRoute & {
  kind: 'file';
  /** The file's type; several when the answer's depends on the object (an export's csv or jsonl), the first the default. */
  contentType: string | readonly [string, ...string[]];
  /** What the document shows as the file (the start of an invoice's PDF unless given). */
  fileExample?: string;
  handle: (s: Services, r: RouteRequest) => Promise<FileAnswer>;
};

/** A JSON document answered as it is, outside the envelope (the OpenAPI document itself). */
export type DocumentRoute = RouteBase & PublicRoute & {
  kind: 'document';
  handle: (s: Services, r: RouteRequest) => Promise<unknown>;
};

export type RouteSpec = OneRoute | ListRoute | FileRoute | DocumentRoute;

/**
 * Typed constructors: the handler's answer must be what the response schema describes, so a
 * service whose object grows a field the schema lacks fails to compile here (and the contract
 * test fails on an answer the schema does not describe).
 */
export const route = {
  one<R extends z.ZodType>(spec: Omit<OneRoute, 'kind' | 'response' | 'handle' | 'responseExample'> & { response: R; responseExample?: z.output<R>; handle: (s: Services, r: RouteRequest) => Promise<z.output<R>> }): OneRoute {
    return { kind: 'one', ...spec } as OneRoute;
  },
  list<R extends z.ZodType>(spec: Omit<ListRoute, 'kind' | 'response' | 'handle'> & { response: R; handle: (s: Services, r: RouteRequest) => Promise<Page<z.output<R>>> }): ListRoute {
    return { kind: 'list', ...spec } as ListRoute;
  },
  file(spec: Omit<FileRoute, 'kind'>): FileRoute {
    return { kind: 'file', ...spec };
  },
  document(spec: Omit<DocumentRoute, 'kind'>): DocumentRoute {
    return { kind: 'document', ...spec };
  },
};

/** The status a successful call answers with. */
export function successStatus(r: RouteSpec): number {
  if (r.idempotent) return IDEMPOTENT_OPERATIONS[r.idempotent].status;
  return r.kind === 'one' ? (r.status ?? 200) : 200;
}

/** `/customers/{id}` as the router writes it: `/customers/:id`. */
export function routerPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

export function pathParams(path: string): string[] {
  return [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
}

function routeRequest(ctx: Context, query: Record<string, unknown>): RouteRequest {
  const state = ctx.state as PayorchState;
  return {
    get rc() {
      return requestContext(ctx);
    },
    get body() {
      return body(ctx);
    },
    query,
    idem: state.idempotencyKey,
    requestId: state.requestId,
    get client() {
      return { requestId: state.requestId, clientAddress: ctx.ip };
    },
    param: (name) => param(ctx, name),
    ctx,
  };
}

/** The Koa middleware of one table entry, through the envelope helpers every route used. */
function middleware(s: Services, r: RouteSpec) {
  const call = <T>(ctx: Context, handle: (s: Services, req: RouteRequest) => Promise<T>, query: Record<string, unknown> = {}) => {
    if (r.noBody) noBody(ctx);
    return handle(s, routeRequest(ctx, query));
  };
  switch (r.kind) {
    case 'one':
      if (r.public) return publicRoute((ctx) => call(ctx, r.handle), successStatus(r));
      if (r.query) return oneWithQuery((_rc, query, ctx) => call(ctx, r.handle, query));
      return one((_rc, ctx) => call(ctx, r.handle), successStatus(r));
    case 'list':
      return list((_rc, query, ctx) => call(ctx, r.handle, query));
    case 'file':
      return file((_rc, ctx) => call(ctx, r.handle), typeof r.contentType === 'string' ? r.contentType : r.contentType[0]);
    case 'document':
      return async (ctx: Context) => {
        refuseQuery(ctx);
        ctx.status = 200;
        ctx.type = 'application/json';
        ctx.body = await call(ctx, r.handle);
      };
  }
}

/** Registers every entry of the table on the router: the only way a REST route comes to exist. */
export function registerRoutes(router: Router, s: Services, table: readonly RouteSpec[]): void {
  const seen = new Set<string>();
  for (const r of table) {
    const key = `${r.method} ${r.path}`;
    if (seen.has(key)) throw new Error(`route declared twice: ${key}`);
    seen.add(key);
    const handle = middleware(s, r);
    // A GET only reads: with replicas, its reads may go to one (unless its caller just wrote).
    const reads = r.method === 'GET' ? (ctx: Context) => {
      allowReplicaReads(callerOf(ctx));
      return handle(ctx);
    } : handle;
    router[r.method.toLowerCase() as 'get'](routerPath(r.path), reads);
  }
}
