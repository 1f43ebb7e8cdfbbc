import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app';
import { launchChromium, saveScreenshot, watchProblems, type PageProblems } from '../../scripts/chromium';
import { DIALECT } from '../helpers/db';

/**
 * Issue 31 in a real browser (Debian's Chromium): another website cannot make its visitors'
 * browsers post card attempts to the public pay routes, and the hosted pages say clearly when a
 * pay is refused as one of too many failed attempts, or because the e-mail is a customer's.
 */

let app: TestApp;
let key: string;
let browser: Browser;
let context: BrowserContext;
let problems: PageProblems;
/** Another origin (plain HTTP on another port) serving the page it is given. */
let elsewhere: http.Server;
let elsewherePage = '';

beforeAll(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  app = await startTestApp();
  key = app.account.testKey;
  browser = await launchChromium({ trustCertPem: app.server.cert });
  elsewhere = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(elsewherePage);
  });
  await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => elsewhere?.close(resolve));
  await app?.stop();
});

async function newPage(): Promise<Page> {
  context = await browser.newContext({ viewport: { width: 900, height: 1000 } });
  context.setDefaultTimeout(20_000);
  problems = await watchProblems(context);
  return context.newPage();
}
afterEach(async () => {
  await context?.close();
});

const expiry = `12/${String((new Date().getFullYear() + 3) % 100).padStart(2, '0')}`;
/** Screenshots of the refusals' states go to test/e2e/screenshots/ (ignored by git) for a person to look at. */
const SHOTS = path.join(__dirname, 'screenshots');
const shot = (page: Page, name: string) => saveScreenshot(page, path.join(SHOTS, `${DIALECT}-${name}.png`), { fullPage: true });
const pageUrl = (url: string) => new URL(new URL(url).pathname, app.baseUrl).toString();

async function create(path: string, body: Record<string, unknown>) {
  const res = await app.request('POST', path, { key, body });
  expect(res.status).toBe(201);
  return res.body.data;
}

/**
 * The refusal's status (422, 429) makes Chromium itself log it for the pay request, as for any
 * error answer to a fetch; the page adds nothing to it.
 */
function expectOnlyRefusal(status: string, path: string): void {
  expect(problems).toEqual({
    consoleErrors: [`Failed to load resource: the server responded with a status of ${status} at ${new URL(path, app.baseUrl)}`], pageErrors: [], cspViolations: [],
  });
}

async function payOnPage(page: Page, number: string, button: string): Promise<void> {
  await page.getByLabel('Card number').fill(number);
  await page.getByLabel('Expiry').fill(expiry);
  await page.getByLabel('CVC').fill('123');
  await page.getByRole('button', { name: button }).click();
}

/** Five declined cards in a row on the page, each answered before the next (the alert cleared in between). */
async function declineFiveTimes(page: Page, button: string): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await payOnPage(page, '4000 0000 0000 0002', button);
    await page.getByRole('alert').filter({ hasText: 'declined' }).waitFor();
    await page.getByRole('button', { name: button }).and(page.locator(':enabled')).waitFor();
    await page.evaluate("document.getElementById('pay-status').textContent = ''");
  }
}

/** The access log's lines for requests to `path` (method and status). */
function logged(path: string): Array<{ method: string; status: number }> {
  return app.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request' && l.path === path).map((l) => ({ method: l.method, status: l.status }));
}

describe('a pay posted from another website', () => {
  it('should create no payment: a text/plain post is refused (415), a JSON one never leaves the browser', async () => {
    const link = await create('/v1/payment-links', { name: 'Cross-site', amount: 100, currency: 'usd' });
    const path = `/v1/public/payment-links/${link.slug}/pay`;
    const payUrl = new URL(path, app.baseUrl).toString();
    const body = JSON.stringify({ card: { number: '4242424242424242', expMonth: 12, expYear: 2034, cvc: '123' }, email: 'visitor@example.com' });
    // What a card-testing site would run in its visitors' browsers: no preflight for text/plain.
    elsewherePage = `<!doctype html><title>Win a prize</title><script>
window.results = [];
(async function () {
  try { await fetch(${JSON.stringify(payUrl)}, { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' }, body: ${JSON.stringify(body)} }); results.push('simple post sent'); }
  catch (e) { results.push('simple post failed'); }
  try { const r = await fetch(${JSON.stringify(payUrl)}, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: ${JSON.stringify(body)} }); results.push('json post answered ' + r.status); }
  catch (e) { results.push('json post blocked'); }
  window.done = true;
})();
</script>`;
    const page = await newPage();
    await page.goto(`http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/`);
    await page.waitForFunction('window.done === true');
    expect(await page.evaluate('window.results')).toEqual(['simple post sent', 'json post blocked']);
    // The simple post reached the service and was refused; the JSON one was preflighted, never granted, never sent.
    expect(logged(path)).toEqual([{ method: 'POST', status: 415 }, { method: 'OPTIONS', status: 405 }]);
    const payments = (await app.request('GET', '/v1/payments?pageSize=100', { key })).body.data;
    expect(payments.filter((p: { paymentLinkId: string }) => p.paymentLinkId === link.id)).toEqual([]);
  });
});

describe('the hosted pages\' refusals', () => {
  it('should say on a subscription checkout that the e-mail belongs to a customer, saving no card', async () => {
    const ada = await create('/v1/customers', { email: 'ada.page@example.com' });
    const product = await create('/v1/products', { name: 'Pro' });
    const price = await create('/v1/prices', { productId: product.id, unitAmount: 900, currency: 'usd', recurring: { interval: 'month' } });
    const session = await create('/v1/checkout-sessions', { mode: 'subscription', priceId: price.id });
    const page = await newPage();
    await page.goto(pageUrl(session.url));
    await page.getByLabel('E-mail').fill('ADA.page@example.com');
    await payOnPage(page, '4000 0000 0000 0341', 'Pay 9.00 USD every month');
    await page.getByRole('alert').filter({ hasText: 'already belongs to a customer account' }).waitFor();
    expect(await page.locator('#payer-email-error').textContent()).toContain('Ask the merchant for a link to your account');
    await shot(page, 'checkout-customer-exists');
    expect(await page.getByRole('button', { name: 'Pay 9.00 USD every month' }).isEnabled()).toBe(true);
    expect((await app.request('GET', `/v1/customers/${ada.id}/payment-methods`, { key })).body.data).toEqual([]);
    expectOnlyRefusal('422 (Unprocessable Entity)', `/v1/public/checkout-sessions/${session.id}/pay`);
  });

  it('should close a checkout after 5 declines: the sixth try says so, and the page no longer shows a form', async () => {
    const session = await create('/v1/checkout-sessions', { mode: 'payment', amount: 1250, currency: 'usd' });
    const page = await newPage();
    await page.goto(pageUrl(session.url));
    const alert = page.getByRole('alert');
    await declineFiveTimes(page, 'Pay 12.50 USD');
    await payOnPage(page, '4242 4242 4242 4242', 'Pay 12.50 USD');
    await alert.filter({ hasText: 'can no longer be paid' }).waitFor();
    expect(await alert.textContent()).toContain('Nothing was charged');
    expect(await page.locator('#pay-button').isDisabled()).toBe(true);
    await shot(page, 'checkout-too-many-attempts');
    await page.reload();
    await page.getByRole('heading', { name: 'This checkout can no longer be paid' }).waitFor();
    await shot(page, 'checkout-closed');
    expect(await page.locator('form, input').count()).toBe(0);
    // The sixth try reached no gateway: five declined payments.
    const payments = (await app.request('GET', '/v1/payments?pageSize=100', { key })).body.data;
    expect(payments.filter((p: { checkoutSessionId: string }) => p.checkoutSessionId === session.id).map((p: { status: string }) => p.status)).toEqual(Array(5).fill('failed'));
    expectOnlyRefusal('429 (Too Many Requests)', `/v1/public/checkout-sessions/${session.id}/pay`);
  });

  it('should tell a payer on a link page that their connection made too many failed attempts, and when to try again', async () => {
    const link = await create('/v1/payment-links', { name: 'Ticket', amount: 500, currency: 'eur' });
    const page = await newPage();
    await page.goto(pageUrl(link.url));
    const alert = page.getByRole('alert');
    await declineFiveTimes(page, 'Pay 5.00 EUR');
    await payOnPage(page, '4242 4242 4242 4242', 'Pay 5.00 EUR');
    await alert.filter({ hasText: 'Too many failed payment attempts from your connection' }).waitFor();
    expect(await alert.textContent()).toMatch(/try again in \d+ minutes/);
    await shot(page, 'link-too-many-attempts');
    expectOnlyRefusal('429 (Too Many Requests)', `/v1/public/payment-links/${link.slug}/pay`);
  });
});
