import { html, type SafeHtml } from './html';
import type { PageView } from './page-layout';
import { CARD_FORM_SCRIPT } from './card-form.script';
import { payResultStatus } from '../../src/modules/payments/public-pay';
import type { Payment } from '../../src/modules/payments/payment.service';

/** What a page that takes a card tells its form: where to pay and what to ask. */
export interface CardFormOptions {
  /** A session can be paid once (its state is polled while a payment settles); a link pays anew each time. */
  kind: 'session' | 'link';
  mode: 'payment' | 'setup' | 'subscription';
  /** The public pay route (same origin): the card goes there and nowhere else. */
  payUrl: string;
  /** The public view, read again while a payment is still being processed. */
  viewUrl?: string;
  /** "Pay 25.00 EUR", or "Save card" for a setup session. */
  buttonLabel: string;
  askEmail: boolean;
  askName: boolean;
  /** The success state, shown in place of the form when there is no success URL to go to. */
  doneTitle: string;
  doneText: SafeHtml | string;
  /** The visible labels in the page's language; English unless given. */
  labels?: CardFormLabels;
  /** What the form's script says (declines, field errors, "Processing…") in the page's language; English unless given. */
  messages?: CardFormMessages;
  /**
   * The outcome of the payment the customer comes back with from a 3-D Secure challenge (the
   * page's `?payment_id=`): the script shows it as it shows a pay's answer (a decline in the alert
   * region with the form kept, or a payment still being processed).
   */
  returned?: ReturnedOutcome;
}

/** A returned payment as the card form's script reads it (a public pay's result fields). */
export interface ReturnedOutcome {
  status: 'failed' | 'processing';
  failureCode: string | null;
  failureMessage: string | null;
}

/**
 * The card form script's messages a page may give in its own language (card-form.script.ts has
 * the English ones): `{reason}`, `{message}`, `{request}`, `{id}`, `{status}` are filled in by
 * the script; a translation may leave out a server's English `{reason}` or `{message}`.
 * `fieldWords: 'page'`: a server's refusal of a field (400) is shown in the page's own words for
 * that field, not the server's English.
 */
export interface CardFormMessages {
  card_declined: string;
  insufficient_funds: string;
  expired_card: string;
  incorrect_cvc: string;
  /** A failed or unanswered 3-D Secure challenge; English unless given. */
  authentication_failed?: string;
  authentication_expired?: string;
  declinedBecause: string;
  notProcessed: string;
  notProcessedReason: string;
  numberMissing: string;
  numberInvalid: string;
  expiryMissing: string;
  expiryFormat: string;
  expiryPast: string;
  cvcAmex: string;
  cvc: string;
  email: string;
  processing: string;
  saving: string;
  unreachable: string;
  serverError: string;
  requestRef: string;
  inUse: string;
  invalidState: string;
  invalidStateDefault: string;
  linkInactive: string;
  tooManyAttempts: string;
  tooManyAttemptsDefault: string;
  customerExists: string;
  rateLimited: string;
  notSent: string;
  redirecting: string;
  continueLink: string;
  processingOnce: string;
  processingWait: string;
  expired: string;
  noResultYet: string;
  fieldWords?: 'page' | 'server';
}

/** The form's visible words: a page in another language passes its own. */
export interface CardFormLabels {
  cardNumber: string;
  expiry: string;
  expiryPlaceholder: string;
  cvc: string;
  name: string;
  email: string;
  optional: string;
}

const ENGLISH_LABELS: CardFormLabels = { cardNumber: 'Card number', expiry: 'Expiry', expiryPlaceholder: 'MM/YY', cvc: 'CVC', name: 'Name', email: 'E-mail', optional: 'optional' };

function field(id: string, label: SafeHtml | string, attrs: SafeHtml): SafeHtml {
  return html`<div class="field">
<label for="${id}">${label}</label>
<input id="${id}" ${attrs} aria-describedby="${id}-error">
<p class="field-error" id="${id}-error"></p>
</div>`;
}

const optional = (text: string, word: string) => html`${text} <span class="optional">(${word})</span>`;

/**
 * The card form (API.md §16): visible labels "Card number", "Expiry" (one MM/YY field) and "CVC",
 * name and e-mail where asked, a "Pay …" button, an alert region for declines and errors, and a
 * success state. The inputs have no `name`: there is nothing a browser could submit by itself,
 * and the policy (`form-action 'none'`) would refuse it anyway.
 */
export function cardForm(o: CardFormOptions): SafeHtml {
  const l = o.labels ?? ENGLISH_LABELS;
  return html`<div id="pay-status" class="status" role="alert"></div>
<form id="card-form" novalidate data-kind="${o.kind}" data-mode="${o.mode}" data-pay-url="${o.payUrl}"${o.viewUrl ? html` data-view-url="${o.viewUrl}"` : ''}${o.messages ? html` data-messages="${JSON.stringify(o.messages)}"` : ''}${o.returned ? html` data-returned="${JSON.stringify(o.returned)}"` : ''}>
${field('card-number', l.cardNumber, html`type="text" inputmode="numeric" autocomplete="cc-number" placeholder="1234 1234 1234 1234" maxlength="23" spellcheck="false" required`)}
<div class="row">
${field('card-expiry', l.expiry, html`type="text" inputmode="numeric" autocomplete="cc-exp" placeholder="${l.expiryPlaceholder}" maxlength="7" required`)}
${field('card-cvc', l.cvc, html`type="text" inputmode="numeric" autocomplete="cc-csc" placeholder="123" maxlength="4" required`)}
</div>
${o.askName ? field('payer-name', optional(l.name, l.optional), html`type="text" autocomplete="name" maxlength="200"`) : ''}
${o.askEmail ? field('payer-email', optional(l.email, l.optional), html`type="email" autocomplete="email" maxlength="320" spellcheck="false"`) : ''}
<button id="pay-button" type="submit">${o.buttonLabel}</button>
</form>
<section id="pay-done" class="done" hidden>
<h2 id="pay-done-title" tabindex="-1">${o.doneTitle}</h2>
<p id="pay-done-text">${o.doneText}</p>
</section>`;
}

/** A returned payment as the form shows it; one that paid shows the page's paid state instead. */
export function returnedOutcome(payment: { status: string; failureCode: string | null; failureMessage: string | null }): ReturnedOutcome | undefined {
  const status = payResultStatus(payment.status as Payment['status']);
  if (status === 'failed') return { status, failureCode: payment.failureCode, failureMessage: payment.failureMessage };
  if (status === 'processing' || status === 'requires_action') return { status: 'processing', failureCode: null, failureMessage: null };
  return undefined;
}

/**
 * The success state of a pay, shown without the form: where a customer lands back from a 3-D
 * Secure challenge that paid (the same words as the form's success state).
 */
export function paidState(title: string, text: SafeHtml | string): SafeHtml {
  return html`<section id="pay-done" class="done">
<h2 id="pay-done-title" tabindex="-1">${title}</h2>
<p id="pay-done-text">${text}</p>
</section>`;
}

/** The merchant's name over the page, with a badge when nothing real is charged. */
export function merchantHeader(merchantName: string, livemode: boolean, badge = 'Test mode'): SafeHtml {
  return html`<p class="merchant"><span>${merchantName || 'Payorch'}</span>${livemode ? '' : html`<span class="badge">${badge}</span>`}</p>`;
}

/** Under a test-mode form: the simulator's cards, so a developer can try both outcomes. */
export function testModeHint(livemode: boolean, text = 'Test mode: no money moves. Card 4242 4242 4242 4242 succeeds, 4000 0000 0000 0002 is declined and 4000 0025 0000 3155 asks for 3-D Secure, with any future expiry and any CVC.'): SafeHtml | string {
  if (livemode) return '';
  return html`<p class="hint" data-until-done>${text}</p>`;
}

/** A page that takes a card: its markup plus the form's script, allowed by hash in its policy. */
export function cardPage(view: Omit<PageView, 'script' | 'narrow'>): PageView {
  return { ...view, script: CARD_FORM_SCRIPT, narrow: true };
}

/** A state without a form (not found, inactive, expired, complete): same layout, no script. */
export function statePage(view: Omit<PageView, 'script' | 'narrow'>): PageView {
  return { ...view, narrow: true };
}
