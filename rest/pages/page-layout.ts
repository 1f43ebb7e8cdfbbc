import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import { html, SafeHtml } from './html';

/** A page's own inline script, allowed by its hash in that page's policy (nothing else runs). */
export interface PageScript {
  source: string;
  hash: string;
}

export interface PageView {
  title: string;
  body: SafeHtml;
  status?: number;
  /** The one script of the page's own, if it needs one (the card form does). */
  script?: PageScript;
  /** A narrow column (the card form) instead of the reading width. */
  narrow?: boolean;
  /** The whole window's width (the dashboard) instead of the reading width. */
  wide?: boolean;
  /**
   * Scripts served by this service (rest/pages/page-assets.ts), loaded before the page's own
   * script with Subresource Integrity and allowed by the same hash in the policy.
   */
  assets?: PageScriptAsset[];
  /** A stylesheet of the page's own after the shared one, allowed by its hash. */
  style?: PageStyle;
  /** The language the page is written in (`<html lang>`): `en` unless given. */
  lang?: string;
}

const sha256 = (text: string | Buffer) => `sha256-${createHash('sha256').update(text).digest('base64')}`;
/** The CSP/SRI source of a text or file: `sha256-<base64>`. */
export { sha256 as sha256Source };

/** A script file the page loads from this origin: its path and the hash both SRI and the policy check. */
export interface PageScriptAsset {
  path: string;
  hash: string;
}

export interface PageStyle {
  source: string;
  hash: string;
}

/** A page's own stylesheet as it is sent: its text and the hash the policy allows it by. */
export function pageStyle(source: string): PageStyle {
  if (/<\/style/i.test(source)) throw new Error('a page style may not contain "</style"');
  return { source, hash: sha256(source) };
}

/** A page script as it is sent: its source and the hash the policy allows it by. */
export function pageScript(source: string): PageScript {
  // Inside <script>, "</script" (any case) or "<!--" would end or confuse the element.
  if (/<\/script|<!--/i.test(source)) throw new Error('a page script may not contain "</script" or "<!--"');
  return { source, hash: sha256(source) };
}

// The only style of the pages: inline, allowed by its hash, so the policy needs no 'unsafe-inline'.
// The card form's rules are here too: one stylesheet, one hash, for every page.
const STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;margin:0;padding:0 1rem;color:#1a1f36;background:#f6f8fa}' +
  'main{max-width:40rem;margin:4rem auto;padding:2rem;background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.12)}' +
  'main.narrow{max-width:26rem}main.wide{max-width:none;margin:1rem;padding:1rem 1.5rem}' +
  'h1{font-size:1.5rem;margin-top:0}code{font-size:.9em;background:#f0f2f5;padding:.1em .3em;border-radius:3px}' +
  '.meta{color:#5b6270;font-size:.875rem}.nowrap{white-space:nowrap}' +
  '[hidden]{display:none!important}' +
  'a{color:#4b44d6}' +
  '.merchant{display:flex;flex-wrap:wrap;justify-content:space-between;align-items:center;gap:.5rem;margin:0 0 1rem;font-weight:600;overflow-wrap:anywhere}' +
  '.badge{font-size:.75rem;font-weight:600;color:#7a4100;background:#fff4e0;border:1px solid #f0c27a;border-radius:999px;padding:0 .5rem;white-space:nowrap}' +
  '.amount{font-size:2rem;line-height:1.2;margin:0}' +
  '.description{color:#5b6270;margin:.25rem 0 0;overflow-wrap:anywhere}' +
  '.summary{margin:0 0 1.5rem}' +
  '.lines{list-style:none;padding:0;margin:.75rem 0 0;color:#5b6270;font-size:.875rem}.lines li{display:flex;justify-content:space-between;align-items:baseline;gap:1rem;overflow-wrap:anywhere}.lines li+li{margin-top:.25rem}' +
  // A long description wraps; its amount stays whole, on one line at the right, level with the first line.
  '.lines li>span{min-width:0}.lines .line-amount{flex:none;white-space:nowrap}' +
  // The invoice's totals under its lines: the total and the amount due stand out.
  '.totals{list-style:none;padding:.5rem 0 0;margin:.75rem 0 0;border-top:1px solid #eef0f3;color:#5b6270;font-size:.875rem}' +
  '.totals li{display:flex;justify-content:space-between;align-items:baseline;gap:1rem;overflow-wrap:anywhere}.totals li+li{margin-top:.25rem}' +
  '.totals li>span{min-width:0}.totals .total-amount{flex:none;white-space:nowrap}.totals .total-total,.totals .total-due{color:#1a1f36;font-weight:600}' +
  '.field{margin:0 0 1rem;min-width:0}' +
  'label{display:block;font-weight:600;font-size:.875rem;margin:0 0 .25rem}' +
  '.optional{font-weight:400;color:#5b6270}' +
  'input{box-sizing:border-box;width:100%;font:inherit;padding:.625rem .75rem;border:1px solid #b8bfca;border-radius:6px;background:#fff;color:inherit}' +
  'input:focus{outline:2px solid #635bff;outline-offset:1px;border-color:#635bff}' +
  'input[aria-invalid=true]{border-color:#c0123c}' +
  '.row{display:flex;gap:.75rem}.row>.field{flex:1 1 0}' +
  '.field-error{color:#c0123c;font-size:.875rem;margin:.25rem 0 0}.field-error:empty{display:none}' +
  'button{box-sizing:border-box;width:100%;font:inherit;font-weight:600;padding:.75rem;border:0;border-radius:6px;background:#635bff;color:#fff;cursor:pointer}' +
  'button:disabled{opacity:.65;cursor:progress}button:focus-visible{outline:2px solid #1a1f36;outline-offset:2px}' +
  '.status{margin:0 0 1rem;padding:.75rem;border-radius:6px;background:#fdecef;color:#8a0f2d;border:1px solid #f3b3c1}.status:empty{padding:0;border:0;margin:0}' +
  '.status.info{background:#eef0ff;color:#26306b;border-color:#c6ccfa}' +
  '.hint{font-size:.875rem;color:#5b6270;margin:1rem 0 0}' +
  '.done{margin:0 0 1rem;padding:1rem;border-radius:6px;background:#e8f6ee;border:1px solid #a3d9b9}' +
  '.done h2{font-size:1.25rem;margin:0 0 .5rem;color:#0a5c34}.done p{margin:0}' +
  'footer{margin-top:1.5rem;font-size:.875rem;color:#5b6270}' +
  '@media (max-width:30rem){body{padding:0 .5rem}main{margin:1rem auto;padding:1.25rem}}';
export const STYLE_HASH = sha256(STYLE);

/**
 * Hosted pages load nothing from elsewhere, run no script they were not given, cannot be
 * framed (checkout pages take card details) and post forms nowhere. A page with a script of its
 * own (the card form) gets exactly that script, by hash, and may call back to this origin only.
 */
export function contentSecurityPolicy(script?: PageScript, extra: { assets?: PageScriptAsset[]; style?: PageStyle } = {}): string {
  const scripts = [...(extra.assets ?? []).map((a) => a.hash), ...(script ? [script.hash] : [])];
  return [
    "default-src 'none'",
    `style-src ${[STYLE_HASH, ...(extra.style ? [extra.style.hash] : [])].map((h) => `'${h}'`).join(' ')}`,
    ...(scripts.length ? [`script-src ${scripts.map((h) => `'${h}'`).join(' ')}`, "connect-src 'self'"] : []),
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export const CONTENT_SECURITY_POLICY = contentSecurityPolicy();

/**
 * Headers a page answer carries besides those every answer has (securityHeaders: nosniff,
 * no-store, and no-referrer on page paths), error pages included.
 */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY,
  'X-Frame-Options': 'DENY',
};

export function setPageHeaders(ctx: Context, script?: PageScript, extra: { assets?: PageScriptAsset[]; style?: PageStyle } = {}): void {
  ctx.set(PAGE_HEADERS);
  if (script || extra.assets?.length || extra.style) ctx.set('Content-Security-Policy', contentSecurityPolicy(script, extra));
}

/** A page as a whole HTML document: the shared layout around the view's body. */
export function pageDocument(view: Pick<PageView, 'title' | 'body' | 'script' | 'narrow' | 'wide' | 'assets' | 'style' | 'lang'>): string {
  const mainClass = view.narrow ? ' class="narrow"' : view.wide ? ' class="wide"' : '';
  return html`<!doctype html>
<html lang="${view.lang ?? 'en'}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${view.title} · Payorch</title>
<style>${new SafeHtml(STYLE)}</style>
${view.style ? html`<style>${new SafeHtml(view.style.source)}</style>\n` : ''}</head>
<body>
<main${new SafeHtml(mainClass)}>
${view.body}
</main>
${(view.assets ?? []).map((a) => html`<script src="${a.path}" integrity="${a.hash}"></script>\n`)}${view.script ? html`<script>${new SafeHtml(view.script.source)}</script>\n` : ''}</body>
</html>
`.value;
}

/** Writes a page as the response: the shared layout around the view's body. */
export function renderPage(ctx: Context, view: PageView): void {
  setPageHeaders(ctx, view.script, { assets: view.assets, style: view.style });
  ctx.status = view.status ?? 200;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = pageDocument(view);
}
