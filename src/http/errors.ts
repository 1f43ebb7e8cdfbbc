import type { IncomingMessage } from 'node:http';
import type { Context, Next } from 'koa';
import { secureRandomBytes } from '../core/ids';
import { accessLogger, errorForLog, type Logger } from '../logger';
import type { PayorchState } from './context';
import { renderError } from './render';
import { redactPanBounded } from '../core/card';

const REQUEST_ID = /^[A-Za-z0-9_.:-]{8,128}$/;

/** Why a request ended without its body: the client went away, or did not send it in time. */
export type ClientGone = 'client_aborted' | 'request_timeout';

/** Access-log status of a request the client never finished (nginx's 499; 408 as Node answered it). */
const GONE_STATUS: Record<ClientGone, number> = { client_aborted: 499, request_timeout: 408 };

/** What reading a request whose connection went away fails with (raw-body, Node's streams). */
const CONNECTION_LOST = /^(ECONNRESET|ECONNABORTED|EPIPE|ERR_STREAM_PREMATURE_CLOSE|ERR_HTTP_REQUEST_TIMEOUT|HPE_)/;

/**
 * Whether the request failed because its connection went before the request was whole (a body
 * cut off, a socket reset, REQUEST_TIMEOUT_MS reached) rather than through anything of ours: the
 * error is one of reading the request, and the request was indeed left unfinished.
 */
export function clientGone(req: IncomingMessage, err: unknown): ClientGone | undefined {
  const e = err as { code?: unknown; type?: unknown } | null;
  const lost = e?.type === 'request.aborted' || CONNECTION_LOST.test(String(e?.code ?? ''));
  if (!lost || req.complete) return undefined;
  const socketError = (req.socket as { errored?: { code?: unknown } | null } | null)?.errored;
  return socketError?.code === 'ERR_HTTP_REQUEST_TIMEOUT' || e?.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'request_timeout' : 'client_aborted';
}

/** How a transport that serves HTML answers an error on one of its page paths. */
export interface ErrorPages {
  isPagePath(path: string): boolean;
  render(ctx: Context, err: unknown): void;
}

const NO_PAGES: ErrorPages = { isPagePath: () => false, render: () => undefined };

/**
 * Outermost middleware: request id, one access log line per request, error envelope. Errors on
 * page paths render as HTML pages, by path (a browser's Accept says nothing about an API client).
 */
export function requestLifecycle(logger: Logger, pages: ErrorPages = NO_PAGES) {
  const access = accessLogger(logger);
  return async (ctx: Context, next: Next) => {
    const incoming = ctx.get('x-request-id');
    const requestId = REQUEST_ID.test(incoming) ? incoming : `req_${secureRandomBytes(12).toString('hex')}`;
    const state = ctx.state as PayorchState;
    state.requestId = requestId;
    state.startedAt = process.hrtime.bigint();
    ctx.set('X-Request-Id', requestId);
    let gone: ClientGone | undefined;
    try {
      await next();
    } catch (err) {
      // Nothing of ours failed and nobody is left to answer: the access line says so, no stack, no 500.
      gone = clientGone(ctx.req, err);
      if (!gone) {
        if (pages.isPagePath(ctx.path)) pages.render(ctx, err);
        else renderError(ctx, err);
        if (ctx.status >= 500) logger.error({ requestId, err: errorForLog(err) }, 'request failed');
      }
    } finally {
      const latencyMs = Number(process.hrtime.bigint() - state.startedAt) / 1e6;
      access.info(
        {
          requestId,
          method: ctx.method,
          path: redactPanBounded(ctx.path, 512), // a card number pasted into a URL stays out of the log
          status: gone ? GONE_STATUS[gone] : ctx.status,
          ...(gone ? { clientGone: gone } : {}),
          latencyMs: Math.round(latencyMs * 100) / 100,
          accountId: state.auth?.accountId,
          mode: state.auth?.mode,
        },
        'request',
      );
    }
  };
}

/**
 * Koa reports here what happens after the middleware (a socket error while answering, a request
 * timeout): logged as JSON like everything else, where Koa would print plain text to stderr. A
 * client that went away is not the service's failure.
 */
export function logAppError(logger: Logger) {
  return (err: unknown, ctx?: Context) => {
    const requestId = (ctx?.state as PayorchState | undefined)?.requestId;
    const code = String((err as { code?: unknown } | null)?.code ?? '');
    if (CONNECTION_LOST.test(code)) logger.debug({ requestId, code }, 'connection closed by the client');
    else logger.error({ requestId, err: errorForLog(err) }, 'response failed');
  };
}
