import fs from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../helpers/app';
import { spawnInstance, type SpawnedInstance } from '../helpers/spawn';
import { DIALECT } from '../helpers/db';
import { launchChromium, saveScreenshot, watchProblems, type PageProblems } from '../../scripts/chromium';
import { ReceiverHarness, makeCertificate, type Certificate } from '../unit/webhooks/receiver-harness';
import { freePort } from '../helpers/ports';

/**
 * The live dashboard (GET /dashboard) in a real browser: sign in with a pasted key, watch a payment
 * made over the API arrive in the feed and the overview without a reload, find it by search and
 * open its attempts; a live key sees none of the test mode's objects; a restricted key sees the
 * sections it may not read as not allowed. No console errors or CSP violations anywhere.
 * Screenshots go to test/e2e/screenshots/ (ignored by git).
 */

const SHOTS = path.join(__dirname, 'screenshots');
let app: TestApp;
let browser: Browser;
let context: BrowserContext;
let problems: PageProblems;
let instance: SpawnedInstance | undefined;
// A webhook receiver with a certificate of its own, trusted through WEBHOOK_CA_FILE.
let tls: Certificate;
let rx: ReceiverHarness;

beforeAll(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  tls = await makeCertificate();
  rx = new ReceiverHarness(tls);
  await rx.start();
  app = await startTestApp({ env: { WEBHOOK_CA_FILE: tls.caFile } });
  browser = await launchChromium({ trustCertPem: app.server.cert });
});
afterAll(async () => {
  await instance?.stop('SIGKILL');
  await browser?.close();
  await app?.stop();
  await rx?.stop();
});
afterEach(async () => {
  await context?.close();
});

async function newPage(): Promise<Page> {
  context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  context.setDefaultTimeout(20_000);
  problems = await watchProblems(context);
  return context.newPage();
}
const shot = (page: Page, name: string) => saveScreenshot(page, path.join(SHOTS, `${DIALECT}-dashboard-${name}.png`), { fullPage: true });
const expectNoProblems = () => expect(problems).toEqual({ consoleErrors: [], pageErrors: [], cspViolations: [] });

async function signIn(page: Page, key: string, baseUrl = app.baseUrl): Promise<void> {
  const res = await page.goto(`${baseUrl}/dashboard`);
  expect(res?.status()).toBe(200);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('#app').waitFor({ state: 'visible' });
  await page.locator('#conn.live').waitFor();
}

async function pay(key: string, body: Record<string, unknown>) {
  const res = await app.request('POST', '/v1/payments', { key, body });
  expect(res.status).toBe(201);
  return res.body.data as { id: string; status: string };
}

describe('the live dashboard', () => {
  it('should serve the page and its libraries under a strict policy, the libraries cached for a year', async () => {
    const res = await app.request('GET', '/dashboard');
    expect(res.status).toBe(200);
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toMatch(/^default-src 'none'; style-src 'sha256-[^']+' 'sha256-[^']+'; script-src 'sha256-[^']+' 'sha256-[^']+' 'sha256-[^']+'; connect-src 'self'/);
    expect(csp).not.toMatch(/unsafe|\*|https?:/);
    const body = res.text;
    const assets = [...body.matchAll(/<script src="([^"]+)" integrity="([^"]+)">/g)].map((m) => [m[1], m[2]]);
    expect(assets.map(([p]) => p)).toEqual([expect.stringMatching(/^\/dashboard\/assets\/graphql-ws\.[0-9a-f]{12}\.min\.js$/), expect.stringMatching(/^\/dashboard\/assets\/uplot\.[0-9a-f]{12}\.min\.js$/)]);
    for (const [assetPath, hash] of assets) {
      expect(csp).toContain(`'${hash}'`);
      const file = await app.request('GET', assetPath);
      expect(file.status).toBe(200);
      expect(file.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(file.headers['content-type']).toBe('application/javascript; charset=utf-8');
    }
    expect((await app.request('GET', '/dashboard/assets/other.js')).status).toBe(404);
  });

  it('should sign in with a test key and show a payment made over the API in the feed and the overview within 2 s, without a reload', async () => {
    const key = app.account.testKey;
    const page = await newPage();
    await signIn(page, key);
    await expect(page.locator('#test-mode').isVisible()).resolves.toBe(true);
    await page.locator('#chart canvas').waitFor();
    const before = Number(await page.locator('#chart').getAttribute('data-total'));
    await page.evaluate('window.__notReloaded = true');
    await shot(page, 'signed-in');

    const started = Date.now();
    const payment = await pay(key, { amount: 4210, currency: 'eur', paymentMethod: 'pm_card_visa', description: 'Dashboard order 7731' });
    await page.locator(`#feed li[data-type="payment.succeeded"] a[href="#${payment.id}"]`).waitFor({ timeout: 2000 });
    await page.locator(`#chart[data-total="${before + 1}"]`).waitFor({ timeout: Math.max(100, 2000 - (Date.now() - started)) });
    expect(Date.now() - started).toBeLessThan(2000);
    await expect(page.evaluate('window.__notReloaded')).resolves.toBe(true);
    await expect(page.locator('#ov-volume').textContent()).resolves.toContain('€42.10');
    await shot(page, 'live-payment');

    // Search finds it; its detail shows its gateway attempt.
    await page.getByLabel('Search payments').fill('order 7731');
    await page.locator(`#payments-table a[href="#${payment.id}"]`).waitFor();
    await expect(page.locator('#payments-table tbody tr').count()).resolves.toBe(1);
    await page.locator(`#payments-table a[href="#${payment.id}"]`).click();
    const attempts = page.locator('#detail table').first();
    await attempts.waitFor();
    await expect(attempts.locator('tbody tr').allTextContents()).resolves.toEqual([expect.stringMatching(/^gw_builtin_simulatorsucceeded\d+ ms$/)]);
    await expect(page.locator('#detail').textContent()).resolves.toContain('payment.succeeded');
    await shot(page, 'payment-detail');

    // The key is in sessionStorage only: not in the URL, not in a cookie.
    expect(page.url()).not.toContain(key);
    await expect(context.cookies()).resolves.toEqual([]);
    await expect(page.evaluate('sessionStorage.getItem("payorch.dashboard.key")')).resolves.toBe(key);
    expectNoProblems();
  });

  it('should show a live key none of the test mode\'s objects, and no TEST MODE banner', async () => {
    await pay(app.account.testKey, { amount: 1200, currency: 'usd', paymentMethod: 'pm_card_visa', description: 'test only' });
    const page = await newPage();
    await signIn(page, app.account.liveKey);
    await expect(page.locator('#test-mode').isVisible()).resolves.toBe(false);
    await page.locator('#payments-table').getByText('No payments match').waitFor();
    const testPayment = await pay(app.account.testKey, { amount: 1300, currency: 'usd', paymentMethod: 'pm_card_visa' });
    await page.waitForTimeout(700);
    await expect(page.locator('#feed li').count()).resolves.toBe(0);
    await expect(page.locator(`a[href="#${testPayment.id}"]`).count()).resolves.toBe(0);
    await expect(page.locator('#chart').getAttribute('data-total')).resolves.toBe('0');
    await shot(page, 'live-key');
    expectNoProblems();
  });

  it('should show the sections a restricted key cannot read as not allowed', async () => {
    const res = await app.request('POST', '/v1/api-keys', { key: app.account.testKey, body: { name: 'dash', permissions: ['payments:read', 'events:read'] } });
    const page = await newPage();
    await signIn(page, res.body.data.secret);
    for (const id of ['#ov-refunds', '#ov-subscriptions', '#ov-invoices']) {
      await expect(page.locator(id).textContent()).resolves.toMatch(/^Not allowed for this key \(needs (refunds|subscriptions|invoices):read\)$/);
    }
    await page.locator('#chart canvas').waitFor();
    await page.locator('#browse-table').getByText('Not allowed for this key (needs customers:read)').waitFor();
    await shot(page, 'restricted-key');
    expectNoProblems();
  });

  it('should browse customers by search and subscriptions and invoices by status, page by page', async () => {
    const key = app.account.testKey;
    const post = async (p: string, body: Record<string, unknown>) => {
      const res = await app.request('POST', p, { key, body });
      expect(res.status).toBe(201);
      return res.body.data;
    };
    for (let i = 0; i < 22; i++) await post('/v1/customers', { email: `browse-${i}@example.com`, name: `Browse ${i}` });
    const product = await post('/v1/products', { name: 'Dashboard plan' });
    const price = await post('/v1/prices', { productId: product.id, unitAmount: 1500, currency: 'eur', recurring: { interval: 'month' } });
    const customer = await post('/v1/customers', { email: 'subscriber@example.com' });
    const sub = await post('/v1/subscriptions', { customerId: customer.id, priceId: price.id, collectionMethod: 'send_invoice' });

    const page = await newPage();
    await signIn(page, key);
    await page.locator('#browse-info').getByText(/Page 1 of 2 · 2[3-9]/).waitFor();
    // browse-0 was made first: on the second page, so only the search can bring it to the first.
    await page.getByLabel('Search', { exact: true }).fill('browse-0@');
    await page.locator('#browse-info').getByText('Page 1 of 1 · 1 in all').waitFor();
    await expect(page.locator('#browse-table tbody tr').allTextContents()).resolves.toEqual([expect.stringContaining('browse-0@example.com')]);

    await page.getByLabel('Resource', { exact: true }).selectOption('subscriptions');
    await page.locator('#browse-table').getByText(sub.id).waitFor();
    await page.getByLabel('Resource status').selectOption('canceled');
    await page.locator('#browse-table').getByText('None').waitFor();
    await page.getByLabel('Resource', { exact: true }).selectOption('invoices');
    await page.getByLabel('Resource status').selectOption('sent');
    const invoiceRow = page.locator('#browse-table tbody tr').filter({ hasText: customer.id });
    await invoiceRow.waitFor();
    await expect(invoiceRow.textContent()).resolves.toContain('€15.00');
    await expect(invoiceRow.locator('a').getAttribute('href')).resolves.toMatch(/^\/invoice\/in_/);
    await shot(page, 'browse-invoices');
    expectNoProblems();
  });

  it('should list a payment\'s events and its refunds\' in its detail, with more than 100 newer events in the account', async () => {
    const key = app.account.testKey;
    const payment = await pay(key, { amount: 3100, currency: 'eur', paymentMethod: 'pm_card_visa', description: 'older than 100 events' });
    const refund = await app.request('POST', `/v1/payments/${payment.id}/refunds`, { key, body: { amount: 1000 } });
    expect(refund.status).toBe(201);
    for (let i = 0; i < 105; i += 15) {
      await Promise.all(Array.from({ length: 15 }, (_, j) => app.request('POST', '/v1/customers', { key, body: { email: `newer-${i + j}@example.com` } })));
    }
    const latest = await app.request('GET', '/v1/events?pageSize=100', { key });
    expect(latest.body.data.some((e: { data: { object: { id: string } } }) => e.data.object.id === payment.id)).toBe(false);

    const page = await newPage();
    await signIn(page, key);
    await page.evaluate(`location.hash = '#${payment.id}'`);
    const events = page.locator('#detail table').filter({ has: page.locator('th', { hasText: 'Event' }) });
    await events.waitFor();
    const rows = await events.locator('tbody tr').allTextContents();
    expect(rows.some((r) => r.includes('payment.succeeded'))).toBe(true);
    expect(rows.some((r) => r.includes('refund.created'))).toBe(true);
    await shot(page, 'payment-events');
    // An object the feed no longer holds is shown from its latest event: a customer as it is…
    const early = await app.request('GET', '/v1/customers?search=newer-0@', { key });
    const customerId = early.body.data[0].id;
    await expect(page.locator(`#feed a[href="#${customerId}"]`).count()).resolves.toBe(0);
    await page.evaluate(`location.hash = '#${customerId}'`);
    await page.locator('#detail dd').getByText('newer-0@example.com').waitFor();
    // …and a refund as its payment.
    await page.evaluate(`location.hash = '#${refund.body.data.id}'`);
    // Polled from the test (page.evaluate is the browser's own evaluation): waitForFunction polls
    // with eval inside the page, which its CSP refuses whenever the first check is not yet true.
    for (const deadline = Date.now() + 10_000; (await page.evaluate('location.hash')) !== `#${payment.id}`;) {
      if (Date.now() > deadline) throw new Error(`the refund did not open as its payment: ${await page.evaluate('location.hash')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await events.waitFor();
    expectNoProblems();
  });

  it('should list the events of every refund in a payment\'s detail, more than 10 of them, with one events query', async () => {
    const key = app.account.testKey;
    const payment = await pay(key, { amount: 5000, currency: 'eur', paymentMethod: 'pm_card_visa', description: 'twelve refunds' });
    const refundIds: string[] = [];
    for (let i = 0; i < 12; i++) {
      const refund = await app.request('POST', `/v1/payments/${payment.id}/refunds`, { key, body: { amount: 100 + i } });
      expect(refund.status).toBe(201);
      refundIds.push(refund.body.data.id);
    }
    const all = await app.request('GET', '/v1/events?pageSize=100', { key });
    const created = (id: string) => all.body.data.find((e: { type: string; data: { object: { id: string } } }) => e.type === 'refund.created' && e.data.object.id === id);
    const twelfth = created(refundIds[11]);
    expect(twelfth).toBeDefined();

    const page = await newPage();
    const asked: string[] = [];
    page.on('request', (req) => { if (/\/graphql$/.test(req.url()) && /events\(objectId/.test(req.postData() ?? '')) asked.push(req.postData() ?? ''); });
    await signIn(page, key);
    asked.length = 0;
    await page.evaluate(`location.hash = '#${payment.id}'`);
    const events = page.locator('#detail table').filter({ has: page.locator('th', { hasText: 'Event' }) });
    await events.waitFor();
    const rows = await events.locator('tbody tr').allTextContents();
    expect(rows.filter((r) => r.includes('refund.created'))).toHaveLength(12);
    for (const id of refundIds) expect(rows.some((r) => r.startsWith(created(id).id))).toBe(true);
    expect(rows.some((r) => r.startsWith(twelfth.id) && r.includes('refund.created'))).toBe(true);
    expect(rows.some((r) => r.includes('payment.succeeded'))).toBe(true);
    // One events field, for the payment and all its refunds.
    expect(asked).toHaveLength(1);
    const { query, variables } = JSON.parse(asked[0]);
    expect(query).toContain('events(objectIds: $ids');
    expect(variables.ids[0]).toBe(payment.id);
    expect(variables.ids.slice().sort()).toEqual([payment.id, ...refundIds].sort());
    await shot(page, 'payment-twelve-refunds');
    expectNoProblems();
  });

  it('should show a webhook endpoint\'s delivery log, and a resend should log a new attempt', async () => {
    const key = app.account.testKey;
    // The first delivery is refused with a 500, the rest accepted.
    const route = rx.route('dashboard', [], (n) => (n === 1 ? 500 : 200));
    const endpoint = await app.request('POST', '/v1/webhook-endpoints', { key, body: { url: route.url, events: ['customer.created'], description: 'dashboard hook' } });
    expect(endpoint.status).toBe(201);
    const customer = await app.request('POST', '/v1/customers', { key, body: { email: 'hooked@example.com' } });
    expect(customer.status).toBe(201);
    const deliver = () => app.server.services.webhooks.deliveries.deliverDue(100);
    await deliver();
    expect(route.requests).toHaveLength(1);

    const page = await newPage();
    await signIn(page, key);
    await page.getByLabel('Resource', { exact: true }).selectOption('webhookEndpoints');
    const row = page.locator('#browse-table tbody tr').filter({ hasText: endpoint.body.data.id });
    await row.waitFor();
    await expect(row.textContent()).resolves.toMatch(/1 attempt.*failed 500/);
    await row.getByRole('link', { name: '1 attempt', exact: true }).click();
    const log = page.locator('#delivery-log tbody tr');
    await log.first().waitFor();
    await expect(log.allTextContents()).resolves.toEqual([expect.stringMatching(/^evt_\w+customer\.created1failed500\d+ ms.+Resend$/)]);
    await shot(page, 'webhook-log');

    await log.first().getByRole('button', { name: 'Resend' }).click();
    await page.locator('#resend-status').getByText(/: 1 delivery queued$/).waitFor();
    await deliver();
    // The page looks again by itself until the worker's attempt is logged.
    await page.locator('#detail[data-attempts="2"]').waitFor({ timeout: 5000 });
    await expect(log.allTextContents()).resolves.toEqual([
      expect.stringMatching(/^evt_\w+customer\.created1succeeded200\d+ ms/),
      expect.stringMatching(/^evt_\w+customer\.created1failed500\d+ ms/),
    ]);
    expect(route.requests).toHaveLength(2);
    expect(route.requests[1].eventId).toBe(route.requests[0].eventId);
    await shot(page, 'webhook-resent');
    expectNoProblems();
  });

  it('should show the log to a read-only key and its resend as not allowed', async () => {
    const key = app.account.testKey;
    const res = await app.request('POST', '/v1/api-keys', { key, body: { name: 'read-only', permissions: ['payments:read', 'events:read', 'webhook_endpoints:read'] } });
    const endpoints = await app.request('GET', '/v1/webhook-endpoints', { key });
    const endpoint = endpoints.body.data.find((e: { description: string | null }) => e.description === 'dashboard hook');
    const page = await newPage();
    await signIn(page, res.body.data.secret);
    await page.evaluate(`location.hash = '#${endpoint.id}'`);
    const log = page.locator('#delivery-log tbody tr');
    await log.first().waitFor();
    await log.first().getByRole('button', { name: 'Resend' }).click();
    await page.locator('#resend-status').getByText('Not allowed for this key (needs webhook_endpoints:write)').waitFor();
    await expect(page.locator('#detail').getAttribute('data-attempts')).resolves.toBe('2');
    await shot(page, 'webhook-read-only');
    expectNoProblems();
  });

  it('should log a test ping without a resend button (a ping is no event to resend)', async () => {
    const key = app.account.testKey;
    const endpoints = await app.request('GET', '/v1/webhook-endpoints', { key });
    const endpoint = endpoints.body.data.find((e: { description: string | null }) => e.description === 'dashboard hook');
    const ping = await app.request('POST', `/v1/webhook-endpoints/${endpoint.id}/test`, { key });
    expect(ping.status).toBe(200);
    await app.server.services.webhooks.deliveries.deliverDue(100);
    const page = await newPage();
    await signIn(page, key);
    await page.evaluate(`location.hash = '#${endpoint.id}'`);
    const log = page.locator('#delivery-log tbody tr');
    await page.locator('#detail[data-attempts="3"]').waitFor();
    const row = log.filter({ hasText: 'ping' });
    await expect(row.textContent()).resolves.toMatch(/ping1succeeded200\d+ ms.+test ping$/);
    await expect(row.getByRole('button', { name: 'Resend' }).count()).resolves.toBe(0);
    expectNoProblems();
  });

  it('should hand over an invoice\'s PDF, fetched with the key in the header, as a blob', async () => {
    const key = app.account.testKey;
    const customer = await app.request('POST', '/v1/customers', { key, body: { email: 'pdf@example.com', name: 'PDF Customer' } });
    const invoice = await app.request('POST', '/v1/invoices', { key, body: { customerId: customer.body.data.id, currency: 'eur', lineItems: [{ description: 'Consulting', unitAmount: 12000 }] } });
    expect(invoice.status).toBe(201);
    const page = await newPage();
    const asked: string[] = [];
    page.on('request', (req) => { if (/\/pdf$/.test(req.url())) asked.push(`${req.url()} ${req.headers().authorization ?? ''}`); });
    await signIn(page, key);
    await page.getByLabel('Resource', { exact: true }).selectOption('invoices');
    const row = page.locator('#browse-table tbody tr').filter({ hasText: invoice.body.data.number });
    await row.waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), row.getByRole('button', { name: 'PDF' }).click()]);
    expect(download.url()).toMatch(/^blob:https:\/\/[^/]+\/[0-9a-f-]{36}$/);
    expect(download.suggestedFilename()).toBe(`${invoice.body.data.number}.pdf`);
    const bytes = fs.readFileSync(await download.path());
    expect(bytes.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    // Asked once, with the key in the header and nowhere in the URL.
    expect(asked).toEqual([`${app.baseUrl}/v1/invoices/${invoice.body.data.id}/pdf Bearer ${key}`]);
    await shot(page, 'invoice-pdf');
    expectNoProblems();
  });

  it('should refuse an unknown key on the sign-in form', async () => {
    const page = await newPage();
    await page.goto(`${app.baseUrl}/dashboard`);
    await page.getByLabel('API key').fill('sk_test_doesnotexist');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#sign-in-error:not(:empty)').waitFor();
    await expect(page.locator('#app').isHidden()).resolves.toBe(true);
    await shot(page, 'refused-key');
    // The 401 of /graphql is the browser's own console line; the page adds nothing.
    expect(problems.pageErrors).toEqual([]);
    expect(problems.cspViolations).toEqual([]);
    expect(problems.consoleErrors.every((e) => /status of 401/.test(e))).toBe(true);
  });

  it('should say it is reconnecting when the service is killed, and be live again after it restarts, with every event written meanwhile in the feed', async () => {
    // Another process on a fixed port, sharing this app's database and certificate: killed and
    // started again on the same address, as a restarted service is.
    const port = await freePort();
    const start = async () => {
      instance = await spawnInstance(
        { DATABASE_URL: app.config.databaseUrl, DATA_DIR: app.config.dataDir, PORT: String(port), RUN_WORKERS: 'false', RATE_LIMIT_PER_MINUTE: '100000', GRAPHQL_WS_FAILED_CONNECTS_PER_MINUTE: '100000' },
        app.server.cert,
        // Started from the TypeScript sources, on a machine other test processes share.
        { startTimeoutMs: 150_000 },
      );
      return instance;
    };
    const first = await start();
    const key = app.account.testKey;
    const page = await newPage();
    await signIn(page, key, first.baseUrl);
    await page.evaluate('window.__notReloaded = true');
    // No request of the page in flight when the process dies (the browser would log it cut off).
    await page.waitForLoadState('networkidle');
    await first.stop('SIGKILL');
    await page.locator('#conn.down').getByText('Reconnecting…').waitFor({ timeout: 10_000 });
    await shot(page, 'reconnecting');
    // Written while the page's service is down (by another instance on the same database): more
    // than the 50 newest events a fresh load would show. The feed resumes after the last event it
    // had, so every one of them arrives.
    const missed: string[] = [];
    for (let i = 0; i < 60; i += 15) {
      const made = await Promise.all(Array.from({ length: 15 }, (_, j) => app.request('POST', '/v1/customers', { key, body: { email: `while-down-${i + j}@example.com` } })));
      missed.push(...made.map((r) => r.body.data.id as string));
    }

    const second = await start();
    await page.locator('#conn.live').getByText('Live').waitFor({ timeout: 30_000 });
    for (const id of missed) await page.locator(`#feed li[data-type="customer.created"] a[href="#${id}"]`).waitFor({ timeout: 5000 });
    await expect(page.locator('#feed li[data-type="customer.created"]').count()).resolves.toBeGreaterThanOrEqual(60);
    const res = await second.request('POST', '/v1/payments', { key, body: { amount: 990, currency: 'eur', paymentMethod: 'pm_card_visa', description: 'after the restart' } });
    expect(res.status).toBe(201);
    await page.locator(`#feed a[href="#${res.body.data.id}"]`).waitFor({ timeout: 2000 });
    await expect(page.evaluate('window.__notReloaded')).resolves.toBe(true);
    await shot(page, 'reconnected');
    // While the service was down, the browser logged its failed WebSocket attempts, and a query cut
    // off by the kill if one was in flight (a refetch can start between networkidle and the kill);
    // the page nothing else.
    expect(problems.pageErrors).toEqual([]);
    expect(problems.cspViolations).toEqual([]);
    const cutOff = /^Failed to load resource: net::ERR_(EMPTY_RESPONSE|CONNECTION_RESET|CONNECTION_REFUSED|CONNECTION_CLOSED) at https:\/\/[^/]+\/graphql$/;
    expect(problems.consoleErrors.filter((e) => !/WebSocket connection to 'wss:\/\/[^']+\/graphql' failed/.test(e) && !cutOff.test(e))).toEqual([]);
  }, 420_000);
});
