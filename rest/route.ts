import type { Readable } from 'node:stream';
import type { Context } from 'koa';
import { DomainError } from '../src/core/errors';
import type { RequestContext } from '../src/core/context';
import type { Page } from '../src/core/pagination';
import type { IdempotencyKey } from '../src/core/idempotency';
import { IDEMPOTENT_OPERATIONS, type IdempotentOperationName } from '../src/core/idempotent-operations';
import { requestContext, type PayorchState } from '../src/http/context';

type Handler<T> = (rc: RequestContext, ctx: Context) => Promise<T>;

export function refuseQuery(ctx: Context): void {
  const extra = Object.keys(ctx.query)[0];
  if (extra !== undefined) throw new DomainError('unknown_parameter', `Unknown parameter: '${extra}'`, extra);
}

/** JSON object bodies only; anything else is a 400 naming the body. */
export function body(ctx: Context): Record<string, unknown> {
  const b = (ctx.request as { body?: unknown }).body;
  if (b === undefined || b === null) return {};
  if (typeof b !== 'object' || Array.isArray(b)) {
    throw new DomainError('invalid_parameter', 'Request body must be a JSON object', 'body');
  }
  return b as Record<string, unknown>;
}

/** An action that takes no body (mark paid, void, send): any field sent is refused, by name. */
export function noBody(ctx: Context): void {
  const extra = Object.keys(body(ctx))[0];
  if (extra !== undefined) throw new DomainError('unknown_parameter', `This action takes no body: '${extra}' is not accepted`, extra);
}

export function send(ctx: Context, status: number, data: unknown, meta?: Record<string, number | boolean | null>): void {
  ctx.status = status;
  ctx.body = meta ? { data, meta, error: null } : { data, error: null };
}

/** A route that returns one object (status 200 unless given). */
export function one<T>(handler: Handler<T>, status = 200) {
  return async (ctx: Context) => {
    refuseQuery(ctx);
    send(ctx, status, await handler(requestContext(ctx), ctx));
  };
}

/**
 * A route running an idempotent operation: the request's Idempotency-Key, if any, is handed to
 * the service operation, which answers with the operation's status (IDEMPOTENT_OPERATIONS).
 */
export function idempotent<T>(operation: IdempotentOperationName, handler: (rc: RequestContext, ctx: Context, idem: IdempotencyKey | undefined) => Promise<T>) {
  return one((rc, ctx) => handler(rc, ctx, (ctx.state as PayorchState).idempotencyKey), IDEMPOTENT_OPERATIONS[operation].status);
}

/**
 * A public route (no key, API.md §11): the handler acts on the object its path names, in that
 * object's account and mode, with the request's id and, for a pay, its Idempotency-Key (scoped
 * to that object).
 */
export function publicRoute<T>(handler: (ctx: Context, request: { requestId: string; idem: IdempotencyKey | undefined }) => Promise<T>, status = 200) {
  return async (ctx: Context) => {
    refuseQuery(ctx);
    const state = ctx.state as PayorchState;
    send(ctx, status, await handler(ctx, { requestId: state.requestId, idem: state.idempotencyKey }));
  };
}

/**
 * A file a route answers: its bytes, or a stream of them (an export's file, read as it is sent);
 * `contentType` when it is not the route's, `length` when known (a stream's), `attachment` to have
 * a browser save it rather than show it.
 */
export interface FileAnswer {
  filename: string;
  bytes: Buffer | Readable;
  contentType?: string;
  length?: number;
  attachment?: boolean;
}

/**
 * A route that answers a file instead of the JSON envelope (an invoice's PDF): the bytes as they
 * are, with their type; errors still answer the JSON error envelope.
 */
export function file(handler: Handler<FileAnswer>, contentType: string) {
  return async (ctx: Context) => {
    refuseQuery(ctx);
    const answer = await handler(requestContext(ctx), ctx);
    ctx.status = 200;
    ctx.type = answer.contentType ?? contentType;
    ctx.set('Content-Disposition', `${answer.attachment ? 'attachment' : 'inline'}; filename="${answer.filename.replace(/[^\w.-]/g, '_')}"`);
    ctx.body = answer.bytes;
    // After the body: Koa drops the length when a stream replaces a body.
    if (answer.length !== undefined) ctx.length = answer.length;
  };
}

/** The query string, each parameter once (a repeated one is a 400 naming it); the service validates the rest. */
function queryOf(ctx: Context): Record<string, unknown> {
  const query = { ...(ctx.query as Record<string, unknown>) };
  for (const [k, v] of Object.entries(query)) {
    if (Array.isArray(v)) throw new DomainError('invalid_parameter', `'${k}' was given more than once`, k);
  }
  return query;
}

/** `metadata[plan]`: a REST list's metadata filter, one query parameter per key (API.md §2). */
const METADATA_KEY = /^metadata\[(.*)\]$/s;

/**
 * A list's query as the service takes it: each parameter once, and the `metadata[key]=value`
 * parameters gathered into one `metadata` object (alongside a plain `metadata`, refused by the
 * service as not an object). Returns the query and the keys gathered.
 */
export function listQuery(raw: Record<string, unknown>): { query: Record<string, unknown>; metadataKeys: string[] } {
  const query: Record<string, unknown> = {};
  const metadata: Record<string, unknown> = {};
  const metadataKeys: string[] = [];
  for (const [k, v] of Object.entries(raw)) {
    if (Array.isArray(v)) throw new DomainError('invalid_parameter', `'${k}' was given more than once`, k);
    const key = METADATA_KEY.exec(k)?.[1];
    if (key === undefined) {
      query[k] = v;
    } else {
      metadata[key] = v;
      metadataKeys.push(key);
    }
  }
  if (metadataKeys.length > 0) {
    if (query.metadata !== undefined) throw new DomainError('invalid_parameter', 'Give metadata as metadata[key]=value', 'metadata');
    query.metadata = metadata;
  }
  return { query, metadataKeys };
}

/** A list route: the service validates the query, the route adds `meta`. */
export function list<T>(handler: (rc: RequestContext, query: Record<string, unknown>, ctx: Context) => Promise<Page<T>>) {
  return async (ctx: Context) => {
    const { query, metadataKeys } = listQuery(ctx.query as Record<string, unknown>);
    let page: Page<T>;
    try {
      page = await handler(requestContext(ctx), query, ctx);
    } catch (err) {
      // The service names a metadata key as `metadata.<key>`: REST's parameter is `metadata[<key>]`.
      if (!(err instanceof DomainError) || !err.param?.startsWith('metadata.')) throw err;
      const key = err.param.slice('metadata.'.length);
      if (!metadataKeys.includes(key)) throw err;
      const name = `metadata[${key}]`;
      throw new DomainError(err.code, err.message.replace(err.param, name), name, { cause: err.cause });
    }
    send(ctx, 200, page.data, { total: page.total, page: page.page, pageSize: page.pageSize, hasMore: page.hasMore });
  };
}

/** A route that reads its query string (the service validates it) and answers one value (a summary). */
export function oneWithQuery<T>(handler: (rc: RequestContext, query: Record<string, unknown>, ctx: Context) => Promise<T>) {
  return async (ctx: Context) => {
    send(ctx, 200, await handler(requestContext(ctx), queryOf(ctx), ctx));
  };
}

export function param(ctx: Context, name: string): string {
  return (ctx as unknown as { params: Record<string, string> }).params[name];
}
