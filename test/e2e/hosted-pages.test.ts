import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import type { Browser, BrowserContext, Page, Request } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { launchChromium, saveScreenshot, watchProblems, type PageProblems } from '../../scripts/chromium';

/**
 * The hosted pages in a real browser (Debian's Chromium through playwright-core): a customer
 * pays a checkout session, is declined, saves a card, pays a payment link, pays a sent invoice
 * (after a decline too); the inactive, complete, paid, expired and unknown states; a 360 px phone. Every page must run without console errors or CSP
 * violations, and afterwards neither the database nor the service's log holds a card number or CVC.
 * Screenshots of each state go to test/e2e/screenshots/ (ignored by git) for a person to look at.
 */

const SHOTS = path.join(__dirname, 'screenshots');
// Distinctive CVCs, so the final scan cannot mistake them for anything else the service writes.
const CARDS = {
  visa: { number: '4242424242424242', typed: '4242 4242 4242 4242' },
  declined: { number: '4000000000000002', typed: '4000 0000 0000 0002' },
  mastercard: { number: '5555555555554444', typed: '5555 5555 5555 4444' },
};
const CVCS = ['7319', '8642', '5173', '6284', '3917', '2851', '9463'];
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

/** A fresh context per test (no cookies or storage carried over), watched for problems. */
async function newPage(viewport = { width: 900, height: 1000 }): Promise<Page> {
  context = await browser.newContext({ viewport });
  context.setDefaultTimeout(20_000);
  problems = await watchProblems(context);
  return context.newPage();
}
afterEach(async () => {
  await context?.close();
});

function expectNoProblems(): void {
  expect(problems).toEqual({ consoleErrors: [], pageErrors: [], cspViolations: [] });
}

/**
 * A page answered with an error status (404, 410) makes Chromium itself log that status for the
 * document; the page must add nothing to it.
 */
function expectOnlyDocumentStatus(url: string, status: string): void {
  expect(problems).toEqual({ consoleErrors: [`Failed to load resource: the server responded with a status of ${status} at ${url}`], pageErrors: [], cspViolations: [] });
}

/** The page at the path of an object's `url`, on the test server's own address. */
const pageUrl = (url: string) => new URL(new URL(url).pathname, app.baseUrl).toString();
const shot = (page: Page, name: string) => saveScreenshot(page, path.join(SHOTS, `${DIALECT}-${name}.png`), { fullPage: true });

async function createSession(body: Record<string, unknown>) {
  const res = await app.request('POST', '/v1/checkout-sessions', { key, body });
  expect(res.status).toBe(201);
  return res.body.data as { id: string; url: string };
}

async function fillCard(page: Page, card: { typed: string }, cvc: string): Promise<void> {
  await page.getByLabel('Card number').fill(card.typed);
  await page.getByLabel('Expiry').fill(expiry);
  await page.getByLabel('CVC').fill(cvc);
}

/** Every request the page sends to a public pay route. */
function payRequests(page: Page): Request[] {
  const seen: Request[] = [];
  page.on('request', (r) => {
    if (/\/v1\/public\/.+\/pay$/.test(new URL(r.url()).pathname)) seen.push(r);
  });
  return seen;
}

describe('the hosted checkout page', () => {
  it('should pay with 4242 4242 4242 4242 and land on the success URL', async () => {
    const successUrl = `${app.baseUrl}/?paid=checkout`;
    const s = await createSession({ mode: 'payment', amount: 2500, currency: 'eur', description: 'Order 1042', successUrl });
    const page = await newPage();
    const sent = payRequests(page);
    const res = await page.goto(pageUrl(s.url));
    expect(res?.status()).toBe(200);
    await expect(page.title()).resolves.toContain('Pay');
    expect(await page.locator('meta[name="viewport"]').getAttribute('content')).toContain('width=device-width');
    await fillCard(page, CARDS.visa, CVCS[0]);
    await shot(page, 'checkout-filled');
    await page.getByRole('button', { name: 'Pay 25.00 EUR' }).click();
    await page.waitForURL(successUrl);
    await shot(page, 'checkout-success-url');

    const session = (await app.request('GET', `/v1/checkout-sessions/${s.id}`, { key })).body.data;
    expect(session).toMatchObject({ status: 'complete', paymentId: expect.stringMatching(/^pay_/) });
    const payment = (await app.request('GET', `/v1/payments/${session.paymentId}`, { key })).body.data;
    expect(payment).toMatchObject({ status: 'succeeded', amount: 2500, currency: 'EUR', checkoutSessionId: s.id });
    // One JSON POST to this origin's pay route, with an Idempotency-Key, the card only in its body.
    expect(sent).toHaveLength(1);
    const [request] = sent;
    expect(request.method()).toBe('POST');
    expect(new URL(request.url()).origin).toBe(new URL(app.baseUrl).origin);
    expect(request.url()).not.toContain(CARDS.visa.number);
    expect(request.headers()['content-type']).toBe('application/json');
    expect(request.headers()['idempotency-key']).toMatch(/^pay_[0-9a-f]{32}$/);
    expect(request.postDataJSON()).toEqual({ card: { number: CARDS.visa.number, expMonth: 12, expYear: expect.any(Number), cvc: CVCS[0] } });
    expect(await context.cookies()).toEqual([]);
    expectNoProblems();
  });

  it('should show a decline in the alert region, keep the form and the session open, then pay with another card', async () => {
    const s = await createSession({ mode: 'payment', amount: 1250, currency: 'usd', customerEmail: 'decline@example.com', cancelUrl: `${app.baseUrl}/?cancelled=1` });
    const page = await newPage();
    const sent = payRequests(page);
    await page.goto(pageUrl(s.url));
    // A session that names the payer's e-mail shows it instead of asking.
    await page.getByText('Paying as decline@example.com').waitFor();
    expect(await page.getByLabel('E-mail').count()).toBe(0);
    await fillCard(page, CARDS.declined, CVCS[1]);
    await page.getByRole('button', { name: 'Pay 12.50 USD' }).click();
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: 'declined' }).waitFor();
    await shot(page, 'checkout-declined');
    expect(await alert.textContent()).toMatch(/declined/);
    // The form is kept as it was, ready for another card.
    expect(await page.getByLabel('Card number').inputValue()).toBe(CARDS.declined.typed);
    expect(await page.getByRole('button', { name: 'Pay 12.50 USD' }).isEnabled()).toBe(true);
    // The button, disabled while the pay ran, has the focus back for the keyboard.
    await expect(page.evaluate('document.activeElement && document.activeElement.id')).resolves.toBe('pay-button');
    expect((await app.request('GET', `/v1/checkout-sessions/${s.id}`, { key })).body.data.status).toBe('open');
    // Nothing of the card in the page's storage or cookies.
    expect(await page.evaluate('[localStorage.length, sessionStorage.length, document.cookie]')).toEqual([0, 0, '']);

    await fillCard(page, CARDS.visa, CVCS[4]);
    await page.getByRole('button', { name: 'Pay 12.50 USD' }).click();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    await shot(page, 'checkout-success');
    // The form, the test cards and "Cancel and return" go once it is paid.
    expect(await page.locator('#card-form').isVisible()).toBe(false);
    expect(await page.getByRole('link', { name: /Cancel/ }).isVisible()).toBe(false);
    expect(await page.getByText('Test mode: no money moves').isVisible()).toBe(false);
    expect((await app.request('GET', `/v1/checkout-sessions/${s.id}`, { key })).body.data.status).toBe('complete');
    // Two attempts, two keys.
    expect(sent).toHaveLength(2);
    expect(sent[0].headers()['idempotency-key']).not.toBe(sent[1].headers()['idempotency-key']);
    expectNoProblems();

    // Opened again, the page says it is paid and shows no form.
    const again = await page.goto(pageUrl(s.url));
    expect(again?.status()).toBe(200);
    await page.getByRole('heading', { name: 'This checkout is already paid' }).waitFor();
    expect(await page.locator('form, input').count()).toBe(0);
    await shot(page, 'checkout-complete');
    expectNoProblems();
  });

  it('should wait for a payment still being processed and go to the success URL once the session completes', async () => {
    const successUrl = `${app.baseUrl}/?paid=processing`;
    const s = await createSession({ mode: 'payment', amount: 3000, currency: 'eur', successUrl });
    const page = await newPage();
    // The gateway's answer is not known yet: the pay answers `processing` (its payment settles later).
    await page.route('**/v1/public/checkout-sessions/*/pay', (route) =>
      route.fulfill({
        status: 200,
        contentType: 'application/json',
        body: JSON.stringify({ data: { status: 'processing', paymentId: 'pay_pending', subscriptionId: null, paymentMethodId: null, failureCode: null, failureMessage: null, redirectUrl: null }, error: null }),
      }),
    );
    await page.goto(pageUrl(s.url));
    await fillCard(page, CARDS.visa, CVCS[0]);
    await page.getByRole('button', { name: 'Pay 30.00 EUR' }).click();
    await page.getByRole('alert').filter({ hasText: 'being processed' }).waitFor();
    await shot(page, 'checkout-processing');
    expect(await page.locator('#pay-button').isDisabled()).toBe(true);
    // The payment settles (here: the session is paid), and the page, reading the session, follows.
    const paid = await app.request('POST', `/v1/public/checkout-sessions/${s.id}/pay`, { body: { card: { number: CARDS.visa.number, expMonth: 12, expYear: 2040, cvc: CVCS[0] } } });
    expect(paid.body.data.status).toBe('succeeded');
    await page.waitForURL(successUrl);
    expectNoProblems();
  });

  it('should check the card in the page before sending anything', async () => {
    const s = await createSession({ mode: 'payment', amount: 500, currency: 'jpy' });
    const page = await newPage();
    const sent = payRequests(page);
    await page.goto(pageUrl(s.url));
    await page.getByLabel('Card number').fill('4242 4242 4242 4241');
    await page.getByLabel('Expiry').fill('01/20');
    await page.getByLabel('CVC').fill('12');
    await page.getByLabel('E-mail').fill('not-an-address');
    await page.getByRole('button', { name: 'Pay 500 JPY' }).click();
    await page.getByRole('alert').filter({ hasText: 'card number' }).waitFor();
    for (const label of ['Card number', 'Expiry', 'CVC', 'E-mail']) {
      expect([label, await page.getByLabel(label).getAttribute('aria-invalid')]).toEqual([label, 'true']);
    }
    expect(await page.locator('#card-expiry-error').textContent()).toMatch(/past/);
    expect(await page.locator('#card-cvc-error').textContent()).toMatch(/CVC/);
    await expect(page.evaluate('document.activeElement && document.activeElement.id')).resolves.toBe('card-number');
    await shot(page, 'checkout-invalid');
    expect(sent).toHaveLength(0);
    expectNoProblems();
  });

  it('should save the card of a setup session, which then appears under the customer\'s payment methods', async () => {
    const customer = (await app.request('POST', '/v1/customers', { key, body: { email: 'setup@example.com', name: 'Ada' } })).body.data;
    const s = await createSession({ mode: 'setup', customerId: customer.id });
    const page = await newPage();
    await page.goto(pageUrl(s.url));
    await page.getByRole('heading', { name: 'Save a card' }).waitFor();
    await shot(page, 'checkout-setup');
    await fillCard(page, CARDS.mastercard, CVCS[2]);
    await page.getByRole('button', { name: 'Save card' }).click();
    await page.getByRole('heading', { name: 'Card saved' }).waitFor();
    await shot(page, 'checkout-setup-saved');
    const session = (await app.request('GET', `/v1/checkout-sessions/${s.id}`, { key })).body.data;
    expect(session).toMatchObject({ status: 'complete', paymentMethodId: expect.any(String) });
    const methods = (await app.request('GET', `/v1/customers/${customer.id}/payment-methods`, { key })).body.data;
    expect(methods).toEqual([expect.objectContaining({ id: session.paymentMethodId, isDefault: true, card: expect.objectContaining({ last4: '4444', brand: 'mastercard' }) })]);
    expectNoProblems();
  });

  it('should show an expired session as expired, without a form', async () => {
    const s = await createSession({ mode: 'payment', amount: 990, currency: 'gbp', cancelUrl: `${app.baseUrl}/?cancelled=1` });
    expect((await app.request('POST', `/v1/checkout-sessions/${s.id}/expire`, { key })).status).toBe(200);
    const page = await newPage();
    const res = await page.goto(pageUrl(s.url));
    expect(res?.status()).toBe(200);
    await page.getByRole('heading', { name: 'This checkout has expired' }).waitFor();
    expect(await page.locator('form, input').count()).toBe(0);
    expect(await page.getByRole('link', { name: /Return to/ }).getAttribute('href')).toBe(`${app.baseUrl}/?cancelled=1`);
    await shot(page, 'checkout-expired');
    expectNoProblems();
  });

  it('should answer an unknown session with a 404 page', async () => {
    const page = await newPage();
    const url = `${app.baseUrl}/checkout/cs_doesnotexist`;
    const res = await page.goto(url);
    expect(res?.status()).toBe(404);
    await page.getByRole('heading', { name: 'Checkout not found' }).waitFor();
    await shot(page, 'checkout-not-found');
    expectOnlyDocumentStatus(url, '404 (Not Found)');
  });

  it('should show the whole form on a 360 px wide phone', async () => {
    const s = await createSession({ mode: 'payment', amount: 123456, currency: 'eur', description: 'A rather long description of the order, to see it wrap on a narrow screen' });
    const page = await newPage({ width: 360, height: 740 });
    await page.goto(pageUrl(s.url));
    await shot(page, 'checkout-360px');
    const controls = page.locator('#card-form input, #card-form button');
    // Card number, expiry, CVC, e-mail and the button (a one-time payment asks no name).
    expect(await controls.count()).toBe(5);
    for (const control of await controls.all()) {
      const box = await control.boundingBox();
      const id = (await control.getAttribute('id')) as string;
      expect([id, box !== null && box.x >= 0 && box.x + box.width <= 360 && box.width >= 100]).toEqual([id, true]);
    }
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);
    expectNoProblems();
  });
});

describe('the hosted payment link page', () => {
  it('should pay a payment link as an anonymous payer, the e-mail kept as the receipt\'s', async () => {
    const link = (await app.request('POST', '/v1/payment-links', { key, body: { name: 'Concert ticket', description: 'Row 4, seat 12', amount: 1900, currency: 'usd' } })).body.data;
    const page = await newPage();
    const res = await page.goto(pageUrl(link.url));
    expect(res?.status()).toBe(200);
    await shot(page, 'link-open');
    await fillCard(page, CARDS.visa, CVCS[3]);
    // An anonymous payer: the e-mail is the receipt's, and no name is asked (none would be kept).
    expect(await page.getByLabel('Name').count()).toBe(0);
    await page.getByLabel('E-mail').fill('grace@example.com');
    await page.getByRole('button', { name: 'Pay 19.00 USD' }).click();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    await shot(page, 'link-paid');
    const payments = (await app.request('GET', '/v1/payments?pageSize=100', { key })).body.data.filter((p: { paymentLinkId: string }) => p.paymentLinkId === link.id);
    expect(payments).toEqual([expect.objectContaining({ status: 'succeeded', amount: 1900, currency: 'USD', customerId: null, receiptEmail: 'grace@example.com' })]);
    expectNoProblems();
  });

  it('should repeat a pay whose answer was lost under the same Idempotency-Key, charging once', async () => {
    const link = (await app.request('POST', '/v1/payment-links', { key, body: { name: 'Lost answer', amount: 700, currency: 'eur' } })).body.data;
    const page = await newPage();
    const sent = payRequests(page);
    let lose = true;
    // The first pay reaches the service and is charged, but its answer never reaches the page.
    await page.route('**/v1/public/payment-links/*/pay', async (route) => {
      if (!lose) return route.continue();
      lose = false;
      const request = route.request();
      const delivered = await app.request('POST', new URL(request.url()).pathname, {
        rawBody: request.postData() ?? '',
        headers: { 'content-type': 'application/json', 'idempotency-key': request.headers()['idempotency-key'] },
      });
      expect(delivered.body.data.status).toBe('succeeded');
      await route.abort('connectionreset');
    });
    await page.goto(pageUrl(link.url));
    await fillCard(page, CARDS.visa, CVCS[3]);
    await page.getByRole('button', { name: 'Pay 7.00 EUR' }).click();
    await page.getByRole('alert').filter({ hasText: 'could not reach' }).waitFor();
    await shot(page, 'link-network-error');
    await page.getByRole('button', { name: 'Pay 7.00 EUR' }).click();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    expect(sent).toHaveLength(2);
    expect(sent[1].headers()['idempotency-key']).toBe(sent[0].headers()['idempotency-key']);
    expect((await sent[1].response())?.headers()['idempotent-replayed']).toBe('true');
    const payments = (await app.request('GET', '/v1/payments?pageSize=100', { key })).body.data.filter((p: { paymentLinkId: string }) => p.paymentLinkId === link.id);
    expect(payments).toHaveLength(1);
    // Chromium reports the reset connection itself; the page adds nothing.
    expect(problems.pageErrors).toEqual([]);
    expect(problems.cspViolations).toEqual([]);
    expect(problems.consoleErrors.every((e) => e.includes('net::ERR_CONNECTION_RESET'))).toBe(true);
  });

  it('should answer an inactive link with a 410 page saying so, and no form', async () => {
    const link = (await app.request('POST', '/v1/payment-links', { key, body: { name: 'Old offer', amount: 500, currency: 'eur' } })).body.data;
    expect((await app.request('PATCH', `/v1/payment-links/${link.id}`, { key, body: { status: 'inactive' } })).status).toBe(200);
    const page = await newPage();
    const res = await page.goto(pageUrl(link.url));
    expect(res?.status()).toBe(410);
    await page.getByRole('heading', { name: 'This payment link is inactive' }).waitFor();
    expect(await page.locator('form, input, button').count()).toBe(0);
    await shot(page, 'link-inactive');
    expectOnlyDocumentStatus(pageUrl(link.url), '410 (Gone)');
  });
});

describe('the hosted invoice page', () => {
  interface InvoiceLine { description: string; quantity?: number; unitAmount: number }
  /** A customer and a sent invoice for them, as the API returns it after the send. */
  async function sentInvoice(currency: string, lineItems: InvoiceLine[], extra: Record<string, unknown> = {}) {
    const customer = (await app.request('POST', '/v1/customers', { key, body: { email: `payer-${Math.random().toString(36).slice(2)}@example.com`, name: 'Ada Lovelace' } })).body.data;
    const created = await app.request('POST', '/v1/invoices', { key, body: { customerId: customer.id, currency, lineItems, ...extra } });
    expect(created.status).toBe(201);
    const sent = await app.request('POST', `/v1/invoices/${created.body.data.id}/send`, { key });
    expect(sent.status).toBe(200);
    expect(sent.body.data).toMatchObject({ status: 'sent', hostedUrl: expect.stringMatching(/\/invoice\/in_/) });
    return sent.body.data as { id: string; number: string; customerId: string; hostedUrl: string };
  }
  /**
   * On how many lines the browser laid out `text` inside the element of `selector` (the rects of
   * its text range; a string, as the project compiles without the DOM's types).
   */
  const linesOf = (page: Page, selector: string, text: string) =>
    page.evaluate<number>(`(() => {
      const walker = document.createTreeWalker(document.querySelector(${JSON.stringify(selector)}), NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        const at = node.textContent.indexOf(${JSON.stringify(text)});
        if (at < 0) continue;
        const range = document.createRange();
        range.setStart(node, at);
        range.setEnd(node, at + ${JSON.stringify(text)}.length);
        return new Set(Array.from(range.getClientRects(), (r) => Math.round(r.top))).size;
      }
      return 0;
    })()`);
  const invoicePayments = async (invoiceId: string) =>
    (await app.request('GET', '/v1/payments?pageSize=100', { key })).body.data.filter((p: { invoiceId: string | null }) => p.invoiceId === invoiceId);

  it('should pay a sent invoice with 4242 4242 4242 4242, the invoice then paid with a payment carrying its id', async () => {
    const inv = await sentInvoice('usd', [
      { description: 'Consulting, November', quantity: 3, unitAmount: 15000 },
      { description: 'Travel expenses', unitAmount: 4250 },
    ], { dueDate: '2026-12-31' });
    const page = await newPage();
    const sent = payRequests(page);
    const res = await page.goto(pageUrl(inv.hostedUrl));
    expect(res?.status()).toBe(200);
    await expect(page.title()).resolves.toContain(`Pay invoice ${inv.number}`);
    // What is being paid: the number, the amount due, the due date and every line.
    // Amounts and dates as the customer's locale (en, the default) writes them, as in the PDF and the mail.
    await page.getByRole('heading', { name: '$492.50' }).waitFor();
    const summary = (await page.locator('.summary').innerText()).replace(/\s+/g, ' ');
    expect(summary).toContain(`Invoice ${inv.number}`);
    // A date a reader cannot misread (the PDF's English form), not an ISO string.
    expect(summary).toContain('Due Dec 31, 2026');
    expect(summary).toContain('3 × Consulting, November');
    expect(summary).toContain('$450.00');
    expect(summary).toContain('Travel expenses');
    expect(summary).toContain('$42.50');
    await fillCard(page, CARDS.visa, CVCS[5]);
    await shot(page, 'invoice-filled');
    await page.getByRole('button', { name: 'Pay $492.50' }).click();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    await shot(page, 'invoice-paid');
    // The invoice number is one word to the reader: not broken after its hyphen at the line's end.
    expect(await linesOf(page, '#pay-done-text', inv.number)).toBe(1);
    expect(await page.locator('#card-form').isVisible()).toBe(false);
    expect(await page.getByText('Test mode: no money moves').isVisible()).toBe(false);

    expect(sent).toHaveLength(1);
    expect(new URL(sent[0].url()).pathname).toBe(`/v1/public/invoices/${inv.id}/pay`);
    expect(sent[0].postDataJSON()).toEqual({ card: { number: CARDS.visa.number, expMonth: 12, expYear: expect.any(Number), cvc: CVCS[5] } });
    expect((await app.request('GET', `/v1/invoices/${inv.id}`, { key })).body.data).toMatchObject({ status: 'paid', paymentStatus: 'paid', amountPaid: 49250, amountDue: 0, hostedUrl: null });
    expect(await invoicePayments(inv.id)).toEqual([expect.objectContaining({ status: 'succeeded', amount: 49250, currency: 'USD', invoiceId: inv.id, customerId: inv.customerId })]);
    expectNoProblems();

    // Opened again: paid, nothing to fill in.
    const again = await page.goto(pageUrl(inv.hostedUrl));
    expect(again?.status()).toBe(200);
    await page.getByRole('heading', { name: 'This invoice is paid' }).waitFor();
    expect(await page.locator('form, input, button').count()).toBe(0);
    await shot(page, 'invoice-already-paid');
    expect(await linesOf(page, 'h1 + p', inv.number)).toBe(1);
    expectNoProblems();
  });

  it('should show a decline in the alert region, leave the invoice sent with paymentStatus failed, then pay with another card', async () => {
    const inv = await sentInvoice('eur', [{ description: 'Annual licence', unitAmount: 120000 }]);
    const page = await newPage();
    await page.goto(pageUrl(inv.hostedUrl));
    await fillCard(page, CARDS.declined, CVCS[6]);
    await page.getByRole('button', { name: 'Pay €1,200.00' }).click();
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: 'declined' }).waitFor();
    await shot(page, 'invoice-declined');
    expect(await page.getByLabel('Card number').inputValue()).toBe(CARDS.declined.typed);
    expect((await app.request('GET', `/v1/invoices/${inv.id}`, { key })).body.data).toMatchObject({ status: 'sent', paymentStatus: 'failed', amountPaid: 0, amountDue: 120000 });
    expect(await invoicePayments(inv.id)).toEqual([expect.objectContaining({ status: 'failed', invoiceId: inv.id })]);

    await fillCard(page, CARDS.mastercard, CVCS[6]);
    await page.getByRole('button', { name: 'Pay €1,200.00' }).click();
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    expect((await app.request('GET', `/v1/invoices/${inv.id}`, { key })).body.data).toMatchObject({ status: 'paid', paymentStatus: 'paid', amountPaid: 120000 });
    const payments = await invoicePayments(inv.id);
    expect(payments.map((p: { status: string }) => p.status).sort()).toEqual(['failed', 'succeeded']);
    expectNoProblems();
  });

  it('should fit a 360 px wide phone, long lines and all', async () => {
    const inv = await sentInvoice('eur', [
      { description: 'Hosting of the production cluster in two regions with daily backups kept for ninety days', quantity: 12, unitAmount: 98765 },
      { description: 'Support', unitAmount: 5000 },
    ], { dueDate: '2027-01-15' });
    const page = await newPage({ width: 360, height: 740 });
    await page.goto(pageUrl(inv.hostedUrl));
    await shot(page, 'invoice-360px');
    // The long description wraps; each line's amount stays whole, on one line at the right.
    const amounts = page.locator('.lines .line-amount');
    expect(await amounts.allInnerTexts()).toEqual(['€11,851.80', '€50.00']);
    const heights = await Promise.all((await amounts.all()).map(async (a) => (await a.boundingBox())?.height));
    expect(heights[0]).toBe(heights[1]);
    const description = await page.locator('.lines li').first().boundingBox();
    expect(description!.height).toBeGreaterThan(2 * heights[1]!);
    const controls = page.locator('#card-form input, #card-form button');
    expect(await controls.count()).toBe(4);
    for (const control of await controls.all()) {
      const box = await control.boundingBox();
      const id = (await control.getAttribute('id')) as string;
      expect([id, box !== null && box.x >= 0 && box.x + box.width <= 360 && box.width >= 100]).toEqual([id, true]);
    }
    expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);
    expectNoProblems();
  });

  it('should speak German to a German customer: lang="de", German words, amounts like 2.469,12 €, and pay', async () => {
    const customer = (await app.request('POST', '/v1/customers', { key, body: { email: `kunde-${Math.random().toString(36).slice(2)}@example.com`, name: 'Grete Müller', locale: 'de' } })).body.data;
    const created = await app.request('POST', '/v1/invoices', {
      key,
      body: { customerId: customer.id, currency: 'eur', dueDate: '2026-11-29', lineItems: [{ description: 'Beratung', quantity: 2, unitAmount: 100000 }, { description: 'Reisekosten', unitAmount: 46912 }] },
    });
    const inv = (await app.request('POST', `/v1/invoices/${created.body.data.id}/send`, { key })).body.data as { id: string; number: string; hostedUrl: string };
    const page = await newPage();
    await page.goto(pageUrl(inv.hostedUrl));
    expect(await page.locator('html').getAttribute('lang')).toBe('de');
    await expect(page.title()).resolves.toContain(`Rechnung ${inv.number} von Test account bezahlen`);
    // Intl's no-break space between amount and sign: what the browser shows, read as one space.
    const spaced = (text: string) => text.replace(/[\u00a0\u202f]/g, ' ');
    expect(spaced(await page.locator('h1.amount').innerText())).toBe('2.469,12 €');
    const summary = spaced((await page.locator('.summary').innerText()).replace(/\s+/g, ' '));
    expect(summary).toContain(`Rechnung ${inv.number}`);
    expect(summary).toContain('Fällig am 29.11.2026');
    expect(summary).toContain('2 × Beratung');
    expect(summary).toContain('2.000,00 €');
    expect(summary).toContain('469,12 €');
    expect(await page.locator('.badge').innerText()).toBe('Testmodus');
    await shot(page, 'invoice-de');
    await page.getByLabel('Kartennummer').fill(CARDS.visa.typed);
    await page.getByLabel('Ablaufdatum').fill(expiry);
    await page.getByLabel('Prüfnummer (CVC)').fill(CVCS[4]);
    await page.getByRole('button', { name: /^2\.469,12\s€ bezahlen$/ }).click();
    await page.getByRole('heading', { name: 'Zahlung erfolgreich' }).waitFor();
    expect(spaced(await page.locator('#pay-done-text').innerText())).toContain('Test account hat Ihre Zahlung über 2.469,12 € für die Rechnung');
    expect((await app.request('GET', `/v1/invoices/${inv.id}`, { key })).body.data).toMatchObject({ status: 'paid', amountPaid: 246912 });
    await page.goto(pageUrl(inv.hostedUrl));
    await page.getByRole('heading', { name: 'Diese Rechnung ist bezahlt' }).waitFor();
    expect(await page.locator('html').getAttribute('lang')).toBe('de');
    expectNoProblems();
  });

  it("should show a German customer the taxes and say everything in German: processing, the decline, a field's error", async () => {
    const customer = (await app.request('POST', '/v1/customers', { key, body: { email: `kundin-${Math.random().toString(36).slice(2)}@example.com`, name: 'Grete Müller', locale: 'de' } })).body.data;
    const rate = (await app.request('POST', '/v1/tax-rates', { key, body: { displayName: 'USt', percentage: 19, inclusive: false } })).body.data;
    const created = await app.request('POST', '/v1/invoices', {
      key, body: { customerId: customer.id, currency: 'eur', lineItems: [{ description: 'Beratung', unitAmount: 100000 }], defaultTaxRateIds: [rate.id] },
    });
    // 100000 × 19 % = 19000 on top: 119000 in all.
    expect(created.body.data).toMatchObject({ subtotal: 100000, tax: 19000, total: 119000 });
    const inv = (await app.request('POST', `/v1/invoices/${created.body.data.id}/send`, { key })).body.data as { id: string; hostedUrl: string };
    const page = await newPage();
    await page.goto(pageUrl(inv.hostedUrl));
    const spaced = (text: string) => text.replace(/[\u00a0\u202f]/g, ' ').replace(/\s+/g, ' ').trim();
    const rows = (await page.locator('.totals li').allInnerTexts()).map(spaced);
    expect(rows).toEqual(['Zwischensumme 1.000,00 €', 'USt 19 % auf 1.000,00 € 190,00 €', 'Gesamtbetrag 1.190,00 €', 'Offener Betrag 1.190,00 €']);

    await page.getByLabel('Kartennummer').fill(CARDS.declined.typed);
    await page.getByLabel('Ablaufdatum').fill(expiry);
    await page.getByLabel('Prüfnummer (CVC)').fill(CVCS[2]);
    // The pay held until the page has said it is working on it.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route('**/v1/public/invoices/*/pay', async (route) => {
      await held;
      await route.continue();
    });
    await page.getByRole('button', { name: /^1\.190,00\s€ bezahlen$/ }).click();
    await page.getByRole('button', { name: 'Wird verarbeitet …' }).waitFor();
    release();
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: 'abgelehnt' }).waitFor();
    expect(await alert.innerText()).toBe('Ihre Karte wurde abgelehnt. Versuchen Sie es mit einer anderen Karte oder wenden Sie sich an Ihre Bank.');
    await shot(page, 'invoice-de-declined');
    // A check in the page, in German too.
    await page.getByLabel('Prüfnummer (CVC)').fill('');
    await page.getByRole('button', { name: /^1\.190,00\s€ bezahlen$/ }).click();
    await alert.filter({ hasText: 'Prüfnummer' }).waitFor();
    expect(await page.locator('#card-cvc-error').innerText()).toBe('Geben Sie die 3- oder 4-stellige Prüfnummer von der Rückseite der Karte ein.');
    expectNoProblems();
  });

  it('should answer an unknown invoice with a 404 page', async () => {
    const page = await newPage();
    const url = `${app.baseUrl}/invoice/in_doesnotexist`;
    const res = await page.goto(url);
    expect(res?.status()).toBe(404);
    await page.getByRole('heading', { name: 'Invoice not found' }).waitFor();
    expectOnlyDocumentStatus(url, '404 (Not Found)');
  });
});

describe('after the browser runs', () => {
  /** Every stored byte: the SQLite files as they are on disk (free pages too), or every row of every PostgreSQL table as text. */
  async function databaseText(): Promise<string> {
    if (DIALECT === 'sqlite') {
      const file = app.config.databaseUrl.replace(/^sqlite:/, '');
      return ['', '-wal', '-journal']
        .filter((suffix) => fs.existsSync(file + suffix))
        .map((suffix) => fs.readFileSync(file + suffix).toString('latin1'))
        .join('\n');
    }
    const client = new Client({ connectionString: app.config.databaseUrl });
    await client.connect();
    try {
      const tables = await client.query<{ name: string }>(
        "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
      );
      const texts: string[] = [];
      for (const { name } of tables.rows) {
        const rows = await client.query<{ row: string }>(`SELECT t::text AS row FROM "${name}" t`);
        texts.push(...rows.rows.map((r) => r.row));
      }
      expect(texts.length).toBeGreaterThan(0);
      return texts.join('\n');
    } finally {
      await client.end();
    }
  }

  /** A value standing alone (not inside a longer run of letters and digits). */
  const token = (value: string) => new RegExp(`(?<![0-9A-Za-z])${value}(?![0-9A-Za-z])`);

  it('should find no card number and no CVC in the database or the service log', async () => {
    const stored = await databaseText();
    const log = app.logs.join('');
    // The scan reads what was paid: the payments are there, their card numbers are not.
    expect(stored).toContain('4242');
    for (const [where, text] of [['database', stored], ['log', log]] as const) {
      for (const card of Object.values(CARDS)) {
        expect([where, card.number, text.includes(card.number) || text.includes(card.typed)]).toEqual([where, card.number, false]);
      }
      for (const cvc of CVCS) expect([where, cvc, token(cvc).test(text)]).toEqual([where, cvc, false]);
    }
  });
});
