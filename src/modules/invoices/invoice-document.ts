import type { PostalAddress, TaxId } from '../../core/parties';

/**
 * What an invoice's PDF and e-mail show, and nothing else: a snapshot taken from the invoice, its
 * customer and its account. Rendering reads only this (no clock, no database), so the same
 * snapshot always gives the same bytes: an invoice's PDF is identical on every download while its
 * status is unchanged, and the PDF attached to the e-mail is the one a download gives.
 */
export interface InvoiceDocument {
  /** The invoice's id (also the PDF's document id). */
  id: string;
  /** `INV-000042`. */
  number: string;
  status: 'draft' | 'sent' | 'paid' | 'void';
  livemode: boolean;
  currency: string;
  /** Language of labels, dates and amounts: `en` (default), `de`, `fr`. */
  locale: string;
  /** ISO instants; `createdAt` is also the PDF's creation date. */
  createdAt: string;
  dueDate: string | null;
  sentAt: string | null;
  paidAt: string | null;
  /**
   * The seller (the account) and the buyer (the customer). Address, tax ids and support e-mail
   * are absent from snapshots taken before they existed (a mail queued earlier): read as none.
   */
  merchant: { name: string; address?: PostalAddress | null; taxId?: string | null; supportEmail?: string | null };
  customer: { name: string | null; email: string; address?: PostalAddress | null; taxIds?: TaxId[] };
  lineItems: Array<{
    description: string;
    quantity: number;
    /** Minor units. */
    unitAmount: number;
    amount: number;
    periodStart: string | null;
    periodEnd: string | null;
  }>;
  subtotal: number;
  total: number;
  amountPaid: number;
  /** What the invoice took from the customer's credit balance (its own line when above 0). */
  creditApplied: number;
  amountDue: number;
  memo: string | null;
  paidOutOfBand: boolean;
  /** The exclusive taxes (in `total`); absent: none. */
  tax?: number;
  /** Per tax rate its taxable amount and tax (API.md §12), shown under the subtotal. */
  taxBreakdown?: Array<{ displayName: string; percentage: number; inclusive: boolean; taxableAmount: number; amount: number }>;
  /** The customer accounts for the tax (taxExempt `reverse`): the invoice says so. */
  reverseCharge?: boolean;
}

/**
 * The seller and the buyer an issued invoice keeps (`invoices.parties`, migration 0025): taken
 * from the account and the customer by the statement that moves the invoice out of `draft`, so
 * its PDF, e-mail and hosted page show the parties it was issued to whatever changes after. A
 * draft has none (it shows the parties as they are now); so has an invoice issued before the
 * column existed (it falls back to them too).
 */
export interface InvoiceParties {
  merchant: { name: string; address: PostalAddress | null; taxId: string | null; supportEmail: string | null };
  customer: { name: string | null; email: string; address: PostalAddress | null; taxIds: TaxId[]; locale: string };
}

/** The snapshot of an account's and a customer's details, as an issued invoice keeps them. */
export function invoiceParties(
  merchant: InvoiceDocument['merchant'],
  customer: InvoiceDocument['customer'] & { locale?: string | null },
): InvoiceParties {
  return {
    merchant: { name: merchant.name, address: merchant.address ?? null, taxId: merchant.taxId ?? null, supportEmail: merchant.supportEmail ?? null },
    customer: { name: customer.name, email: customer.email, address: customer.address ?? null, taxIds: customer.taxIds ?? [], locale: customer.locale ?? 'en' },
  };
}
