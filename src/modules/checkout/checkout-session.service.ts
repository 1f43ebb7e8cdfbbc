import type { Database } from '../../db/database';
import type { Clock } from '../../core/clock';
import type { RequestContext } from '../../core/context';
import { requirePermission, systemContext } from '../../core/context';
import { DomainError, invalidState, notFound } from '../../core/errors';
import { newId, randomBase62 } from '../../core/ids';
import { parseInput } from '../../core/validation';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';
import type { IdempotencyKey } from '../../core/idempotency';
import type { Logger } from '../../logger';
import { errorForLog } from '../../logger';
import type { EventService } from '../events/event.service';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';
import type { CustomerService } from '../customers/customer.service';
import type { CatalogService } from '../catalog/catalog.service';
import type { AccountService } from '../accounts/account.service';
import { CheckoutSessionModel } from './checkout-session.model';
import {
  CheckoutStore, toSessionRecord, type CaptureMethod, type CheckoutMode, type CheckoutSessionRecord, type ReturnedPayment, type SessionMoveWrite,
} from './checkout.store';
import { CHECKOUT_SESSION_MOVES, type CheckoutSessionStatus } from './checkout-session-states';
import { SESSION_LIFETIME, createCheckoutSessionInput, listCheckoutSessionsInput } from './checkout.inputs';
import { publicPayInput, type PublicPayInput } from '../payments/payment.inputs';
import type { SavedPaymentMethod } from '../payments/payment-method.service';
import type { PayResult, PublicPayPath, PublicRequest } from '../payments/public-pay';
import type { CardInput } from '../../core/card';
import type { Payment } from '../payments/payment.service';
import type { Transaction } from 'sequelize';
import { HoldRefused, type PaymentHold } from '../payments/payment-hold';
import { returnUrlChecker, type PublicUrls } from '../payments/public-urls';

/** A checkout session as the API returns it. */
export interface CheckoutSession {
  id: string;
  object: 'checkout_session';
  livemode: boolean;
  mode: CheckoutMode;
  status: CheckoutSessionStatus;
  url: string;
  amount: number | null;
  currency: string | null;
  priceId: string | null;
  description: string | null;
  customerId: string | null;
  customerEmail: string | null;
  successUrl: string | null;
  cancelUrl: string | null;
  expiresAt: string;
  paymentId: string | null;
  paymentMethodId: string | null;
  subscriptionId: string | null;
  invoiceId: string | null;
  /** How the session's payment is captured: `manual` authorises it (requires_capture), and that completes the session. */
  captureMethod: CaptureMethod;
  metadata: Record<string, string>;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
  expiredAt: string | null;
}

/** What the hosted page shows (API.md §11): nothing internal (no account, customer id or metadata). */
export interface PublicCheckoutSession {
  id: string;
  object: 'checkout_session';
  livemode: boolean;
  mode: CheckoutMode;
  status: CheckoutSessionStatus;
  amount: number | null;
  currency: string | null;
  description: string | null;
  merchantName: string;
  customerEmail: string | null;
  expiresAt: string;
  successUrl: string | null;
  cancelUrl: string | null;
  recurring: { interval: string; intervalCount: number } | null;
  /** Open and not closed by too many failed attempts. */
  payable: boolean;
}

/**
 * The hosted page a 3-D Secure challenge returns to (`?payment_id=`): the session as the page
 * shows it, settled from its payments, and that payment's outcome when this session's pay made it.
 */
export interface CheckoutReturn {
  session: PublicCheckoutSession;
  payment: ReturnedPayment | null;
  /** The session was completed by this payment: the page shows the success (or goes to successUrl). */
  paidByIt: boolean;
}

/**
 * What subscriptions do for checkout (SubscriptionService): pay a subscription's invoice with a
 * card typed on the page (a retry's session), take a saved card as the subscription's, and create
 * a subscription from a subscription-mode session.
 */
export interface CheckoutSubscriptions {
  /** Charges the invoice with the card (InvoiceService's charge); paid: the subscription takes the outcome (active again). */
  payInvoiceByCard(
    ctx: RequestContext, target: { sessionId: string; subscriptionId: string; invoiceId: string }, card: CardInput,
    key: IdempotencyKey | undefined, redirect: (result: PayResult) => string | null,
  ): Promise<{ result: PayResult; paid: boolean }>;
  /** The card saved on the page becomes the subscription's card (the customer's default already). */
  adoptCard(ctx: RequestContext, subscriptionId: string, paymentMethodId: string): Promise<void>;
  /** Creates the subscription on the saved card, its first invoice charged; `paid` when it is active. */
  createForCheckout(
    ctx: RequestContext, spec: { sessionId: string; customerId: string; priceId: string; paymentMethodId: string },
  ): Promise<{ subscriptionId: string; invoiceId: string | null; paid: boolean; result: PayResult; payment: Payment | null }>;
}

/** A session created for a subscription's invoice (a retry): complete already when the retry paid it. */
export interface InvoiceSessionSpec {
  invoiceId: string;
  subscriptionId: string;
  customerId: string;
  customerEmail: string | null;
  amount: number;
  currency: string;
  description: string;
  paymentId: string | null;
}

/** A session's payment in these statuses has paid it (an authorisation too: the merchant captures it later). */
const PAID_STATUSES: ReadonlySet<string> = new Set(['succeeded', 'requires_capture']);

/** How long a pay's claim on its session lasts before its payment row holds the session instead. */
const PAY_CLAIM_MS = 60_000;
/** Sessions the expiry and reconciling job handles per run. */
const JOB_BATCH = 500;

/**
 * Checkout sessions: created by the merchant (a key), paid by the customer on the hosted page
 * (public, through the public pay path). A session past `expiresAt` is expired for every read and
 * pay at once; the expiry job then writes it and its event.
 */
export class CheckoutSessionService {
  private readonly store: CheckoutStore;

  constructor(
    private readonly db: Database,
    private readonly events: EventService,
    private readonly idempotency: IdempotencyService,
    private readonly customers: CustomerService,
    private readonly catalog: CatalogService,
    private readonly accounts: AccountService,
    private readonly pay: PublicPayPath,
    private readonly urls: PublicUrls,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {
    this.store = new CheckoutStore(db);
  }

  async create(ctx: RequestContext, input: unknown, idem?: IdempotencyKey): Promise<CheckoutSession> {
    requirePermission(ctx, 'checkout_sessions', 'write');
    const data = parseInput(createCheckoutSessionInput, input);
    const checkUrl = returnUrlChecker(ctx.mode);
    const successUrl = data.successUrl === undefined ? null : checkUrl(data.successUrl, 'successUrl');
    const cancelUrl = data.cancelUrl === undefined ? null : checkUrl(data.cancelUrl, 'cancelUrl');
    // What the session charges: an amount, or a price (one-time for payment, recurring for subscription).
    let amount = data.amount ?? null;
    let currency = data.currency ?? null;
    let description = data.description ?? null;
    if (data.priceId !== undefined) {
      const found = await this.catalog.lookupPrice(ctx, data.priceId);
      if (!found) throw notFound('price', data.priceId, 'priceId');
      const { price, productName } = found;
      if (!price.active) throw new DomainError('invalid_parameter', `Price '${price.id}' is not active`, 'priceId');
      if (data.mode === 'payment' && price.recurring) {
        throw new DomainError('invalid_parameter', 'A payment session takes a one-time price; a recurring price is for a subscription session', 'priceId');
      }
      if (data.mode === 'subscription' && !price.recurring) {
        throw new DomainError('invalid_parameter', 'A subscription session takes a recurring price', 'priceId');
      }
      amount = price.unitAmount;
      currency = price.currency;
      description ??= productName || null;
    }
    if (data.customerId !== undefined && !(await this.customers.lookup(ctx, [data.customerId])).has(data.customerId)) {
      throw notFound('customer', data.customerId, 'customerId');
    }
    const now = ctx.clock.now();
    const expiresAt = new Date(now.getTime() + (data.expiresInSeconds ?? SESSION_LIFETIME.defaultSeconds) * 1000);
    return this.db.transaction((transaction) => this.idempotency.once(transaction, idem, IDEMPOTENT_OPERATIONS.createCheckoutSession, async () => {
      const row = await CheckoutSessionModel.create({
        id: newId('cs'), accountId: ctx.accountId, mode: ctx.mode, checkoutMode: data.mode, ...CHECKOUT_SESSION_MOVES.columns('create', now),
        amount, currency, priceId: data.priceId ?? null, description,
        customerId: data.customerId ?? null, customerEmail: data.customerEmail ?? null,
        successUrl, cancelUrl, expiresAt, paymentId: null, paymentMethodId: null, subscriptionId: null, invoiceId: null,
        payingUntil: null, payingToken: null, captureMethod: data.captureMethod ?? 'automatic', metadata: JSON.stringify(data.metadata ?? {}),
        createdAt: now, updatedAt: now, completedAt: null, expiredAt: null,
      }, { transaction });
      return this.toApi(toSessionRecord(row.get({ plain: true }) as Record<string, unknown>), now);
    }));
  }

  async retrieve(ctx: RequestContext, id: string): Promise<CheckoutSession> {
    requirePermission(ctx, 'checkout_sessions', 'read');
    const found = await this.store.findSession(id, ctx);
    if (!found) throw notFound('checkout_session', id);
    return this.toApi(await this.settled(found), ctx.clock.now());
  }

  /** Batch lookup for DataLoader (Payment.checkoutSession); unknown ids are absent. */
  async findMany(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, CheckoutSession>> {
    requirePermission(ctx, 'checkout_sessions', 'read');
    const now = ctx.clock.now();
    return new Map((await this.store.findSessions(ctx, ids)).map((s) => [s.id, this.toApi(s, now)]));
  }

  async list<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, options?: O): Promise<PageFor<CheckoutSession, O>> {
    requirePermission(ctx, 'checkout_sessions', 'read');
    const input = parseInput(listCheckoutSessionsInput, query);
    const now = ctx.clock.now();
    const page = await this.store.listSessions(ctx, input, now, options);
    return { ...page, data: page.data.map((s) => this.toApi(s, now)) } as PageFor<CheckoutSession, O>;
  }

  /** `POST /{id}/expire`: an open session can no longer be paid (event checkout.session.expired). */
  async expire(ctx: RequestContext, id: string, idem?: IdempotencyKey): Promise<CheckoutSession> {
    requirePermission(ctx, 'checkout_sessions', 'write');
    const found = await this.store.findSession(id, ctx);
    if (!found) throw notFound('checkout_session', id);
    await this.settled(found);
    const now = ctx.clock.now();
    return this.db.transaction((t) => this.idempotency.once(t, idem, IDEMPOTENT_OPERATIONS.expireCheckoutSession, async () => {
      const session = await this.move(ctx, t, id, now, { move: 'expire', dueOnly: false });
      if (session) return session;
      // Refused inside the transaction: the key's claim rolls back with it, free for a retry.
      const status = effectiveStatus((await this.store.findSession(id, ctx, t)) as CheckoutSessionRecord, now);
      CHECKOUT_SESSION_MOVES.check(status, 'expire');
      throw new DomainError('checkout_session_in_use', 'A payment of this session is being processed; it can be expired once that payment has failed');
    }));
  }

  /** The public view by id (no key): what the hosted page shows. */
  async publicView(id: string): Promise<PublicCheckoutSession> {
    return this.publicViewOf(await this.settledById(id));
  }

  /**
   * The hosted page after a 3-D Secure challenge (`/checkout/{id}?payment_id=`): the session,
   * finished from its payments first (completed by a payment that succeeded or was authorised,
   * its claim freed once the payment failed, so it can be paid again at once), and the payment's
   * outcome when it is one of this session's.
   */
  async publicReturn(id: string, paymentId: string): Promise<CheckoutReturn> {
    const session = await this.settledById(id);
    const payment = await this.store.paymentOf(paymentId, { checkoutSessionId: id });
    return { session: await this.publicViewOf(session), payment, paidByIt: payment !== null && session.status === 'complete' && session.paymentId === payment.id };
  }

  private async settledById(id: string): Promise<CheckoutSessionRecord> {
    const found = await this.store.findSession(id);
    if (!found) throw notFound('checkout_session', id);
    return this.settled(found);
  }

  private async publicViewOf(session: CheckoutSessionRecord): Promise<PublicCheckoutSession> {
    const now = this.clock.now();
    let recurring: PublicCheckoutSession['recurring'] = null;
    if (session.priceId && session.checkoutMode === 'subscription') {
      recurring = (await this.catalog.lookupPrice(this.pay.context(session, ''), session.priceId))?.price.recurring ?? null;
    }
    const status = effectiveStatus(session, now);
    return {
      id: session.id, object: 'checkout_session', livemode: session.livemode, mode: session.checkoutMode,
      status, payable: status === 'open' && !(await this.pay.sessionExhausted(session.id)), amount: session.amount, currency: session.currency, description: session.description,
      merchantName: await this.accounts.displayName(session.accountId), customerEmail: session.customerEmail,
      expiresAt: session.expiresAt.toISOString(), successUrl: session.successUrl, cancelUrl: session.cancelUrl, recurring,
    };
  }

  /**
   * The public pay (no key): charges the card (payment mode) or saves it as the customer's default
   * (setup mode). A decline leaves the session open; success completes it (event
   * checkout.session.completed). Concurrent pays of one session charge at most once: a pay claims
   * the session first, and a pay that finds it claimed answers 409 `checkout_session_in_use`.
   *
   * A payment-mode pay rides on its payment's writes (PaymentHold): the claim is written with the
   * pending payment row, which is inserted only if the claim was made, and the completion with its
   * event (or the claim's release after a decline) with the payment's settling write, in one
   * statement each on PostgreSQL (shared with concurrent payments) and one transaction each on
   * SQLite. The session and the pay's Idempotency-Key are read by one statement.
   *
   * Who pays (API.md §11): a session made with `customerId` is that customer's. Otherwise the
   * payer is anonymous and never touches an existing customer: a payment-mode pay attaches no
   * customer (the e-mail goes on the payment as `receiptEmail`); a setup or subscription pay
   * creates a new customer once the card is saved, and refuses an e-mail that is already a
   * customer's (422 `customer_exists`). Every attempt runs under the caps on failed attempts.
   */
  async publicPay(id: string, input: unknown, idem: IdempotencyKey | undefined, request: PublicRequest): Promise<PayResult> {
    const read = await this.store.findSessionForPay(id, idem && this.pay.keyName(idem));
    if (!read) throw notFound('checkout_session', id);
    const found = read.session;
    const ctx = this.pay.context(found, request.requestId);
    const data = parseInput(publicPayInput, input);
    const key = this.pay.accountKey(idem, found);
    const redirect = (result: PayResult) => (result.status === 'succeeded' ? found.successUrl : null);
    await this.pay.replayIfPaid(key, redirect, read.key);
    const session = await this.settled(found);
    const now = ctx.clock.now();
    refuseUnpayable(effectiveStatus(session, now));
    const target = { kind: 'checkout_session' as const, id, accountId: session.accountId, mode: session.mode };
    return this.pay.attempt(target, request, () => this.payOpen(ctx, session, data, key, redirect, now));
  }

  /** One pay of an open session: by mode (and whether it pays a subscription's invoice). */
  private async payOpen(
    ctx: RequestContext, session: CheckoutSessionRecord, data: PublicPayInput,
    key: IdempotencyKey | undefined, redirect: (result: PayResult) => string | null, now: Date,
  ): Promise<PayResult> {
    const id = session.id;
    if (session.invoiceId !== null || session.checkoutMode === 'subscription') return this.payForSubscription(ctx, session, data, key, redirect, now);
    const token = randomBase62(24);
    try {
      if (session.checkoutMode === 'setup') {
        if (!(await this.store.claimForPay(ctx, id, token, PAY_CLAIM_MS, now))) throw new HoldRefused(id);
        return await this.payBySavingCard(ctx, session, data, key, token, redirect);
      }
      return await this.payByCharging(ctx, session, data, key, token, now, redirect);
    } catch (err) {
      if (err instanceof HoldRefused) {
        // Nothing written: the session is no longer payable, or another pay holds it.
        const current = await this.settled((await this.store.findSession(id)) as CheckoutSessionRecord);
        refuseUnpayable(effectiveStatus(current, ctx.clock.now()));
        throw new DomainError('checkout_session_in_use', 'A payment of this checkout session is already being processed; wait for its result');
      }
      // Refused before anything was charged (no payment written, or a gateway that could not
      // save the card): the session can be paid again. A payment written holds the session, and
      // its claim stays for the reconciling job, which completes or frees it from that payment.
      if ((await this.store.holdingPayments(id).catch(() => [{}])).length === 0) await this.store.releaseClaim(id, token).catch(() => undefined);
      throw err;
    }
  }

  private async payByCharging(
    ctx: RequestContext, session: CheckoutSessionRecord, data: PublicPayInput,
    key: IdempotencyKey | undefined, token: string, now: Date, redirect: (result: PayResult) => string | null,
  ): Promise<PayResult> {
    const customerId = session.customerId;
    // An anonymous payer's e-mail (the session's, else the one typed) is the receipt's, not a customer's.
    const receiptEmail = customerId ? null : (session.customerEmail ?? data.email ?? null);
    // Claimed with the payment's pending row; completed (or released) with its settling write.
    // Left pending (the gateway's answer unknown), or settled by another writer first: the payment
    // holds the session and the reconciling job (or the next read) completes or frees it.
    const hold: PaymentHold = {
      id: session.id, token, leaseMs: PAY_CLAIM_MS, now,
      completion: (done) => {
        const at = new Date(done.updatedAt);
        const completed: CheckoutSessionRecord = {
          ...session, ...CHECKOUT_SESSION_MOVES.columns('complete', done.updatedAt), paymentId: done.id, customerId: done.customerId ?? session.customerId,
          payingToken: null, updatedAt: done.updatedAt,
        };
        return { type: CHECKOUT_SESSION_MOVES.eventOf('complete'), object: this.toApi(completed, at) };
      },
    };
    // An authorisation pays the session as a capture does: the payment's settling write completes
    // it either way (PaymentStore's holdFinish), in the same statement or transaction.
    const { result } = await this.pay.charge(ctx, {
      amount: session.amount as number, currency: session.currency as string, description: session.description, customerId, receiptEmail, card: data.card,
      captureMethod: session.captureMethod, returnUrl: this.urls.checkout(session.id),
    }, { checkoutSessionId: session.id }, key, redirect, undefined, hold);
    return result;
  }

  private async payBySavingCard(
    ctx: RequestContext, session: CheckoutSessionRecord, data: PublicPayInput,
    key: IdempotencyKey | undefined, token: string, redirect: (result: PayResult) => string | null,
  ): Promise<PayResult> {
    const { result, method } = await this.saveCardFor(ctx, session, data, key, redirect);
    if (method) await this.completeWith(ctx, session.id, { paymentMethodId: method.id, customerId: method.customerId }, token);
    else await this.store.releaseClaim(session.id, token);
    return result;
  }

  /**
   * The card saved as the default of the session's customer: the one it names, else a new one
   * with the payer's e-mail (the session's, or the one typed), made only once the card is saved;
   * an e-mail that is already a customer's is refused (`customer_exists`).
   */
  private async saveCardFor(
    ctx: RequestContext, session: CheckoutSessionRecord, data: PublicPayInput,
    key: IdempotencyKey | undefined, redirect: (result: PayResult) => string | null,
  ): Promise<{ result: PayResult; method: SavedPaymentMethod | null }> {
    if (session.customerId) return this.pay.saveCard(ctx, session.customerId, data.card, key, redirect);
    const email = session.customerEmail ?? data.email;
    if (!email) throw new DomainError('missing_parameter', 'A subscription or a saved card belongs to a customer: give your e-mail address', 'email');
    return this.pay.saveCardForNewCustomer(ctx, { email, name: data.name ?? null }, data.card, redirect);
  }

  /** Completes the session and records its event in one transaction; false when it was no longer open. */
  private async completeWith(ctx: RequestContext, id: string, changes: { paymentId?: string; paymentMethodId?: string; customerId?: string | null }, token?: string): Promise<boolean> {
    const now = ctx.clock.now();
    return this.db.transaction(async (t) => (await this.move(ctx, t, id, now, { move: 'complete', changes, token })) !== null);
  }

  /**
   * The one write of a session's status after its creation: the store's move and the event the
   * table gives it (CHECKOUT_SESSION_MOVES), in `t`; the session as moved, or null when it could
   * not make the move (nothing written).
   */
  private async move(ctx: RequestContext, t: Transaction, id: string, now: Date, write: SessionMoveWrite): Promise<CheckoutSession | null> {
    if (!(await this.store.move(t, id, now, write))) return null;
    const session = this.toApi((await this.store.findSession(id, ctx, t)) as CheckoutSessionRecord, now);
    const { event } = CHECKOUT_SESSION_MOVES.rule(write.move);
    if (event) await this.events.record(ctx, t, event, session);
    return session;
  }

  /**
   * A session whose pay's request ended without settling it (it died, its payment was still
   * pending, or it waited for a 3-D Secure challenge) is finished from its payments: one that
   * succeeded or was authorised completes it. Done when it is read and by the job.
   *
   * A claim whose payment has ended without paying (a failed challenge, or the merchant canceled
   * it) is freed at once, so the session can be paid again rather than when the claim's lease
   * runs out; only for sessions whose pays claim them with their payment's pending row
   * (PaymentHold: a payment session that pays no subscription's invoice), and only if it is still
   * the claim read (its token): a later pay's claim is never touched (releaseSpentClaim).
   */
  private async settled(session: CheckoutSessionRecord): Promise<CheckoutSessionRecord> {
    if (session.status !== 'open' || session.payingToken === null || session.checkoutMode !== 'payment') return session;
    const holding = await this.store.holdingPayments(session.id);
    const paid = holding.find((p) => PAID_STATUSES.has(p.status));
    if (paid) {
      const ctx = systemContext(session.accountId, session.mode, this.clock.now(), 'checkout-reconcile');
      await this.completeWith(ctx, session.id, { paymentId: paid.id, customerId: paid.customerId });
      return (await this.store.findSession(session.id)) as CheckoutSessionRecord;
    }
    if (holding.length === 0 && session.invoiceId === null && (await this.store.releaseSpentClaim(session.id, session.payingToken))) {
      return (await this.store.findSession(session.id)) as CheckoutSessionRecord;
    }
    return session;
  }

  /**
   * The job: completes sessions whose payment succeeded after their request ended, frees claims
   * whose pay charged nothing, and expires open sessions past their time (event
   * checkout.session.expired), a batch per run.
   */
  async expireDue(now: Date): Promise<{ expired: number; completed: number }> {
    let completed = 0;
    for (const lapsed of await this.store.lapsedClaims(JOB_BATCH)) {
      try {
        const session = await this.store.findSession(lapsed.id);
        if (!session) continue;
        const after = await this.settled(session);
        if (after.status === 'complete') completed++;
        else if ((await this.store.holdingPayments(session.id)).length === 0 && session.payingToken) await this.store.releaseClaim(session.id, session.payingToken);
      } catch (err) {
        this.logger.error({ checkoutSessionId: lapsed.id, err: errorForLog(err) }, 'checkout session could not be reconciled');
      }
    }
    let expired = 0;
    for (const due of await this.store.dueForExpiry(now, JOB_BATCH)) {
      const ctx = systemContext(due.accountId, due.mode, now, 'checkout-expiry');
      try {
        if (await this.db.transaction((t) => this.move(ctx, t, due.id, now, { move: 'expire', dueOnly: true }))) expired++;
      } catch (err) {
        this.logger.error({ checkoutSessionId: due.id, err: errorForLog(err) }, 'checkout session could not be expired');
      }
    }
    return { expired, completed };
  }

  toApi(s: CheckoutSessionRecord, now: Date): CheckoutSession {
    return {
      id: s.id, object: 'checkout_session', livemode: s.livemode, mode: s.checkoutMode, status: effectiveStatus(s, now),
      url: this.urls.checkout(s.id), amount: s.amount, currency: s.currency, priceId: s.priceId, description: s.description,
      customerId: s.customerId, customerEmail: s.customerEmail, successUrl: s.successUrl, cancelUrl: s.cancelUrl,
      expiresAt: s.expiresAt.toISOString(), paymentId: s.paymentId, paymentMethodId: s.paymentMethodId,
      subscriptionId: s.subscriptionId, invoiceId: s.invoiceId, captureMethod: s.captureMethod, metadata: s.metadata, createdAt: s.createdAt, updatedAt: s.updatedAt,
      completedAt: s.completedAt, expiredAt: s.expiredAt,
    };
  }

  // Sessions that pay a subscription (issue 24): a retry's session pays the subscription's invoice,
  // a subscription-mode session creates the subscription. They claim the session as a setup pay
  // does, and save the card as the customer's default.

  private subscriptions: CheckoutSubscriptions | null = null;

  /** Set once, as services are built (subscriptions create sessions for their retries). */
  useSubscriptions(subscriptions: CheckoutSubscriptions): void {
    this.subscriptions = subscriptions;
  }

  /**
   * A session for a subscription's invoice (`POST /v1/subscriptions/{id}/retry-payment`), in the
   * caller's transaction: open for the customer to pay with a new card, or complete (with its
   * event) when the retry already paid the invoice. Sessions are on the service's clock.
   */
  async createForInvoice(t: Transaction, ctx: RequestContext, spec: InvoiceSessionSpec): Promise<CheckoutSession> {
    const now = ctx.clock.now();
    const move = spec.paymentId !== null ? 'create_paid' : 'create';
    const row = await CheckoutSessionModel.create({
      id: newId('cs'), accountId: ctx.accountId, mode: ctx.mode, checkoutMode: 'payment',
      amount: spec.amount, currency: spec.currency, priceId: null, description: spec.description,
      customerId: spec.customerId, customerEmail: spec.customerEmail, successUrl: null, cancelUrl: null,
      expiresAt: new Date(now.getTime() + SESSION_LIFETIME.defaultSeconds * 1000), paymentId: spec.paymentId, paymentMethodId: null,
      subscriptionId: spec.subscriptionId, invoiceId: spec.invoiceId, payingUntil: null, payingToken: null, metadata: '{}',
      createdAt: now, updatedAt: now, completedAt: null, expiredAt: null, ...CHECKOUT_SESSION_MOVES.columns(move, now),
    }, { transaction: t });
    const session = this.toApi(toSessionRecord(row.get({ plain: true }) as Record<string, unknown>), now);
    const { event } = CHECKOUT_SESSION_MOVES.rule(move);
    if (event) await this.events.record(ctx, t, event, session);
    return session;
  }

  /**
   * The pay of a session tied to a subscription: its invoice charged with the card (then the card
   * saved as the default and taken by the subscription), or, in subscription mode, the card saved
   * as the default and the subscription created on it. A decline leaves the session open; a
   * subscription created past due stays tied to the session, whose next pay pays its invoice.
   */
  private async payForSubscription(
    ctx: RequestContext, session: CheckoutSessionRecord, data: PublicPayInput,
    key: IdempotencyKey | undefined, redirect: (result: PayResult) => string | null, now: Date,
  ): Promise<PayResult> {
    const subscriptions = this.subscriptions;
    if (!subscriptions) throw invalidState('Subscriptions are not available on this instance');
    const id = session.id;
    const token = randomBase62(24);
    if (!(await this.store.claimForPay(ctx, id, token, PAY_CLAIM_MS, now))) {
      const current = await this.settled((await this.store.findSession(id)) as CheckoutSessionRecord);
      refuseUnpayable(effectiveStatus(current, ctx.clock.now()));
      throw new DomainError('checkout_session_in_use', 'A payment of this checkout session is already being processed; wait for its result');
    }
    const completed = (changes: { paymentId?: string; paymentMethodId?: string; customerId?: string | null }) =>
      this.completeWith(ctx, id, changes, token).catch((err) => {
        // The money moved: the payer is told so; the claim is kept for the reconciling job.
        this.logger.error({ checkoutSessionId: id, err: errorForLog(err) }, 'checkout session paid but not yet completed');
      });
    try {
      if (session.invoiceId !== null && session.subscriptionId !== null) {
        // A subscription's invoice (a retry's session, or one whose first charge failed): its customer's.
        const customerId = session.customerId;
        if (customerId === null) throw invalidState('This checkout session pays an invoice but names no customer');
        const subscriptionId = session.subscriptionId;
        const { result, paid } = await subscriptions.payInvoiceByCard(ctx, { sessionId: id, subscriptionId, invoiceId: session.invoiceId }, data.card, key, redirect);
        if (!paid) {
          // Declined: open for another card. Processing: the payment (linked to the session) holds it until it settles.
          if (result.status === 'failed') await this.store.releaseClaim(id, token);
          return result;
        }
        const { method } = await this.pay.saveCard(ctx, customerId, data.card, undefined, () => null).catch((err) => {
          this.logger.error({ checkoutSessionId: id, err: errorForLog(err) }, 'invoice paid but the card could not be saved');
          return { method: null };
        });
        if (method) await subscriptions.adoptCard(ctx, subscriptionId, method.id);
        await completed({ paymentId: result.paymentId ?? undefined, paymentMethodId: method?.id, customerId });
        return { ...result, subscriptionId, paymentMethodId: method?.id ?? null };
      }
      const saved = await this.saveCardFor(ctx, session, data, undefined, redirect);
      if (!saved.method) {
        await this.store.releaseClaim(id, token);
        return saved.result;
      }
      const customerId = saved.method.customerId;
      const created = await subscriptions.createForCheckout(ctx, { sessionId: id, customerId, priceId: session.priceId as string, paymentMethodId: saved.method.id });
      // The session names its subscription (and, while it is unpaid, the invoice its next pay pays).
      await CheckoutSessionModel.update(
        { subscriptionId: created.subscriptionId, invoiceId: created.invoiceId, customerId },
        { where: { id, status: 'open' } },
      );
      const result = { ...created.result, paymentMethodId: saved.method.id, redirectUrl: redirect(created.result) };
      if (!created.paid) {
        await this.store.releaseClaim(id, token);
        return result;
      }
      await completed({ paymentId: created.result.paymentId ?? undefined, paymentMethodId: saved.method.id, customerId });
      // The pay's key replays the first invoice's payment (it names the subscription).
      if (key && created.payment) {
        const payment = created.payment;
        await this.db.transaction((t) => this.idempotency.once(t, key, IDEMPOTENT_OPERATIONS.payCheckoutSession, async () => payment)).catch(() => undefined);
      }
      return result;
    } catch (err) {
      if ((await this.store.holdingPayments(id).catch(() => [{}])).length === 0) await this.store.releaseClaim(id, token).catch(() => undefined);
      throw err;
    }
  }
}

/** A session that cannot be paid (not open: its pay could not complete it) is refused with 422 `invalid_state`. */
function refuseUnpayable(status: CheckoutSessionStatus): void {
  if (!CHECKOUT_SESSION_MOVES.can(status, 'complete')) throw invalidState(`This checkout session is ${status} and cannot be paid`);
}

/** A session past its time is expired, whatever the job has written yet. */
export function effectiveStatus(s: { status: CheckoutSessionStatus; expiresAt: Date }, now: Date): CheckoutSessionStatus {
  return s.status === 'open' && s.expiresAt.getTime() <= now.getTime() ? 'expired' : s.status;
}

/** The events that carry this module's objects (EventObjects: the events module's map of type to payload). */
declare module '../events/event-objects' {
  interface EventObjects {
    'checkout.session.completed': CheckoutSession;
    'checkout.session.expired': CheckoutSession;
  }
}
