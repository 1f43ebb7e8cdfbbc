import type { InvoiceDocument } from '../invoices/invoice-document';

/**
 * An attachment made when the mail is sent, from what the outbox row holds: the PDF is rendered
 * by the worker after commit, never inside the transaction that queues the mail.
 */
export type MailAttachmentSource = { type: 'invoice_pdf'; document: InvoiceDocument };

/** A mail as it is queued: written in the same transaction as the change it reports. */
export interface OutgoingMail {
  to: string;
  subject: string;
  text: string;
  html: string;
  attachments: Array<{ filename: string; contentType: string; source: MailAttachmentSource }>;
  /** The object the mail is about, whose `emailStatus` follows the mail's. */
  about: { type: 'invoice'; id: string };
}

/** queued → sent, or failed once its retries are spent (API.md §12 `emailStatus`). */
export type MailStatus = 'queued' | 'sent' | 'failed';
