import { createHash } from 'node:crypto';
import type { Clock } from '../../core/clock';
import type { Mode, RequestContext } from '../../core/context';
import { isDomainError } from '../../core/errors';
import { IdempotentReplay, idempotencyScope, type IdempotencyKey } from '../../core/idempotency';
import type { Metadata } from '../../core/validation';
import type { CardInput } from '../../core/card';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import type { PaymentLinks, PaymentService, Payment } from './payment.service';
import type { PaymentMethodService, SavedPaymentMethod } from './payment-method.service';
import type { PaymentHold } from './payment-hold';
import type { StoredKey } from '../idempotency/idempotency.store';
import type { AttemptTarget, PublicAttempts } from './public-attempts';

/** What a public pay answers (API.md §11): the page shows it, and follows `redirectUrl`. */
export interface PayResult {
  /**
   * `processing`: the gateway's answer is not known yet; recovery settles the payment.
   * `requires_action`: the customer authenticates the payment first (3-D Secure): the page
   * follows `redirectUrl`, the challenge, which brings the customer back to the page.
   */
  status: 'succeeded' | 'failed' | 'processing' | 'requires_action';
  paymentId: string | null;
  subscriptionId: string | null;
  paymentMethodId: string | null;
  failureCode: string | null;
  failureMessage: string | null;
  redirectUrl: string | null;
}

/** Who sent a public request: its id (logs, errors) and the client's address (the attempt caps). */
export interface PublicRequest {
  requestId: string;
  clientAddress: string;
}

/** The object a public route acts on: its account and mode are the ones the pay runs in. */
export interface PublicTarget {
  accountId: string;
  mode: Mode;
}

/**
 * The public pay path: what a customer's card does on a hosted page (a checkout session, a
 * payment link, and later an invoice or a subscription's retry), built once. A public request
 * has no API key: it acts in the account and mode of the object it pays, with only what paying
 * needs (charging through routing, saving the card, knowing the customer), through the same
 * services as `POST /v1/payments` and saved cards, so routing, idempotency, recovery and events
 * are theirs.
 */
export class PublicPayPath {
  constructor(
    private readonly payments: PaymentService,
    private readonly paymentMethods: PaymentMethodService,
    private readonly idempotency: IdempotencyService,
    private readonly clock: Clock,
    private readonly attempts: PublicAttempts,
  ) {}

  /**
   * Runs one pay attempt of a hosted page under the caps on failed attempts (API.md §11):
   * refused with 429 `too_many_attempts` before `pay` (and any gateway) is reached.
   */
  attempt(target: AttemptTarget, request: PublicRequest, pay: () => Promise<PayResult>): Promise<PayResult> {
    return this.attempts.run(target, request.clientAddress, pay);
  }

  /** Whether a checkout session has used up its failed attempts (it can no longer be paid). */
  sessionExhausted(sessionId: string): Promise<boolean> {
    return this.attempts.sessionExhausted(sessionId);
  }

  /** The context of a public request paying `target`: that object's account and mode, permission to pay and nothing else. */
  context(target: PublicTarget, requestId: string): RequestContext {
    return { accountId: target.accountId, mode: target.mode, permissions: ['payments:write', 'customers:write'], requestId, clock: this.clock };
  }

  /**
   * A public request's Idempotency-Key in the account's key space: the transport scopes it by
   * the session or link it names (`public:<hash>`); the payment it makes is the account's, so the
   * key is named after that scope inside the account's (recovery answers keys there). A merchant's
   * own key cannot be mistaken for it: an API key's requests fingerprint differently.
   */
  accountKey(idem: IdempotencyKey | undefined, target: PublicTarget): IdempotencyKey | undefined {
    if (!idem) return undefined;
    return { scope: idempotencyScope(target.accountId, target.mode), key: this.keyName(idem), fingerprint: idem.fingerprint, requester: idem.requester };
  }

  /** The name `accountKey` gives the key in the account's key space (the same whatever the account: a read can look it up with its object). */
  keyName(idem: IdempotencyKey): string {
    const named = `${idem.scope}/${idem.key}`;
    return named.length <= 255 ? named : `sha256:${createHash('sha256').update(named).digest('hex')}`;
  }

  /**
   * A key already answered is replayed as the pay result it gave (the payment or saved card it
   * stored, read the same way again); a key in use or reused is its 409. Run before the object's
   * state is checked: a retry of a pay that completed a session replays, not `invalid_state`.
   * `read`: the key as the caller read it with its object (CheckoutStore.findSessionForPay).
   */
  async replayIfPaid(idem: IdempotencyKey | undefined, redirectUrl: (result: PayResult) => string | null, read?: StoredKey | null): Promise<void> {
    try {
      await this.idempotency.replayIfAnswered(idem, read);
    } catch (err) {
      if (err instanceof IdempotentReplay) throw asResultReplay(err, redirectUrl);
      throw err;
    }
  }

  /** Charges the card as `POST /v1/payments` with `paymentMethod: "card"` would. */
  async charge(
    ctx: RequestContext,
    charge: {
      amount: number; currency: string; description: string | null; customerId: string | null; receiptEmail?: string | null; card: CardInput; metadata?: Metadata;
      /** `manual`: authorised only (a session's or a link's captureMethod); automatic unless given. */
      captureMethod?: 'automatic' | 'manual';
      /** The hosted page the customer comes back to after a 3-D Secure challenge (with `?payment_id=`). */
      returnUrl?: string;
    },
    links: PaymentLinks,
    idem: IdempotencyKey | undefined,
    redirectUrl: (result: PayResult) => string | null,
    /** The payment's id when the caller names it before the charge (an invoice does). */
    paymentId?: string,
    /** What the payment holds while it runs (a checkout session: PaymentHold), claimed and finished with it. */
    hold?: PaymentHold,
  ): Promise<{ result: PayResult; payment: Payment }> {
    let payment: Payment;
    try {
      payment = await this.payments.create(ctx, {
        amount: charge.amount,
        currency: charge.currency,
        paymentMethod: 'card',
        card: charge.card,
        ...(charge.customerId ? { customerId: charge.customerId } : {}),
        ...(charge.description ? { description: charge.description } : {}),
        ...(charge.receiptEmail ? { receiptEmail: charge.receiptEmail } : {}),
        ...(charge.metadata && Object.keys(charge.metadata).length ? { metadata: charge.metadata } : {}),
        ...(charge.captureMethod === 'manual' ? { captureMethod: 'manual' } : {}),
        ...(charge.returnUrl ? { returnUrl: charge.returnUrl } : {}),
      }, idem, links, paymentId, hold);
    } catch (err) {
      if (err instanceof IdempotentReplay) throw asResultReplay(err, redirectUrl);
      throw err;
    }
    return { result: withRedirect(resultOfPayment(payment), redirectUrl), payment };
  }

  /** Saves the card for the customer as their default, as `POST /v1/customers/{id}/payment-methods` would. */
  async saveCard(
    ctx: RequestContext,
    customerId: string,
    card: CardInput,
    idem: IdempotencyKey | undefined,
    redirectUrl: (result: PayResult) => string | null,
  ): Promise<{ result: PayResult; method: SavedPaymentMethod | null }> {
    try {
      const method = await this.paymentMethods.save(ctx, customerId, { card, setDefault: true }, idem);
      return { result: withRedirect(resultOfMethod(method), redirectUrl), method };
    } catch (err) {
      if (err instanceof IdempotentReplay) throw asResultReplay(err, redirectUrl);
      return declinedSave(err);
    }
  }

  /**
   * An anonymous payer's card saved for a new customer with the e-mail given, who exists only once
   * the card is saved; an e-mail that is already a customer's is refused (422 `customer_exists`).
   */
  async saveCardForNewCustomer(
    ctx: RequestContext,
    payer: { email: string; name: string | null },
    card: CardInput,
    redirectUrl: (result: PayResult) => string | null,
  ): Promise<{ result: PayResult; method: SavedPaymentMethod | null }> {
    try {
      const method = await this.paymentMethods.saveForNewCustomer(ctx, payer, { card });
      return { result: withRedirect(resultOfMethod(method), redirectUrl), method };
    } catch (err) {
      return declinedSave(err);
    }
  }
}

/** The card's own refusal is the customer's to see (200, status failed), as a declined charge is; anything else is thrown on. */
function declinedSave(err: unknown): { result: PayResult; method: null } {
  if (isDomainError(err) && err.code === 'card_declined') {
    const code = /\(([a-z_]+)\)$/.exec(err.message)?.[1] ?? 'card_declined';
    return { result: { ...emptyResult('failed'), failureCode: code, failureMessage: 'Your card was declined.' }, method: null };
  }
  throw err;
}

function emptyResult(status: PayResult['status']): PayResult {
  return { status, paymentId: null, subscriptionId: null, paymentMethodId: null, failureCode: null, failureMessage: null, redirectUrl: null };
}

function withRedirect(result: PayResult, redirectUrl: (result: PayResult) => string | null): PayResult {
  // A challenge to answer: its page is where the payer goes now, whatever the page would do after.
  if (result.status === 'requires_action') return result;
  return { ...result, redirectUrl: redirectUrl(result) };
}

/**
 * What a payer is told of a payment: settled one way or the other (an authorisation is paid, from
 * the payer's side), a challenge to answer, or still `processing` (pending, or under review).
 */
const PAY_RESULT_OF: Readonly<Record<Payment['status'], PayResult['status']>> = {
  pending: 'processing', requires_action: 'requires_action', requires_capture: 'succeeded', succeeded: 'succeeded', failed: 'failed', canceled: 'failed',
  requires_review: 'processing',
};

/**
 * A pay's result when no payment of it can be read (a subscription whose first charge is known
 * only by the subscription's state): paid, or declined as a card is.
 */
export function resultWithoutPayment(paid: boolean): PayResult {
  return paid
    ? emptyResult(PAY_RESULT_OF.succeeded)
    : { ...emptyResult(PAY_RESULT_OF.failed), failureCode: 'card_declined', failureMessage: 'Your card was declined.' };
}

/** What a payer is told of a payment in this status (an authorisation is paid, from the payer's side). */
export function payResultStatus(status: Payment['status']): PayResult['status'] {
  return PAY_RESULT_OF[status];
}

export function resultOfPayment(payment: Payment): PayResult {
  const status = PAY_RESULT_OF[payment.status];
  return {
    ...emptyResult(status),
    paymentId: payment.id,
    subscriptionId: payment.subscriptionId,
    failureCode: status === 'failed' ? payment.failureCode : null,
    failureMessage: status === 'failed' ? payment.failureMessage : null,
    redirectUrl: status === 'requires_action' ? (payment.nextAction?.url ?? null) : null,
  };
}

function resultOfMethod(method: SavedPaymentMethod): PayResult {
  return { ...emptyResult('succeeded'), paymentMethodId: method.id };
}

/** A stored payment or saved card, replayed as the pay result it answered (200). */
function asResultReplay(replay: IdempotentReplay, redirectUrl: (result: PayResult) => string | null): IdempotentReplay {
  const stored = JSON.parse(replay.stored) as { object?: string };
  const result = stored.object === 'payment_method' ? resultOfMethod(stored as SavedPaymentMethod) : resultOfPayment(stored as Payment);
  return new IdempotentReplay(200, JSON.stringify(withRedirect(result, redirectUrl)));
}
