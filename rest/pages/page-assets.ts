import fs from 'node:fs';
import path from 'node:path';
import type { Context } from 'koa';
import { sha256Source, type PageScriptAsset } from './page-layout';

/**
 * Files the hosted pages load from this service rather than from a CDN (the dashboard's chart and
 * WebSocket client), read once from node_modules when first asked for. Each path carries a part of
 * its content hash, so it is cached for a year and a new version is a new path.
 */
export interface PageAsset extends PageScriptAsset {
  body: Buffer;
  type: string;
}

const ASSET_ROOT = '/dashboard/assets';
/** The assets' route as metrics name it (their file names carry a content hash). */
export const ASSET_ROUTE = `${ASSET_ROOT}/:file`;

export function isAssetPath(path: string): boolean {
  return path.startsWith(`${ASSET_ROOT}/`);
}

function packageFile(pkg: string, file: string): Buffer {
  return fs.readFileSync(path.join(path.dirname(require.resolve(`${pkg}/package.json`)), file));
}

function asset(name: string, type: string, body: Buffer): PageAsset {
  const hash = sha256Source(body);
  const tag = Buffer.from(hash.slice('sha256-'.length), 'base64').toString('hex').slice(0, 12);
  const dot = name.indexOf('.');
  return { path: `${ASSET_ROOT}/${name.slice(0, dot)}.${tag}${name.slice(dot)}`, hash, body, type };
}

let loaded: { graphqlWs: PageAsset; uplot: PageAsset; uplotCss: string } | undefined;

/** The dashboard's third-party files: graphql-ws's browser build and uPlot (script and its stylesheet). */
export function dashboardAssets(): { graphqlWs: PageAsset; uplot: PageAsset; uplotCss: string } {
  loaded ??= {
    graphqlWs: asset('graphql-ws.min.js', 'application/javascript; charset=utf-8', packageFile('graphql-ws', 'umd/graphql-ws.min.js')),
    uplot: asset('uplot.min.js', 'application/javascript; charset=utf-8', packageFile('uplot', 'dist/uPlot.iife.min.js')),
    // Inlined into the page (allowed by its hash), so it needs no route.
    uplotCss: packageFile('uplot', 'dist/uPlot.min.css').toString('utf8'),
  };
  return loaded;
}

/** Answers a GET for one of the assets; false when the path is none of them. */
export function serveAsset(ctx: Context): boolean {
  if (!ctx.path.startsWith(`${ASSET_ROOT}/`)) return false;
  const { graphqlWs, uplot } = dashboardAssets();
  const found = [graphqlWs, uplot].find((a) => a.path === ctx.path);
  if (!found) return false;
  ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
  ctx.set('Cross-Origin-Resource-Policy', 'same-origin');
  ctx.type = found.type;
  ctx.body = found.body;
  return true;
}
