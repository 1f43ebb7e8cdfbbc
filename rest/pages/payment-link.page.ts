import { isDomainError } from '../../src/core/errors';
import { formatAmount } from '../../src/core/money';
import type { PublicPaymentLink } from '../../src/modules/checkout/payment-link.service';
import { html } from './html';
import type { ChallengeReturnPage, Page, PageRequest } from './page';
import type { PageView } from './page-layout';
import { cardForm, cardPage, merchantHeader, paidState, returnedOutcome, statePage, testModeHint, type ReturnedOutcome } from './card-form';

function notFoundView(request: PageRequest): PageView {
  return statePage({
    status: 404,
    title: 'Payment link not found',
    body: html`<h1>Payment link not found</h1>
<p>There is no payment link at this address. Check the link you were given.</p>
<p class="meta">Error <code>resource_not_found</code> · Request id <code>${request.requestId}</code></p>`,
  });
}

/** API.md §16: an inactive link answers 410 with a page saying so, and no form. */
function inactiveView(request: PageRequest): PageView {
  return statePage({
    status: 410,
    title: 'Payment link inactive',
    body: html`<h1>This payment link is inactive</h1>
<p>It no longer takes payments, and nothing can be paid here. If you expected to pay, contact the seller for a new link.</p>
<p class="meta">Error <code>payment_link_inactive</code> · Request id <code>${request.requestId}</code></p>`,
  });
}

type LinkShown = Omit<PublicPaymentLink, 'status'>;

const doneText = (link: LinkShown) => `Thank you: ${link.merchantName || 'the merchant'} has received your payment of ${formatAmount(link.amount, link.currency)}. You can close this page.`;

function summary(link: LinkShown) {
  return html`<div class="summary">
<p class="description">${link.name}</p>
<h1 class="amount">${formatAmount(link.amount, link.currency)}</h1>
${link.description ? html`<p class="description">${link.description}</p>` : ''}
</div>`;
}

/** Back from a 3-D Secure challenge that paid: the form's success state. */
function paidView(link: LinkShown): PageView {
  return statePage({
    title: 'Payment successful',
    body: html`${merchantHeader(link.merchantName, link.livemode)}
${summary(link)}
${paidState('Payment successful', doneText(link))}`,
  });
}

function openView(link: PublicPaymentLink, returned?: ReturnedOutcome): PageView {
  const merchant = link.merchantName || 'the merchant';
  const amount = formatAmount(link.amount, link.currency);
  return cardPage({
    title: `Pay ${merchant}: ${link.name}`,
    body: html`${merchantHeader(link.merchantName, link.livemode)}
${summary(link)}
${cardForm({
    kind: 'link',
    mode: 'payment',
    payUrl: `/v1/public/payment-links/${encodeURIComponent(link.slug)}/pay`,
    buttonLabel: `Pay ${amount}`,
    askEmail: true,
    // The payer stays anonymous: the e-mail is the receipt's, and no name is kept.
    askName: false,
    doneTitle: 'Payment successful',
    doneText: doneText(link),
    returned,
  })}
${testModeHint(link.livemode)}`,
  });
}

/**
 * `/pay/{slug}?payment_id=…`: where a 3-D Secure challenge of a pay of the link brings the
 * customer back. Paid by that payment: the form's success state (even if the link was deactivated
 * meanwhile). Failed: the form with the decline shown. Not settled yet: said so, with no second
 * pay. A payment that is not this link's is ignored.
 */
export const paymentLinkReturnPage: ChallengeReturnPage = {
  path: '/pay/:slug',
  async render(services, request, paymentId) {
    let landing;
    try {
      landing = await services.paymentLinks.publicReturn(request.params.slug, paymentId);
    } catch (err) {
      if (isDomainError(err) && err.code === 'resource_not_found') return notFoundView(request);
      throw err;
    }
    const { link, payment } = landing;
    const returned = payment ? returnedOutcome(payment) : undefined;
    if (payment && !returned) return paidView(link);
    if (link.status !== 'active') return inactiveView(request);
    return openView({ ...link, status: 'active' }, returned);
  },
};

/** `/pay/{slug}`: a payment link's card form; 410 when the link is inactive, 404 when unknown. */
export const paymentLinkPage: Page = {
  path: '/pay/:slug',
  async render(services, request) {
    try {
      return openView(await services.paymentLinks.publicView(request.params.slug));
    } catch (err) {
      if (isDomainError(err) && err.code === 'resource_not_found') return notFoundView(request);
      if (isDomainError(err) && err.code === 'payment_link_inactive') return inactiveView(request);
      throw err;
    }
  },
};
