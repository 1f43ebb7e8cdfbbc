import type Koa from 'koa';
import { Router } from '@koa/router';
import type { Services } from '../../src/services';
import { DomainError } from '../../src/core/errors';
import type { PayorchState } from '../../src/http/context';
import { callerOf } from '../../src/http/read-routing';
import { allowReplicaReads } from '../../src/db/read-routing';
import { renderPage } from './page-layout';
import { homePage } from './home.page';
import { checkoutPage } from './checkout.page';
import { paymentLinkPage } from './payment-link.page';
import { invoicePage } from './invoice.page';
import { dashboardPage } from './dashboard.page';
import { serveAsset } from './page-assets';
import { docsRoutes } from './docs.page';
import { authenticationRoutes } from './authentication.page';
import type { Page } from './page';

export type { Page, PageRequest } from './page';

// The API's namespace answers JSON whatever the route; every other path belongs to the pages and
// answers HTML, errors included. Reserved for the hosted pages (API.md §11, §16):
// /checkout/{id}, /pay/{slug}, /invoice/{id}, /dashboard, /docs, and for 3-D Secure
// /payment-return/{paymentId} and the simulator's challenge /simulator/3ds/{id}.
const API_NAMESPACES = [/^\/v\d+(\/|$)/i, /^\/api(\/|$)/i, /^\/graphql(\/|$)/i, /^\/(health|ready|metrics)(\/|$)/i];

export function isPagePath(path: string): boolean {
  return !API_NAMESPACES.some((namespace) => namespace.test(path));
}

export const PAGES: readonly Page[] = [homePage, checkoutPage, paymentLinkPage, invoicePage, dashboardPage];

/** Serves page paths (404/405 as HTML pages); passes API paths on. */
export function pageRoutes(services: Services): Koa.Middleware {
  const router = new Router();
  docsRoutes(router);
  authenticationRoutes(router, services);
  for (const page of PAGES) {
    router.get(page.path, async (ctx) => {
      // A page only shows: with replicas, its reads may go to one (unless its visitor just paid).
      allowReplicaReads(callerOf(ctx));
      const view = await page.render(services, { params: { ...ctx.params }, requestId: (ctx.state as PayorchState).requestId });
      renderPage(ctx, view);
    });
  }
  const dispatch = router.routes();
  return async (ctx, next) => {
    if (!isPagePath(ctx.path)) return next();
    if ((ctx.method === 'GET' || ctx.method === 'HEAD') && serveAsset(ctx)) return;
    const match = router.match(ctx.path, ctx.method);
    if (!match.route) {
      const allowed = [...new Set(match.path.flatMap((layer) => layer.methods))].filter((m) => m !== 'HEAD');
      if (allowed.length > 0) {
        ctx.set('Allow', allowed.join(', '));
        throw new DomainError('method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}; use ${allowed.join(', ')}`);
      }
      throw new DomainError('route_not_found', `No page at ${ctx.path}`);
    }
    await dispatch(ctx as Parameters<typeof dispatch>[0], async () => undefined);
  };
}
