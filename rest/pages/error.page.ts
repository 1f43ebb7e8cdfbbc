import type { Context } from 'koa';
import { toErrorResponse } from '../../src/http/render';
import type { PayorchState } from '../../src/http/context';
import { html } from './html';
import { renderPage } from './page-layout';

function titleFor(status: number): string {
  if (status === 404) return 'Page not found';
  if (status === 405) return 'Method not allowed';
  if (status === 410) return 'No longer available';
  if (status === 429) return 'Too many requests';
  if (status === 503) return 'Temporarily unavailable';
  if (status >= 500) return 'Something went wrong';
  if (status >= 300 && status < 400) return 'Moved';
  return 'Request refused';
}

/**
 * The HTML twin of the JSON error envelope, for paths that belong to the pages: same status,
 * code, message and request id (the same mapper, so nothing internal shows here either).
 */
export function renderErrorPage(ctx: Context, err: unknown): void {
  const { requestId } = ctx.state as PayorchState;
  const { status, error } = toErrorResponse(err, requestId);
  const title = titleFor(status);
  renderPage(ctx, {
    status,
    title,
    body: html`<h1>${title}</h1>
<p>${String(error.message)}</p>
<p class="meta">Error <code>${String(error.code)}</code> · Request id <code>${requestId}</code></p>`,
  });
}
