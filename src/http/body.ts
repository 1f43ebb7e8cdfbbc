import type Koa from 'koa';
import { bodyParser } from '@koa/bodyparser';
import { DomainError } from '../core/errors';
import { refuseDeepInput, refuseProtoKey } from '../core/validation';
import { asDomainError } from './render';

/** The largest request body, 1 MiB; also the largest graphql-ws message (schema/server.ts). */
export const MAX_BODY_BYTES = 1024 * 1024;

/** JSON bodies, refused when nested too deep for the walks over them (the fingerprint, NUL checks). */
export function jsonBody(): Koa.Middleware {
  const parse = bodyParser({
    enableTypes: ['json'],
    jsonLimit: MAX_BODY_BYTES,
    // Bodies are JSON whatever the Content-Type says; a form post is malformed JSON. (Public
    // routes take application/json only, and refuse anything else before this: publicGuards.)
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
