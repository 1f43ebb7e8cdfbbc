import type { Context, Next } from 'koa';
import type { ReadRouting } from '../db/read-routing';
import type { PayorchState } from './context';

/** Whose writes an API key's requests must read: the key's own. */
export function keyCaller(keyId: string): string {
  return `key:${keyId}`;
}

/** Whose writes a request's reads must see: its API key's, or on the public routes and pages its client address's. */
export function callerOf(ctx: Context): string {
  const state = ctx.state as PayorchState;
  return state.auth ? keyCaller(state.auth.keyId) : `ip:${ctx.ip}`;
}

/**
 * With read replicas: each request runs in a read scope of its own, on the primary unless its
 * route says it only reads (`allowReplicaReads`: a GET route or page, a GraphQL query). A request
 * that may have written is its caller's last write once it ends: any other method (a GraphQL
 * query sent with POST is a read), or a read that wrote after all (a page settling a payment).
 */
export function readRoutingMiddleware(routing: ReadRouting) {
  return (ctx: Context, next: Next) => routing.run(async (scope) => {
    try {
      await next();
    } finally {
      const read = ctx.method === 'GET' || ctx.method === 'HEAD' || scope.replica;
      if (scope.wrote || !read) routing.noteWrite(callerOf(ctx));
    }
  });
}

/**
 * A GraphQL operation over graphql-ws (no HTTP request around it): a query may read from a
 * replica, a mutation is its key's write; a subscription's events are read from the primary
 * (an event is published once committed there, and a replica may not hold it yet).
 */
export async function graphqlOperationReads<T>(
  routing: ReadRouting | undefined, keyId: string, operation: 'query' | 'mutation' | 'subscription' | undefined, run: () => Promise<T> | T,
): Promise<T> {
  if (!routing || operation === undefined || operation === 'subscription') return run();
  const caller = keyCaller(keyId);
  return routing.run(async (scope) => {
    if (operation === 'query') routing.allow(scope, caller);
    try {
      return await run();
    } finally {
      if (operation === 'mutation' || scope.wrote) routing.noteWrite(caller);
    }
  });
}
