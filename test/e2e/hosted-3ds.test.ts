import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { launchChromium, saveScreenshot, watchProblems, type PageProblems } from '../../scripts/chromium';

/**
 * 3-D Secure on the hosted checkout and payment-link pages in a real browser (Debian's Chromium
 * through playwright-core): the customer pays with a card that asks for a challenge, answers the
 * simulator's challenge page, and comes back to the hosted page, which shows the same success
 * (or goes to the success URL) or the same decline as a card that needed no challenge. After a
 * failed challenge the session stays open and another card pays it. No console errors or CSP
 * violations on any page of the way. Screenshots go to test/e2e/screenshots/ (ignored by git).
 */

const SHOTS = path.join(__dirname, 'screenshots');
const CHALLENGE = '4000 0025 0000 3155';
const VISA = '4242 4242 4242 4242';
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

async function newPage(): Promise<Page> {
  context = await browser.newContext({ viewport: { width: 900, height: 1000 } });
  context.setDefaultTimeout(20_000);
  problems = await watchProblems(context);
  return context.newPage();
}
afterEach(async () => {
  await context?.close();
});

const expectNoProblems = () => expect(problems).toEqual({ consoleErrors: [], pageErrors: [], cspViolations: [] });
const pageUrl = (url: string) => new URL(new URL(url).pathname, app.baseUrl).toString();
const shot = (page: Page, name: string) => saveScreenshot(page, path.join(SHOTS, `${DIALECT}-${name}.png`), { fullPage: true });

async function payWith(page: Page, number: string, button: string): Promise<void> {
  await page.getByLabel('Card number').fill(number);
  await page.getByLabel('Expiry').fill(expiry);
  await page.getByLabel('CVC').fill('123');
  await page.getByRole('button', { name: button }).click();
}

/** The simulator's challenge page, reached from the hosted page's pay; answered with `choice`. */
async function answerChallenge(page: Page, choice: 'Complete' | 'Fail', screenshot?: string): Promise<void> {
  await page.waitForURL(/\/simulator\/3ds\/simchl_/);
  await page.getByRole('heading', { name: 'Authenticate your payment' }).waitFor();
  if (screenshot) await shot(page, screenshot);
  await page.getByRole('button', { name: choice }).click();
}

const sessionOf = async (id: string) => (await app.request('GET', `/v1/checkout-sessions/${id}`, { key })).body.data;
const paymentsOf = async (filter: (p: Record<string, unknown>) => boolean) =>
  ((await app.request('GET', '/v1/payments?pageSize=100', { key })).body.data as Array<Record<string, unknown>>).filter(filter);

describe('3-D Secure on the hosted checkout page', () => {
  it('should complete the challenge and land on the success URL, the session complete', async () => {
    const successUrl = `${app.baseUrl}/?paid=3ds`;
    const s = (await app.request('POST', '/v1/checkout-sessions', { key, body: { mode: 'payment', amount: 3100, currency: 'eur', successUrl } })).body.data;
    const page = await newPage();
    await page.goto(pageUrl(s.url));
    await payWith(page, CHALLENGE, 'Pay 31.00 EUR');
    await answerChallenge(page, 'Complete', '3ds-challenge');
    await page.waitForURL(successUrl);
    const session = await sessionOf(s.id);
    expect(session).toMatchObject({ status: 'complete', paymentId: expect.stringMatching(/^pay_/) });
    expect((await app.request('GET', `/v1/payments/${session.paymentId}`, { key })).body.data).toMatchObject({ status: 'succeeded', amountCaptured: 3100 });
    expectNoProblems();
  });

  it('should show the paid state after a completed challenge when there is no success URL', async () => {
    const s = (await app.request('POST', '/v1/checkout-sessions', { key, body: { mode: 'payment', amount: 1500, currency: 'eur', description: 'Order 3DS-2' } })).body.data;
    const page = await newPage();
    await page.goto(pageUrl(s.url));
    await payWith(page, CHALLENGE, 'Pay 15.00 EUR');
    await answerChallenge(page, 'Complete');
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/checkout/${s.id}`);
    await shot(page, '3ds-checkout-paid');
    expect(await page.getByLabel('Card number').count()).toBe(0);
    expect((await sessionOf(s.id)).status).toBe('complete');
    expectNoProblems();
  });

  it('should show a failed challenge as a decline with the form kept, the session open, then pay with 4242', async () => {
    const s = (await app.request('POST', '/v1/checkout-sessions', { key, body: { mode: 'payment', amount: 2200, currency: 'eur' } })).body.data;
    const page = await newPage();
    await page.goto(pageUrl(s.url));
    await payWith(page, CHALLENGE, 'Pay 22.00 EUR');
    await answerChallenge(page, 'Fail');
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: 'declined' }).waitFor();
    expect(await alert.textContent()).toContain('not confirmed with your bank');
    await shot(page, '3ds-checkout-failed');
    // Back on the hosted page, its address without the payment id (a reload shows the plain form).
    expect(new URL(page.url()).pathname).toBe(`/checkout/${s.id}`);
    expect(new URL(page.url()).search).toBe('');
    expect((await sessionOf(s.id)).status).toBe('open');
    await payWith(page, VISA, 'Pay 22.00 EUR');
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    const session = await sessionOf(s.id);
    expect(session.status).toBe('complete');
    const payments = await paymentsOf((p) => p.checkoutSessionId === s.id);
    expect(payments.map((p) => [p.status, p.failureCode]).sort()).toEqual([['failed', 'authentication_failed'], ['succeeded', null]]);
    expect(session.paymentId).toBe(payments.find((p) => p.status === 'succeeded')?.id);
    expectNoProblems();
  });
});

describe('3-D Secure on the hosted payment link page', () => {
  it('should complete the challenge and show the success state', async () => {
    const link = (await app.request('POST', '/v1/payment-links', { key, body: { name: 'Workshop', amount: 4500, currency: 'eur' } })).body.data;
    const page = await newPage();
    await page.goto(pageUrl(link.url));
    await payWith(page, CHALLENGE, 'Pay 45.00 EUR');
    await answerChallenge(page, 'Complete');
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    await shot(page, '3ds-link-paid');
    expect(new URL(page.url()).pathname).toBe(`/pay/${link.slug}`);
    expect(await paymentsOf((p) => p.paymentLinkId === link.id)).toEqual([expect.objectContaining({ status: 'succeeded', amount: 4500 })]);
    expectNoProblems();
  });

  it('should show a failed challenge as a decline with the form kept, then pay with 4242', async () => {
    const link = (await app.request('POST', '/v1/payment-links', { key, body: { name: 'Donation', amount: 1000, currency: 'eur' } })).body.data;
    const page = await newPage();
    await page.goto(pageUrl(link.url));
    await payWith(page, CHALLENGE, 'Pay 10.00 EUR');
    await answerChallenge(page, 'Fail');
    await page.getByRole('alert').filter({ hasText: 'declined' }).waitFor();
    await shot(page, '3ds-link-failed');
    await payWith(page, VISA, 'Pay 10.00 EUR');
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    const payments = await paymentsOf((p) => p.paymentLinkId === link.id);
    expect(payments.map((p) => p.status).sort()).toEqual(['failed', 'succeeded']);
    expectNoProblems();
  });
});
