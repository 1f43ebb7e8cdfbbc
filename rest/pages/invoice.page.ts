import { isDomainError } from '../../src/core/errors';
import type { PublicInvoice } from '../../src/modules/invoices/invoice.service';
import { invoiceTaxLabels, invoiceTotalRows } from '../../src/modules/invoices/invoice-tax-i18n';
import { formatInvoiceDate, formatMoney, formatQuantity, invoiceLanguage, type InvoiceLanguage } from '../../src/modules/invoices/invoice-i18n';
import { html, type SafeHtml } from './html';
import type { Page, PageRequest } from './page';
import type { PageView } from './page-layout';
import { cardForm, cardPage, merchantHeader, statePage, testModeHint, type CardFormLabels, type CardFormMessages } from './card-form';

/**
 * What the hosted invoice page says, in the customer's language (the one of the invoice's PDF and
 * mail). Parts marked up by the page (the number kept whole, the amounts) arrive as SafeHtml.
 */
interface PageWords {
  payTitle: (number: string, merchant: string) => string;
  invoice: (number: string | SafeHtml) => SafeHtml;
  due: (date: string) => string;
  pay: (amount: string) => string;
  paymentSuccessful: string;
  thanks: (merchant: string, amount: string, number: SafeHtml) => SafeHtml;
  paidTitle: string;
  paidText: (number: SafeHtml) => SafeHtml;
  voidTitle: string;
  voidText: (merchant: string | null) => string;
  processingTitle: string;
  processingText: string;
  /** The invoice's payment waits for the customer's 3-D Secure authentication. */
  authenticateTitle: string;
  authenticateText: (amount: string) => string;
  authenticateButton: string;
  /** Over the card form when the invoice's latest payment failed: authentication failed or expired, or a decline. */
  authenticationFailed: string;
  lastPaymentFailed: string;
  theMerchant: string;
  testBadge: string;
  testHint: string;
  form: CardFormLabels;
  /** The form script's messages; none: its English ones. */
  script?: CardFormMessages;
}

const WORDS: Record<InvoiceLanguage, PageWords> = {
  en: {
    payTitle: (number, merchant) => `Pay invoice ${number} from ${merchant}`,
    invoice: (number) => html`Invoice ${number}`,
    due: (date) => `Due ${date}`,
    pay: (amount) => `Pay ${amount}`,
    paymentSuccessful: 'Payment successful',
    thanks: (merchant, amount, number) => html`Thank you: ${merchant} has received your payment of ${amount} for invoice ${number}. You can close this page.`,
    paidTitle: 'This invoice is paid',
    paidText: (number) => html`Thank you: there is nothing more to pay on invoice ${number}.`,
    voidTitle: 'This invoice is void',
    voidText: (merchant) => `${merchant ?? 'The merchant'} canceled it; there is nothing to pay.`,
    processingTitle: 'A payment is being processed',
    processingText: 'A payment of this invoice is on its way. Reload this page in a moment to see its result.',
    authenticateTitle: 'Confirm your payment',
    authenticateText: (amount) => `Your bank asks you to confirm the payment of ${amount} (3-D Secure). Nothing has been charged yet.`,
    authenticateButton: 'Complete authentication',
    authenticationFailed: 'The payment was not authenticated, so nothing was charged. You can pay with a card below.',
    lastPaymentFailed: 'The last payment of this invoice did not go through, so nothing was charged. You can pay with a card below.',
    theMerchant: 'the merchant',
    testBadge: 'Test mode',
    testHint: 'Test mode: no money moves. Card 4242 4242 4242 4242 succeeds and 4000 0000 0000 0002 is declined, with any future expiry and any CVC.',
    form: { cardNumber: 'Card number', expiry: 'Expiry', expiryPlaceholder: 'MM/YY', cvc: 'CVC', name: 'Name', email: 'E-mail', optional: 'optional' },
  },
  de: {
    payTitle: (number, merchant) => `Rechnung ${number} von ${merchant} bezahlen`,
    invoice: (number) => html`Rechnung ${number}`,
    due: (date) => `Fällig am ${date}`,
    pay: (amount) => `${amount} bezahlen`,
    paymentSuccessful: 'Zahlung erfolgreich',
    thanks: (merchant, amount, number) => html`Vielen Dank: ${merchant} hat Ihre Zahlung über ${amount} für die Rechnung ${number} erhalten. Sie können diese Seite schließen.`,
    paidTitle: 'Diese Rechnung ist bezahlt',
    paidText: (number) => html`Vielen Dank: Auf die Rechnung ${number} ist nichts mehr zu zahlen.`,
    voidTitle: 'Diese Rechnung ist storniert',
    voidText: (merchant) => `${merchant ?? 'Der Händler'} hat sie storniert; es ist nichts zu zahlen.`,
    processingTitle: 'Eine Zahlung wird verarbeitet',
    processingText: 'Eine Zahlung dieser Rechnung ist unterwegs. Laden Sie die Seite gleich neu, um ihr Ergebnis zu sehen.',
    authenticateTitle: 'Bestätigen Sie Ihre Zahlung',
    authenticateText: (amount) => `Ihre Bank bittet Sie, die Zahlung über ${amount} zu bestätigen (3-D Secure). Bisher wurde nichts belastet.`,
    authenticateButton: 'Authentifizierung abschließen',
    authenticationFailed: 'Die Zahlung wurde nicht bestätigt, daher wurde nichts belastet. Sie können unten mit einer Karte bezahlen.',
    lastPaymentFailed: 'Die letzte Zahlung dieser Rechnung ist nicht durchgegangen, daher wurde nichts belastet. Sie können unten mit einer Karte bezahlen.',
    theMerchant: 'Händler',
    testBadge: 'Testmodus',
    testHint: 'Testmodus: es fließt kein Geld. Die Karte 4242 4242 4242 4242 wird angenommen, 4000 0000 0000 0002 abgelehnt, mit jedem künftigen Ablaufdatum und jeder Prüfnummer.',
    form: { cardNumber: 'Kartennummer', expiry: 'Ablaufdatum', expiryPlaceholder: 'MM/JJ', cvc: 'Prüfnummer (CVC)', name: 'Name', email: 'E-Mail', optional: 'optional' },
    script: {
      card_declined: 'Ihre Karte wurde abgelehnt. Versuchen Sie es mit einer anderen Karte oder wenden Sie sich an Ihre Bank.',
      insufficient_funds: 'Ihre Karte wurde abgelehnt: keine ausreichende Deckung. Versuchen Sie es mit einer anderen Karte.',
      expired_card: 'Ihre Karte wurde abgelehnt: die Karte ist abgelaufen. Versuchen Sie es mit einer anderen Karte.',
      incorrect_cvc: 'Ihre Karte wurde abgelehnt: die Prüfnummer ist falsch. Prüfen Sie sie und versuchen Sie es erneut.',
      declinedBecause: 'Ihre Karte wurde abgelehnt. Versuchen Sie es mit einer anderen Karte oder wenden Sie sich an Ihre Bank.',
      notProcessed: 'Die Zahlung ist nicht durchgegangen; Ihnen wurde nichts berechnet. Versuchen Sie es erneut.',
      notProcessedReason: '',
      numberMissing: 'Geben Sie Ihre Kartennummer ein.',
      numberInvalid: 'Diese Kartennummer ist ungültig. Prüfen Sie sie und versuchen Sie es erneut.',
      expiryMissing: 'Geben Sie das Ablaufdatum ein (MM/JJ).',
      expiryFormat: 'Geben Sie das Ablaufdatum als MM/JJ ein, zum Beispiel 04/29.',
      expiryPast: 'Dieses Ablaufdatum liegt in der Vergangenheit.',
      cvcAmex: 'Geben Sie die 4-stellige Prüfnummer von der Vorderseite der Karte ein.',
      cvc: 'Geben Sie die 3- oder 4-stellige Prüfnummer von der Rückseite der Karte ein.',
      email: 'Geben Sie eine gültige E-Mail-Adresse ein oder lassen Sie das Feld leer.',
      processing: 'Wird verarbeitet …',
      saving: 'Wird gespeichert …',
      unreachable: 'Der Zahlungsserver ist nicht erreichbar. Prüfen Sie Ihre Verbindung und versuchen Sie es erneut: derselbe Versuch wird nie zweimal belastet.',
      serverError: 'Bei uns ist etwas schiefgegangen{request}. Versuchen Sie es erneut: derselbe Versuch wird nie zweimal belastet.',
      requestRef: ' (Anfrage {id})',
      inUse: 'Eine Zahlung wird bereits verarbeitet. Wir warten auf ihr Ergebnis …',
      invalidState: 'Diese Rechnung kann nicht mehr bezahlt werden. Laden Sie die Seite neu, um ihren Stand zu sehen.',
      invalidStateDefault: '',
      linkInactive: 'Diese Rechnung nimmt keine Zahlungen mehr an.',
      tooManyAttempts: 'Zu viele fehlgeschlagene Zahlungsversuche. Es wurde nichts belastet.',
      tooManyAttemptsDefault: '',
      customerExists: 'Diese E-Mail-Adresse gehört bereits zu einem Kundenkonto beim Händler.',
      rateLimited: 'Zu viele Versuche von Ihrer Verbindung. Warten Sie eine Minute und versuchen Sie es dann erneut.',
      notSent: 'Die Zahlung konnte nicht gesendet werden (HTTP {status}).',
      redirecting: 'Sie werden zum Händler zurückgeleitet … ',
      continueLink: 'Weiter',
      processingOnce: 'Ihre Zahlung wird verarbeitet. Zahlen Sie nicht erneut: der Händler bestätigt sie, sobald sie abgeschlossen ist.',
      processingWait: 'Ihre Zahlung wird verarbeitet. Wir warten auf ihr Ergebnis …',
      expired: 'Diese Zahlungsseite ist abgelaufen. Laden Sie die Seite neu, um ihren Stand zu sehen.',
      noResultYet: 'Das Ergebnis Ihrer Zahlung liegt noch nicht vor. Sie können es erneut versuchen: solange die erste Zahlung verarbeitet wird, erfahren Sie es, und es wird nicht zweimal belastet.',
      fieldWords: 'page',
    },
  },
  fr: {
    payTitle: (number, merchant) => `Payer la facture ${number} de ${merchant}`,
    invoice: (number) => html`Facture ${number}`,
    due: (date) => `Échéance le ${date}`,
    pay: (amount) => `Payer ${amount}`,
    paymentSuccessful: 'Paiement réussi',
    thanks: (merchant, amount, number) => html`Merci\u00a0: ${merchant} a bien reçu votre paiement de ${amount} pour la facture ${number}. Vous pouvez fermer cette page.`,
    paidTitle: 'Cette facture est payée',
    paidText: (number) => html`Merci\u00a0: il ne reste rien à payer sur la facture ${number}.`,
    voidTitle: 'Cette facture est annulée',
    voidText: (merchant) => `${merchant ?? 'Le commerçant'} l'a annulée\u00a0; il n'y a rien à payer.`,
    processingTitle: 'Un paiement est en cours de traitement',
    processingText: 'Un paiement de cette facture est en cours. Rechargez cette page dans un instant pour voir son résultat.',
    authenticateTitle: 'Confirmez votre paiement',
    authenticateText: (amount) => `Votre banque vous demande de confirmer le paiement de ${amount} (3-D Secure). Rien n'a encore été débité.`,
    authenticateButton: "Terminer l'authentification",
    authenticationFailed: "Le paiement n'a pas été authentifié\u00a0; rien n'a été débité. Vous pouvez payer par carte ci-dessous.",
    lastPaymentFailed: "Le dernier paiement de cette facture n'a pas abouti\u00a0; rien n'a été débité. Vous pouvez payer par carte ci-dessous.",
    theMerchant: 'le commerçant',
    testBadge: 'Mode test',
    testHint: "Mode test\u00a0: aucun argent ne circule. La carte 4242 4242 4242 4242 est acceptée et la carte 4000 0000 0000 0002 refusée, avec n'importe quelle date d'expiration future et n'importe quel CVC.",
    form: { cardNumber: 'Numéro de carte', expiry: "Date d'expiration", expiryPlaceholder: 'MM/AA', cvc: 'Cryptogramme (CVC)', name: 'Nom', email: 'E-mail', optional: 'facultatif' },
    script: {
      card_declined: 'Votre carte a été refusée. Essayez une autre carte ou contactez votre banque.',
      insufficient_funds: 'Votre carte a été refusée\u00a0: provision insuffisante. Essayez une autre carte.',
      expired_card: 'Votre carte a été refusée\u00a0: la carte a expiré. Essayez une autre carte.',
      incorrect_cvc: 'Votre carte a été refusée\u00a0: le cryptogramme est incorrect. Vérifiez-le et réessayez.',
      declinedBecause: 'Votre carte a été refusée. Essayez une autre carte ou contactez votre banque.',
      notProcessed: "Le paiement n'a pas abouti\u00a0; rien ne vous a été débité. Réessayez.",
      notProcessedReason: '',
      numberMissing: 'Saisissez votre numéro de carte.',
      numberInvalid: "Ce numéro de carte n'est pas valide. Vérifiez-le et réessayez.",
      expiryMissing: "Saisissez la date d'expiration (MM/AA).",
      expiryFormat: "Saisissez la date d'expiration au format MM/AA, par exemple 04/29.",
      expiryPast: "Cette date d'expiration est passée.",
      cvcAmex: 'Saisissez le cryptogramme à 4 chiffres au recto de la carte.',
      cvc: 'Saisissez le cryptogramme à 3 ou 4 chiffres au verso de la carte.',
      email: 'Saisissez une adresse e-mail valide, ou laissez le champ vide.',
      processing: 'Traitement en cours…',
      saving: 'Enregistrement…',
      unreachable: "Le serveur de paiement est injoignable. Vérifiez votre connexion et réessayez\u00a0: une même tentative n'est jamais débitée deux fois.",
      serverError: "Une erreur s'est produite de notre côté{request}. Réessayez\u00a0: une même tentative n'est jamais débitée deux fois.",
      requestRef: ' (requête {id})',
      inUse: 'Un paiement est déjà en cours de traitement. En attente de son résultat…',
      invalidState: 'Cette facture ne peut plus être payée. Rechargez la page pour voir où elle en est.',
      invalidStateDefault: '',
      linkInactive: "Cette facture n'accepte plus de paiements.",
      tooManyAttempts: "Trop de tentatives de paiement ont échoué. Rien n'a été débité.",
      tooManyAttemptsDefault: '',
      customerExists: 'Cette adresse e-mail appartient déjà à un compte client chez le commerçant.',
      rateLimited: 'Trop de tentatives depuis votre connexion. Attendez une minute, puis réessayez.',
      notSent: "Le paiement n'a pas pu être envoyé (HTTP {status}).",
      redirecting: 'Retour vers le commerçant… ',
      continueLink: 'Continuer',
      processingOnce: 'Votre paiement est en cours de traitement. Ne payez pas une seconde fois\u00a0: le commerçant le confirmera une fois réglé.',
      processingWait: 'Votre paiement est en cours de traitement. En attente de son résultat…',
      expired: 'Cette page de paiement a expiré. Rechargez la page pour voir où elle en est.',
      noResultYet: "Nous n'avons pas encore reçu le résultat de votre paiement. Vous pouvez réessayer\u00a0: tant que le premier paiement est en cours, vous en serez informé et rien ne sera débité deux fois.",
      fieldWords: 'page',
    },
  },
};

function notFoundView(request: PageRequest): PageView {
  // No invoice, so no customer to speak to in their language: English.
  return statePage({
    status: 404,
    title: 'Invoice not found',
    body: html`<h1>Invoice not found</h1>
<p>There is no invoice to pay at this address. Check the link in the e-mail you were sent.</p>
<p class="meta">Error <code>resource_not_found</code> · Request id <code>${request.requestId}</code></p>`,
  });
}

/** An invoice number in running text: kept whole (a browser would break it after its hyphen). */
const numberOf = (inv: PublicInvoice) => html`<span class="nowrap">${inv.number}</span>`;

/** The customer's words and formats: the language of the locale (en, de, fr), the formats of its region. */
function localeOf(inv: PublicInvoice) {
  const language = invoiceLanguage(inv.locale);
  return { language, words: WORDS[language], money: (amount: number) => formatMoney(amount, inv.currency, inv.locale) };
}

function stateView(inv: PublicInvoice, title: string, text: SafeHtml | string): PageView {
  const { language, words } = localeOf(inv);
  return statePage({
    lang: language,
    title,
    body: html`${merchantHeader(inv.merchantName, inv.livemode, words.testBadge)}
<h1>${title}</h1>
<p>${text}</p>
<p class="meta">${words.invoice(html`<code>${inv.number}</code>`)}</p>`,
  });
}

/**
 * The invoice's totals under its lines, as its PDF and mail show them: subtotal, a row per tax
 * rate, total, credit applied and paid when any, amount due; then the reverse-charge notice.
 */
function totalsList(inv: PublicInvoice): SafeHtml {
  const rows = invoiceTotalRows(inv, inv.locale);
  const notice = inv.reverseCharge ? html`<p class="description tax-notice">${invoiceTaxLabels(inv.locale).reverseCharge}</p>` : '';
  return html`<ul class="totals">${rows.map((row) => html`<li class="total-${row.kind}"><span>${row.label}${row.detail ? html`<br><small>${row.detail}</small>` : ''}</span> <span class="total-amount">${row.value}</span></li>`)}</ul>
${notice}`;
}

/**
 * The invoice's payment waits for the customer's 3-D Secure authentication: the way to it (the
 * challenge, which brings the customer back here), and no card form (no second charge meanwhile).
 */
function authenticateView(inv: PublicInvoice, url: string): PageView {
  const { language, words, money } = localeOf(inv);
  return statePage({
    lang: language,
    title: words.authenticateTitle,
    body: html`${merchantHeader(inv.merchantName, inv.livemode, words.testBadge)}
<h1>${words.authenticateTitle}</h1>
<p>${words.authenticateText(money(inv.amountDue))}</p>
<p class="status info"><a id="authenticate" href="${url}">${words.authenticateButton}</a></p>
<p class="meta">${words.invoice(html`<code>${inv.number}</code>`)}</p>`,
  });
}

/** Over the card form when the latest payment failed: why, in the customer's words (the payment's own message is English). */
function failureNotice(inv: PublicInvoice, words: PageWords): SafeHtml | string {
  if (inv.paymentStatus !== 'failed' || !inv.paymentFailureCode) return '';
  const authentication = inv.paymentFailureCode === 'authentication_failed' || inv.paymentFailureCode === 'authentication_expired';
  return html`<p id="invoice-payment-failed" class="status" data-code="${inv.paymentFailureCode}">${authentication ? words.authenticationFailed : words.lastPaymentFailed}</p>`;
}

function openView(inv: PublicInvoice): PageView {
  const { language, words, money } = localeOf(inv);
  const merchant = inv.merchantName || words.theMerchant;
  const due = money(inv.amountDue);
  return cardPage({
    lang: language,
    title: words.payTitle(inv.number, merchant),
    body: html`${merchantHeader(inv.merchantName, inv.livemode, words.testBadge)}
${failureNotice(inv, words)}
<div class="summary">
<p class="description">${words.invoice(inv.number)}</p>
<h1 class="amount">${due}</h1>
${inv.dueDate ? html`<p class="description">${words.due(formatInvoiceDate(inv.dueDate, inv.locale))}</p>` : ''}
<ul class="lines">${inv.lineItems.map((l) => html`<li><span>${l.quantity > 1 ? `${formatQuantity(l.quantity, inv.locale)} × ` : ''}${l.description}</span> <span class="line-amount">${money(l.amount)}</span></li>`)}</ul>
${totalsList(inv)}
</div>
${cardForm({
    kind: 'link',
    mode: 'payment',
    payUrl: `/v1/public/invoices/${encodeURIComponent(inv.id)}/pay`,
    buttonLabel: words.pay(due),
    askEmail: false,
    askName: false,
    doneTitle: words.paymentSuccessful,
    doneText: words.thanks(merchant, due, numberOf(inv)),
    labels: words.form,
    messages: words.script,
  })}
${testModeHint(inv.livemode, words.testHint)}`,
  });
}

/**
 * `/invoice/{id}`: a sent invoice's card form (with why its last payment failed, if it did), the
 * way to authenticate its payment (3-D Secure), or the state it is in (paid, void, being paid, unknown), in the customer's language and its region's formats, as the invoice's PDF and mail.
 */
export const invoicePage: Page = {
  path: '/invoice/:id',
  async render(services, request) {
    let inv: PublicInvoice;
    try {
      inv = await services.invoices.publicView(request.params.id);
    } catch (err) {
      if (isDomainError(err) && err.code === 'resource_not_found') return notFoundView(request);
      throw err;
    }
    const { words } = localeOf(inv);
    if (inv.status === 'paid') return stateView(inv, words.paidTitle, words.paidText(numberOf(inv)));
    if (inv.status === 'void') return stateView(inv, words.voidTitle, words.voidText(inv.merchantName || null));
    if (inv.paymentStatus === 'processing') return stateView(inv, words.processingTitle, words.processingText);
    if (inv.paymentStatus === 'requires_action') {
      return inv.nextActionUrl ? authenticateView(inv, inv.nextActionUrl) : stateView(inv, words.processingTitle, words.processingText);
    }
    return openView(inv);
  },
};
