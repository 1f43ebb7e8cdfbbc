import { isDomainError } from '../../src/core/errors';
import { formatAmount } from '../../src/core/money';
import type { PublicCheckoutSession } from '../../src/modules/checkout/checkout-session.service';
import { html } from './html';
import type { ChallengeReturnPage, Page, PageRequest } from './page';
import type { PageView } from './page-layout';
import { cardForm, cardPage, merchantHeader, paidState, returnedOutcome, statePage, testModeHint, type ReturnedOutcome } from './card-form';

function price(s: PublicCheckoutSession): string {
  const amount = formatAmount(s.amount ?? 0, s.currency ?? '');
  if (!s.recurring) return amount;
  const { interval, intervalCount } = s.recurring;
  return intervalCount === 1 ? `${amount} every ${interval}` : `${amount} every ${intervalCount} ${interval}s`;
}

function notFoundView(request: PageRequest): PageView {
  return statePage({
    status: 404,
    title: 'Checkout not found',
    body: html`<h1>Checkout not found</h1>
<p>There is no checkout at this address. Check the link you were given, or go back to the shop and start again.</p>
<p class="meta">Error <code>resource_not_found</code> · Request id <code>${request.requestId}</code></p>`,
  });
}

function expiredView(s: PublicCheckoutSession): PageView {
  const merchant = s.merchantName || 'the merchant';
  return statePage({
    title: 'Checkout expired',
    body: html`${merchantHeader(s.merchantName, s.livemode)}
<h1>This checkout has expired</h1>
<p>It can no longer be paid, and nothing was charged. Go back to ${merchant} to start again.</p>
${s.cancelUrl ? html`<p><a href="${s.cancelUrl}">Return to ${merchant}</a></p>` : ''}`,
  });
}

/** Open, but its failed attempts are used up (card testing is capped per session): no form. */
function closedView(s: PublicCheckoutSession): PageView {
  const merchant = s.merchantName || 'the merchant';
  return statePage({
    title: 'Checkout closed',
    body: html`${merchantHeader(s.merchantName, s.livemode)}
<h1>This checkout can no longer be paid</h1>
<p>It had too many failed payment attempts, so it was closed to protect your card details. Nothing more will be charged here. Go back to ${merchant} to start a new checkout.</p>
${s.cancelUrl ? html`<p><a href="${s.cancelUrl}">Return to ${merchant}</a></p>` : ''}`,
  });
}

function completeView(s: PublicCheckoutSession): PageView {
  const merchant = s.merchantName || 'the merchant';
  const setup = s.mode === 'setup';
  return statePage({
    title: setup ? 'Card already saved' : 'Already paid',
    body: html`${merchantHeader(s.merchantName, s.livemode)}
<h1>${setup ? 'This card is already saved' : 'This checkout is already paid'}</h1>
<p>${setup ? `Your card was saved with ${merchant}.` : `The payment to ${merchant} was made.`} There is nothing more to do here.</p>
${s.successUrl ? html`<p><a href="${s.successUrl}">Return to ${merchant}</a></p>` : ''}`,
  });
}

/** The form's success state: its title and text. */
function doneWords(s: PublicCheckoutSession): { title: string; text: string } {
  const merchant = s.merchantName || 'the merchant';
  return s.mode === 'setup'
    ? { title: 'Card saved', text: `Your card is saved with ${merchant}. You can close this page.` }
    : { title: 'Payment successful', text: `Thank you: ${merchant} has received your payment of ${price(s)}. You can close this page.` };
}

/** Back from a 3-D Secure challenge that paid the session, with no success URL to go to: the form's success state. */
function paidView(s: PublicCheckoutSession): PageView {
  const done = doneWords(s);
  return statePage({
    title: done.title,
    body: html`${merchantHeader(s.merchantName, s.livemode)}
<div class="summary">
<h1 class="amount">${price(s)}</h1>
${s.description ? html`<p class="description">${s.description}</p>` : ''}
</div>
${paidState(done.title, done.text)}`,
  });
}

function openView(s: PublicCheckoutSession, returned?: ReturnedOutcome): PageView {
  const merchant = s.merchantName || 'the merchant';
  const setup = s.mode === 'setup';
  const base = `/v1/public/checkout-sessions/${encodeURIComponent(s.id)}`;
  const amount = setup ? '' : price(s);
  const done = doneWords(s);
  return cardPage({
    title: setup ? `Save a card with ${merchant}` : `Pay ${merchant}`,
    body: html`${merchantHeader(s.merchantName, s.livemode)}
<div class="summary">
${setup
    ? html`<h1>Save a card</h1>
<p class="description">${merchant} keeps your card for future payments. Nothing is charged now.</p>`
    : html`<h1 class="amount">${amount}</h1>`}
${s.description ? html`<p class="description">${s.description}</p>` : ''}
${s.customerEmail ? html`<p class="description">${setup ? 'For' : 'Paying as'} ${s.customerEmail}</p>` : ''}
</div>
${cardForm({
    kind: 'session',
    mode: s.mode,
    payUrl: `${base}/pay`,
    viewUrl: base,
    buttonLabel: setup ? 'Save card' : `Pay ${amount}`,
    // A setup session always names its customer; a payment session without an e-mail may take one.
    askEmail: !setup && !s.customerEmail,
    // The name is a new customer's (setup, subscription); a one-time payment keeps none.
    askName: s.mode !== 'payment',
    doneTitle: done.title,
    doneText: done.text,
    returned,
  })}
${testModeHint(s.livemode)}
${s.cancelUrl ? html`<footer data-until-done><a href="${s.cancelUrl}">Cancel and return to ${merchant}</a></footer>` : ''}`,
  });
}

/** The page a session's state shows, with the form where it can be paid. */
function sessionView(session: PublicCheckoutSession, returned?: ReturnedOutcome): PageView {
  if (session.status === 'expired') return expiredView(session);
  if (session.status === 'complete') return completeView(session);
  if (!session.payable) return closedView(session);
  return openView(session, returned);
}

/**
 * `/checkout/{id}?payment_id=…`: where a 3-D Secure challenge of the session's pay brings the
 * customer back (the payment's return URL). Paid by that payment: the success URL, or the form's
 * success state, as a pay that needed no challenge. Failed: the form, with the decline shown and
 * the session payable again at once. Not settled yet: the form waits for it. A payment that is
 * not this session's is ignored.
 */
export const checkoutReturnPage: ChallengeReturnPage = {
  path: '/checkout/:id',
  async render(services, request, paymentId) {
    let landing;
    try {
      landing = await services.checkoutSessions.publicReturn(request.params.id, paymentId);
    } catch (err) {
      if (isDomainError(err) && err.code === 'resource_not_found') return notFoundView(request);
      throw err;
    }
    const { session, payment, paidByIt } = landing;
    if (paidByIt) return session.successUrl ? { redirectTo: session.successUrl } : paidView(session);
    if (!payment || session.status !== 'open') return sessionView(session);
    return sessionView(session, returnedOutcome(payment));
  },
};

/** `/checkout/{id}`: a checkout session's card form, or the state it is in (complete, expired, unknown). */
export const checkoutPage: Page = {
  path: '/checkout/:id',
  async render(services, request) {
    let session: PublicCheckoutSession;
    try {
      session = await services.checkoutSessions.publicView(request.params.id);
    } catch (err) {
      if (isDomainError(err) && err.code === 'resource_not_found') return notFoundView(request);
      throw err;
    }
    return sessionView(session);
  },
};
