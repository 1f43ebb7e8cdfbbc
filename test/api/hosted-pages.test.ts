import { createHash } from 'node:crypto';
import { startTestApp, type TestApp } from '../helpers/app';
import type { HttpResponse } from '../helpers/http';

/**
 * The hosted checkout and payment link pages over plain HTTPS (the browser tests are in
 * test/e2e): status per state, the policy that allows exactly the page's own script, and
 * merchant-written text that stays text.
 */
let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp();
  key = app.account.testKey;
});
afterAll(() => app.stop());

const session = async (body: Record<string, unknown>, k = key) => {
  const res = await app.request('POST', '/v1/checkout-sessions', { key: k, body });
  expect(res.status).toBe(201);
  return res.body.data as { id: string; url: string };
};
const link = async (body: Record<string, unknown>) => {
  const res = await app.request('POST', '/v1/payment-links', { key, body });
  expect(res.status).toBe(201);
  return res.body.data as { id: string; slug: string; url: string };
};
const page = (url: string) => app.request('GET', new URL(url).pathname);

function csp(res: HttpResponse): Map<string, string> {
  return new Map(
    String(res.headers['content-security-policy'])
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .map(([name, ...values]) => [name, values.join(' ')]),
  );
}

const scripts = (res: HttpResponse) => [...res.text.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/gi)].map((m) => ({ attrs: m[1], source: m[2] }));

function expectCardPage(res: HttpResponse): void {
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(res.headers['x-frame-options']).toBe('DENY');
  expect(res.text).toContain('<meta name="viewport" content="width=device-width');
  const policy = csp(res);
  expect(policy.get('default-src')).toBe("'none'");
  expect(policy.get('connect-src')).toBe("'self'");
  expect(policy.get('form-action')).toBe("'none'");
  expect(policy.get('frame-ancestors')).toBe("'none'");
  expect(policy.get('base-uri')).toBe("'none'");
  expect(String(res.headers['content-security-policy'])).not.toMatch(/unsafe-|https?:|\*|data:/);
  // Exactly one script, inline, and the policy allows exactly it by its hash.
  const found = scripts(res);
  expect(found).toHaveLength(1);
  expect(found[0].attrs).toBe('');
  expect(policy.get('script-src')).toBe(`'sha256-${createHash('sha256').update(found[0].source).digest('base64')}'`);
  // No inline handlers or styles the policy would have to allow, and no asset from anywhere.
  expect(res.text).not.toMatch(/<[^>]*\s(on[a-z]+|style|src)=|<link|<img|<iframe/i);
  // The visible labels API.md §16 asks for; inputs without a name, so nothing could be submitted natively.
  for (const [id, label] of [['card-number', 'Card number'], ['card-expiry', 'Expiry'], ['card-cvc', 'CVC']]) {
    expect(res.text).toContain(`<label for="${id}">${label}</label>`);
    expect(res.text).toMatch(new RegExp(`<input id="${id}" [^>]*aria-describedby="${id}-error"`));
  }
  expect(res.text).not.toMatch(/<input[^>]*\sname=/);
  expect(res.text).toMatch(/<div id="pay-status" class="status" role="alert"><\/div>/);
}

function expectStatePage(res: HttpResponse, status: number): void {
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(res.text).not.toMatch(/<form|<input|<button|<script/i);
  const policy = csp(res);
  expect(policy.has('script-src')).toBe(false);
  expect(policy.has('connect-src')).toBe(false);
  expect(policy.get('default-src')).toBe("'none'");
}

describe('GET /checkout/{id}', () => {
  it('should render an open payment session as the card form, allowed its own script by hash only', async () => {
    const s = await session({ mode: 'payment', amount: 2500, currency: 'eur', description: 'Order 7', successUrl: 'https://shop.example.com/ok', cancelUrl: 'https://shop.example.com/back' });
    expect(new URL(s.url).pathname).toBe(`/checkout/${s.id}`);
    const res = await page(s.url);
    expectCardPage(res);
    expect(res.text).toContain('<h1 class="amount">25.00 EUR</h1>');
    expect(res.text).toContain('<button id="pay-button" type="submit">Pay 25.00 EUR</button>');
    expect(res.text).toContain('Order 7');
    expect(res.text).toContain('Test account');
    expect(res.text).toContain(`data-pay-url="/v1/public/checkout-sessions/${s.id}/pay"`);
    expect(res.text).toContain('<label for="payer-email">E-mail');
    expect(res.text).toContain('<a href="https://shop.example.com/back">Cancel and return to Test account</a>');
    expect(res.text).toContain('Payment successful');
    // Nothing internal on the page.
    expect(res.text).not.toContain(app.account.accountId);
  });

  it('should format the amount with the currency\'s minor units', async () => {
    for (const [amount, currency, shown] of [[500, 'jpy', '500 JPY'], [1234, 'bhd', '1.234 BHD'], [5, 'usd', '0.05 USD']] as const) {
      const res = await page((await session({ mode: 'payment', amount, currency })).url);
      expect([currency, res.text.includes(`<h1 class="amount">${shown}</h1>`), res.text.includes(`>Pay ${shown}</button>`)]).toEqual([currency, true, true]);
    }
  });

  it('should show the e-mail a session names instead of asking for one', async () => {
    const res = await page((await session({ mode: 'payment', amount: 100, currency: 'eur', customerEmail: 'jane@example.com' })).url);
    expectCardPage(res);
    expect(res.text).toContain('Paying as jane@example.com');
    expect(res.text).not.toContain('id="payer-email"');
  });

  it('should render a setup session as a form that saves the card', async () => {
    const res = await page((await session({ mode: 'setup', customerEmail: 'saver@example.com' })).url);
    expectCardPage(res);
    expect(res.text).toContain('<h1>Save a card</h1>');
    expect(res.text).toContain('<button id="pay-button" type="submit">Save card</button>');
    expect(res.text).toContain('data-mode="setup"');
    expect(res.text).toContain('Card saved');
    expect(res.text).not.toContain('id="payer-email"');
  });

  it('should keep what the merchant wrote as text: its account name, the description and return URLs', async () => {
    const merchant = await app.server.services.accounts.createAccount({ name: '<script>alert("name")</script>', rateLimitPerMinute: null });
    const s = await session({
      mode: 'payment', amount: 100, currency: 'eur',
      description: '</p><script>alert(1)</script><img src=x onerror=alert(2)> & "quotes"',
      cancelUrl: 'https://shop.example.com/back?a="><script>alert(3)</script>',
    }, merchant.testKey.secret!);
    const res = await page(s.url);
    expectCardPage(res);
    expect(res.text).toContain('&lt;/p&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt; &amp; &quot;quotes&quot;');
    expect(res.text).toContain('&lt;script&gt;alert(&quot;name&quot;)&lt;/script&gt;');
    expect(res.text).not.toContain('alert(3)</script>');
    expect(res.text).not.toMatch(/<img/);
  });

  it('should say a paid session is paid, without a form or a script', async () => {
    const s = await session({ mode: 'payment', amount: 700, currency: 'eur', successUrl: 'https://shop.example.com/done' });
    const paid = await app.request('POST', `/v1/public/checkout-sessions/${s.id}/pay`, { body: { card: { number: '4242424242424242', expMonth: 12, expYear: 2040, cvc: '123' } } });
    expect(paid.body.data.status).toBe('succeeded');
    const res = await page(s.url);
    expectStatePage(res, 200);
    expect(res.text).toContain('This checkout is already paid');
    expect(res.text).toContain('<a href="https://shop.example.com/done">Return to Test account</a>');
  });

  it('should say an expired session is expired, without a form or a script', async () => {
    const s = await session({ mode: 'payment', amount: 700, currency: 'eur' });
    await app.request('POST', `/v1/checkout-sessions/${s.id}/expire`, { key });
    const res = await page(s.url);
    expectStatePage(res, 200);
    expect(res.text).toContain('This checkout has expired');
  });

  it('should answer an unknown session with a 404 page', async () => {
    const res = await app.request('GET', '/checkout/cs_unknown');
    expectStatePage(res, 404);
    expect(res.text).toContain('Checkout not found');
    expect(res.text).toContain('<code>resource_not_found</code>');
    expect(res.text).toContain(`<code>${res.headers['x-request-id']}</code>`);
  });
});

describe('GET /pay/{slug}', () => {
  it('should render an active link as the card form asking for an optional e-mail for the receipt, and no name', async () => {
    const l = await link({ name: 'Concert <ticket>', description: 'Row 4', amount: 1900, currency: 'usd' });
    expect(new URL(l.url).pathname).toBe(`/pay/${l.slug}`);
    const res = await page(l.url);
    expectCardPage(res);
    expect(res.text).toContain('Concert &lt;ticket&gt;');
    expect(res.text).toContain('<button id="pay-button" type="submit">Pay 19.00 USD</button>');
    expect(res.text).toContain(`data-pay-url="/v1/public/payment-links/${l.slug}/pay"`);
    expect(res.text).toContain('data-kind="link"');
    expect(res.text).toContain('<label for="payer-email">E-mail <span class="optional">(optional)</span></label>');
    // The payer stays anonymous: no name is asked that nothing would keep.
    expect(res.text).not.toContain('<label for="payer-name"');
    expect(res.text).not.toContain(l.id);
  });

  it('should answer an inactive link with 410 and a page saying it is inactive, without a form', async () => {
    const l = await link({ name: 'Old', amount: 100, currency: 'eur' });
    await app.request('PATCH', `/v1/payment-links/${l.id}`, { key, body: { status: 'inactive' } });
    const res = await page(l.url);
    expectStatePage(res, 410);
    expect(res.text).toContain('This payment link is inactive');
    expect(res.text).toContain('<code>payment_link_inactive</code>');
    // Active again, it takes payments again.
    await app.request('PATCH', `/v1/payment-links/${l.id}`, { key, body: { status: 'active' } });
    expectCardPage(await page(l.url));
  });

  it('should answer an unknown link with a 404 page', async () => {
    const res = await app.request('GET', '/pay/nosuchslug');
    expectStatePage(res, 404);
    expect(res.text).toContain('Payment link not found');
  });
});
