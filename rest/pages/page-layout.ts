import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import { html, SafeHtml } from './html';

export interface PageView {
  title: string;
  body: SafeHtml;
  status?: number;
}

// The only style of the pages: inline, allowed by its hash, so the policy needs no 'unsafe-inline'.
const STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;margin:0;padding:0 1rem;color:#1a1f36;background:#f6f8fa}' +
  'main{max-width:40rem;margin:4rem auto;padding:2rem;background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.12)}' +
  'h1{font-size:1.5rem;margin-top:0}code{font-size:.9em;background:#f0f2f5;padding:.1em .3em;border-radius:3px}' +
  '.meta{color:#5b6270;font-size:.875rem}';
export const STYLE_HASH = `sha256-${createHash('sha256').update(STYLE).digest('base64')}`;

/**
 * Hosted pages load nothing from elsewhere, run no script they were not given, cannot be
 * framed (checkout pages take card details) and post forms nowhere.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  `style-src '${STYLE_HASH}'`,
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Headers a page answer carries besides those every answer has (securityHeaders: nosniff,
 * no-store, and no-referrer on page paths), error pages included.
 */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Frame-Options': 'DENY',
};

export function setPageHeaders(ctx: Context): void {
  ctx.set(PAGE_HEADERS);
}

/** A page as a whole HTML document: the shared layout around the view's body. */
export function pageDocument(view: Pick<PageView, 'title' | 'body'>): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${view.title} · Payorch</title>
<style>${new SafeHtml(STYLE)}</style>
</head>
<body>
<main>
${view.body}
</main>
</body>
</html>
`.value;
}

/** Writes a page as the response: the shared layout around the view's body. */
export function renderPage(ctx: Context, view: PageView): void {
  setPageHeaders(ctx);
  ctx.status = view.status ?? 200;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = pageDocument(view);
}
