import type { Router } from '@koa/router';
import type { Context } from 'koa';
import type { Services } from '../../src/services';
import type { PayorchState } from '../../src/http/context';
import { DomainError } from '../../src/core/errors';
import { formatAmount } from '../../src/core/money';
import { PAYMENT_RETURN_PATH } from '../../src/modules/payments/payment-actions';
import { SIMULATOR_CHALLENGE_PATH, answerSimulatorChallenge, simulatorChallenge } from '../../src/connectors/simulator/simulator.gateway';
import { html } from './html';
import { CONTENT_SECURITY_POLICY, renderPage } from './page-layout';
import type { ChallengeReturnPage } from './page';
import { checkoutReturnPage } from './checkout.page';
import { paymentLinkReturnPage } from './payment-link.page';

/** The hosted pages whose pays pass their own address as the payment's return URL. */
const CHALLENGE_RETURN_PAGES: readonly ChallengeReturnPage[] = [checkoutReturnPage, paymentLinkReturnPage];

/**
 * 3-D Secure's two pages:
 * - `/payment-return/{paymentId}`: where a gateway sends the customer back after a challenge. The
 *   payment is finished as the gateway tells (PaymentActions.returned), then the customer goes on
 *   to the page the payment was made from (a hosted page, or the merchant's `returnUrl`); with
 *   none, this page shows the outcome.
 * - `/checkout/{id}?payment_id=…` and `/pay/{slug}?payment_id=…`: the hosted page the customer
 *   lands on from there, showing that payment's outcome (ChallengeReturnPage); without
 *   `payment_id` the page itself answers (these routes come first and pass it on).
 * - `/simulator/3ds/{id}`: the test simulator's challenge, standing in for a card issuer's page,
 *   with "Complete" and "Fail". Its forms post to this origin only; the answer page then sends
 *   the customer back by a refresh (a form's redirect to another origin would break the policy).
 */
export function authenticationRoutes(router: Router, services: Services): void {
  router.get(`${PAYMENT_RETURN_PATH}:id`, async (ctx) => {
    const returned = await services.paymentActions.returned(ctx.params.id);
    if (!returned) throw new DomainError('resource_not_found', 'No such payment');
    const { payment, returnUrl } = returned;
    if (returnUrl) {
      const target = new URL(returnUrl);
      target.searchParams.set('payment_id', payment.id);
      ctx.status = 303;
      ctx.redirect(target.toString());
      return;
    }
    const title = payment.status === 'succeeded' || payment.status === 'requires_capture' ? 'Payment complete'
      : payment.status === 'failed' || payment.status === 'canceled' ? 'Payment failed' : 'Payment processing';
    renderPage(ctx, {
      title,
      narrow: true,
      body: html`<h1>${title}</h1>
<p>${formatAmount(payment.amount, payment.currency)} · <span class="meta" data-status="${payment.status}">${payment.status}</span></p>
${payment.failureMessage ? html`<p class="error">${payment.failureMessage}</p>` : ''}`,
    });
  });

  for (const page of CHALLENGE_RETURN_PAGES) {
    router.get(page.path, async (ctx, next) => {
      const paymentId = ctx.query.payment_id;
      if (typeof paymentId !== 'string' || paymentId === '') return next();
      const view = await page.render(services, { params: { ...ctx.params }, requestId: (ctx.state as PayorchState).requestId }, paymentId);
      if ('redirectTo' in view) {
        ctx.status = 303;
        ctx.redirect(view.redirectTo);
        return;
      }
      renderPage(ctx, view);
    });
  }

  router.get(`${SIMULATOR_CHALLENGE_PATH}:id`, async (ctx) => {
    const challenge = simulatorChallenge(ctx.params.id);
    if (!challenge) throw new DomainError('resource_not_found', 'This authentication is no longer open');
    renderPage(ctx, {
      title: 'Authenticate your payment',
      narrow: true,
      body: html`<h1>Authenticate your payment</h1>
<p>Test mode: the simulator stands in for your card issuer's 3-D Secure page.</p>
<p>${formatAmount(challenge.amount, (challenge.currency ?? '').toUpperCase())} with ${challenge.brand ?? 'card'} ending ${challenge.last4 ?? '····'}</p>
<form method="post" action="${SIMULATOR_CHALLENGE_PATH}${challenge.id}/complete"><button type="submit" id="complete">Complete</button></form>
<form method="post" action="${SIMULATOR_CHALLENGE_PATH}${challenge.id}/fail"><button type="submit" id="fail">Fail</button></form>`,
    });
    allowFormsToSelf(ctx);
  });

  for (const answer of ['complete', 'fail'] as const) {
    router.post(`${SIMULATOR_CHALLENGE_PATH}:id/${answer}`, async (ctx) => {
      const answered = answerSimulatorChallenge(ctx.params.id, answer);
      if (!answered) throw new DomainError('resource_not_found', 'This authentication is no longer open');
      const back = answered.returnUrl;
      renderPage(ctx, {
        title: answer === 'complete' ? 'Authenticated' : 'Authentication failed',
        narrow: true,
        body: html`${back ? html`<meta http-equiv="refresh" content="0;url=${back}">` : ''}
<h1>${answer === 'complete' ? 'Authenticated' : 'Authentication failed'}</h1>
${back ? html`<p><a id="continue" href="${back}">Continue</a></p>` : html`<p>You can close this page.</p>`}`,
      });
    });
  }
}

function allowFormsToSelf(ctx: Context): void {
  ctx.set('Content-Security-Policy', CONTENT_SECURITY_POLICY.replace("form-action 'none'", "form-action 'self'"));
}
