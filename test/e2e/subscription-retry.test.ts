import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { launchChromium, saveScreenshot, watchProblems, type PageProblems } from '../../scripts/chromium';

/**
 * A past-due subscription's retry, paid by its customer on the hosted checkout page in a real
 * browser (Debian's Chromium through playwright-core): a decline first, then a working card; the
 * subscription is active again, on that card. Screenshots go to test/e2e/screenshots/.
 */

const SHOTS = path.join(__dirname, 'screenshots');
const expiry = `12/${String((new Date().getFullYear() + 3) % 100).padStart(2, '0')}`;

let app: TestApp;
let key: string;
let browser: Browser;
let context: BrowserContext;
let problems: PageProblems;

beforeAll(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  app = await startTestApp();
  key = app.account.testKey;
  browser = await launchChromium({ trustCertPem: app.server.cert });
});
afterAll(async () => {
  await browser?.close();
  await app?.stop();
});
afterEach(async () => {
  await context?.close();
});

type Json = Record<string, any>;
const api = async (method: string, p: string, body?: Json, status = method === 'POST' ? 201 : 200) => {
  const res = await app.request(method, p, { key, body });
  if (res.status !== status) throw new Error(`${method} ${p}: expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.data as Json;
};
const pageUrl = (url: string) => new URL(new URL(url).pathname, app.baseUrl).toString();
const shot = (page: Page, name: string) => saveScreenshot(page, path.join(SHOTS, `${DIALECT}-${name}.png`), { fullPage: true });

async function newPage(): Promise<Page> {
  context = await browser.newContext({ viewport: { width: 900, height: 1000 } });
  context.setDefaultTimeout(20_000);
  problems = await watchProblems(context);
  return context.newPage();
}

async function fillCard(page: Page, typed: string, cvc: string): Promise<void> {
  await page.getByLabel('Card number').fill(typed);
  await page.getByLabel('Expiry').fill(expiry);
  await page.getByLabel('CVC').fill(cvc);
}

describe('retry payment through the hosted checkout page', () => {
  it('should return a past-due subscription to active once its customer pays the retry session with a new card', async () => {
    const customer = await api('POST', '/v1/customers', { email: 'renewal@example.com' });
    // Saved without trouble, declined at every charge: the subscription starts past due.
    await api('POST', `/v1/customers/${customer.id}/payment-methods`, { card: { number: '4000000000000341', expMonth: 12, expYear: 2040, cvc: '123' } });
    const product = await api('POST', '/v1/products', { name: 'Team plan' });
    const price = await api('POST', '/v1/prices', { productId: product.id, unitAmount: 4900, currency: 'usd', recurring: { interval: 'month' } });
    const sub = await api('POST', '/v1/subscriptions', { customerId: customer.id, priceId: price.id });
    expect(sub.status).toBe('past_due');

    const session = await api('POST', `/v1/subscriptions/${sub.id}/retry-payment`, undefined, 200);
    expect(session).toMatchObject({ status: 'open', invoiceId: sub.latestInvoiceId, subscriptionId: sub.id, amount: 4900 });

    const page = await newPage();
    const res = await page.goto(pageUrl(session.url));
    expect(res?.status()).toBe(200);
    await page.getByRole('heading', { name: '49.00 USD' }).waitFor();
    await page.getByText('Paying as renewal@example.com').waitFor();

    await fillCard(page, '4000 0000 0000 0341', '4817');
    await page.getByRole('button', { name: 'Pay 49.00 USD' }).click();
    await page.getByRole('alert').filter({ hasText: 'declined' }).waitFor();
    await shot(page, 'retry-declined');
    expect((await api('GET', `/v1/subscriptions/${sub.id}`)).status).toBe('past_due');

    await fillCard(page, '4242 4242 4242 4242', '5926');
    await page.getByRole('button', { name: 'Pay 49.00 USD' }).click();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    await shot(page, 'retry-paid');

    const after = await api('GET', `/v1/subscriptions/${sub.id}`);
    expect(after.status).toBe('active');
    const paidSession = await api('GET', `/v1/checkout-sessions/${session.id}`);
    expect(paidSession).toMatchObject({ status: 'complete', paymentId: expect.stringMatching(/^pay_/), paymentMethodId: after.defaultPaymentMethodId });
    expect((await api('GET', `/v1/customers/${customer.id}`)).defaultPaymentMethodId).toBe(after.defaultPaymentMethodId);
    expect(await api('GET', `/v1/invoices/${sub.latestInvoiceId}`)).toMatchObject({ status: 'paid', latestPaymentId: paidSession.paymentId });
    expect(problems).toEqual({ consoleErrors: [], pageErrors: [], cspViolations: [] });

    // Opened again, the page says it is paid.
    await page.goto(pageUrl(session.url));
    await page.getByRole('heading', { name: 'This checkout is already paid' }).waitFor();
  });
});
