import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import type { Clock } from '../../core/clock';
import type { RequestContext } from '../../core/context';
import { requirePermission, systemContext } from '../../core/context';
import { DomainError, invalidState, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { MAX_AMOUNT } from '../../core/money';
import { mergeMetadata, parseInput } from '../../core/validation';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';
import { IdempotentReplay, idempotencyScope, type IdempotencyKey } from '../../core/idempotency';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';
import { errorForLog, type Logger } from '../../logger';
import type { EventItem, EventService, EventType } from '../events/event.service';

type InvoiceEventType = Extract<EventType, `invoice.${string}`>;
import type { IdempotencyService } from '../idempotency/idempotency.service';
import type { CustomerService } from '../customers/customer.service';
import type { CustomerCredit } from '../customers/customer-credit';
import type { AccountService } from '../accounts/account.service';
import type { PaymentService, Payment } from '../payments/payment.service';
import type { OutgoingMail, MailStatus } from '../mail/mail.types';
import { type PublicPayPath, type PayResult, type PublicRequest } from '../payments/public-pay';
import { returnUrlChecker, type PublicUrls } from '../payments/public-urls';
import { publicPayInput } from '../payments/payment.inputs';
import type { CardInput } from '../../core/card';
import { invoiceParties, type InvoiceDocument, type InvoiceParties } from './invoice-document';
import { InvoiceLineItemModel, InvoiceModel } from './invoice.model';
import { INVOICE_MOVES } from './invoice-states';
import { groupBy } from '../../db/list';
import { InvoiceStore, type InvoiceLineItem, type InvoiceRecord } from './invoice.store';
import type { InvoiceExportFilters } from './invoice.store';
import type { KeysetCursor } from '../../db/keyset';
import { createInvoiceInput, listInvoicesInput, payInvoiceInput, updateInvoiceInput, type LineItemInput } from './invoice.inputs';
import type { TaxRateService, TaxRateTerms } from '../tax-rates/tax-rate.service';
import { computeInvoiceTaxes, lineRateIds, lineRatesProblem, type InvoiceTaxes, type TaxBreakdownEntry, type TaxExempt } from './invoice-tax';

/** An invoice as the API returns it (API.md §12). */
export interface Invoice extends Omit<InvoiceRecord, 'accountId' | 'mode' | 'paymentAttempts' | 'parties'> {
  object: 'invoice';
  /** The public page where the customer pays a sent invoice by card; null unless sent and unpaid. */
  hostedUrl: string | null;
}

/** An invoice as its hosted page reads it (`GET /v1/public/invoices/{id}`): nothing internal. */
export interface PublicInvoice {
  id: string;
  object: 'invoice';
  livemode: boolean;
  number: string;
  status: string;
  paymentStatus: string;
  currency: string;
  subtotal: number;
  tax: number;
  /** The invoice's breakdown without the rates' ids (internal to the merchant's account). */
  taxBreakdown: Array<Omit<TaxBreakdownEntry, 'taxRateId'>>;
  reverseCharge: boolean;
  total: number;
  creditApplied: number;
  amountPaid: number;
  amountDue: number;
  dueDate: string | null;
  merchantName: string;
  locale: string;
  lineItems: Array<{ description: string; quantity: number; amount: number }>;
  /** While `paymentStatus` is `requires_action`: where the customer authenticates its payment (3-D Secure). */
  nextActionUrl: string | null;
  /** While `paymentStatus` is `failed`: why its latest payment failed (a payment's `failureCode`). */
  paymentFailureCode: string | null;
}

/** A subscription's invoice (InvoiceService.createForSubscription). */
export interface SubscriptionInvoiceSpec {
  customerId: string;
  subscriptionId: string;
  currency: string;
  lines: Array<{ description: string; quantity: number; unitAmount: number; amount: number; periodStart: Date | null; periodEnd: Date | null; proration: boolean }>;
  billingPeriodStart: Date | null;
  billingReason: 'subscription_create' | 'subscription_cycle' | 'subscription_update' | 'subscription_resume';
  send: boolean;
  /**
   * Finalised (sent, without an e-mail) when it is not collected now: an invoice that waits
   * behind another being collected is never left a draft.
   */
  finalize?: boolean;
  /**
   * The account's invoicing settings when the caller read them before its transaction (the
   * billing run): otherwise read here, on a second pooled connection while the transaction holds
   * one, which many runs in parallel can exhaust the pool with.
   */
  account?: { invoicePrefix: string } & InvoiceDocument['merchant'];
  /** The subscription's tax rates: every line takes them (API.md §12). */
  defaultTaxRateIds?: readonly string[];
}

/**
 * What a settle needs of a charge's payment. `paymentMethod`: a saved card or a token (not
 * `card`, typed on a page) means the customer is not there: a challenge is mailed to them.
 */
export type SettledPayment = { id: string; status: string; amount: number; paymentMethod?: string };

/** Told when an invoice of a subscription is settled from its payment outside its charge's request (the hosted page, the reconciling job). */
export type InvoiceSettledListener = (invoice: InvoiceRecord) => Promise<void>;

/** An event of a batch, recorded by the caller with its own (EventService.recordMany). */
export type BatchEventItem = EventItem;

/** Where a sent invoice's e-mail is queued: the mail outbox, in the caller's transaction. */
export interface InvoiceMailQueue {
  enqueue(t: Transaction, ctx: RequestContext, mail: OutgoingMail): Promise<{ id: string }>;
}

/** The renderers the invoice takes its PDF and e-mail from (pure functions of a snapshot). */
export interface InvoiceRendering {
  pdf(doc: InvoiceDocument): Promise<Buffer>;
  email(doc: InvoiceDocument, links: { hostedUrl?: string; purpose?: 'invoice' | 'authentication' }): { subject: string; text: string; html: string };
}

/** The customer's credit ledger, as invoices use it (API.md §7, §12). */
export type InvoiceCredit = Pick<CustomerCredit, 'applyToInvoice' | 'creditFromInvoice' | 'balancesOf'>;

/** A charge whose request ended without settling its invoice is looked at again after this. */
const CHARGE_SETTLE_GRACE_MS = 2 * 60_000;

/**
 * Invoices: the one place that creates, numbers, finalises, sends, charges and settles an invoice
 * (subscriptions bill through it). Every state change and its event are one transaction; a
 * charge goes through the payments service with a key derived from the invoice and its attempt,
 * so a retry never charges twice.
 */
export class InvoiceService {
  private readonly store: InvoiceStore;
  private readonly settledListeners: InvoiceSettledListener[] = [];

  constructor(
    private readonly db: Database,
    private readonly events: EventService,
    private readonly idempotency: IdempotencyService,
    private readonly customers: CustomerService,
    private readonly accounts: AccountService,
    private readonly payments: PaymentService,
    private readonly pay: PublicPayPath,
    private readonly urls: PublicUrls,
    private readonly mail: InvoiceMailQueue,
    private readonly rendering: InvoiceRendering,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly credit: InvoiceCredit,
    private readonly taxRates: TaxRateService,
  ) {
    this.store = new InvoiceStore(db);
  }

  /**
   * `listener` hears of each subscription invoice settled from its payment outside its charge's
   * request (the customer back from a 3-D Secure challenge on the hosted page, the reconciling
   * job), after commit: the billing module takes the outcome at once instead of at its next step.
   */
  onSettled(listener: InvoiceSettledListener): void {
    this.settledListeners.push(listener);
  }

  async create(ctx: RequestContext, input: unknown, idem?: IdempotencyKey): Promise<Invoice> {
    requirePermission(ctx, 'invoices', 'write');
    const data = parseInput(createInvoiceInput, input);
    const lines = priced(data.lineItems);
    const customer = (await this.customers.lookup(ctx, [data.customerId])).get(data.customerId);
    if (!customer) throw notFound('customer', data.customerId, 'customerId');
    const defaults = data.defaultTaxRateIds ?? [];
    const rates = await this.taxRates.usable(ctx, taxRateLists(data.lineItems, data.defaultTaxRateIds));
    const taxes = taxed(lines.items, defaults, rates, customer.taxExempt, 'lineItems');
    const { invoicePrefix } = await this.accounts.invoicing(ctx.accountId);
    const now = ctx.clock.now();
    return this.db.transaction((t) => this.idempotency.once(t, idem, IDEMPOTENT_OPERATIONS.createInvoice, async () => {
      // Numbered in the creating transaction: the sequence row's lock orders concurrent creates.
      const seq = await this.store.nextNumber(t, ctx, now);
      const id = newId('in');
      await InvoiceModel.create({
        id, accountId: ctx.accountId, mode: ctx.mode, number: formatNumber(invoicePrefix, seq), numberSeq: seq,
        customerId: data.customerId, subscriptionId: null, ...INVOICE_MOVES.columns('create', now), paymentStatus: 'unpaid', currency: data.currency,
        ...taxColumns(taxes, defaults, customer.taxExempt), amountPaid: 0, amountDue: taxes.total,
        dueDate: data.dueDate ?? null, memo: data.memo ?? null, sentAt: null, paidAt: null, voidedAt: null, paidOutOfBand: false,
        emailStatus: null, latestPaymentId: null, paymentAttempts: 0, metadata: JSON.stringify(data.metadata ?? {}), createdAt: now, updatedAt: now,
      }, { transaction: t });
      await this.writeLines(t, id, lines.items, now);
      return this.recordEvent(ctx, t, id, 'invoice.created');
    }));
  }

  async retrieve(ctx: RequestContext, id: string): Promise<Invoice> {
    requirePermission(ctx, 'invoices', 'read');
    return this.toApi(await this.settled(await this.mustFind(ctx, id), true));
  }

  async findMany(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, Invoice>> {
    requirePermission(ctx, 'invoices', 'read');
    return new Map((await this.store.findMany(ctx, ids)).map((i) => [i.id, this.toApi(i)]));
  }

  /** The newest invoices of several customers (Customer.invoices, batched). */
  async forCustomers(ctx: RequestContext, customerIds: readonly string[], limit: number): Promise<Map<string, Invoice[]>> {
    requirePermission(ctx, 'invoices', 'read');
    const found = await this.store.forCustomers(ctx, customerIds, limit);
    return new Map([...found].map(([id, list]) => [id, list.map((i) => this.toApi(i))]));
  }

  /** The newest invoices of several subscriptions (Subscription.invoices, batched). */
  async forSubscriptions(ctx: RequestContext, subscriptionIds: readonly string[], limit: number): Promise<Map<string, Invoice[]>> {
    requirePermission(ctx, 'invoices', 'read');
    const found = await this.store.forSubscriptions(ctx, subscriptionIds, limit);
    return new Map([...found].map(([id, list]) => [id, list.map((i) => this.toApi(i))]));
  }

  async list<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, options?: O): Promise<PageFor<Invoice, O>> {
    requirePermission(ctx, 'invoices', 'read');
    const page = await this.store.list(ctx, parseInput(listInvoicesInput, query), options);
    return { ...page, data: page.data.map((i) => this.toApi(i)) } as PageFor<Invoice, O>;
  }

  /** PATCH while `draft` and not being charged: line items (replaced whole), due date, memo, metadata. */
  async update(ctx: RequestContext, id: string, input: unknown): Promise<Invoice> {
    requirePermission(ctx, 'invoices', 'write');
    const data = parseInput(updateInvoiceInput, input);
    const lines = data.lineItems ? priced(data.lineItems) : null;
    // Rates given now must be usable; those the draft already has are kept even if deactivated since.
    await this.taxRates.usable(ctx, taxRateLists(data.lineItems ?? [], data.defaultTaxRateIds));
    const now = ctx.clock.now();
    return this.db.transaction(async (t) => {
      const current = await this.lockForChange(ctx, id, t);
      if (current.status !== 'draft') throw invalidState(`This invoice is ${current.status}; only a draft can be changed`);
      // Its charge was made for what was due when claimed: its settle must not meet other lines.
      if (current.paymentStatus === 'processing') throw paymentInProgress();
      const changes: Record<string, unknown> = { updatedAt: now };
      if (data.dueDate !== undefined) changes.dueDate = data.dueDate;
      if (data.memo !== undefined) changes.memo = data.memo;
      if (data.metadata !== undefined) changes.metadata = JSON.stringify(mergeMetadata(current.metadata, data.metadata));
      // The taxes again on every change: the lines, the default rates or the customer's taxExempt may differ now.
      const items = lines ? lines.items : current.lineItems;
      const defaults = data.defaultTaxRateIds ?? current.defaultTaxRateIds;
      const rates = await this.taxRates.terms(ctx, [...defaults, ...items.flatMap((l) => l.taxRateIds ?? [])], t);
      const exempt = (await this.customers.lookup(ctx, [current.customerId], t)).get(current.customerId)?.taxExempt ?? 'none';
      const taxes = taxed(items, defaults, rates, exempt, data.lineItems ? 'lineItems' : 'defaultTaxRateIds');
      // What it took of the customer's credit stays taken: the new total must still cover it.
      if (taxes.total < BigInt(current.creditApplied)) {
        throw new DomainError('invalid_parameter', `This draft took ${current.creditApplied} from the customer's credit; its total must be at least that (void it to give the credit back)`, data.lineItems ? 'lineItems' : 'defaultTaxRateIds');
      }
      Object.assign(changes, { ...taxColumns(taxes, defaults, exempt), amountDue: Number(taxes.total) - current.creditApplied });
      if (lines) {
        await InvoiceLineItemModel.destroy({ where: { invoiceId: id }, transaction: t });
        await this.writeLines(t, id, lines.items, now);
      }
      await InvoiceModel.update(changes, { where: { id }, transaction: t });
      return this.toApi((await this.store.find(id, ctx, t)) as InvoiceRecord);
    });
  }

  /**
   * `draft` → `sent`: the e-mail (with the PDF) is queued in the same transaction as the state
   * change, and sent after commit by the mail worker; an SMTP failure never touches the invoice
   * but its `emailStatus`.
   */
  async send(ctx: RequestContext, id: string, idem?: IdempotencyKey): Promise<Invoice> {
    requirePermission(ctx, 'invoices', 'write');
    const account = await this.accounts.invoicing(ctx.accountId);
    return this.db.transaction((t) => this.idempotency.once(t, idem, IDEMPOTENT_OPERATIONS.sendInvoice, () => this.sendIn(t, ctx, id, account)));
  }

  /** `send` inside the caller's transaction (a subscription's `send_invoice` invoice is sent as it is created). */
  private async sendIn(t: Transaction, ctx: RequestContext, id: string, merchant: InvoiceDocument['merchant']): Promise<Invoice> {
    const now = ctx.clock.now();
    const current = await this.lockForChange(ctx, id, t);
    INVOICE_MOVES.check(current.status, 'send');
    if (current.paymentStatus === 'processing') throw paymentInProgress();
    const credit = await this.creditOnFinalise(t, ctx, current);
    const customer = (await this.customers.lookup(ctx, [current.customerId], t)).get(current.customerId);
    if (!customer) throw notFound('customer', current.customerId, 'customerId');
    // The parties it is issued to, kept with it: its PDF and e-mail show them whatever changes after.
    const parties = invoiceParties(merchant, customer);
    await InvoiceModel.update({ ...INVOICE_MOVES.columns('send', now), emailStatus: 'queued', updatedAt: now, ...credit, parties: JSON.stringify(parties) }, { where: { id }, transaction: t });
    const sent = (await this.store.find(id, ctx, t)) as InvoiceRecord;
    const doc = documentOf(sent, parties);
    const hostedUrl = this.urls.invoice(id);
    const { subject, text, html } = this.rendering.email(doc, { hostedUrl });
    await this.mail.enqueue(t, ctx, {
      to: parties.customer.email, subject, text, html, about: { type: 'invoice', id },
      attachments: [{ filename: `${sent.number}.pdf`, contentType: 'application/pdf', source: { type: 'invoice_pdf', document: doc } }],
    });
    const answer = await this.recordEvent(ctx, t, id, 'invoice.sent');
    if (sent.amountDue > 0 || sent.total <= 0) return answer;
    // The customer's credit paid it all.
    await InvoiceModel.update({ ...INVOICE_MOVES.columns('pay', now), paymentStatus: 'paid', updatedAt: now }, { where: { id }, transaction: t });
    return this.recordEvent(ctx, t, id, 'invoice.paid');
  }

  /**
   * A merchant's own invoice takes what it can from the customer's credit in its currency as it
   * is finalised (sent, or charged as a draft), once (a subscription's invoices took theirs as
   * they were made): the columns to write with the finalising change, none when nothing is taken.
   */
  private async creditOnFinalise(t: Transaction, ctx: RequestContext, current: InvoiceRecord): Promise<{ creditApplied: number; amountDue: number } | Record<string, never>> {
    if (current.subscriptionId !== null || current.creditApplied > 0 || current.amountDue <= 0 || current.status !== 'draft') return {};
    const applied = await this.credit.applyToInvoice(t, ctx, { customerId: current.customerId, currency: current.currency, invoiceId: current.id, amountDue: current.amountDue });
    return applied > 0 ? { creditApplied: applied, amountDue: current.amountDue - applied } : {};
  }

  /**
   * The parties an invoice shows (seller and buyer): those it kept as it left `draft`, else (a
   * draft, or an invoice issued before they were kept) the account and the customer as they are now.
   */
  private async partiesFor(inv: InvoiceRecord, t?: Transaction): Promise<InvoiceParties> {
    if (inv.status !== 'draft' && inv.parties) return inv.parties;
    return this.liveParties(inv, t);
  }

  /** The account's and the customer's details as they are now: what an invoice leaving `draft` keeps. */
  private async liveParties(inv: Pick<InvoiceRecord, 'accountId' | 'mode' | 'customerId'>, t?: Transaction): Promise<InvoiceParties> {
    const account = await this.accounts.invoicing(inv.accountId, t);
    const customer = (await this.customers.lookup(inv, [inv.customerId], t)).get(inv.customerId);
    return invoiceParties(account, customer ?? { name: null, email: '', locale: 'en' });
  }

  /**
   * The parties of those of these invoices that are drafts with none kept yet (a merchant's
   * draft charged; a subscription's drafts took theirs as they were made), for the statement
   * that finalises them together: one read of the drafts, then one of each account and one of
   * the customers of each account and mode, however many invoices.
   */
  private async draftParties(t: Transaction, ids: readonly string[]): Promise<Map<string, InvoiceParties>> {
    const out = new Map<string, InvoiceParties>();
    const accounts = new Map<string, InvoiceDocument['merchant']>();
    for (const group of groupBy(await this.store.draftsOf(ids, t), (d) => `${d.accountId}|${d.mode}`).values()) {
      const { accountId, mode } = group[0];
      if (!accounts.has(accountId)) accounts.set(accountId, await this.accounts.invoicing(accountId, t));
      const customers = await this.customers.lookup({ accountId, mode }, group.map((d) => d.customerId), t);
      for (const d of group) {
        const customer = customers.get(d.customerId);
        if (customer) out.set(d.id, invoiceParties(accounts.get(accountId) as InvoiceDocument['merchant'], customer));
      }
    }
    return out;
  }

  /**
   * A subscription's invoice, in the subscription's transaction (create, resume, a plan change
   * invoiced now, a renewal): `createForSubscriptions` for one.
   */
  async createForSubscription(t: Transaction, ctx: RequestContext, spec: SubscriptionInvoiceSpec): Promise<InvoiceRecord> {
    const [invoice] = await this.createForSubscriptions(t, [{ ctx, spec }]);
    return invoice;
  }

  /**
   * A subscription invoice's credit, in its creating transaction before its row is written (API.md
   * §10, §12): a negative total is never lost, it becomes the customer's credit in that currency
   * (the invoice owes nothing and is paid at once); a positive one takes what it can from the
   * credit first (`creditApplied`), and only the rest is due. The ledger writes at most once per
   * invoice, so a step run again after a crash never applies or grants a credit twice.
   */
  private async settleCredit(t: Transaction, ctx: RequestContext, spec: SubscriptionInvoiceSpec, built: BuiltInvoice, number: string): Promise<void> {
    if (built.total < 0) {
      await this.credit.creditFromInvoice(t, ctx, {
        customerId: spec.customerId, currency: spec.currency, invoiceId: built.id, amount: -built.total, description: `Credit from invoice ${number}`,
      });
      return;
    }
    if (built.total === 0) return;
    const applied = await this.credit.applyToInvoice(t, ctx, { customerId: spec.customerId, currency: spec.currency, invoiceId: built.id, amountDue: built.total });
    if (applied === 0) return;
    built.due = built.total - applied;
    Object.assign(built.invoice, { creditApplied: applied, amountDue: built.due });
  }

  /**
   * Each subscription invoice's taxes (API.md §12): every line, proration credits included, takes
   * the subscription's rates (as they are, active or not: a rate deactivated after it was set
   * still bills), for its customer's taxExempt; one read of the rates and one of the customers a
   * scope, in the caller's transaction.
   */
  private async subscriptionTaxes(t: Transaction, items: ReadonlyArray<{ ctx: RequestContext; spec: SubscriptionInvoiceSpec }>): Promise<SubscriptionTaxes[]> {
    const out: SubscriptionTaxes[] = [];
    for (const group of groupBy(items.map((item, i) => ({ ...item, i })), ({ ctx }) => `${ctx.accountId}|${ctx.mode}`).values()) {
      const scope = group[0].ctx;
      const rates = await this.taxRates.terms(scope, group.flatMap(({ spec }) => spec.defaultTaxRateIds ?? []), t);
      const customers = await this.customers.lookup(scope, group.map(({ spec }) => spec.customerId), t);
      for (const { spec, i } of group) {
        const exempt = customers.get(spec.customerId)?.taxExempt ?? 'none';
        const defaults = spec.defaultTaxRateIds ?? [];
        out[i] = { exempt, defaults, taxes: computeInvoiceTaxes(spec.lines.map((l) => ({ amount: l.amount, taxRateIds: defaults })), rates, exempt), customer: customers.get(spec.customerId) ?? null };
      }
    }
    return out;
  }

  /**
   * Tax rates given to an invoice or a subscription (`POST`/`PATCH`): each the account and mode's
   * and active, and, as one line's rates, a combination a line can take (400 naming `param`).
   */
  async checkTaxRates(ctx: RequestContext, lists: ReadonlyArray<{ ids: readonly string[]; param: string }>): Promise<void> {
    const rates = await this.taxRates.usable(ctx, lists);
    for (const { ids, param } of lists) {
      const problem = lineRatesProblem(ids, rates);
      if (problem) throw new DomainError('invalid_parameter', problem, param);
    }
  }

  /**
   * The taxes a subscription's next invoice will carry (its upcoming invoice): computed as
   * `createForSubscriptions` computes them; writes nothing.
   */
  async previewSubscriptionTaxes(ctx: RequestContext, spec: Pick<SubscriptionInvoiceSpec, 'customerId' | 'lines' | 'defaultTaxRateIds'>): Promise<{ tax: number; total: number; taxBreakdown: TaxBreakdownEntry[] }> {
    const defaults = spec.defaultTaxRateIds ?? [];
    const rates = await this.taxRates.terms(ctx, defaults);
    const exempt = (await this.customers.lookup(ctx, [spec.customerId])).get(spec.customerId)?.taxExempt ?? 'none';
    const taxes = computeInvoiceTaxes(spec.lines.map((l) => ({ amount: l.amount, taxRateIds: defaults })), rates, exempt);
    return { tax: Number(taxes.tax), total: Number(taxes.total), taxBreakdown: taxes.breakdown };
  }

  /** A subscription invoice's payment on a saved card. */
  private subscriptionCharge(ctx: RequestContext, paymentMethod: string): (inv: InvoiceRecord, key: IdempotencyKey, paymentId: string) => Promise<Payment> {
    return (inv, key, paymentId) => this.payments.create({ ...ctx, permissions: ['*'] }, {
      amount: inv.amountDue, currency: inv.currency, customerId: inv.customerId,
      paymentMethod, description: `Invoice ${inv.number}`, ...this.returnTo(ctx, inv.id),
    }, key, { invoiceId: inv.id, subscriptionId: inv.subscriptionId }, paymentId);
  }

  /**
   * Where a customer asked to authenticate an invoice's payment (3-D Secure) comes back to: its
   * hosted page, which settles the invoice from the payment as it reads it. None when the page's
   * address would not be accepted as a payment's returnUrl in this mode (a live account served
   * over plain http): the customer then lands on the payment's own return page.
   */
  private returnTo(ctx: RequestContext, invoiceId: string): { returnUrl?: string } {
    try {
      return { returnUrl: returnUrlChecker(ctx.mode)(this.urls.invoice(invoiceId), 'returnUrl') };
    } catch {
      return {};
    }
  }

  /**
   * The gateway key of an invoice's charge attempt: the same for every try of that attempt (the
   * single charge, the billing run's batch, a restart's retry), so a retry replays the gateway's
   * answer and never charges twice.
   */
  private chargeKey(ctx: RequestContext, id: string, attempt: number): IdempotencyKey {
    return {
      scope: idempotencyScope(ctx.accountId, ctx.mode),
      key: `invoice:${id}:charge:${attempt}`,
      fingerprint: this.idempotency.fingerprint('POST', `/v1/invoices/${id}/pay`, undefined, { attempt }),
    };
  }

  /**
   * Subscriptions' invoices in the caller's transaction, the one way they are made (a request's
   * invoice is a batch of one, a billing run's renewals a batch of many), in a few statements
   * whatever their number: numbered in the order given from one move of each account's sequence,
   * their credit settled (`settleCredit`), inserted with their lines (proration credits may be
   * negative), each for one subscription period (`billingPeriodStart`: the unique key with the
   * subscription, so a period is never invoiced twice) or none. Those with nothing to pay are
   * paid at once; `send` e-mails one (collection by invoice), `finalize` sends one without an
   * e-mail (it waits behind another being collected); the rest stay drafts for their charge,
   * whose settle finalises them. Their events (invoice.created, then invoice.paid or
   * invoice.sent) are recorded here, before the caller's own. Returns the invoices as left.
   */
  async createForSubscriptions(t: Transaction, items: Array<{ ctx: RequestContext; spec: SubscriptionInvoiceSpec }>): Promise<InvoiceRecord[]> {
    if (items.length === 0) return [];
    // The account's settings as the caller read them before its transaction (a billing run), else here.
    const accounts = new Map<string, { invoicePrefix: string } & InvoiceDocument['merchant']>();
    for (const { ctx, spec } of items) {
      if (!accounts.has(ctx.accountId)) accounts.set(ctx.accountId, spec.account ?? (await this.accounts.invoicing(ctx.accountId)));
    }
    const seqs: number[] = [];
    const scopes = groupBy(items.map(({ ctx }, i) => ({ ctx, i })), ({ ctx }) => `${ctx.accountId}|${ctx.mode}`);
    // The sequences in one order (by account and mode), whatever the claim's: two batches holding
    // subscriptions of the same accounts never wait for each other's sequence row in a cycle.
    for (const [, group] of [...scopes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const { ctx } = group[0];
      const first = await this.store.nextNumbers(t, ctx, group.length, ctx.clock.now());
      group.forEach(({ i }, k) => {
        seqs[i] = first + k;
      });
    }
    const taxes = await this.subscriptionTaxes(t, items);
    const built = items.map(({ ctx, spec }, i) => subscriptionInvoiceRows(ctx, spec, formatNumber((accounts.get(ctx.accountId) as { invoicePrefix: string }).invoicePrefix, seqs[i]), seqs[i], ctx.clock.now(), taxes[i]));
    // Credit: only the customers who hold some in the invoice's currency (one read a scope) are asked for it.
    const holding = new Set<string>();
    for (const group of groupBy(items.map(({ ctx, spec }) => ({ ctx, spec })), ({ ctx }) => `${ctx.accountId}|${ctx.mode}`).values()) {
      const balances = await this.credit.balancesOf(group[0].ctx, group.map(({ spec }) => spec.customerId), t);
      for (const { ctx, spec } of group) {
        if ((balances.get(spec.customerId)?.[spec.currency.toUpperCase()] ?? 0) > 0) holding.add(`${ctx.accountId}|${ctx.mode}|${spec.customerId}|${spec.currency.toUpperCase()}`);
      }
    }
    // In one order (by customer and currency), whatever the claim's: each credit change locks the
    // customer's balance row, and two batches taking two customers' credit must not wait for each
    // other in a cycle.
    const byCustomer = [...built.entries()].sort(([i], [j]) => {
      const a = `${items[i].spec.customerId}|${items[i].spec.currency.toUpperCase()}`;
      const b = `${items[j].spec.customerId}|${items[j].spec.currency.toUpperCase()}`;
      return a < b ? -1 : a > b ? 1 : i - j;
    });
    for (const [i, b] of byCustomer) {
      const { ctx, spec } = items[i];
      if (b.total < 0 || holding.has(`${ctx.accountId}|${ctx.mode}|${spec.customerId}|${spec.currency.toUpperCase()}`)) {
        await this.settleCredit(t, ctx, spec, b, b.invoice.number as string);
      }
    }
    // Each keeps its parties from its insert (read above with its taxes, no statement more): one
    // issued as it is made (paid at once, sent, finalised) shows them; a draft left for its charge
    // shows the live ones until the charge's settle issues it with these (the batch's settle
    // statement then needs no read of the customers).
    for (const [i, b] of built.entries()) {
      const { customer } = taxes[i];
      if (customer) b.invoice.parties = JSON.stringify(invoiceParties(accounts.get(items[i].ctx.accountId) as InvoiceDocument['merchant'], customer));
    }
    await InvoiceModel.bulkCreate(built.map((b) => b.invoice), { transaction: t });
    const lineRows = built.flatMap((b) => b.lines);
    if (lineRows.length) await InvoiceLineItemModel.bulkCreate(lineRows, { transaction: t });
    const ids = built.map((b) => b.id);
    const created = await this.store.findManyIn(ids, t);
    const events: BatchEventItem[] = ids.map((id, i) => ({ ctx: items[i].ctx, type: 'invoice.created', object: this.toApi(created.get(id) as InvoiceRecord) }));
    const zero = built.flatMap((b, i) => (b.due === 0 ? [{ id: b.id, ctx: items[i].ctx }] : []));
    // Grouped by the instant their clocks read (one in a run; a test clock's own otherwise).
    for (const group of groupBy(zero, ({ ctx }) => String(ctx.clock.now().getTime())).values()) {
      await InvoiceModel.update(paidAtOnce(group[0].ctx.clock.now()), { where: { id: group.map(({ id }) => id) }, transaction: t });
      const ctxOf = new Map(group.map(({ id, ctx }) => [id, ctx]));
      for (const [id, paid] of await this.store.findManyIn(group.map(({ id }) => id), t)) {
        created.set(id, paid);
        events.push({ ctx: ctxOf.get(id) as RequestContext, type: 'invoice.paid', object: this.toApi(paid) });
      }
    }
    await this.events.recordMany(t, events);
    // Sent by e-mail, or finalised to wait behind another invoice: one by one (each has its own e-mail or reason).
    for (const [i, b] of built.entries()) {
      const { ctx, spec } = items[i];
      if (b.due === 0 || (!spec.send && !spec.finalize)) continue;
      if (spec.send) {
        await this.sendIn(t, ctx, b.id, accounts.get(ctx.accountId) as InvoiceDocument['merchant']);
      } else {
        const now = ctx.clock.now();
        await InvoiceModel.update({ ...INVOICE_MOVES.columns('finalize', now), updatedAt: now }, { where: { id: b.id }, transaction: t });
        await this.recordEvent(ctx, t, b.id, 'invoice.sent');
      }
      created.set(b.id, (await this.store.find(b.id, ctx, t)) as InvoiceRecord);
    }
    return ids.map((id) => created.get(id) as InvoiceRecord);
  }

  /**
   * Charges subscriptions' invoices on saved cards (`BillingService.chargeAndTake`: a billing
   * batch, or one subscription as a batch of one), up to the settle: claims them all in one statement (each processing, its attempt
   * counted, its payment named), then makes their payments concurrently (at most `width` at a
   * time: all of a batch, so their reads and writes share statements), each under its attempt's key and fingerprint (`chargeKey`).
   * Returns each claimed invoice's payment, or the error its payment refused with (its invoice
   * then released, `releaseIfUncharged`); an invoice not in the answer was not claimed (paid,
   * void, processing or owing nothing: the caller reads why). The outcomes are
   * not settled here: `settleMany` takes them.
   */
  async chargeManyForSubscriptions(
    items: Array<{ ctx: RequestContext; invoice: InvoiceRecord; paymentMethod: string }>, width = 128,
  ): Promise<Map<string, { payment: Payment } | { error: unknown }>> {
    const outcomes = new Map<string, { payment: Payment } | { error: unknown }>();
    if (items.length === 0) return outcomes;
    const paymentIds = new Map(items.map((item) => [item.invoice.id, newId('pay')]));
    const rows = items.map((item) => ({ id: item.invoice.id, paymentId: paymentIds.get(item.invoice.id) as string }));
    // Stamped on the first charge's clock (a test clock's step: its time), as its settle will be.
    const attempts = await this.store.claimCharges(rows, items[0].ctx.clock.now());
    const claimed = items.filter((item) => attempts.has(item.invoice.id));
    let next = 0;
    const lane = async () => {
      while (next < claimed.length) {
        const { ctx, invoice, paymentMethod } = claimed[next++];
        const { attempt, amountDue } = attempts.get(invoice.id) as { attempt: number; amountDue: number };
        const paymentId = paymentIds.get(invoice.id) as string;
        try {
          // What is due as claimed (a draft may have changed since its creation).
          const payment = await this.subscriptionCharge(ctx, paymentMethod)({ ...invoice, paymentAttempts: attempt, amountDue }, this.chargeKey(ctx, invoice.id, attempt), paymentId);
          outcomes.set(invoice.id, { payment });
        } catch (err) {
          if (!(err instanceof IdempotentReplay)) {
            // Refused before any payment was written (no saved card, no gateway): nothing is processing.
            await this.releaseIfUncharged(ctx, invoice.id, paymentId).catch((e) => this.logger.error({ invoiceId: invoice.id, err: errorForLog(e) }, 'invoice charge could not be released'));
          }
          outcomes.set(invoice.id, { error: err });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(width, claimed.length) }, lane));
    return outcomes;
  }

  /**
   * The one settle: charges' outcomes taken on their invoices in the caller's transaction, for a
   * single charge and for a billing batch's alike. The common case, a charge that succeeded for
   * an invoice still waiting for it (processing, that payment its latest), is set-based (a draft
   * finalised `sent`, then `paid`, each one statement for all); every other outcome (a decline, a
   * charge still pending, one that succeeded after its invoice stopped waiting for it) is taken
   * invoice by invoice under its row lock. Returns each invoice as left and the events
   * (invoice.sent, invoice.paid, invoice.payment_failed) for the caller to record with its own.
   */
  async settleMany(t: Transaction, items: Array<{ ctx: RequestContext; invoiceId: string; payment: SettledPayment }>): Promise<{ invoices: Map<string, InvoiceRecord>; events: BatchEventItem[] }> {
    const events: BatchEventItem[] = [];
    const invoices = new Map<string, InvoiceRecord>();
    if (items.length === 0) return { invoices, events };
    const ctxOf = new Map(items.map((item) => [item.invoiceId, item.ctx]));
    const event = (inv: InvoiceRecord, type: InvoiceEventType) => events.push({ ctx: ctxOf.get(inv.id) as RequestContext, type, object: this.toApi(inv) });
    const succeeded = items.filter((item) => item.payment.status === 'succeeded');
    const paidSet = new Set<string>();
    if (succeeded.length) {
      // One instant for the batch, as its statements write it (a batch is one run's step, on one clock).
      const now = succeeded[0].ctx.clock.now();
      // The drafts among them are issued by this statement: each keeps its parties (read once for the batch).
      const parties = await this.draftParties(t, succeeded.map((item) => item.invoiceId));
      const sent = await this.store.markChargedSent(t, succeeded.map((item) => ({ id: item.invoiceId, paymentId: item.payment.id, parties: parties.get(item.invoiceId) ?? null })), now, now);
      for (const inv of (await this.store.findManyIn(sent, t)).values()) event(inv, 'invoice.sent');
      const paid = await this.store.markChargedPaid(t, succeeded.map((item) => ({ id: item.invoiceId, paymentId: item.payment.id, amount: item.payment.amount })), now, now);
      for (const inv of (await this.store.findManyIn(paid, t)).values()) {
        event(inv, 'invoice.paid');
        invoices.set(inv.id, inv);
        paidSet.add(inv.id);
      }
    }
    for (const item of items) {
      if (paidSet.has(item.invoiceId)) continue;
      invoices.set(item.invoiceId, await this.settleOne(t, item.ctx, item.invoiceId, item.payment, event));
    }
    return { invoices, events };
  }

  /** `settleMany` for an outcome the set-based statements did not take: under the invoice's row lock. */
  private async settleOne(t: Transaction, ctx: RequestContext, id: string, payment: SettledPayment, event: (inv: InvoiceRecord, type: InvoiceEventType) => void): Promise<InvoiceRecord> {
    const now = ctx.clock.now();
    const current = await this.lockForChange(ctx, id, t);
    if (payment.status === 'requires_action') return this.awaitAuthentication(t, ctx, current, payment, event);
    const settled = payment.status === 'succeeded' || payment.status === 'failed' || payment.status === 'canceled';
    if (!settled) return current;
    const ours = current.latestPaymentId === payment.id && (current.paymentStatus === 'processing' || current.paymentStatus === 'requires_action');
    if (!ours) {
      // A charge that succeeded after its invoice stopped waiting for it (its request was slow
      // past the grace and the invoice was released): the money moved for this invoice, so it
      // is never ignored. An invoice still open takes it; one already paid or void is logged.
      if (payment.status !== 'succeeded' || current.latestPaymentId === payment.id && current.status === 'paid') return current;
      if (current.status === 'paid' || current.status === 'void' || current.paymentStatus === 'processing') {
        this.logger.warn({ invoiceId: id, paymentId: payment.id, invoiceStatus: current.status }, 'a charge of this invoice succeeded after it was settled otherwise; refund it or review it');
        return current;
      }
    }
    await this.finalizeCharged(t, ctx, current, now, event);
    if (payment.status === 'succeeded') {
      await InvoiceModel.update({
        ...INVOICE_MOVES.columns('pay', now), paymentStatus: 'paid', latestPaymentId: payment.id,
        amountPaid: current.amountPaid + payment.amount, amountDue: Math.max(0, current.amountDue - payment.amount), updatedAt: now,
      }, { where: { id }, transaction: t });
    } else {
      await InvoiceModel.update({ paymentStatus: 'failed', updatedAt: now }, { where: { id }, transaction: t });
    }
    const after = (await this.store.find(id, ctx, t)) as InvoiceRecord;
    event(after, payment.status === 'succeeded' ? 'invoice.paid' : 'invoice.payment_failed');
    return after;
  }

  /** A draft charged is finalised by its settling write: sent (without an e-mail), with its event. */
  private async finalizeCharged(t: Transaction, ctx: RequestContext, current: InvoiceRecord, now: Date, event: (inv: InvoiceRecord, type: InvoiceEventType) => void): Promise<void> {
    if (current.status !== 'draft') return;
    // A draft that kept its parties as it was made (a subscription's) keeps those, as the batch's statement does.
    const parties = JSON.stringify(current.parties ?? await this.liveParties(current, t));
    await InvoiceModel.update({ ...INVOICE_MOVES.columns('finalize', now), parties, updatedAt: now }, { where: { id: current.id }, transaction: t });
    event((await this.store.find(current.id, ctx, t)) as InvoiceRecord, 'invoice.sent');
  }

  /**
   * The invoice's charge waits for the customer to authenticate it (3-D Secure): a draft is
   * finalised (sent: its hosted page is where the challenge is completed), the invoice is
   * `requires_action` (no other charge is made while it is), and a customer who is not there (a
   * saved card charged: a renewal, a dunning retry, the merchant's pay) is mailed a link to the
   * hosted page. The payment's outcome settles it later (`settled`).
   */
  private async awaitAuthentication(
    t: Transaction, ctx: RequestContext, current: InvoiceRecord, payment: SettledPayment, event: (inv: InvoiceRecord, type: InvoiceEventType) => void,
  ): Promise<InvoiceRecord> {
    if (current.latestPaymentId !== payment.id || current.paymentStatus !== 'processing') return current;
    const now = ctx.clock.now();
    await this.finalizeCharged(t, ctx, current, now, event);
    await this.store.markRequiresAction(t, current.id, payment.id, now);
    const after = (await this.store.find(current.id, ctx, t)) as InvoiceRecord;
    event(after, 'invoice.payment_action_required');
    if (payment.paymentMethod !== undefined && payment.paymentMethod !== 'card') await this.mailAuthentication(t, ctx, after);
    return after;
  }

  /** The e-mail asking the customer to authenticate the invoice's payment on its hosted page, queued in `t`. */
  private async mailAuthentication(t: Transaction, ctx: RequestContext, inv: InvoiceRecord): Promise<void> {
    const parties = await this.partiesFor(inv, t);
    if (!parties.customer.email) return;
    const { subject, text, html } = this.rendering.email(documentOf(inv, parties), { hostedUrl: this.urls.invoice(inv.id), purpose: 'authentication' });
    await this.mail.enqueue(t, ctx, { to: parties.customer.email, subject, text, html, about: { type: 'invoice', id: inv.id }, attachments: [] });
  }

  /** An invoice as stored, settled from its payment first when its charge's request ended early (subscriptions read it so). */
  async record(ctx: RequestContext, id: string): Promise<InvoiceRecord> {
    return this.settled(await this.mustFind(ctx, id));
  }

  /** The mail outbox tells, in its own transaction, where the invoice's e-mail stands. */
  async setEmailStatus(t: Transaction, id: string, status: MailStatus): Promise<void> {
    await InvoiceModel.update({ emailStatus: status }, { where: { id }, transaction: t });
  }

  /**
   * `POST /{id}/pay` `{paymentMethod?}`: charges the given or the customer's default saved card.
   * A draft is finalised first. Success → `paid`; a decline → `paymentStatus: failed`, event
   * `invoice.payment_failed`, the invoice stays `sent`.
   */
  async payWithSavedCard(ctx: RequestContext, id: string, input: unknown, idem?: IdempotencyKey): Promise<Invoice> {
    requirePermission(ctx, 'invoices', 'write');
    const data = parseInput(payInvoiceInput, input);
    const found = await this.mustFind(ctx, id);
    await this.idempotency.replayIfAnswered(idem);
    // The given card, or the customer's default saved card; never a card nobody chose (the test
    // simulator's fallback of POST /v1/payments does not apply to an invoice).
    if (found.status === 'paid') throw invalidState('This invoice is already paid');
    if (found.status === 'void') throw invalidState('This invoice is void and cannot be paid');
    let paymentMethod = data.paymentMethod;
    if (paymentMethod === undefined) {
      paymentMethod = (await this.customers.lookup(ctx, [found.customerId])).get(found.customerId)?.defaultPaymentMethodId ?? undefined;
      if (paymentMethod === undefined) {
        throw new DomainError('missing_parameter', "The invoice's customer has no default saved card: give paymentMethod (a saved card pm_… of the customer, or a test token)", 'paymentMethod');
      }
    }
    const chosen = paymentMethod;
    // A draft takes the customer's credit first; all of it paid so: nothing to charge.
    const credited = await this.db.transaction(async (t) => {
      const current = await this.lockForChange(ctx, id, t);
      if (current.paymentStatus === 'processing') return current;
      const credit = await this.creditOnFinalise(t, ctx, current);
      if (!('creditApplied' in credit)) return current;
      const now = ctx.clock.now();
      if (credit.amountDue > 0) {
        await InvoiceModel.update({ ...credit, updatedAt: now }, { where: { id }, transaction: t });
        return (await this.store.find(id, ctx, t)) as InvoiceRecord;
      }
      const parties = JSON.stringify(await this.liveParties(current, t));
      await InvoiceModel.update({ ...credit, ...INVOICE_MOVES.columns('finalize', now), parties, updatedAt: now }, { where: { id }, transaction: t });
      await this.recordEvent(ctx, t, id, 'invoice.sent');
      await InvoiceModel.update({ ...INVOICE_MOVES.columns('pay', now), paymentStatus: 'paid', updatedAt: now }, { where: { id }, transaction: t });
      await this.recordEvent(ctx, t, id, 'invoice.paid');
      return (await this.store.find(id, ctx, t)) as InvoiceRecord;
    });
    if (credited.status === 'paid') return this.answer(idem, IDEMPOTENT_OPERATIONS.payInvoice, this.toApi(credited));
    const { invoice } = await this.charge(ctx, id, (inv, key, paymentId) =>
      this.payments.create(ctx, {
        amount: inv.amountDue, currency: inv.currency, customerId: inv.customerId,
        paymentMethod: chosen, description: `Invoice ${inv.number}`, ...this.returnTo(ctx, inv.id),
      }, key, { invoiceId: inv.id, subscriptionId: inv.subscriptionId }, paymentId));
    return this.answer(idem, IDEMPOTENT_OPERATIONS.payInvoice, this.toApi(invoice));
  }

  /** The hosted invoice page's pay (no key): charges the card typed on the page. */
  async publicPay(id: string, input: unknown, idem: IdempotencyKey | undefined, request: PublicRequest): Promise<PayResult> {
    const found = await this.store.find(id);
    if (!found || found.status === 'draft') throw notFound('invoice', id);
    const ctx = this.pay.context(found, request.requestId);
    const data = parseInput(publicPayInput, input);
    const clientKey = this.pay.accountKey(idem, found);
    const noRedirect = () => null;
    await this.pay.replayIfPaid(clientKey, noRedirect);
    return this.pay.attempt({ kind: 'invoice', id, accountId: found.accountId, mode: found.mode }, request, async () => {
      let result: PayResult | undefined;
      const { payment } = await this.charge(ctx, id, async (inv, key, paymentId) => {
        // Back to the hosted invoice page after a 3-D Secure challenge.
        const charged = await this.pay.charge(ctx, {
          amount: inv.amountDue, currency: inv.currency, description: `Invoice ${inv.number}`, customerId: inv.customerId, card: data.card,
          ...this.returnTo(ctx, inv.id),
        }, { invoiceId: inv.id, subscriptionId: inv.subscriptionId }, key, noRedirect, paymentId);
        result = charged.result;
        return charged.payment;
      });
      // The pay's own key stores the payment, replayed as this result (PublicPayPath.replayIfPaid).
      await this.answer(clientKey, IDEMPOTENT_OPERATIONS.payInvoicePublic, payment);
      return result as PayResult;
    });
  }

  /**
   * A subscription's invoice paid with a card typed on a hosted checkout page (the session a
   * subscription's retry returns): the invoice's own charge under its key per attempt, the
   * payment linked to the session too (it holds the session while it runs). The pay's own key
   * stores the payment, replayed as this result.
   */
  async payWithCard(
    ctx: RequestContext, id: string, card: CardInput, checkoutSessionId: string,
    clientKey: IdempotencyKey | undefined, redirectUrl: (result: PayResult) => string | null,
  ): Promise<{ result: PayResult; invoice: InvoiceRecord }> {
    let result: PayResult | undefined;
    const { invoice, payment } = await this.charge(ctx, id, async (inv, key, paymentId) => {
      const charged = await this.pay.charge(ctx, {
        amount: inv.amountDue, currency: inv.currency, description: `Invoice ${inv.number}`, customerId: inv.customerId, card,
      }, { invoiceId: inv.id, subscriptionId: inv.subscriptionId, checkoutSessionId }, key, redirectUrl, paymentId);
      result = charged.result;
      return charged.payment;
    });
    await this.answer(clientKey, IDEMPOTENT_OPERATIONS.payCheckoutSession, payment);
    return { result: result as PayResult, invoice };
  }

  /**
   * What the hosted invoice page shows: nothing internal. The merchant's name and the customer's
   * locale are those the invoice was issued with (as its PDF and e-mail); the totals as the PDF
   * shows them: subtotal, a row per tax rate, credit applied, total, paid and due.
   */
  async publicView(id: string): Promise<PublicInvoice> {
    const found = await this.store.find(id);
    if (!found || found.status === 'draft') throw notFound('invoice', id);
    const inv = await this.settled(found, true);
    // The customer's locale: the page speaks the language and uses the formats of the PDF and the mail.
    const parties = await this.partiesFor(inv);
    // The latest payment tells how to complete it, or why it failed.
    const latest = (inv.paymentStatus === 'requires_action' || inv.paymentStatus === 'failed') && inv.latestPaymentId
      ? await this.payments.retrieve({ ...systemContext(inv.accountId, inv.mode, this.clock.now(), 'invoice-page'), permissions: ['*'] }, inv.latestPaymentId).catch(() => null)
      : null;
    return {
      id: inv.id, object: 'invoice', livemode: inv.livemode, number: inv.number, status: inv.status, paymentStatus: inv.paymentStatus,
      currency: inv.currency, subtotal: inv.subtotal, tax: inv.tax,
      taxBreakdown: inv.taxBreakdown.map((r) => ({ displayName: r.displayName, percentage: r.percentage, inclusive: r.inclusive, taxableAmount: r.taxableAmount, amount: r.amount })),
      reverseCharge: inv.customerTaxExempt === 'reverse', total: inv.total, creditApplied: inv.creditApplied, amountPaid: inv.amountPaid, amountDue: inv.amountDue,
      dueDate: inv.dueDate, merchantName: parties.merchant.name, locale: parties.customer.locale,
      lineItems: inv.lineItems.map((l) => ({ description: l.description, quantity: l.quantity, amount: l.amount })),
      nextActionUrl: inv.paymentStatus === 'requires_action' && latest?.status === 'requires_action' ? (latest.nextAction?.url ?? null) : null,
      paymentFailureCode: inv.paymentStatus === 'failed' && latest?.status === 'failed' ? latest.failureCode : null,
    };
  }

  /** `POST /{id}/mark-paid`: paid outside the service (wire, cash); `draft` or `sent`, never while a card charge is processing. */
  async markPaid(ctx: RequestContext, id: string, idem?: IdempotencyKey): Promise<Invoice> {
    requirePermission(ctx, 'invoices', 'write');
    const now = ctx.clock.now();
    return this.db.transaction((t) => this.idempotency.once(t, idem, IDEMPOTENT_OPERATIONS.markInvoicePaid, async () => {
      const current = await this.lockForChange(ctx, id, t);
      INVOICE_MOVES.check(current.status, 'mark_paid');
      refuseWhileChargeOut(current);
      await InvoiceModel.update({
        ...INVOICE_MOVES.columns('mark_paid', now), paymentStatus: 'paid', paidOutOfBand: true, amountPaid: current.total - current.creditApplied, amountDue: 0,
        sentAt: current.sentAt ?? now, ...(await this.issuedParties(current, t)), updatedAt: now,
      }, { where: { id }, transaction: t });
      return this.recordEvent(ctx, t, id, 'invoice.paid');
    }));
  }

  /** `POST /{id}/void`: `draft` or `sent` (never while a card charge is processing); the number stays taken. */
  async void(ctx: RequestContext, id: string, idem?: IdempotencyKey): Promise<Invoice> {
    requirePermission(ctx, 'invoices', 'write');
    const now = ctx.clock.now();
    return this.db.transaction((t) => this.idempotency.once(t, idem, IDEMPOTENT_OPERATIONS.voidInvoice, async () => {
      const current = await this.lockForChange(ctx, id, t);
      INVOICE_MOVES.check(current.status, 'void');
      refuseWhileChargeOut(current);
      await InvoiceModel.update({ ...INVOICE_MOVES.columns('void', now), amountDue: 0, ...(await this.issuedParties(current, t)), updatedAt: now }, { where: { id }, transaction: t });
      // What it took of the customer's credit goes back to the customer (the invoice owes nothing now).
      if (current.creditApplied > 0) {
        await this.credit.creditFromInvoice(t, ctx, {
          customerId: current.customerId, currency: current.currency, invoiceId: id, amount: current.creditApplied, description: `Credit given back by void invoice ${current.number}`,
        });
      }
      return this.recordEvent(ctx, t, id, 'invoice.voided');
    }));
  }

  /** The `parties` column a move out of `draft` writes (the parties now); none for a move of an invoice already issued. */
  private async issuedParties(current: InvoiceRecord, t: Transaction): Promise<{ parties: string } | Record<string, never>> {
    return current.status === 'draft' ? { parties: JSON.stringify(await this.liveParties(current, t)) } : {};
  }

  /**
   * The invoice's PDF, in every status; the same bytes while its status is unchanged. An issued
   * invoice names the parties it kept; a draft, the account and the customer as they are now.
   */
  async pdf(ctx: RequestContext, id: string): Promise<{ filename: string; bytes: Buffer }> {
    requirePermission(ctx, 'invoices', 'read');
    const inv = await this.settled(await this.mustFind(ctx, id));
    const doc = documentOf(inv, await this.partiesFor(inv));
    return { filename: `${inv.number}.pdf`, bytes: await this.rendering.pdf(doc) };
  }

  /**
   * One charge of the invoice: claims it (`processing`, the attempt counted and the payment's id
   * named, in one transaction), charges under a key derived from the invoice and the attempt
   * (a retry of the same attempt replays the gateway's answer, never a second charge), and
   * settles it with its event. A charge still pending is settled when its payment is.
   */
  private async charge(
    ctx: RequestContext, id: string,
    run: (invoice: InvoiceRecord, key: IdempotencyKey, paymentId: string) => Promise<Payment>,
  ): Promise<{ invoice: InvoiceRecord; payment: Payment }> {
    const found = await this.settled(await this.mustFind(ctx, id));
    const paymentId = newId('pay');
    // The one claim, the batch's statement for one: processing, the attempt counted (attempts
    // only grow: each has its own gateway key, never used twice), the payment named. A draft stays
    // a draft until its charge settles (a charge refused before it was written leaves the invoice
    // exactly as it was); the settling write finalises it.
    const attempts = await this.store.claimCharges([{ id, paymentId }], ctx.clock.now());
    const taken = attempts.get(id);
    if (!taken) throw unclaimable((await this.mustFind(ctx, id)));
    const claimed: InvoiceRecord = { ...found, paymentAttempts: taken.attempt, amountDue: taken.amountDue };
    const key = this.chargeKey(ctx, id, claimed.paymentAttempts);
    let payment: Payment;
    try {
      payment = await run(claimed, key, paymentId);
    } catch (err) {
      if (err instanceof IdempotentReplay) throw err;
      // Refused before any payment was written (no saved card, no gateway): nothing is processing.
      await this.releaseIfUncharged(ctx, id, paymentId).catch((e) => this.logger.error({ invoiceId: id, err: errorForLog(e) }, 'invoice charge could not be released'));
      throw err;
    }
    const invoice = await this.settleCharge(ctx, id, payment);
    return { invoice, payment };
  }

  /** A charge's outcome taken on its invoice (`settleMany` for one, in its own transaction, with its events); a pending charge leaves it processing. */
  async settleCharge(ctx: RequestContext, id: string, payment: SettledPayment): Promise<InvoiceRecord> {
    return this.db.transaction(async (t) => {
      const { invoices, events } = await this.settleMany(t, [{ ctx, invoiceId: id, payment }]);
      await this.events.recordMany(t, events);
      return invoices.get(id) as InvoiceRecord;
    });
  }

  /** A charge refused before its payment was written: the invoice is no longer processing. */
  private async releaseIfUncharged(ctx: RequestContext, id: string, paymentId: string): Promise<void> {
    if ((await this.store.paymentStatus(paymentId)) !== null) return;
    await this.db.transaction(async (t) => {
      const current = await this.lockForChange(ctx, id, t);
      if (current.latestPaymentId !== paymentId || current.paymentStatus !== 'processing') return;
      // The attempt's number is not given back: a late request still holding it could yet charge
      // under its key, and the next attempt must not share that key.
      await InvoiceModel.update({
        paymentStatus: current.paymentAttempts > 1 ? 'failed' : 'unpaid', updatedAt: ctx.clock.now(),
      }, { where: { id }, transaction: t });
    });
  }

  /**
   * An invoice whose charge's request ended first (it died, or its payment was still pending) is
   * settled from its payment when read, and by the job.
   */
  private async settled(inv: InvoiceRecord, notify = false): Promise<InvoiceRecord> {
    if ((inv.paymentStatus !== 'processing' && inv.paymentStatus !== 'requires_action') || !inv.latestPaymentId) return inv;
    const status = await this.store.paymentStatus(inv.latestPaymentId);
    const ctx = systemContext(inv.accountId, inv.mode, this.clock.now(), 'invoice-reconcile');
    if (status === null) {
      // No payment was written: the charging request died before it; after a grace, free the invoice.
      if (this.clock.now().getTime() - Date.parse(inv.updatedAt) < CHARGE_SETTLE_GRACE_MS) return inv;
      await this.releaseIfUncharged(ctx, inv.id, inv.latestPaymentId);
      return (await this.store.find(inv.id)) as InvoiceRecord;
    }
    if (status === 'pending' || status === 'requires_review') return inv;
    // Still waiting for the customer's authentication, as the invoice already knows.
    if (status === 'requires_action' && inv.paymentStatus === 'requires_action') return inv;
    const payment = await this.payments.retrieve({ ...ctx, permissions: ['*'] }, inv.latestPaymentId);
    const after = await this.settleCharge(ctx, inv.id, payment);
    if (notify && after.subscriptionId && after.paymentStatus !== inv.paymentStatus) await this.tellSettled(after);
    return after;
  }

  /** The listeners (`onSettled`) told of a subscription invoice settled; a failure is logged (the billing step takes the outcome later). */
  private async tellSettled(inv: InvoiceRecord): Promise<void> {
    for (const listener of this.settledListeners) {
      await listener(inv).catch((err) => this.logger.error({ invoiceId: inv.id, err: errorForLog(err) }, 'a settled invoice could not be taken by its subscription; its next billing step takes it'));
    }
  }

  /** The job: settles invoices whose charge finished after its request ended. */
  async reconcileCharges(now: Date): Promise<{ settled: number }> {
    let settled = 0;
    for (const row of await this.store.processing(new Date(now.getTime() - 1000), 200)) {
      try {
        const inv = await this.store.find(row.id);
        if (inv && (await this.settled(inv, true)).paymentStatus !== inv.paymentStatus) settled++;
      } catch (err) {
        this.logger.error({ invoiceId: row.id, err: errorForLog(err) }, 'invoice charge could not be reconciled');
      }
    }
    return { settled };
  }

  private async lockForChange(ctx: RequestContext, id: string, t: Transaction): Promise<InvoiceRecord> {
    const found = await this.store.find(id, ctx, t, true);
    if (!found) throw notFound('invoice', id);
    return found;
  }

  private async mustFind(ctx: RequestContext, id: string): Promise<InvoiceRecord> {
    const found = await this.store.find(id, ctx);
    if (!found) throw notFound('invoice', id);
    return found;
  }

  private async writeLines(t: Transaction, invoiceId: string, items: Array<LineItemInput & { amount: number }>, now: Date): Promise<void> {
    await InvoiceLineItemModel.bulkCreate(items.map((item, position) => ({
      id: newId('il'), invoiceId, position, description: item.description, quantity: item.quantity, unitAmount: item.unitAmount,
      amount: item.amount, periodStart: null, periodEnd: null, proration: false, taxRateIds: JSON.stringify(item.taxRateIds ?? []), createdAt: now,
    })), { transaction: t });
  }

  /** Reads the invoice as this transaction leaves it and records its event there. */
  private async recordEvent(ctx: RequestContext, t: Transaction, id: string, type: 'invoice.created' | 'invoice.sent' | 'invoice.paid' | 'invoice.payment_failed' | 'invoice.voided'): Promise<Invoice> {
    const invoice = this.toApi((await this.store.find(id, ctx, t)) as InvoiceRecord);
    await this.events.record(ctx, t, type, invoice);
    return invoice;
  }

  /** Stores `answer` under the request's key (when it sent one) and returns it. */
  private async answer<T>(idem: IdempotencyKey | undefined, operation: (typeof IDEMPOTENT_OPERATIONS)[keyof typeof IDEMPOTENT_OPERATIONS], answer: T): Promise<T> {
    if (!idem) return answer;
    try {
      return await this.db.transaction((t) => this.idempotency.once(t, idem, operation, async () => answer));
    } catch (err) {
      // A concurrent request with the same key answered first: this one's answer stands for it.
      if (err instanceof IdempotentReplay) return answer;
      throw err;
    }
  }

  /** The API object: the record without what is internal (account, mode, attempt count), with its hosted page while sent. */
  toApi(r: InvoiceRecord): Invoice {
    return {
      id: r.id, object: 'invoice', livemode: r.livemode, number: r.number, customerId: r.customerId, subscriptionId: r.subscriptionId,
      status: r.status, paymentStatus: r.paymentStatus, currency: r.currency, lineItems: r.lineItems, subtotal: r.subtotal, total: r.total,
      amountPaid: r.amountPaid, amountDue: r.amountDue, creditApplied: r.creditApplied, tax: r.tax, taxBreakdown: r.taxBreakdown,
      defaultTaxRateIds: r.defaultTaxRateIds, customerTaxExempt: r.customerTaxExempt, dueDate: r.dueDate, memo: r.memo, sentAt: r.sentAt, paidAt: r.paidAt,
      voidedAt: r.voidedAt, paidOutOfBand: r.paidOutOfBand, emailStatus: r.emailStatus,
      hostedUrl: r.status === 'sent' ? this.urls.invoice(r.id) : null, latestPaymentId: r.latestPaymentId, metadata: r.metadata,
      createdAt: r.createdAt, updatedAt: r.updatedAt,
    };
  }

  /** A page of an export of invoices (ExportService): the list's filters, newest first, by keyset after `after`. */
  async exportPage(ctx: RequestContext, filters: InvoiceExportFilters, after: KeysetCursor | null, limit: number): Promise<Invoice[]> {
    requirePermission(ctx, 'invoices', 'read');
    return (await this.store.exportPage(ctx, filters, after, limit)).map((i) => this.toApi(i));
  }
}

const paymentInProgress = () =>
  new DomainError('invoice_payment_in_progress', 'A card payment of this invoice is being processed; wait for its result');

const awaitingAuthentication = (current: InvoiceRecord) =>
  new DomainError('invoice_payment_in_progress', `A card payment of this invoice (${current.latestPaymentId}) waits for the customer to authenticate it (3-D Secure) on the invoice's hosted page; cancel that payment first (POST /v1/payments/{id}/cancel) to do anything else`);

/**
 * A card charge of the invoice is out (processing, or waiting for the customer's authentication):
 * paying it otherwise or voiding it now could leave money taken for an invoice that no longer
 * wants it.
 */
function refuseWhileChargeOut(current: InvoiceRecord): void {
  if (current.paymentStatus === 'processing') throw paymentInProgress();
  if (current.paymentStatus === 'requires_action') throw awaitingAuthentication(current);
}

/** Why an invoice's charge could not be claimed (InvoiceStore.claimCharges took nothing). */
function unclaimable(current: InvoiceRecord): DomainError {
  if (current.status === 'paid') return invalidState('This invoice is already paid');
  if (current.status === 'void') return invalidState('This invoice is void and cannot be paid');
  if (current.paymentStatus === 'processing') return paymentInProgress();
  if (current.paymentStatus === 'requires_action') return awaitingAuthentication(current);
  return invalidState('This invoice has nothing left to pay');
}

/** `INV-000042`: the prefix and the number zero-padded to 6 digits (wider past 999999). */
export function formatNumber(prefix: string, seq: number): string {
  return `${prefix}-${String(seq).padStart(6, '0')}`;
}

/** The total of a subscription invoice's lines, exact (BigInt: no float rounding, however many lines). */
export function linesTotal(lines: ReadonlyArray<{ amount: number }>): bigint {
  let total = 0n;
  for (const line of lines) total += BigInt(line.amount);
  return total;
}

/**
 * A subscription's invoice as inserted, numbered `seq` (`number` formatted from it): the invoice
 * row and its lines' rows, and what it leaves to pay (nothing when credits cover the charge).
 * The one builder of `createForSubscription` and `createManyForSubscriptions`, so the single and
 * the batch path write the same rows. A total past MAX_AMOUNT is refused. `touched` stamps
 * `updatedAt` (the model's create stamps its own).
 */
function subscriptionInvoiceRows(
  ctx: RequestContext, spec: SubscriptionInvoiceSpec, number: string, seq: number, touched: Date, taxes: SubscriptionTaxes,
): BuiltInvoice {
  const now = ctx.clock.now();
  const id = newId('in');
  const { total } = taxes.taxes;
  if (total > BigInt(MAX_AMOUNT)) throw new DomainError('invalid_parameter', `the invoice's total must be at most ${MAX_AMOUNT}`, 'quantity');
  const due = total > 0n ? Number(total) : 0;
  const invoice = {
    id, accountId: ctx.accountId, mode: ctx.mode, number, numberSeq: seq,
    customerId: spec.customerId, subscriptionId: spec.subscriptionId, ...INVOICE_MOVES.columns('create', now), paymentStatus: 'unpaid', currency: spec.currency,
    ...taxColumns(taxes.taxes, taxes.defaults, taxes.exempt), amountPaid: 0, amountDue: due, creditApplied: 0,
    dueDate: null, memo: null, sentAt: null, paidAt: null, voidedAt: null, paidOutOfBand: false,
    emailStatus: null, latestPaymentId: null, paymentAttempts: 0, billingPeriodStart: spec.billingPeriodStart, billingReason: spec.billingReason,
    metadata: '{}', parties: null, createdAt: now, updatedAt: touched,
  };
  const lines = spec.lines.map((line, position) => ({
    id: newId('il'), invoiceId: id, position, description: line.description, quantity: line.quantity, unitAmount: line.unitAmount,
    amount: line.amount, periodStart: line.periodStart, periodEnd: line.periodEnd, proration: line.proration, taxRateIds: '[]', createdAt: now,
  }));
  return { id, total: Number(total), due, invoice, lines };
}

/** A subscription invoice's taxes, and what they were computed with. */
interface SubscriptionTaxes {
  taxes: InvoiceTaxes;
  defaults: readonly string[];
  exempt: TaxExempt;
  /** The customer as read with its taxExempt (its details are the buyer an invoice issued at once keeps). */
  customer: (InvoiceDocument['customer'] & { locale: string }) | null;
}

/** The tax rate lists an invoice's input names, each with the param an error about it names. */
function taxRateLists(lineItems: ReadonlyArray<{ taxRateIds?: string[] }>, defaults: readonly string[] | undefined): Array<{ ids: readonly string[]; param: string }> {
  const lists: Array<{ ids: readonly string[]; param: string }> = lineItems.flatMap((l, i) => (l.taxRateIds?.length ? [{ ids: l.taxRateIds, param: `lineItems[${i}].taxRateIds` }] : []));
  if (defaults) lists.push({ ids: defaults, param: 'defaultTaxRateIds' });
  return lists;
}

/**
 * A merchant's invoice's taxes (invoice-tax.ts): each line with its own rates or the defaults; a
 * line whose rates cannot go together, or a total past MAX_AMOUNT, is refused (400).
 */
function taxed(
  items: ReadonlyArray<{ amount: number; taxRateIds?: readonly string[] }>, defaults: readonly string[], rates: ReadonlyMap<string, TaxRateTerms>, exempt: TaxExempt, param: string,
): InvoiceTaxes {
  const lines = items.map((item, i) => {
    const ids = lineRateIds(item.taxRateIds, defaults);
    const problem = lineRatesProblem(ids, rates);
    if (problem) throw new DomainError('invalid_parameter', problem, item.taxRateIds?.length ? `lineItems[${i}].taxRateIds` : 'defaultTaxRateIds');
    return { amount: item.amount, taxRateIds: ids };
  });
  const taxes = computeInvoiceTaxes(lines, rates, exempt);
  if (taxes.total > BigInt(MAX_AMOUNT)) throw new DomainError('invalid_parameter', `the invoice's total, tax included, must be at most ${MAX_AMOUNT}`, param);
  return taxes;
}

/** The invoice's columns its taxes decide. */
function taxColumns(taxes: InvoiceTaxes, defaults: readonly string[], exempt: TaxExempt): Record<string, unknown> {
  return {
    subtotal: Number(taxes.subtotal), tax: Number(taxes.tax), total: Number(taxes.total), taxBreakdown: JSON.stringify(taxes.breakdown),
    defaultTaxRateIds: JSON.stringify(defaults), customerTaxExempt: exempt,
  };
}

/** A subscription invoice's rows before they are written (its credit may still lower what is due). */
interface BuiltInvoice {
  id: string;
  total: number;
  due: number;
  invoice: Record<string, unknown>;
  lines: Array<Record<string, unknown>>;
}

/** A subscription invoice with nothing to collect (a free plan, credits covering the charge): paid as it is finalised. */
function paidAtOnce(now: Date): Record<string, unknown> {
  return { ...INVOICE_MOVES.columns('pay_at_once', now), paymentStatus: 'paid', sentAt: now, updatedAt: now };
}

/** Each line's amount and the subtotal, refused past 10^12 (exact in integers: no float rounding). */
function priced(lines: LineItemInput[]): { items: Array<LineItemInput & { amount: number }>; subtotal: number } {
  let subtotal = 0n;
  const items = lines.map((line, i) => {
    const amount = BigInt(line.quantity) * BigInt(line.unitAmount);
    if (amount > BigInt(MAX_AMOUNT)) throw new DomainError('invalid_parameter', `quantity × unitAmount must be at most ${MAX_AMOUNT}`, `lineItems[${i}].quantity`);
    subtotal += amount;
    return { ...line, amount: Number(amount) };
  });
  if (subtotal > BigInt(MAX_AMOUNT)) throw new DomainError('invalid_parameter', `the invoice's total must be at most ${MAX_AMOUNT}`, 'lineItems');
  return { items, subtotal: Number(subtotal) };
}

/** The snapshot the PDF and the e-mail render from. */
export function documentOf(inv: InvoiceRecord, parties: InvoiceParties): InvoiceDocument {
  const { merchant, customer } = parties;
  return {
    id: inv.id, number: inv.number, status: inv.status, livemode: inv.livemode, currency: inv.currency, locale: customer.locale,
    createdAt: inv.createdAt, dueDate: inv.dueDate, sentAt: inv.sentAt, paidAt: inv.paidAt,
    // The parties' blocks (seller and buyer): those the invoice kept as it was issued (InvoiceService.partiesFor).
    merchant: { name: merchant.name, address: merchant.address, taxId: merchant.taxId, supportEmail: merchant.supportEmail },
    customer: { name: customer.name, email: customer.email, address: customer.address, taxIds: customer.taxIds },
    lineItems: inv.lineItems.map((l: InvoiceLineItem) => ({
      description: l.description, quantity: l.quantity, unitAmount: l.unitAmount, amount: l.amount, periodStart: l.periodStart, periodEnd: l.periodEnd,
    })),
    subtotal: inv.subtotal, total: inv.total, amountPaid: inv.amountPaid, creditApplied: inv.creditApplied, amountDue: inv.amountDue, memo: inv.memo, paidOutOfBand: inv.paidOutOfBand,
    tax: inv.tax, taxBreakdown: inv.taxBreakdown, reverseCharge: inv.customerTaxExempt === 'reverse',
  };
}

/** The events that carry this module's objects (EventObjects: the events module's map of type to payload). */
declare module '../events/event-objects' {
  interface EventObjects {
    'invoice.created': Invoice;
    'invoice.sent': Invoice;
    'invoice.paid': Invoice;
    'invoice.payment_failed': Invoice;
    'invoice.payment_action_required': Invoice;
    'invoice.voided': Invoice;
  }
}
