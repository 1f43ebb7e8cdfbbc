import { isDomainError } from '../../src/core/errors';
import type { InvoiceService } from '../../src/modules/invoices/invoice.service';
import { formatInvoiceDate, formatMoney, formatQuantity, invoiceLanguage, type InvoiceLanguage } from '../../src/modules/invoices/invoice-i18n';
import { html, type SafeHtml } from './html';
import type { Page, PageRequest } from './page';
import type { PageView } from './page-layout';
import { cardForm, cardPage, merchantHeader, statePage, testModeHint, type CardFormLabels } from './card-form';

type PublicInvoice = Awaited<ReturnType<InvoiceService['publicView']>>;

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
  theMerchant: string;
  testBadge: string;
  testHint: string;
  form: CardFormLabels;
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
    theMerchant: 'Händler',
    testBadge: 'Testmodus',
    testHint: 'Testmodus: es fließt kein Geld. Die Karte 4242 4242 4242 4242 wird angenommen, 4000 0000 0000 0002 abgelehnt, mit jedem künftigen Ablaufdatum und jeder Prüfnummer.',
    form: { cardNumber: 'Kartennummer', expiry: 'Ablaufdatum', expiryPlaceholder: 'MM/JJ', cvc: 'Prüfnummer (CVC)', name: 'Name', email: 'E-Mail', optional: 'optional' },
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
    theMerchant: 'le commerçant',
    testBadge: 'Mode test',
    testHint: "Mode test\u00a0: aucun argent ne circule. La carte 4242 4242 4242 4242 est acceptée et la carte 4000 0000 0000 0002 refusée, avec n'importe quelle date d'expiration future et n'importe quel CVC.",
    form: { cardNumber: 'Numéro de carte', expiry: "Date d'expiration", expiryPlaceholder: 'MM/AA', cvc: 'Cryptogramme (CVC)', name: 'Nom', email: 'E-mail', optional: 'facultatif' },
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

function openView(inv: PublicInvoice): PageView {
  const { language, words, money } = localeOf(inv);
  const merchant = inv.merchantName || words.theMerchant;
  const due = money(inv.amountDue);
  return cardPage({
    lang: language,
    title: words.payTitle(inv.number, merchant),
    body: html`${merchantHeader(inv.merchantName, inv.livemode, words.testBadge)}
<div class="summary">
<p class="description">${words.invoice(inv.number)}</p>
<h1 class="amount">${due}</h1>
${inv.dueDate ? html`<p class="description">${words.due(formatInvoiceDate(inv.dueDate, inv.locale))}</p>` : ''}
<ul class="lines">${inv.lineItems.map((l) => html`<li><span>${l.quantity > 1 ? `${formatQuantity(l.quantity, inv.locale)} × ` : ''}${l.description}</span> <span class="line-amount">${money(l.amount)}</span></li>`)}</ul>
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
  })}
${testModeHint(inv.livemode, words.testHint)}`,
  });
}

/**
 * `/invoice/{id}`: a sent invoice's card form, or the state it is in (paid, void, being paid,
 * unknown), in the customer's language and its region's formats, as the invoice's PDF and mail.
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
    return openView(inv);
  },
};
