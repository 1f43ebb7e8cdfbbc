import { FixedClock } from '../../src/core/clock';
import { startTestApp, type TestApp } from '../helpers/app';

/**
 * Checkout sessions and payment links with `captureMethod` (API.md §9, §11), and their pays
 * through a 3-D Secure challenge: the payment's return URL is the hosted page, which shows how it
 * ended; a failed challenge leaves the session payable again at once.
 */
const clock = new FixedClock(new Date('2026-06-01T10:00:00Z'));
let app: TestApp;
let key: string;
beforeAll(async () => {
  app = await startTestApp({ clock });
  key = app.account.testKey;
});
afterAll(() => app.stop());

const card = (number = '4242424242424242') => ({ number, expMonth: 12, expYear: 2034, cvc: '123' });
const createSession = async (body: Record<string, unknown> = {}) => {
  const res = await app.request('POST', '/v1/checkout-sessions', { key, body: { mode: 'payment', amount: 2500, currency: 'eur', ...body } });
  expect(res.status).toBe(201);
  return res.body.data;
};
const createLink = async (body: Record<string, unknown> = {}) => {
  const res = await app.request('POST', '/v1/payment-links', { key, body: { name: 'Workshop seat', amount: 4000, currency: 'eur', ...body } });
  expect(res.status).toBe(201);
  return res.body.data;
};
const paySession = (id: string, number?: string) => app.request('POST', `/v1/public/checkout-sessions/${id}/pay`, { body: { card: card(number) } });
const payLink = (slug: string, number?: string) => app.request('POST', `/v1/public/payment-links/${slug}/pay`, { body: { card: card(number) } });
const payment = async (id: string) => (await app.request('GET', `/v1/payments/${id}`, { key })).body.data;
/** The session as stored, not settled by a read (the pay's own writes only). */
const storedSession = async (id: string) =>
  (await app.server.services.db.select<{ status: string; payment_id: string | null }>('SELECT status, payment_id FROM checkout_sessions WHERE id = $1', [id]))[0];
const completedEvents = async (id: string) =>
  (await app.server.services.db.select("SELECT id FROM events WHERE type = 'checkout.session.completed' AND data LIKE $1", [`%"id":"${id}"%`])).length;

/**
 * Answers the challenge as the customer would, and follows the way back: the challenge page's
 * refresh to the gateway return route, whose 303 names the hosted page; returns that page's path.
 */
async function answerChallenge(challengeUrl: string, choice: 'complete' | 'fail'): Promise<string> {
  const path = new URL(challengeUrl).pathname;
  const answered = await app.request('POST', `${path}/${choice}`);
  expect(answered.status).toBe(200);
  const back = (/http-equiv="refresh" content="0;url=([^"]+)"/.exec(answered.text)?.[1] as string).replace(/&amp;/g, '&');
  const returned = await app.request('GET', new URL(back).pathname);
  expect(returned.status).toBe(303);
  const landing = new URL(returned.headers.location as string);
  // This service's own hosted page (PUBLIC_URL unset: https://localhost on the listening port).
  expect(landing.port).toBe(new URL(app.baseUrl).port);
  return `${landing.pathname}${landing.search}`;
}

describe('captureMethod on checkout sessions and payment links', () => {
  it('should authorise a manual session\'s payment (requires_capture) and complete the session with its pay, then capture it', async () => {
    const s = await createSession({ captureMethod: 'manual' });
    expect(s.captureMethod).toBe('manual');
    const paid = await paySession(s.id);
    expect(paid.status).toBe(200);
    expect(paid.body.data).toMatchObject({ status: 'succeeded', failureCode: null });
    const p = await payment(paid.body.data.paymentId);
    expect(p).toMatchObject({ status: 'requires_capture', captureMethod: 'manual', amountCapturable: 2500, amountCaptured: 0, checkoutSessionId: s.id });
    // Completed by the pay itself, with its event, before anything reads the session.
    expect(await storedSession(s.id)).toEqual({ status: 'complete', payment_id: p.id });
    expect(await completedEvents(s.id)).toBe(1);
    expect((await app.request('GET', `/v1/checkout-sessions/${s.id}`, { key })).body.data).toMatchObject({ status: 'complete', paymentId: p.id, captureMethod: 'manual' });
    const captured = await app.request('POST', `/v1/payments/${p.id}/capture`, { key, body: {} });
    expect(captured.body.data).toMatchObject({ status: 'succeeded', amountCaptured: 2500 });
  });

  it('should capture automatically by default, and refuse manual for setup and subscription sessions or an unknown method', async () => {
    const s = await createSession();
    expect(s.captureMethod).toBe('automatic');
    const paid = await paySession(s.id);
    expect(await payment(paid.body.data.paymentId)).toMatchObject({ status: 'succeeded', captureMethod: 'automatic' });
    const setup = await app.request('POST', '/v1/checkout-sessions', { key, body: { mode: 'setup', customerEmail: 'a@example.com', captureMethod: 'manual' } });
    expect(setup.status).toBe(400);
    expect(setup.body.error.param).toBe('captureMethod');
    const unknown = await app.request('POST', '/v1/checkout-sessions', { key, body: { mode: 'payment', amount: 100, currency: 'eur', captureMethod: 'later' } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.param).toBe('captureMethod');
    const link = await app.request('POST', '/v1/payment-links', { key, body: { name: 'x', amount: 100, currency: 'eur', captureMethod: 'later' } });
    expect(link.status).toBe(400);
    expect(link.body.error.param).toBe('captureMethod');
  });

  it('should authorise every payment of a manual payment link', async () => {
    const link = await createLink({ captureMethod: 'manual' });
    expect(link.captureMethod).toBe('manual');
    expect((await app.request('GET', `/v1/payment-links/${link.id}`, { key })).body.data.captureMethod).toBe('manual');
    for (let i = 0; i < 2; i++) {
      const paid = await payLink(link.slug);
      expect(paid.body.data.status).toBe('succeeded');
      expect(await payment(paid.body.data.paymentId)).toMatchObject({ status: 'requires_capture', amountCapturable: 4000, paymentLinkId: link.id });
    }
    expect((await createLink()).captureMethod).toBe('automatic');
  });

  it('should take captureMethod through GraphQL too', async () => {
    const res = await app.request('POST', '/graphql', {
      key,
      body: {
        query: `mutation {
          s: createCheckoutSession(input: { mode: payment, amount: 900, currency: "eur", captureMethod: manual }) { id captureMethod }
          l: createPaymentLink(input: { name: "g", amount: 900, currency: "eur", captureMethod: manual }) { id captureMethod }
        }`,
      },
    });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data).toMatchObject({ s: { captureMethod: 'manual' }, l: { captureMethod: 'manual' } });
  });
});

describe('3-D Secure on a checkout session and a payment link', () => {
  it('should free the session once its challenge failed: the next pay charges at once, not after the claim\'s lease', async () => {
    const s = await createSession();
    const first = await paySession(s.id, '4000002500003155');
    expect(first.body.data).toMatchObject({ status: 'requires_action', redirectUrl: expect.stringMatching(/\/simulator\/3ds\//) });
    const landing = await answerChallenge(first.body.data.redirectUrl, 'fail');
    expect(landing).toBe(`/checkout/${s.id}?payment_id=${first.body.data.paymentId}`);
    expect(await payment(first.body.data.paymentId)).toMatchObject({ status: 'failed', failureCode: 'authentication_failed' });
    // The customer does not even look at the page: the next pay reads the session and frees it.
    const again = await paySession(s.id);
    expect(again.status).toBe(200);
    expect(again.body.data.status).toBe('succeeded');
    expect(await storedSession(s.id)).toEqual({ status: 'complete', payment_id: again.body.data.paymentId });
  });

  it('should show a failed challenge on the hosted page with the form kept, and the session open and payable', async () => {
    const s = await createSession();
    const first = await paySession(s.id, '4000000000003220');
    const landing = await answerChallenge(first.body.data.redirectUrl, 'fail');
    const page = await app.request('GET', landing);
    expect(page.status).toBe(200);
    expect(page.text).toContain('id="card-form"');
    expect(page.text).toContain('data-returned="');
    expect(page.text).toContain('authentication_failed');
    expect((await app.request('GET', `/v1/checkout-sessions/${s.id}`, { key })).body.data).toMatchObject({ status: 'open', paymentId: null });
    // Read by the page: the claim is gone from the stored row too.
    expect((await app.server.services.db.select('SELECT paying_token FROM checkout_sessions WHERE id = $1', [s.id]))[0]).toEqual({ paying_token: null });
    // The page without payment_id is the plain form; another session's payment is not shown here.
    expect((await app.request('GET', `/checkout/${s.id}`)).text).not.toContain('data-returned="');
    const other = await createSession();
    expect((await app.request('GET', `/checkout/${other.id}?payment_id=${first.body.data.paymentId}`)).text).not.toContain('data-returned="');
  });

  it('should complete the session after a completed challenge and send the customer on to successUrl', async () => {
    const s = await createSession({ successUrl: 'https://shop.example/thanks?order=9' });
    const first = await paySession(s.id, '4000002500003155');
    const landing = await answerChallenge(first.body.data.redirectUrl, 'complete');
    const page = await app.request('GET', landing);
    expect(page.status).toBe(303);
    expect(page.headers.location).toBe('https://shop.example/thanks?order=9');
    expect(await storedSession(s.id)).toEqual({ status: 'complete', payment_id: first.body.data.paymentId });
    expect(await completedEvents(s.id)).toBe(1);
  });

  it('should show the paid state without a successUrl, and complete a manual session with the authorisation after its challenge', async () => {
    const s = await createSession({ captureMethod: 'manual' });
    const first = await paySession(s.id, '4000002500003155');
    const landing = await answerChallenge(first.body.data.redirectUrl, 'complete');
    const page = await app.request('GET', landing);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Payment successful');
    expect(page.text).not.toContain('id="card-form"');
    expect(await payment(first.body.data.paymentId)).toMatchObject({ status: 'requires_capture', amountCapturable: 2500 });
    expect(await storedSession(s.id)).toEqual({ status: 'complete', payment_id: first.body.data.paymentId });
  });

  it('should bring a payment link\'s payer back to the link page: paid after completing, the form and the decline after failing', async () => {
    const link = await createLink();
    const ok = await payLink(link.slug, '4000002500003155');
    const okLanding = await answerChallenge(ok.body.data.redirectUrl, 'complete');
    expect(okLanding).toBe(`/pay/${link.slug}?payment_id=${ok.body.data.paymentId}`);
    const paidPage = await app.request('GET', okLanding);
    expect(paidPage.status).toBe(200);
    expect(paidPage.text).toContain('Payment successful');
    expect(paidPage.text).not.toContain('id="card-form"');
    expect(await payment(ok.body.data.paymentId)).toMatchObject({ status: 'succeeded', paymentLinkId: link.id });

    const failed = await payLink(link.slug, '4000008400001629');
    const failedPage = await app.request('GET', await answerChallenge(failed.body.data.redirectUrl, 'complete'));
    expect(failedPage.status).toBe(200);
    expect(failedPage.text).toContain('id="card-form"');
    expect(failedPage.text).toContain('card_declined');
    expect(await payment(failed.body.data.paymentId)).toMatchObject({ status: 'failed', failureCode: 'card_declined' });
  });
});
