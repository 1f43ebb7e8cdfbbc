import { isDomainError } from '../../src/core/errors';
import { formatAmount } from '../../src/core/money';
import type { InvoiceService } from '../../src/modules/invoices/invoice.service';
import { formatInvoiceDate } from '../../src/modules/invoices/invoice-i18n';
import { html, type SafeHtml } from './html';
import type { Page, PageRequest } from './page';
import type { PageView } from './page-layout';
import { cardForm, cardPage, merchantHeader, statePage, testModeHint } from './card-form';

type PublicInvoice = Awaited<ReturnType<InvoiceService['publicView']>>;

function notFoundView(request: PageRequest): PageView {
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

function stateView(inv: PublicInvoice, title: string, text: SafeHtml | string): PageView {
  return statePage({
    title,
    body: html`${merchantHeader(inv.merchantName, inv.livemode)}
<h1>${title}</h1>
<p>${text}</p>
<p class="meta">Invoice <code>${inv.number}</code></p>`,
  });
}

function openView(inv: PublicInvoice): PageView {
  const merchant = inv.merchantName || 'the merchant';
  const due = formatAmount(inv.amountDue, inv.currency);
  return cardPage({
    title: `Pay invoice ${inv.number} from ${merchant}`,
    body: html`${merchantHeader(inv.merchantName, inv.livemode)}
<div class="summary">
<p class="description">Invoice ${inv.number}</p>
<h1 class="amount">${due}</h1>
${inv.dueDate ? html`<p class="description">Due ${formatInvoiceDate(inv.dueDate, 'en')}</p>` : ''}
<ul class="lines">${inv.lineItems.map((l) => html`<li><span>${l.quantity > 1 ? `${l.quantity} × ` : ''}${l.description}</span> <span class="line-amount">${formatAmount(l.amount, inv.currency)}</span></li>`)}</ul>
</div>
${cardForm({
    kind: 'link',
    mode: 'payment',
    payUrl: `/v1/public/invoices/${encodeURIComponent(inv.id)}/pay`,
    buttonLabel: `Pay ${due}`,
    askEmail: false,
    askName: false,
    doneTitle: 'Payment successful',
    doneText: html`Thank you: ${merchant} has received your payment of ${due} for invoice ${numberOf(inv)}. You can close this page.`,
  })}
${testModeHint(inv.livemode)}`,
  });
}

/** `/invoice/{id}`: a sent invoice's card form, or the state it is in (paid, void, being paid, unknown). */
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
    if (inv.status === 'paid') return stateView(inv, 'This invoice is paid', html`Thank you: there is nothing more to pay on invoice ${numberOf(inv)}.`);
    if (inv.status === 'void') return stateView(inv, 'This invoice is void', `${inv.merchantName || 'The merchant'} canceled it; there is nothing to pay.`);
    if (inv.paymentStatus === 'processing') return stateView(inv, 'A payment is being processed', 'A payment of this invoice is on its way. Reload this page in a moment to see its result.');
    return openView(inv);
  },
};
