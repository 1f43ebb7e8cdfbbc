import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page, Request } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { launchChromium, saveScreenshot, watchProblems, type PageProblems } from '../../scripts/chromium';

/**
 * The API reference at /docs in a real browser: Redoc, served by the service, renders the
 * OpenAPI document without a request leaving the service's origin, without console errors or
 * CSP violations. A screenshot goes to test/e2e/screenshots/ (ignored by git).
 */

const SHOTS = path.join(__dirname, 'screenshots');
let app: TestApp;
let browser: Browser;
let context: BrowserContext;
let problems: PageProblems;

beforeAll(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  app = await startTestApp();
  browser = await launchChromium({ trustCertPem: app.server.cert });
});
afterEach(async () => {
  await context?.close();
});
afterAll(async () => {
  await browser?.close();
  await app?.stop();
});

describe(`GET /docs (${DIALECT})`, () => {
  it('should serve a page loading only its own script, by hash, under a policy allowing nothing else to run', async () => {
    const res = await app.request('GET', '/docs');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    const csp = String(res.headers['content-security-policy']);
    const srcs = [...res.text.matchAll(/\b(?:src|href|spec-url)="([^"]*)"/g)].map((m) => m[1]);
    expect(srcs).toEqual(['data:,', '/v1/openapi.json', '/docs/assets/redoc.standalone.js']);
    const integrity = /integrity="([^"]+)"/.exec(res.text)?.[1];
    expect(csp).toContain(`script-src '${integrity}'`);
    expect(csp).toMatch(/default-src 'none'/);
    expect(csp).not.toMatch(/unsafe-eval|https?:|\*/);
    expect(res.headers['x-frame-options']).toBe('DENY');

    const script = await app.request('GET', '/docs/assets/redoc.standalone.js');
    expect([script.status, script.headers['content-type']]).toEqual([200, 'text/javascript; charset=utf-8']);
    expect(script.buffer.length).toBeGreaterThan(100_000);
    // Redoc's own logo would come from its CDN: the bundle is served without that address.
    expect(script.text).not.toContain('cdn.redoc.ly');
  });

  it('should render every operation of the document in Chromium with no request leaving the origin, no console error and no CSP violation', async () => {
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    context.setDefaultTimeout(30_000);
    problems = await watchProblems(context);
    const page: Page = await context.newPage();
    const requests: string[] = [];
    page.on('request', (r: Request) => requests.push(r.url()));
    await page.goto(new URL('/docs', app.baseUrl).toString());
    // Each operation is a heading of the middle panel, the public ones and the subscriptions' included.
    for (const summary of ['Create a customer', 'Pay a checkout session with a card', "Charge a past-due subscription's open invoice now"]) {
      await page.locator('h2', { hasText: summary }).first().waitFor();
    }
    await saveScreenshot(page, path.join(SHOTS, `${DIALECT}-api-docs.png`));
    const origin = new URL(app.baseUrl).origin;
    expect(requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith('blob:'))).toEqual([]);
    expect(problems).toEqual({ consoleErrors: [], pageErrors: [], cspViolations: [] });
  });
});
