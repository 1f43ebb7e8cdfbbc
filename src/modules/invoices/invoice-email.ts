import { escapeHtml } from '../../core/html';
import type { InvoiceDocument } from './invoice-document';
import { formatInvoiceDate, formatMoney, invoiceLabels, invoiceLanguage, type InvoiceLanguage } from './invoice-i18n';
import { invoiceTaxLabels, invoiceTotalRows } from './invoice-tax-i18n';

export interface InvoiceEmail {
  subject: string;
  text: string;
  html: string;
}

export interface InvoiceEmailOptions {
  /** The public page where the customer pays the invoice by card. */
  hostedUrl?: string;
  /**
   * `authentication`: the invoice's charge waits for the customer to authenticate it (3-D
   * Secure); the mail asks them to do so on the hosted page (`hostedUrl`) and carries no PDF.
   * `invoice` (default): the invoice sent.
   */
  purpose?: 'invoice' | 'authentication';
}

interface Wording {
  subject: (number: string, merchant: string) => string;
  greeting: (name: string | null) => string;
  /** The sentence naming merchant, number and total; each part arrives already marked up. */
  sent: (merchant: string, number: string, total: string) => string;
  dueDate: string;
  payOnline: string;
  attached: string;
  /** Before the subject of a test-mode invoice's mail. */
  testSubject: string;
  /** The mail asking the customer to authenticate the invoice's payment (3-D Secure). */
  actionSubject: (number: string, merchant: string) => string;
  actionRequired: (merchant: string, number: string, amount: string) => string;
  authenticateOnline: string;
}

const WORDING: Record<InvoiceLanguage, Wording> = {
  en: {
    subject: (number, merchant) => `Invoice ${number} from ${merchant}`,
    greeting: (name) => (name ? `Hello ${name},` : 'Hello,'),
    sent: (merchant, number, total) => `${merchant} has sent you invoice ${number} for ${total}.`,
    dueDate: 'Due date:',
    payOnline: 'Pay online:',
    attached: 'The invoice is attached as a PDF.',
    testSubject: '[Test mode]',
    actionSubject: (number, merchant) => `Action required: confirm your payment of invoice ${number} from ${merchant}`,
    actionRequired: (merchant, number, amount) => `Your bank asks you to confirm the payment of ${amount} for invoice ${number} from ${merchant} (3-D Secure). Nothing has been charged yet.`,
    authenticateOnline: 'Authenticate the payment on the invoice page:',
  },
  de: {
    subject: (number, merchant) => `Rechnung ${number} von ${merchant}`,
    greeting: (name) => (name ? `Guten Tag ${name},` : 'Guten Tag,'),
    sent: (merchant, number, total) => `${merchant} hat Ihnen die Rechnung ${number} über ${total} gesendet.`,
    dueDate: 'Fällig am:',
    payOnline: 'Online bezahlen:',
    attached: 'Die Rechnung ist als PDF angehängt.',
    testSubject: '[Testmodus]',
    actionSubject: (number, merchant) => `Handlung erforderlich: Bestätigen Sie Ihre Zahlung der Rechnung ${number} von ${merchant}`,
    actionRequired: (merchant, number, amount) => `Ihre Bank bittet Sie, die Zahlung über ${amount} für die Rechnung ${number} von ${merchant} zu bestätigen (3-D Secure). Bisher wurde nichts belastet.`,
    authenticateOnline: 'Bestätigen Sie die Zahlung auf der Rechnungsseite:',
  },
  fr: {
    subject: (number, merchant) => `Facture ${number} de la part de ${merchant}`,
    greeting: (name) => (name ? `Bonjour ${name},` : 'Bonjour,'),
    sent: (merchant, number, total) => `${merchant} vous a envoyé la facture ${number} d'un montant de ${total}.`,
    dueDate: "Date d'échéance\u00a0:",
    payOnline: 'Payer en ligne\u00a0:',
    attached: 'La facture est jointe au format PDF.',
    testSubject: '[Mode test]',
    actionSubject: (number, merchant) => `Action requise\u00a0: confirmez votre paiement de la facture ${number} de ${merchant}`,
    actionRequired: (merchant, number, amount) => `Votre banque vous demande de confirmer le paiement de ${amount} pour la facture ${number} de ${merchant} (3-D Secure). Rien n'a encore été débité.`,
    authenticateOnline: 'Confirmez le paiement sur la page de la facture\u00a0:',
  },
};

/** One line: a name with a line break in it must not break the subject or the greeting. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * The e-mail that carries an invoice's PDF, in the customer's language and its region's formats
 * (dates, amounts): greeting, number, total, due date, the totals as the PDF shows them (subtotal,
 * a row per tax rate, credit applied, total, amount due) with the reverse-charge notice when the
 * invoice carries it, the pay link when there is one (in the plain text and the HTML part alike). A test-mode invoice says so in its subject and first line,
 * as its PDF does. Merchant and customer text is escaped in the HTML body.
 */
export function invoiceEmail(invoice: InvoiceDocument, options: InvoiceEmailOptions = {}): InvoiceEmail {
  const { hostedUrl } = options;
  const action = options.purpose === 'authentication';
  if (action && hostedUrl === undefined) throw new RangeError('an authentication mail needs the hosted invoice page (hostedUrl)');
  if (hostedUrl !== undefined && !/^https?:\/\//i.test(hostedUrl)) throw new RangeError(`hostedUrl must be an http(s) URL: ${hostedUrl}`);
  const language = invoiceLanguage(invoice.locale);
  const words = WORDING[language];
  const merchant = oneLine(invoice.merchant.name);
  const customerName = invoice.customer.name ? oneLine(invoice.customer.name) || null : null;
  const number = oneLine(invoice.number);
  const total = formatMoney(invoice.total, invoice.currency, invoice.locale);
  const dueDate = invoice.dueDate ? formatInvoiceDate(invoice.dueDate, invoice.locale) : null;
  const testNotice = invoice.livemode ? null : invoiceLabels(invoice.locale).testMode;
  const subject = `${testNotice ? `${words.testSubject} ` : ''}${(action ? words.actionSubject : words.subject)(number, merchant)}`;
  const due = formatMoney(invoice.amountDue, invoice.currency, invoice.locale);
  // What the mail says first, and the words before the link.
  const opening = (m: string, n: string, amount: string, t: string) => (action ? words.actionRequired(m, n, amount) : words.sent(m, n, t));
  const linkWords = action ? words.authenticateOnline : words.payOnline;
  const { separator } = invoiceLabels(invoice.locale);
  const totals = invoiceTotalRows(invoice, invoice.locale);
  const reverseCharge = invoice.reverseCharge ? invoiceTaxLabels(invoice.locale).reverseCharge : null;

  const text = [
    ...(testNotice ? [`${testNotice}.`, ''] : []),
    words.greeting(customerName),
    '',
    opening(merchant, number, due, total),
    ...(dueDate ? [`${words.dueDate} ${dueDate}`] : []),
    '',
    ...totals.map((row) => `${row.label}${row.detail ? ` (${row.detail})` : ''}${separator}${row.value}`),
    ...(reverseCharge ? ['', reverseCharge] : []),
    ...(hostedUrl ? ['', `${linkWords} ${hostedUrl}`] : []),
    '',
    ...(action ? [] : [words.attached, '']),
    merchant,
    '',
  ].join('\n');

  const e = escapeHtml;
  const paragraphs = [
    ...(testNotice ? [`<strong>${e(testNotice)}.</strong>`] : []),
    e(words.greeting(customerName)),
    opening(e(merchant), `<strong>${e(number)}</strong>`, `<strong>${e(due)}</strong>`, `<strong>${e(total)}</strong>`),
    ...(dueDate ? [`${e(words.dueDate)} ${e(dueDate)}`] : []),
  ];
  // The totals: a row each, the label (and what a tax rate taxes) left, the amount right.
  const totalsTable = [
    '<table role="presentation" style="border-collapse: collapse; margin: 0 0 14px;">',
    ...totals.map((row) => {
      const strong = row.kind === 'total' || row.kind === 'due';
      const label = `${e(row.label)}${row.detail ? `<br><span style="color: #57606a; font-size: 12px;">${e(row.detail)}</span>` : ''}`;
      const value = strong ? `<strong>${e(row.value)}</strong>` : e(row.value);
      return `<tr><td style="padding: 2px 24px 2px 0; vertical-align: top;">${strong ? `<strong>${label}</strong>` : label}</td><td style="padding: 2px 0; text-align: right; vertical-align: top; white-space: nowrap;">${value}</td></tr>`;
    }),
    '</table>',
  ];
  const after = [
    ...(reverseCharge ? [e(reverseCharge)] : []),
    ...(hostedUrl ? [`${e(linkWords)} <a href="${e(hostedUrl)}">${e(hostedUrl)}</a>`] : []),
    ...(action ? [] : [e(words.attached)]),
    e(merchant),
  ];
  const html = [
    '<!DOCTYPE html>',
    `<html lang="${language}">`,
    `<head><meta charset="utf-8"><title>${e(subject)}</title></head>`,
    '<body style="font-family: Helvetica, Arial, sans-serif; font-size: 14px; line-height: 1.5; color: #1f2328;">',
    ...paragraphs.map((p) => `<p>${p}</p>`),
    ...totalsTable,
    ...after.map((p) => `<p>${p}</p>`),
    '</body>',
    '</html>',
    '',
  ].join('\n');

  return { subject, text, html };
}
