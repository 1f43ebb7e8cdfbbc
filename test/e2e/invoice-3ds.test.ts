import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { launchChromium, watchProblems, type PageProblems } from '../../scripts/chromium';

/**
 * The hosted invoice page with 3-D Secure in a real browser (Debian's Chromium through
 * playwright-core; issue 36): a card that asks for a challenge is sent to the simulator's
 * challenge page and, once answered, back to the invoice page, which shows it paid or shows the
 * failure with the card form still there; an invoice whose saved-card charge waits for
 * authentication offers the challenge. Money check: what was captured is what the invoice was paid.
 */

const CHALLENGE = { number: '4000000000003220', typed: '4000 0000 0000 3220' };
const VISA = { typed: '4242 4242 4242 4242' };
const expiry = `12/${String((new Date().getFullYear() + 3) % 100).padStart(2, '0')}`;

let app: TestApp;
let key: string;
let browser: Browser;
let context: BrowserContext;
let problems: PageProblems;

beforeAll(async () => {
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

type Json = Record<string, any>;
const api = async (method: string, path: string, body?: Json) => (await app.request(method, path, { key, body })).body.data;
const pageUrl = (url: string) => new URL(new URL(url).pathname, app.baseUrl).toString();

/** A customer (with a saved card when given) and a sent invoice for them. */
async function sentInvoice(amount: number, savedCard?: string): Promise<{ id: string; number: string; hostedUrl: string; customerId: string }> {
  const customer = await api('POST', '/v1/customers', { email: `tds-${Math.random().toString(36).slice(2)}@example.com`, name: 'Ada Lovelace' });
  if (savedCard) await api('POST', `/v1/customers/${customer.id}/payment-methods`, { card: { number: savedCard, expMonth: 12, expYear: 2040, cvc: '123' }, setDefault: true });
  const created = await api('POST', '/v1/invoices', { customerId: customer.id, currency: 'eur', lineItems: [{ description: 'Annual licence', unitAmount: amount }] });
  return api('POST', `/v1/invoices/${created.id}/send`);
}

async function payWith(page: Page, card: { typed: string }, label: string): Promise<void> {
  await page.getByLabel('Card number').fill(card.typed);
  await page.getByLabel('Expiry').fill(expiry);
  await page.getByLabel('CVC').fill('4821');
  await page.getByRole('button', { name: label }).click();
}

/** The invoice's payments, and the money check: captured in all is what the invoice was paid. */
async function expectCapturedAsPaid(invoiceId: string): Promise<Json[]> {
  const payments = ((await app.request('GET', '/v1/payments?pageSize=100', { key })).body.data as Json[]).filter((p) => p.invoiceId === invoiceId);
  const invoice = await api('GET', `/v1/invoices/${invoiceId}`);
  expect(payments.reduce((sum, p) => sum + p.amountCaptured, 0)).toBe(invoice.amountPaid);
  return payments;
}

function expectNoProblems(): void {
  expect(problems).toEqual({ consoleErrors: [], pageErrors: [], cspViolations: [] });
}

describe(`the hosted invoice page through 3-D Secure (${DIALECT})`, () => {
  it('should run the challenge of a card that asks for one and, completed, come back to the invoice page paid', async () => {
    const inv = await sentInvoice(8900);
    const page = await newPage();
    await page.goto(pageUrl(inv.hostedUrl));
    await payWith(page, CHALLENGE, 'Pay €89.00');
    // The issuer's page (the simulator's): the browser followed the pay result's redirectUrl.
    await page.getByRole('heading', { name: 'Authenticate your payment' }).waitFor();
    expect(new URL(page.url()).pathname).toMatch(/^\/simulator\/3ds\//);
    expect(await api('GET', `/v1/invoices/${inv.id}`)).toMatchObject({ status: 'sent', paymentStatus: 'requires_action' });
    await page.getByRole('button', { name: 'Complete' }).click();
    await page.getByRole('heading', { name: 'This invoice is paid' }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/invoice/${inv.id}`);
    expect(await api('GET', `/v1/invoices/${inv.id}`)).toMatchObject({ status: 'paid', paymentStatus: 'paid', amountPaid: 8900, amountDue: 0 });
    const payments = await expectCapturedAsPaid(inv.id);
    expect(payments.map((p) => [p.status, p.amountCaptured])).toEqual([['succeeded', 8900]]);
    expectNoProblems();
  });

  it('should show a failed challenge on the invoice page with the card form, the invoice still payable', async () => {
    const inv = await sentInvoice(12000);
    const page = await newPage();
    await page.goto(pageUrl(inv.hostedUrl));
    await payWith(page, CHALLENGE, 'Pay €120.00');
    await page.getByRole('heading', { name: 'Authenticate your payment' }).waitFor();
    await page.getByRole('button', { name: 'Fail' }).click();
    // Back on the invoice page: why it failed, and the form to pay again.
    await page.locator('#invoice-payment-failed').waitFor();
    expect(new URL(page.url()).pathname).toBe(`/invoice/${inv.id}`);
    expect(await page.locator('#invoice-payment-failed').innerText()).toContain('not authenticated');
    expect(await page.locator('#card-form').isVisible()).toBe(true);
    expect(await api('GET', `/v1/invoices/${inv.id}`)).toMatchObject({ status: 'sent', paymentStatus: 'failed', amountPaid: 0, amountDue: 12000 });

    await payWith(page, VISA, 'Pay €120.00');
    await page.getByRole('heading', { name: 'Payment successful' }).waitFor();
    expect(await api('GET', `/v1/invoices/${inv.id}`)).toMatchObject({ status: 'paid', amountPaid: 12000, amountDue: 0 });
    const payments = await expectCapturedAsPaid(inv.id);
    expect(payments.map((p) => p.status).sort()).toEqual(['failed', 'succeeded']);
    expectNoProblems();
  });

  it('should offer the challenge of a saved-card charge waiting for authentication, and come back paid', async () => {
    const inv = await sentInvoice(4500, CHALLENGE.number);
    const charged = await api('POST', `/v1/invoices/${inv.id}/pay`, {});
    expect(charged).toMatchObject({ status: 'sent', paymentStatus: 'requires_action' });
    const page = await newPage();
    await page.goto(pageUrl(inv.hostedUrl));
    await page.getByRole('heading', { name: 'Confirm your payment' }).waitFor();
    expect(await page.locator('#card-form').count()).toBe(0);
    await page.getByRole('link', { name: 'Complete authentication' }).click();
    await page.getByRole('button', { name: 'Complete' }).click();
    await page.getByRole('heading', { name: 'This invoice is paid' }).waitFor();
    expect(await api('GET', `/v1/invoices/${inv.id}`)).toMatchObject({ status: 'paid', amountPaid: 4500 });
    const payments = await expectCapturedAsPaid(inv.id);
    expect(payments.map((p) => [p.status, p.amountCaptured])).toEqual([['succeeded', 4500]]);
    expectNoProblems();
  });
});
