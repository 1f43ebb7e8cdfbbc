import fs from 'node:fs';
import { createHash } from 'node:crypto';
import type { Router } from '@koa/router';
import { html } from './html';

/**
 * The interactive API reference at /docs: Redoc's standalone bundle (npm `redoc`), served by the
 * service itself, rendering /v1/openapi.json. Nothing is loaded from elsewhere.
 */
export const DOCS_PATH = '/docs';
export const DOCS_SCRIPT_PATH = '/docs/assets/redoc.standalone.js';
const SPEC_URL = '/v1/openapi.json';

/**
 * The one thing the bundle would load from elsewhere: the Redocly logo beside its "API docs by
 * Redocly" credit, from cdn.redoc.ly. It is served pointing at an empty inline image instead (the
 * credit link stays); the test of /docs fails if the bundle ever names another remote asset.
 */
const REMOTE_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg';
const LOCAL_LOGO = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='1' height='1'/%3E";

let bundle: { bytes: Buffer; integrity: string } | undefined;
function redocBundle(): { bytes: Buffer; integrity: string } {
  if (!bundle) {
    const source = fs.readFileSync(require.resolve('redoc/bundles/redoc.standalone.js'), 'utf8');
    if (!source.includes(REMOTE_LOGO)) throw new Error(`redoc's bundle no longer names ${REMOTE_LOGO}: check what it loads now`);
    const bytes = Buffer.from(source.split(REMOTE_LOGO).join(LOCAL_LOGO), 'utf8');
    bundle = { bytes, integrity: `sha384-${createHash('sha384').update(bytes).digest('base64')}` };
  }
  return bundle;
}

/**
 * Redoc's script is allowed by its hash (the `integrity` of its tag), not by origin. It styles
 * itself with styled-components, which writes <style> elements at run time: no hash can name
 * those, hence style-src 'unsafe-inline' on this page only (no card form here, no secrets). It
 * fetches the document from this origin, runs its search index in a worker it makes from a blob,
 * and draws a few icons (and the page its empty icon) as data: images.
 */
export function docsContentSecurityPolicy(): string {
  return [
    "default-src 'none'",
    `script-src '${redocBundle().integrity}'`,
    "style-src 'unsafe-inline'",
    'img-src data:',
    "connect-src 'self'",
    'worker-src blob:',
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

function docsDocument(): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference · Payorch</title>
<link rel="icon" href="data:,">
</head>
<body>
<redoc spec-url="${SPEC_URL}" hide-hostname="true" path-in-middle-panel="true" sort-tags-alphabetically="false"></redoc>
<script src="${DOCS_SCRIPT_PATH}" integrity="${redocBundle().integrity}"></script>
</body>
</html>
`.value;
}

/** GET /docs and the bundle it loads. */
export function docsRoutes(router: Router): void {
  router.get(DOCS_PATH, (ctx) => {
    ctx.set({ 'Content-Security-Policy': docsContentSecurityPolicy(), 'X-Frame-Options': 'DENY' });
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = docsDocument();
  });
  router.get(DOCS_SCRIPT_PATH, (ctx) => {
    ctx.set({ 'Content-Security-Policy': "default-src 'none'", 'X-Frame-Options': 'DENY' });
    ctx.type = 'text/javascript; charset=utf-8';
    ctx.body = redocBundle().bytes;
  });
}
