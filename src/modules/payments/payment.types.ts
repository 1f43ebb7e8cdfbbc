import type { Metadata } from '../../core/validation';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';

export interface PaymentMethodDetails {
  type: 'card';
  brand: string;
  last4: string;
  expMonth: number | null;
  expYear: number | null;
  fingerprint: string | null;
}

/** One gateway tried, under the names API.md gives: gateway, outcome, code, latency (ms). */
export interface PaymentAttempt {
  gateway: string;
  outcome: string;
  code: string | null;
  latency: number;
}

export interface Payment {
  id: string;
  object: 'payment';
  livemode: boolean;
  customerId: string | null;
  amount: number;
  currency: string;
  originalCurrency: string;
  originalAmount: number | null;
  exchangeRate: string | null;
  paymentMethod: string;
  paymentMethodDetails: PaymentMethodDetails;
  description: string | null;
  /** The e-mail an anonymous payer gave for the receipt (no customer is attached then). */
  receiptEmail: string | null;
  metadata: Metadata;
  /** `requires_review`: the charge's outcome stayed unknown past UNKNOWN_OUTCOME_REVIEW_AFTER_MS; recovery stopped asking. */
  status: 'pending' | 'requires_action' | 'requires_capture' | 'succeeded' | 'failed' | 'canceled' | 'requires_review';
  failureCode: string | null;
  failureMessage: string | null;
  /** `automatic`: captured with the authorisation; `manual`: authorised only, captured by POST /v1/payments/{id}/capture. */
  captureMethod: CaptureMethod;
  /** What an uncaptured authorisation holds (`requires_capture`); 0 otherwise. */
  amountCapturable: number;
  /** What was taken from the card; refunds are held to it. */
  amountCaptured: number;
  /** While `requires_action`: where the customer authenticates (3-D Secure). */
  nextAction: NextAction | null;
  amountRefunded: number;
  refunded: boolean;
  gatewayId: string | null;
  attempts: PaymentAttempt[];
  invoiceId: string | null;
  subscriptionId: string | null;
  checkoutSessionId: string | null;
  paymentLinkId: string | null;
  createdAt: string;
  updatedAt: string;
}

export type CaptureMethod = 'automatic' | 'manual';

export interface NextAction {
  type: 'redirect_to_url';
  url: string;
}

/** Links a payment to what caused it (invoices, checkout sessions, … in later features). */
export interface PaymentLinks {
  invoiceId?: string | null;
  subscriptionId?: string | null;
  checkoutSessionId?: string | null;
  paymentLinkId?: string | null;
}

/** What `POST /v1/payments` answers with: the status its Idempotency-Key's stored answer carries. */
export const PAYMENT_CREATED_STATUS = IDEMPOTENT_OPERATIONS.createPayment.status;

/** The events that carry this module's objects (EventObjects: the events module's map of type to payload). */
declare module '../events/event-objects' {
  interface EventObjects {
    'payment.succeeded': Payment;
    'payment.failed': Payment;
    'payment.requires_review': Payment;
    'payment.authorized': Payment;
    'payment.requires_action': Payment;
    'payment.canceled': Payment;
    'payment.updated': Payment;
  }
}
