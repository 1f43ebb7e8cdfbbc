import type { Context, Next } from 'koa';
import { secureRandomBytes } from '../../src/core/ids';
import { errorForLog, type Logger } from '../../src/logger';
import type { PayorchState } from '../context';
import { renderError } from './render';
import { renderErrorPage } from '../pages/error.page';
import { redactPanBounded } from '../../src/core/card';

const REQUEST_ID = /^[A-Za-z0-9_.:-]{8,128}$/;

/**
 * Outermost middleware: request id, one access log line per request, error envelope. Errors on
 * page paths render as HTML pages, by path (a browser's Accept says nothing about an API client).
 */
export function requestLifecycle(logger: Logger, isPagePath: (path: string) => boolean = () => false) {
  return async (ctx: Context, next: Next) => {
    const incoming = ctx.get('x-request-id');
    const requestId = REQUEST_ID.test(incoming) ? incoming : `req_${secureRandomBytes(12).toString('hex')}`;
    const state = ctx.state as PayorchState;
    state.requestId = requestId;
    state.startedAt = process.hrtime.bigint();
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } catch (err) {
      if (isPagePath(ctx.path)) renderErrorPage(ctx, err);
      else renderError(ctx, err);
      if (ctx.status >= 500) logger.error({ requestId, err: errorForLog(err) }, 'request failed');
    } finally {
      const latencyMs = Number(process.hrtime.bigint() - state.startedAt) / 1e6;
      logger.info(
        {
          requestId,
          method: ctx.method,
          path: redactPanBounded(ctx.path, 512), // a card number pasted into a URL stays out of the log
          status: ctx.status,
          latencyMs: Math.round(latencyMs * 100) / 100,
          accountId: state.auth?.accountId,
          mode: state.auth?.mode,
        },
        'request',
      );
    }
  };
}
