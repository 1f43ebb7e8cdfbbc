import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { errorForLog, type Logger } from '../../logger';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { DomainError, invalidState, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { mergeMetadata, parseInput } from '../../core/validation';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';
import type { IdempotencyKey } from '../../core/idempotency';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import type { CustomerService } from '../customers/customer.service';
import type { CatalogService } from '../catalog/catalog.service';
import type { PaymentMethodService } from '../payments/payment-method.service';
import type { PaymentService } from '../payments/payment.service';
import type { InvoiceService } from '../invoices/invoice.service';
import { periodBoundary, prorate, refuseUnproratable, type Interval } from './billing-period';
import { nextCycle, planLine, prorationLines, prorationPeriod, total, unusedTimeLine, type BillingLine } from './billing-lines';
import type { BillingService } from './billing.service';
import type { TestClockService } from './test-clock.service';
import { SubscriptionModel, SubscriptionPendingLineModel } from './subscription.model';
import type { Plan, SubscriptionRecord, SubscriptionStore } from './subscription.store';
import type { SubscriptionExportFilters } from './subscription.store';
import type { KeysetCursor } from '../../db/keyset';
import { SUBSCRIPTION_MOVES, transition } from './subscription-states';
import { toApiSubscription, type Subscription } from './subscription-view';
import {
  cancelSubscriptionInput, createSubscriptionInput, listSubscriptionsInput, previewProrationInput, subListInput, updateSubscriptionInput,
  type UpdateSubscriptionInput,
} from './subscription.inputs';
import { IdempotentReplay, idempotencyScope } from '../../core/idempotency';
import type { CardInput } from '../../core/card';
import type { InvoiceRecord } from '../invoices/invoice.store';
import { resultOfPayment, resultWithoutPayment, type PayResult } from '../payments/public-pay';
import type { CheckoutSession, CheckoutSessionService, CheckoutSubscriptions } from '../checkout/checkout-session.service';

export type { Subscription } from './subscription-view';

const DAY_MS = 86_400_000;

export interface ProrationPreview {
  object: 'proration_preview';
  subscriptionId: string;
  prorationDate: string;
  currency: string;
  lines: Array<{ description: string; amount: number; periodStart: string | null; periodEnd: string | null }>;
  total: number;
}

export interface UpcomingInvoice {
  object: 'upcoming_invoice';
  subscriptionId: string;
  currency: string;
  lineItems: Array<{ description: string; quantity: number; unitAmount: number; amount: number; periodStart: string | null; periodEnd: string | null; proration: boolean }>;
  subtotal: number;
  /** The exclusive taxes of the subscription's defaultTaxRateIds, as its invoice will carry them. */
  tax: number;
  taxBreakdown: Array<{ taxRateId: string; displayName: string; percentage: number; inclusive: boolean; taxableAmount: number; amount: number }>;
  total: number;
  periodStart: string;
  periodEnd: string;
  createsAt: string;
}

/**
 * Subscriptions as merchants ask for them: create (the first invoice charged in the request),
 * plan changes with binding prorations, pause, resume, cancel, retry, and what the next run will
 * bill. Time is the subscription's clock (its test clock's when attached); billing steps are
 * BillingService's, and invoices are made and charged only by the invoice service.
 */
export class SubscriptionService implements CheckoutSubscriptions {
  constructor(
    private readonly db: Database,
    private readonly idempotency: IdempotencyService,
    private readonly customers: CustomerService,
    private readonly catalog: CatalogService,
    private readonly paymentMethods: PaymentMethodService,
    private readonly payments: PaymentService,
    private readonly invoices: InvoiceService,
    private readonly billing: BillingService,
    private readonly clocks: TestClockService,
    private readonly logger: Logger,
  ) {}

  /**
   * Collects an invoice inside the request that made it (create, resume, a change invoiced now).
   * A charge the gateway could not make now (outage, timeout) does not fail the request, whose
   * writes are committed: the subscription answers as it stands, its invoice still to collect,
   * and the billing run charges it (it is due at once).
   */
  private async collectInRequest(ctx: RequestContext, id: string): Promise<void> {
    try {
      await this.billing.collect(ctx, id);
    } catch (err) {
      this.logger.warn({ subscriptionId: id, err: errorForLog(err) }, 'invoice not collected in the request; the billing run collects it');
    }
  }

  private get store(): SubscriptionStore {
    return this.billing.store;
  }

  async create(ctx: RequestContext, input: unknown, idem?: IdempotencyKey): Promise<Subscription> {
    requirePermission(ctx, 'subscriptions', 'write');
    const data = parseInput(createSubscriptionInput, input);
    const customer = (await this.customers.lookup(ctx, [data.customerId])).get(data.customerId);
    if (!customer) throw notFound('customer', data.customerId, 'customerId');
    if (data.testClockId && customer.testClockId && data.testClockId !== customer.testClockId) {
      throw new DomainError('invalid_parameter', `The customer is attached to test clock '${customer.testClockId}'; its subscriptions live on that clock`, 'testClockId');
    }
    const testClockId = data.testClockId ?? customer.testClockId;
    if (testClockId) await this.clocks.mustExist(ctx, testClockId);
    const sctx = await this.clocks.contextFor(ctx, testClockId);
    const plan = await this.recurringPlan(ctx, data.priceId);
    if (data.defaultTaxRateIds) await this.invoices.checkTaxRates(ctx, [{ ids: data.defaultTaxRateIds, param: 'defaultTaxRateIds' }]);
    let card: string | null = null;
    if (data.collectionMethod === 'charge_automatically') {
      if (data.paymentMethodId) await this.paymentMethods.retrieve(ctx, customer.id, data.paymentMethodId).catch(() => {
        throw new DomainError('resource_not_found', `No saved card '${data.paymentMethodId}' of customer '${customer.id}'`, 'paymentMethodId');
      });
      card = data.paymentMethodId ?? customer.defaultPaymentMethodId;
      if (!card) {
        throw new DomainError('missing_parameter', 'The customer has no default saved card: give paymentMethodId (a saved card pm_… of the customer), or collectionMethod send_invoice', 'paymentMethodId');
      }
    }
    const now = sctx.clock.now();
    const periodEnd = this.firstPeriodEnd(plan, now, data.billingCycleAnchor);
    const anchor = data.billingCycleAnchor ?? now;
    const firstLine = periodEnd.getTime() === periodBoundary(now, plan, 1).getTime() && anchor.getTime() === now.getTime()
      ? planLine(plan, data.quantity, now, periodEnd)
      : partialPeriodLine(plan, data.quantity, now, periodEnd, anchor);
    const id = newId('sub');
    const created = await this.db.transaction((t) => this.idempotency.once(t, idem, IDEMPOTENT_OPERATIONS.createSubscription, async () => {
      await SubscriptionModel.create({
        id, accountId: ctx.accountId, mode: ctx.mode, customerId: customer.id, priceId: plan.priceId, quantity: data.quantity, ...SUBSCRIPTION_MOVES.columns('create', now),
        collectionMethod: data.collectionMethod, currentPeriodStart: now, currentPeriodEnd: periodEnd, billingCycleAnchor: anchor,
        cancelAtPeriodEnd: false, canceledAt: null, pausedAt: null, endedAt: null, latestInvoiceId: null, defaultPaymentMethodId: card,
        testClockId, defaultTaxRateIds: JSON.stringify(data.defaultTaxRateIds ?? []), metadata: JSON.stringify(data.metadata ?? {}), nextBillingAt: periodEnd, collectInvoiceId: null,
        invoiceAttemptsSeen: 0, dunningFailures: 0, firstFailedAt: null, billingLockedUntil: null, billingLockToken: null, createdAt: now, updatedAt: now,
      }, { transaction: t });
      const sub = (await this.store.find(id, undefined, t)) as SubscriptionRecord;
      await this.billing.write(t, sctx, sub, plan, {}, 'subscription.created');
      const invoice = await this.billing.invoiceIn(t, sctx, sub, plan, [firstLine], now, 'subscription_create');
      const collect = this.billing.collectsOn(sub, invoice);
      return this.billing.write(t, sctx, sub, plan, { latestInvoiceId: invoice.id, collectInvoiceId: collect ? invoice.id : null, nextBillingAt: collect ? now : periodEnd });
    }));
    // The first invoice is charged inside the request: a failure answers past_due already.
    await this.collectInRequest(sctx, id);
    const answer = await this.view(ctx, id);
    if (answer.status !== created.status || answer.latestInvoiceId !== created.latestInvoiceId) await this.idempotency.restate(idem, IDEMPOTENT_OPERATIONS.createSubscription, answer);
    return answer;
  }

  async retrieve(ctx: RequestContext, id: string): Promise<Subscription> {
    requirePermission(ctx, 'subscriptions', 'read');
    return this.view(ctx, id);
  }

  async findMany(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, Subscription>> {
    requirePermission(ctx, 'subscriptions', 'read');
    return new Map((await this.withPlans(ctx, await this.store.findMany(ctx, ids))).map((s) => [s.id, s]));
  }

  async forCustomers(ctx: RequestContext, customerIds: readonly string[], limit: number): Promise<Map<string, Subscription[]>> {
    requirePermission(ctx, 'subscriptions', 'read');
    const found = await this.store.forCustomers(ctx, customerIds, limit);
    const all = await this.withPlans(ctx, [...found.values()].flat());
    const byId = new Map(all.map((s) => [s.id, s]));
    return new Map([...found].map(([customerId, list]) => [customerId, list.map((s) => byId.get(s.id) as Subscription)]));
  }

  async list<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, options?: O): Promise<PageFor<Subscription, O>> {
    requirePermission(ctx, 'subscriptions', 'read');
    const page = await this.store.list(ctx, parseInput(listSubscriptionsInput, query), options);
    return { ...page, data: await this.withPlans(ctx, page.data) } as PageFor<Subscription, O>;
  }

  /**
   * `PATCH /{id}`: price and quantity (prorated to the second unless `prorationBehavior: none`),
   * `billingCycleAnchor: now` (a new period from the proration date, invoiced now), metadata.
   * The status is unchanged. Given a preview's `prorationDate`, the lines are the preview's.
   */
  async update(ctx: RequestContext, id: string, input: unknown, idem?: IdempotencyKey): Promise<Subscription> {
    requirePermission(ctx, 'subscriptions', 'write');
    const data = parseInput(updateSubscriptionInput, input);
    const found = await this.mustFind(ctx, id);
    const sctx = await this.clocks.contextFor(ctx, found.testClockId);
    const target = data.priceId ? await this.recurringPlan(ctx, data.priceId) : null;
    if (data.defaultTaxRateIds) await this.invoices.checkTaxRates(ctx, [{ ids: data.defaultTaxRateIds, param: 'defaultTaxRateIds' }]);
    let charge = false;
    const updated = await this.db.transaction((t) => this.idempotency.once(t, idem, IDEMPOTENT_OPERATIONS.updateSubscription, async () => {
      const current = await this.lockForChange(ctx, id, t);
      const plan = await this.billing.planOf(current, t);
      const set: Record<string, unknown> = {};
      if (data.metadata !== undefined) set.metadata = JSON.stringify(mergeMetadata(current.metadata, data.metadata));
      // Before any invoice this change makes: its lines take the new rates.
      if (data.defaultTaxRateIds !== undefined) {
        set.defaultTaxRateIds = JSON.stringify(data.defaultTaxRateIds);
        current.defaultTaxRateIds = data.defaultTaxRateIds;
      }
      const changesPlan = (target && target.priceId !== current.priceId) || (data.quantity !== undefined && data.quantity !== current.quantity) || data.billingCycleAnchor === 'now';
      if (!changesPlan) return this.billing.write(t, sctx, current, plan, set, Object.keys(set).length ? 'subscription.updated' : undefined);
      if (current.status === 'canceled') throw invalidState('This subscription is canceled; its plan cannot change');
      const next = target ?? plan;
      const quantity = data.quantity ?? current.quantity;
      refuseUnproratable(plan, next);
      const at = this.prorationDate(sctx, current, data.prorationDate);
      Object.assign(set, { priceId: next.priceId, quantity, lastChangeAt: at });
      const period = prorationPeriod(current, plan);
      const lines = data.prorationBehavior === 'none' ? [] : prorationLines(period, plan, current.quantity, next, quantity, at);
      const invoicesNow = data.billingCycleAnchor === 'now' || (data.prorationBehavior === 'always_invoice' && total(lines) > 0);
      if (invoicesNow && (current.status !== 'active' || current.collectInvoiceId)) {
        // Its invoice would be left unpaid beside the one being collected (or billing is stopped):
        // refused rather than left a draft for ever.
        throw invalidState(current.status === 'active'
          ? 'This subscription\'s invoice is being collected; a change invoiced now can be made once it is paid'
          : `This subscription is ${current.status.replace('_', ' ')}; a change invoiced now (always_invoice, billingCycleAnchor now) needs it active: ${current.status === 'paused' ? 'resume it' : 'pay or void its open invoice'} first, or use create_prorations`);
      }
      if (data.billingCycleAnchor === 'now') {
        // A new period from `at`, invoiced now with the credit for the old plan's unused time
        // (also when the plan stays the same: the rest of the old period is not paid twice).
        const end = periodBoundary(at, next, 1);
        const credit = data.prorationBehavior === 'none' ? [] : [unusedTimeLine(period, plan, current.quantity, at)].filter((l) => l.amount !== 0);
        const anchorLines = [...credit, planLine(next, quantity, at, end)];
        Object.assign(set, { billingCycleAnchor: at, currentPeriodStart: at, currentPeriodEnd: end, nextBillingAt: end });
        charge = await this.invoiceNow(t, sctx, current, next, anchorLines, set, at);
      } else if (data.prorationBehavior === 'always_invoice' && total(lines) > 0) {
        charge = await this.invoiceNow(t, sctx, current, next, lines, set, null);
      } else if (lines.length) {
        // create_prorations, or a net credit: the lines wait for the next invoice.
        await this.addPendingLines(t, sctx, current, lines);
      }
      return this.billing.write(t, sctx, current, next, set, 'subscription.updated');
    }));
    if (!charge) return updated;
    await this.collectInRequest(sctx, id);
    const answer = await this.view(ctx, id);
    await this.idempotency.restate(idem, IDEMPOTENT_OPERATIONS.updateSubscription, answer);
    return answer;
  }

  /** The lines and total a plan change would produce at `prorationDate` (default: now on the subscription's clock); writes nothing. */
  async previewProration(ctx: RequestContext, id: string, input: unknown): Promise<ProrationPreview> {
    requirePermission(ctx, 'subscriptions', 'read');
    const data = parseInput(previewProrationInput, input);
    const current = await this.mustFind(ctx, id);
    if (current.status === 'canceled') throw invalidState('This subscription is canceled; its plan cannot change');
    const sctx = await this.clocks.contextFor(ctx, current.testClockId);
    const plan = await this.billing.planOf(current);
    const next = await this.recurringPlan(ctx, data.priceId);
    refuseUnproratable(plan, next);
    const at = this.prorationDate(sctx, current, data.prorationDate);
    const lines = prorationLines(prorationPeriod(current, plan), plan, current.quantity, next, data.quantity ?? current.quantity, at);
    return {
      object: 'proration_preview', subscriptionId: id, prorationDate: at.toISOString(), currency: plan.currency,
      lines: lines.map((l) => ({ description: l.description, amount: l.amount, periodStart: iso(l.periodStart), periodEnd: iso(l.periodEnd) })),
      total: total(lines),
    };
  }

  /** What the next billing run will invoice for this subscription, by the run's own line builder; writes nothing. */
  async upcomingInvoice(ctx: RequestContext, id: string): Promise<UpcomingInvoice> {
    requirePermission(ctx, 'subscriptions', 'read');
    const current = await this.mustFind(ctx, id);
    if (current.status === 'canceled' || current.status === 'paused') throw invalidState(`This subscription is ${current.status}; it has no upcoming invoice`);
    if (current.cancelAtPeriodEnd) throw invalidState('This subscription ends at the end of its period; it has no upcoming invoice');
    const plan = await this.billing.planOf(current);
    const { start, end, lines } = nextCycle(current, plan, await this.store.pendingLines(id));
    const sum = total(lines);
    const taxes = await this.invoices.previewSubscriptionTaxes(ctx, { customerId: current.customerId, lines, defaultTaxRateIds: current.defaultTaxRateIds });
    return {
      object: 'upcoming_invoice', subscriptionId: id, currency: plan.currency,
      lineItems: lines.map((l) => ({ description: l.description, quantity: l.quantity, unitAmount: l.unitAmount, amount: l.amount, periodStart: iso(l.periodStart), periodEnd: iso(l.periodEnd), proration: l.proration })),
      subtotal: sum, tax: taxes.tax, taxBreakdown: taxes.taxBreakdown, total: taxes.total, periodStart: start.toISOString(), periodEnd: end.toISOString(), createsAt: start.toISOString(),
    };
  }

  /** `POST /{id}/pause`: billing stops at once; no invoice while paused. */
  async pause(ctx: RequestContext, id: string, idem?: IdempotencyKey): Promise<Subscription> {
    requirePermission(ctx, 'subscriptions', 'write');
    return this.move(ctx, id, idem, IDEMPOTENT_OPERATIONS.pauseSubscription, (current, now) => {
      const rule = transition(current.status, 'pause');
      return { ...SUBSCRIPTION_MOVES.columns('pause', now), nextBillingAt: null, event: rule.event };
    });
  }

  /**
   * `POST /{id}/resume` (only from paused): a new period from the subscription clock's now,
   * invoiced with a credit for the unused part of the period the pause interrupted (from the
   * pause to that period's end, to the second), so no day is paid twice; charged in the request.
   * Paused while past due with its invoice still unpaid: resumed past due, that invoice dunned
   * on (its next retry when it falls due, at once if it fell due while paused); the new period's
   * invoice is finalised and collected once that one is settled, and no credit is given for a
   * period not paid.
   */
  async resume(ctx: RequestContext, id: string, idem?: IdempotencyKey): Promise<Subscription> {
    requirePermission(ctx, 'subscriptions', 'write');
    const found = await this.mustFind(ctx, id);
    const sctx = await this.clocks.contextFor(ctx, found.testClockId);
    // What the dunned invoice came to while paused (paid on its hosted page, voided), read before the transaction.
    const owed = found.collectInvoiceId ? await this.invoices.record(sctx, found.collectInvoiceId) : null;
    const { dunningRetryDays } = await this.billing.newRun().account(ctx.accountId);
    let charge = false;
    await this.db.transaction((t) => this.idempotency.once(t, idem, IDEMPOTENT_OPERATIONS.resumeSubscription, async () => {
      const current = await this.lockForChange(ctx, id, t);
      const owing = current.collectInvoiceId !== null && current.collectInvoiceId === owed?.id && owed.status !== 'paid' && owed.status !== 'void';
      const move = owing ? 'resume_owing' : 'resume';
      const rule = transition(current.status, move);
      const plan = await this.billing.planOf(current, t);
      const now = sctx.clock.now();
      const end = periodBoundary(now, plan, 1);
      const pausedAt = current.pausedAt ?? now;
      const credit = !owing && pausedAt.getTime() < current.currentPeriodEnd.getTime()
        ? [unusedTimeLine(prorationPeriod(current, plan), plan, current.quantity, pausedAt)].filter((l) => l.amount !== 0)
        : [];
      const pending = await this.store.pendingLines(id, t);
      const lines = [...pending.map((p) => ({ ...p })), ...credit, planLine(plan, current.quantity, now, end)];
      const invoice = await this.billing.invoiceIn(t, sctx, current, plan, lines, now, 'subscription_resume', undefined, owing);
      await this.store.billPendingLines(t, pending, invoice.id);
      const set: Record<string, unknown> = {
        ...SUBSCRIPTION_MOVES.columns(move, now), pausedAt: null, billingCycleAnchor: now, currentPeriodStart: now, currentPeriodEnd: end, lastChangeAt: null, latestInvoiceId: invoice.id,
      };
      if (owing) {
        // The unpaid invoice stays the one collected, on its dunning schedule.
        const retryAt = current.firstFailedAt && current.dunningFailures > 0 && current.dunningFailures <= dunningRetryDays.length
          ? new Date(current.firstFailedAt.getTime() + dunningRetryDays[current.dunningFailures - 1] * DAY_MS)
          : now;
        set.nextBillingAt = retryAt.getTime() > now.getTime() ? retryAt : now;
      } else {
        charge = this.billing.collectsOn(current, invoice);
        Object.assign(set, {
          collectInvoiceId: charge ? invoice.id : null, invoiceAttemptsSeen: 0, dunningFailures: 0, firstFailedAt: null, nextBillingAt: charge ? now : end,
        });
      }
      return this.billing.write(t, sctx, current, plan, set, rule.event);
    }));
    if (charge) await this.collectInRequest(sctx, id);
    const answer = await this.view(ctx, id);
    await this.idempotency.restate(idem, IDEMPOTENT_OPERATIONS.resumeSubscription, answer);
    return answer;
  }

  /** `POST /{id}/cancel` `{atPeriodEnd?}`: canceled now, or `cancelAtPeriodEnd` until the period ends. */
  async cancel(ctx: RequestContext, id: string, input: unknown, idem?: IdempotencyKey): Promise<Subscription> {
    requirePermission(ctx, 'subscriptions', 'write');
    const data = parseInput(cancelSubscriptionInput, input);
    return this.move(ctx, id, idem, IDEMPOTENT_OPERATIONS.cancelSubscription, (current, now) => {
      const rule = transition(current.status, 'cancel');
      if (data.atPeriodEnd) {
        if (current.status === 'paused') throw invalidState('A paused subscription has no period running to end; cancel it now or resume it first');
        return { cancelAtPeriodEnd: true, canceledAt: now, event: 'subscription.updated' as const };
      }
      return { ...SUBSCRIPTION_MOVES.columns('cancel', now), canceledAt: now, endedAt: now, nextBillingAt: null, collectInvoiceId: null, event: rule.event };
    });
  }

  async invoicesOf<O extends ListOptions = Counted>(ctx: RequestContext, id: string, query: unknown, options?: O) {
    requirePermission(ctx, 'subscriptions', 'read');
    await this.mustFind(ctx, id);
    const input = parseInput(subListInput, query);
    return this.invoices.list(ctx, { ...input, subscriptionId: id }, options);
  }

  async paymentsOf<O extends ListOptions = Counted>(ctx: RequestContext, id: string, query: unknown, options?: O) {
    requirePermission(ctx, 'subscriptions', 'read');
    await this.mustFind(ctx, id);
    return this.payments.list(ctx, parseInput(subListInput, query), { subscriptionId: id }, options);
  }

  async gatewayTransactionsOf<O extends ListOptions = Counted>(ctx: RequestContext, id: string, query: unknown, options?: O) {
    requirePermission(ctx, 'subscriptions', 'read');
    await this.mustFind(ctx, id);
    return this.payments.gatewayTransactionsOfSubscription(ctx, id, query, options);
  }

  /** A state move under the row lock, with its event, on the subscription's clock. */
  private async move(
    ctx: RequestContext, id: string, idem: IdempotencyKey | undefined, operation: (typeof IDEMPOTENT_OPERATIONS)[keyof typeof IDEMPOTENT_OPERATIONS],
    decide: (current: SubscriptionRecord, now: Date) => Record<string, unknown> & { event: Parameters<BillingService['write']>[5] },
  ): Promise<Subscription> {
    const found = await this.mustFind(ctx, id);
    const sctx = await this.clocks.contextFor(ctx, found.testClockId);
    return this.db.transaction((t) => this.idempotency.once(t, idem, operation, async () => {
      const current = await this.lockForChange(ctx, id, t);
      const { event, ...set } = decide(current, sctx.clock.now());
      return this.billing.write(t, sctx, current, await this.billing.planOf(current, t), set, event);
    }));
  }

  /** A change's invoice, created now in the change's transaction; whether the request then charges it. */
  private async invoiceNow(t: Transaction, ctx: RequestContext, current: SubscriptionRecord, plan: Plan, lines: BillingLine[], set: Record<string, unknown>, periodStart: Date | null): Promise<boolean> {
    const pending = await this.store.pendingLines(current.id, t);
    const invoice = await this.billing.invoiceIn(t, ctx, current, plan, [...pending.map((p) => ({ ...p })), ...lines], periodStart, 'subscription_update');
    await this.store.billPendingLines(t, pending, invoice.id);
    // Only an active subscription with nothing being collected gets here (update refuses the rest).
    const charge = this.billing.collectsOn(current, invoice);
    Object.assign(set, { latestInvoiceId: invoice.id });
    if (charge) Object.assign(set, { collectInvoiceId: invoice.id, invoiceAttemptsSeen: 0 });
    return charge;
  }

  private async addPendingLines(t: Transaction, ctx: RequestContext, current: SubscriptionRecord, lines: BillingLine[]): Promise<void> {
    // After those already waiting, also when two changes share an instant (a test clock's): lines keep the order of the changes.
    const waiting = (await this.store.pendingLines(current.id, t)).length;
    const now = new Date(ctx.clock.now().getTime() + waiting);
    await SubscriptionPendingLineModel.bulkCreate(lines.map((l, i) => ({
      id: newId('spl'), accountId: current.accountId, mode: current.mode, subscriptionId: current.id, description: l.description,
      quantity: l.quantity, unitAmount: l.unitAmount, amount: l.amount, periodStart: l.periodStart, periodEnd: l.periodEnd,
      proration: l.proration, invoiceId: null, createdAt: new Date(now.getTime() + i),
    })), { transaction: t });
  }

  /**
   * `prorationDate` (default: the subscription clock's now): within the current period, not after
   * that now, and not before an earlier change in the period (the time since that change was
   * billed on the plan it set: prorating from before it would credit the old plan's time twice).
   * Else 422 `invalid_proration_date`.
   */
  private prorationDate(ctx: RequestContext, current: SubscriptionRecord, given: Date | undefined): Date {
    const now = ctx.clock.now();
    const at = given ?? now;
    const refuse = (message: string) => new DomainError('invalid_proration_date', message, 'prorationDate');
    if (at.getTime() > now.getTime()) throw refuse(`prorationDate must not be after the subscription's current time (${now.toISOString()})`);
    if (at.getTime() < current.currentPeriodStart.getTime() || at.getTime() >= current.currentPeriodEnd.getTime()) {
      throw refuse(`prorationDate must lie within the current period (${current.currentPeriodStart.toISOString()} to ${current.currentPeriodEnd.toISOString()})`);
    }
    const earlier = current.lastChangeAt;
    if (earlier && earlier.getTime() >= current.currentPeriodStart.getTime() && at.getTime() < earlier.getTime()) {
      throw refuse(`prorationDate must not be before the prorationDate of an earlier change in this period (${earlier.toISOString()})`);
    }
    return at;
  }

  /** The first period's end: one interval from now, or the given anchor (later than now, within one interval). */
  private firstPeriodEnd(plan: Plan, now: Date, anchor: Date | undefined): Date {
    const full = periodBoundary(now, plan, 1);
    if (!anchor || anchor.getTime() === now.getTime()) return full;
    if (anchor.getTime() < now.getTime()) throw new DomainError('invalid_parameter', `billingCycleAnchor must not be before the subscription's current time (${now.toISOString()})`, 'billingCycleAnchor');
    if (anchor.getTime() > full.getTime()) throw new DomainError('invalid_parameter', `billingCycleAnchor must lie within one billing period from now (by ${full.toISOString()})`, 'billingCycleAnchor');
    return anchor;
  }

  private async recurringPlan(ctx: RequestContext, priceId: string): Promise<Plan> {
    const found = await this.catalog.lookupPrice(ctx, priceId);
    if (!found) throw notFound('price', priceId, 'priceId');
    if (!found.price.recurring) throw new DomainError('invalid_parameter', `Price '${priceId}' is one-time; a subscription needs a recurring price`, 'priceId');
    if (!found.price.active) throw new DomainError('invalid_parameter', `Price '${priceId}' is inactive`, 'priceId');
    return {
      priceId, productId: found.price.productId, productName: found.productName, unitAmount: found.price.unitAmount, currency: found.price.currency,
      interval: found.price.recurring.interval as Interval, intervalCount: found.price.recurring.intervalCount,
    };
  }

  private async view(ctx: RequestContext, id: string): Promise<Subscription> {
    const [sub] = await this.withPlans(ctx, [await this.mustFind(ctx, id)]);
    return sub;
  }

  private async withPlans(ctx: RequestContext, records: SubscriptionRecord[]): Promise<Subscription[]> {
    const plans = await this.store.plans(ctx, records.map((r) => r.priceId));
    return records.map((r) => toApiSubscription(r, plans.get(r.priceId) as Plan));
  }

  private async mustFind(ctx: RequestContext, id: string): Promise<SubscriptionRecord> {
    const found = await this.store.find(id, ctx);
    if (!found) throw notFound('subscription', id);
    return found;
  }

  private async lockForChange(ctx: RequestContext, id: string, t: Transaction): Promise<SubscriptionRecord> {
    const found = await this.store.find(id, ctx, t, true);
    if (!found) throw notFound('subscription', id);
    return found;
  }

  // Retry payment and checkout (issue 24 points 7 and 10).

  private checkout: Pick<CheckoutSessionService, 'createForInvoice'> | null = null;

  /** The sessions a retry answers with (set once, as services are built: they pay through this service). */
  useCheckoutSessions(checkout: Pick<CheckoutSessionService, 'createForInvoice'>): void {
    this.checkout = checkout;
  }

  /**
   * `POST /{id}/retry-payment` (only `past_due`): charges the open invoice now, under its key per
   * attempt, on the customer's current default card (taken as the subscription's card when the
   * customer changed it) or the subscription's; then answers a checkout session for that invoice:
   * `complete` when the retry paid it (the subscription is active again), else `open` for the
   * customer to pay with another card. A retry asked for does not move the dunning schedule: its
   * failure is recorded on the invoice, and the next automatic retry stays when it was.
   */
  async retryPayment(ctx: RequestContext, id: string, idem?: IdempotencyKey): Promise<CheckoutSession> {
    requirePermission(ctx, 'subscriptions', 'write');
    const checkout = this.checkout;
    if (!checkout) throw new Error('SubscriptionService.useCheckoutSessions was not called');
    await this.idempotency.replayIfAnswered(idem);
    const found = await this.mustFind(ctx, id);
    if (found.status !== 'past_due' || !found.collectInvoiceId) {
      throw invalidState(`This subscription is ${found.status.replace('_', ' ')}; only a past due subscription's payment can be retried`);
    }
    const invoiceId = found.collectInvoiceId;
    const sctx = await this.clocks.contextFor(ctx, found.testClockId);
    const customer = (await this.customers.lookup(ctx, [found.customerId])).get(found.customerId);
    const card = customer?.defaultPaymentMethodId ?? found.defaultPaymentMethodId;
    if (card && card !== found.defaultPaymentMethodId) await this.adoptCard(ctx, id, card);
    let invoice = await this.invoices.record(sctx, invoiceId);
    const sub = await this.store.find(id);
    // A charge out (processing, or waiting for the customer's authentication) is not charged again beside it.
    if (sub && card && invoice.status !== 'paid' && invoice.status !== 'void' && invoice.paymentStatus !== 'processing' && invoice.paymentStatus !== 'requires_action') {
      // The one collection (a batch of one), its failure only seen: a card refused before any
      // charge (removed meanwhile) leaves the session as the way to pay.
      const result = (await this.billing.chargeAndTake([{ ctx: sctx, sub, invoice, card }], this.billing.newRun(), 'seen')).get(id);
      if (result && result !== 'taken') throw result.error;
      invoice = await this.invoices.record(sctx, invoiceId);
    } else {
      await this.takeOutcome(sctx, id, invoice);
    }
    const paid = invoice.status === 'paid';
    return this.db.transaction((t) => this.idempotency.once(t, idem, IDEMPOTENT_OPERATIONS.retrySubscriptionPayment, () => checkout.createForInvoice(t, ctx, {
      invoiceId, subscriptionId: id, customerId: found.customerId, customerEmail: customer?.email ?? null,
      amount: paid ? invoice.amountPaid : invoice.amountDue, currency: invoice.currency, description: `Invoice ${invoice.number}`,
      paymentId: paid ? invoice.latestPaymentId : null,
    })));
  }

  /** A retry session's pay (CheckoutSessions): the invoice charged with the card typed, the outcome taken. */
  async payInvoiceByCard(
    ctx: RequestContext, target: { sessionId: string; subscriptionId: string; invoiceId: string }, card: CardInput,
    key: IdempotencyKey | undefined, redirect: (result: PayResult) => string | null,
  ): Promise<{ result: PayResult; paid: boolean }> {
    const sub = await this.mustFind(ctx, target.subscriptionId);
    if (sub.status === 'canceled') throw invalidState('This subscription is canceled; its invoice can no longer be paid here');
    const sctx = await this.clocks.contextFor(ctx, sub.testClockId);
    const { result, invoice } = await this.invoices.payWithCard(sctx, target.invoiceId, card, target.sessionId, key, redirect);
    await this.takeOutcome(sctx, sub.id, invoice);
    return { result, paid: invoice.status === 'paid' };
  }

  /** The subscription charges `paymentMethodId` from now on (event subscription.updated). */
  async adoptCard(ctx: RequestContext, subscriptionId: string, paymentMethodId: string): Promise<void> {
    const sub = await this.mustFind(ctx, subscriptionId);
    const sctx = await this.clocks.contextFor(ctx, sub.testClockId);
    await this.billing.change(sctx, subscriptionId, (current) =>
      current.defaultPaymentMethodId === paymentMethodId || current.status === 'canceled'
        ? null
        : { set: { defaultPaymentMethodId: paymentMethodId }, event: 'subscription.updated' });
  }

  /**
   * A subscription-mode session's pay (CheckoutSessions): the subscription on the card just saved,
   * its first invoice charged. Under a key derived from the session, so a pay run again after a
   * crash finds the subscription it made instead of making another.
   */
  async createForCheckout(
    ctx: RequestContext, spec: { sessionId: string; customerId: string; priceId: string; paymentMethodId: string },
  ): Promise<{ subscriptionId: string; invoiceId: string | null; paid: boolean; result: PayResult; payment: import('../payments/payment.service').Payment | null }> {
    const internal = { ...ctx, permissions: ['*'] };
    const idem: IdempotencyKey = {
      scope: idempotencyScope(ctx.accountId, ctx.mode),
      key: `checkout:${spec.sessionId}:subscription`,
      fingerprint: this.idempotency.fingerprint('POST', '/v1/subscriptions', undefined, { checkoutSessionId: spec.sessionId }),
    };
    let sub: Subscription;
    try {
      sub = await this.create(internal, { customerId: spec.customerId, priceId: spec.priceId, paymentMethodId: spec.paymentMethodId }, idem);
    } catch (err) {
      if (!(err instanceof IdempotentReplay)) throw err;
      sub = await this.view(ctx, (JSON.parse(err.stored) as Subscription).id);
    }
    const invoice = sub.latestInvoiceId ? await this.invoices.record(ctx, sub.latestInvoiceId) : null;
    const payment = invoice?.latestPaymentId ? await this.payments.retrieve(internal, invoice.latestPaymentId).catch(() => null) : null;
    const paid = sub.status === 'active';
    const base: PayResult = payment ? resultOfPayment(payment) : resultWithoutPayment(paid);
    return { subscriptionId: sub.id, invoiceId: sub.latestInvoiceId, paid, result: { ...base, subscriptionId: sub.id }, payment };
  }

  /**
   * The subscription takes a charge of its open invoice made outside the billing run (a retry, a
   * checkout pay): paid → BillingService.collect takes it (active again); a failure is counted as
   * seen, so the next run charges again at its scheduled time instead of taking this failure as
   * its own retry.
   */
  private async takeOutcome(ctx: RequestContext, id: string, invoice: InvoiceRecord): Promise<void> {
    if (invoice.status === 'paid') {
      await this.billing.collect(ctx, id);
      return;
    }
    if (invoice.paymentStatus !== 'failed') return;
    await this.billing.change(ctx, id, (current) =>
      current.collectInvoiceId === invoice.id && current.invoiceAttemptsSeen < invoice.paymentAttempts
        ? { set: { invoiceAttemptsSeen: invoice.paymentAttempts } }
        : null);
  }

  /** A page of an export of subscriptions (ExportService): the list's filters, newest first, by keyset after `after`, with their plans. */
  async exportPage(ctx: RequestContext, filters: SubscriptionExportFilters, after: KeysetCursor | null, limit: number): Promise<Subscription[]> {
    requirePermission(ctx, 'subscriptions', 'read');
    return this.withPlans(ctx, await this.store.exportPage(ctx, filters, after, limit));
  }
}

/** A first period shorter than the interval (a later anchor): the plan's amount for the part, prorated to the second. */
function partialPeriodLine(plan: Plan, quantity: number, start: Date, end: Date, anchor: Date): BillingLine {
  const fullStart = periodBoundary(anchor, plan, -1);
  const amount = prorate(plan.unitAmount * quantity, end.getTime() - start.getTime(), anchor.getTime() - fullStart.getTime());
  return {
    description: `${plan.productName || plan.priceId} × ${quantity} (${start.toISOString().slice(0, 10)} – ${end.toISOString().slice(0, 10)}, prorated)`,
    quantity: 1, unitAmount: amount, amount, periodStart: start, periodEnd: end, proration: true,
  };
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export type { UpdateSubscriptionInput };
