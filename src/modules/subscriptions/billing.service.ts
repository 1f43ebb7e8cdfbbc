import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { randomBase62 } from '../../core/ids';
import { systemClock, type Clock } from '../../core/clock';
import type { RequestContext } from '../../core/context';
import { systemContext } from '../../core/context';
import { invalidState, isDomainError, notFound } from '../../core/errors';
import { errorForLog, type Logger } from '../../logger';
import type { EventService } from '../events/event.service';
import type { CustomerService } from '../customers/customer.service';
import type { AccountInvoicing, AccountService } from '../accounts/account.service';
import { linesTotal, type InvoiceService, type SubscriptionInvoiceSpec } from '../invoices/invoice.service';
import type { InvoiceRecord } from '../invoices/invoice.store';
import type { Payment } from '../payments/payment.service';
import { ACTION_LIFETIME_MS } from '../payments/payment.rows';
import { nextCycle, type BillingLine } from './billing-lines';
import { SubscriptionModel } from './subscription.model';
import { SubscriptionStore, type PendingLine, type PeriodAdvance, type Plan, type SubscriptionRecord } from './subscription.store';
import { groupBy } from '../../db/list';
import { MAX_AMOUNT } from '../../core/money';
import { SUBSCRIPTION_MOVES, transition, type SubscriptionEventType, type SubscriptionMove } from './subscription-states';
import { toApiSubscription, type Subscription } from './subscription-view';

/** How a failed charge attempt counts (`chargeAndTake`): along the dunning schedule, or only seen (a retry asked for). */
type Failures = 'dunning' | 'seen';

/** A subscription renewed (`renewMany`): as it is left, its step's context, its new invoice, and whether it is charged now. */
type Renewed = { sub: SubscriptionRecord; ctx: RequestContext; invoice: InvoiceRecord; collect: boolean };

/**
 * What one billing run reads once: each account's invoicing settings (invoice prefix, name,
 * dunning schedule), read before a step's transaction, never inside it on a second connection.
 */
export class BillingRun {
  private readonly accounts = new Map<string, Promise<AccountInvoicing>>();
  constructor(private readonly read: (accountId: string) => Promise<AccountInvoicing>) {}

  account(accountId: string): Promise<AccountInvoicing> {
    let found = this.accounts.get(accountId);
    if (!found) {
      found = this.read(accountId);
      found.catch(() => this.accounts.delete(accountId));
      this.accounts.set(accountId, found);
    }
    return found;
  }
}

const DAY_MS = 86_400_000;
/** A charge still processing, or a step that failed, is looked at again after this. */
const RETRY_STEP_MS = 60_000;
/**
 * How many subscriptions a run steps in parallel, and claims at once: a few per lane, so the
 * claim's lease does not run out on a slow machine before the last of the batch is stepped
 * (another run would then take the same subscriptions and both step them).
 */
const PARALLEL_STEPS = 8;
const CLAIM_BATCH = PARALLEL_STEPS * 3;
/** Most subscriptions a run's batch bills set-based (see `batchSize`). */
const BATCH_MAX = 100;

export interface BillingOptions {
  /** How long a claim holds a subscription (database clock); a crashed run's claims free after it. */
  leaseMs?: number;
  /** The service's clock: what a batch's writes stamp `updatedAt` with, as the models' writes do (the system's unless given). */
  clock?: Clock;
}

/**
 * The billing run and every billing step: a period's invoice and its charge, dunning, the end
 * of a period for `cancelAtPeriodEnd`. The node-cron job calls `billDue`; a test clock's advance
 * calls `advanceClock`; subscription requests (create, resume, a plan change invoiced now,
 * retry) call `collect`. Each step is one transaction with its events; a charge happens between
 * them under the invoice's key per attempt, and the next step reads its outcome from the invoice,
 * so a crash anywhere neither bills a period twice nor loses a charge.
 */
export class BillingService {
  readonly store: SubscriptionStore;
  private readonly leaseMs: number;
  private readonly clock: Clock;

  constructor(
    private readonly db: Database,
    private readonly events: EventService,
    private readonly invoices: InvoiceService,
    private readonly customers: CustomerService,
    private readonly accounts: AccountService,
    private readonly logger: Logger,
    options: BillingOptions = {},
  ) {
    this.store = new SubscriptionStore(db);
    this.leaseMs = options.leaseMs ?? 5 * 60_000;
    this.clock = options.clock ?? systemClock;
    invoices.onSettled((invoice) => this.takeSettled(invoice));
  }

  /**
   * A subscription's collected invoice settled from its payment outside a billing step (the
   * customer answered a 3-D Secure challenge and came back to the hosted invoice page, or the
   * reconciling job read the payment): its outcome is taken at once (paid: active again; failed:
   * the dunning schedule), as the next step would. A subscription on a test clock waits for its
   * clock's next step.
   */
  async takeSettled(invoice: InvoiceRecord): Promise<void> {
    if (!invoice.subscriptionId) return;
    const sub = await this.store.find(invoice.subscriptionId);
    if (!sub || sub.collectInvoiceId !== invoice.id || sub.testClockId !== null) return;
    await this.take(stepContext(sub, this.clock.now()), sub, invoice, this.newRun(), 'dunning');
  }

  /**
   * The billing run at `now` (subscriptions on real time): claims due subscriptions in batches
   * (SKIP LOCKED on PostgreSQL, so several instances share a run) and runs each one's due step.
   */
  async billDue(now: Date, limit = 100_000): Promise<{ billed: number; failed: number }> {
    let billed = 0;
    let failed = 0;
    let claimed = 0;
    const token = randomBase62(16);
    const run = this.newRun();
    // Two batches at a time, the second lane starting once the first has renewed its batch: one
    // batch's charges and settle overlap the next one's renew (the account's number sequence
    // orders the renews themselves), and instances starting together still each claim work.
    let firstRenewed!: () => void;
    const started = new Promise<void>((resolve) => {
      firstRenewed = resolve;
    });
    const lane = async (first: boolean) => {
      if (!first) await started;
      try {
        await laneWork();
      } finally {
        firstRenewed();
      }
    };
    const laneWork = async () => {
      while (claimed < limit) {
        const want = Math.min(this.batchSize(), limit - claimed);
        claimed += want;
        const ids = await this.store.claimDue(now, want, this.leaseMs, token, null);
        claimed -= want - ids.length;
        if (ids.length === 0) break;
        let rest = ids;
        try {
          const batch = await this.billBatch(ids, now, run, token, firstRenewed);
          billed += batch.billed.length;
          failed += batch.failed.length;
          const handled = new Set([...batch.billed, ...batch.failed]);
          rest = ids.filter((id) => !handled.has(id));
          await this.store.releaseMany([...handled], token).catch(() => undefined);
        } catch (err) {
          // Nothing of the batch's is lost: what it wrote before failing is a state the single path takes on.
          this.logger.error({ subscriptions: ids.length, err: errorForLog(err) }, 'billing batch failed; its subscriptions are stepped one by one');
        }
        firstRenewed();
        await inParallel(rest, this.store.stepWidth(PARALLEL_STEPS), async (id) => {
          try {
            await this.step(id, now, run, this.clock);
            billed++;
          } catch (err) {
            failed++;
            await this.stepFailed(id, err, now, token);
          } finally {
            await this.store.release(id, token).catch(() => undefined);
          }
        });
      }
    };
    const lanes = await Promise.allSettled([lane(true), lane(false)]);
    for (const l of lanes) if (l.status === 'rejected') throw l.reason;
    return { billed, failed };
  }

  /**
   * How many subscriptions a run claims at once: its batch finishes well inside the claim's
   * lease (a slow machine's batch that outlived it could be claimed by another run meanwhile),
   * and several instances starting together each find work.
   */
  private batchSize(): number {
    return Math.max(CLAIM_BATCH, Math.min(BATCH_MAX, Math.floor(this.leaseMs / 50)));
  }

  /**
   * The common case of a claimed batch, set-based: every subscription that is active with
   * nothing to collect, its period ended, not ending at period end, collected by charge, renewed
   * together (`renewMany`, one transaction: invoices numbered in claim order from one move of the
   * sequence, lines, period advances, events with their webhook deliveries), then collected
   * together (`chargeAndTake`: one claim statement, the payments concurrently, one settle). These
   * are the steps a single subscription goes through as a batch of one (`step`: `renew`, then
   * `collect`); every state left between them is one `step` takes on, so a crash anywhere is
   * recovered by it. The subscriptions the batch does not renew (paused, past due, ending, on a
   * test clock, collected by invoice, something already being collected) are in neither `billed`
   * nor `failed`: the caller steps them one by one.
   */
  private async billBatch(ids: readonly string[], now: Date, run: BillingRun, token: string, onRenewed: () => void = () => undefined): Promise<{ billed: string[]; failed: string[] }> {
    const billed: string[] = [];
    const failed: string[] = [];
    // Each account's invoicing settings, read before the transaction (never on a second connection inside it).
    const accountIds = await this.db.select<{ account_id: string }>(
      `SELECT DISTINCT account_id FROM subscriptions WHERE ${this.db.inJsonList('id', '$1')}`, [JSON.stringify(ids)],
    );
    const accounts = new Map<string, AccountInvoicing>();
    for (const { account_id: accountId } of accountIds) accounts.set(accountId, await run.account(accountId));

    const renewedSubs = await this.db.transaction(async (t): Promise<Renewed[]> => {
      // In the order the work fell due (the claim's), so are the invoice numbers.
      const common = (await this.store.lockClaimed(ids, token, t))
        .filter((sub) => isCommonRenewal(sub, now) && accounts.has(sub.accountId))
        .sort((a, b) => (a.nextBillingAt?.getTime() ?? 0) - (b.nextBillingAt?.getTime() ?? 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      return this.renewMany(t, common, now, accounts, (sub) => stepContext(sub, now, this.clock), false);
    });
    onRenewed();
    for (const r of renewedSubs) if (!r.collect) billed.push(r.sub.id);
    const results = await this.chargeAndTake(renewedSubs.filter((r) => r.collect).map((r) => ({ ctx: r.ctx, sub: r.sub, invoice: r.invoice })), run, 'dunning');
    for (const [id, result] of results) {
      if (result === 'taken') billed.push(id);
      else {
        failed.push(id);
        await this.stepFailed(id, result.error, now, token);
      }
    }
    return { billed, failed };
  }

  /**
   * A test clock's advance: every step due on its subscriptions up to `to`, one instant after
   * the other, the clock set to each step's instant first so what the step writes is stamped
   * with it. Only this clock's subscriptions are claimed.
   */
  async advanceClock(testClockId: string, to: Date, setTime: (at: Date) => Promise<void>): Promise<void> {
    const token = randomBase62(16);
    const run = this.newRun();
    for (let steps = 0; steps < 100_000; steps++) {
      const due = await this.store.nextDueOnClock(testClockId, to);
      if (!due) return;
      await setTime(due);
      const ids = await this.store.claimDue(due, CLAIM_BATCH, this.leaseMs, token, testClockId);
      if (ids.length === 0) throw invalidState('Another process holds subscriptions of this test clock; try again');
      for (const id of ids) {
        try {
          await this.step(id, due, run);
        } finally {
          await this.store.release(id, token);
        }
      }
    }
  }

  /**
   * One subscription's due work at `now`: collect an invoice's charge, or end or renew its period.
   * What it writes is stamped by `stamps` (the service's clock in the run on real time: a step's
   * events carry the time it wrote them, not the run's start), else `now` (a test clock's step).
   */
  async step(id: string, now: Date, run = this.newRun(), stamps?: Clock): Promise<void> {
    const sub = await this.store.find(id);
    if (!sub) return;
    const ctx = stepContext(sub, now, stamps);
    if (sub.status === 'paused' || sub.status === 'canceled') {
      await SubscriptionModel.update({ nextBillingAt: null }, { where: { id } });
      return;
    }
    if (sub.collectInvoiceId) {
      await this.collect(ctx, id, run);
      return;
    }
    if (sub.currentPeriodEnd.getTime() > now.getTime()) {
      // Nothing due (moved on meanwhile): the next work is the period's end.
      await SubscriptionModel.update({ nextBillingAt: sub.currentPeriodEnd }, { where: { id, collectInvoiceId: null } });
      return;
    }
    if (sub.cancelAtPeriodEnd) {
      await this.change(ctx, id, (current) => ({
        move: 'period_end_cancel',
        set: { endedAt: current.currentPeriodEnd, canceledAt: current.canceledAt ?? now, nextBillingAt: null, collectInvoiceId: null },
      }));
      return;
    }
    if (sub.status !== 'active') {
      // Past due with nothing to collect has no billing step (voiding or paying its invoice makes
      // it active): it waits instead of being claimed again at once for ever.
      this.logger.warn({ subscriptionId: id, status: sub.status }, 'subscription due with nothing to collect; left waiting');
      await SubscriptionModel.update({ nextBillingAt: null }, { where: { id, collectInvoiceId: null, status: sub.status } });
      return;
    }
    if (await this.renew(ctx, id, await run.account(sub.accountId), now)) await this.collect(ctx, id, run);
  }

  /** A run's reads made once (each account's invoicing settings). */
  newRun(): BillingRun {
    return new BillingRun((accountId) => this.accounts.invoicing(accountId));
  }

  /**
   * The period that starts at the current one's end: its invoice (the prorations waiting for it
   * and the plan) and the period's advance in one transaction, `renewMany` for one. The invoice's
   * unique key on the subscription and period start, and the subscription's row lock with its
   * period re-read, make a second run of the same step bill nothing.
   */
  private async renew(ctx: RequestContext, id: string, account: AccountInvoicing, now: Date): Promise<boolean> {
    return this.db.transaction(async (t) => {
      const sub = await this.store.find(id, undefined, t, true);
      if (!sub || sub.status !== 'active' || sub.collectInvoiceId || sub.currentPeriodEnd.getTime() > now.getTime()) return false;
      const [renewed] = await this.renewMany(t, [sub], now, new Map([[sub.accountId, account]]), () => ctx, true);
      return renewed.collect;
    });
  }

  /**
   * The one renewal, for a run's batch and for a single step alike: for each locked subscription
   * (its period ended), the period that starts at the current one's end, its invoice (the
   * prorations waiting for it, then the plan; made by `createForSubscriptions`, numbered in the
   * order given), the waiting lines billed, and the period's advance with its
   * `subscription.updated`, in the caller's transaction and in statements shared by the batch.
   * `strict` (a single step): a missing price or a total past the maximum is refused; a batch
   * leaves such a subscription to the single step, which says what is wrong.
   */
  private async renewMany(
    t: Transaction, subs: readonly SubscriptionRecord[], now: Date, accounts: Map<string, AccountInvoicing>,
    ctxOf: (sub: SubscriptionRecord) => RequestContext, strict: boolean,
  ): Promise<Renewed[]> {
    if (subs.length === 0) return [];
    const plans = new Map<string, Plan>();
    for (const group of groupBy(subs, (sub) => `${sub.accountId}|${sub.mode}`).values()) {
      for (const [priceId, plan] of await this.store.plans(group[0], group.map((sub) => sub.priceId), t)) plans.set(`${group[0].accountId}|${group[0].mode}|${priceId}`, plan);
    }
    const pending = await this.store.pendingLinesOf(subs.map((sub) => sub.id), t);
    const items: Array<{ sub: SubscriptionRecord; ctx: RequestContext; plan: Plan; start: Date; end: Date; pending: PendingLine[]; lines: BillingLine[] }> = [];
    for (const sub of subs) {
      const plan = plans.get(`${sub.accountId}|${sub.mode}|${sub.priceId}`);
      if (!plan) {
        if (strict) throw notFound('price', sub.priceId, 'priceId');
        continue;
      }
      const subPending = pending.get(sub.id) ?? [];
      const { start, end, lines } = nextCycle(sub, plan, subPending);
      // Refused (invalid_parameter) by the invoice's creation when strict; left to the single step otherwise.
      if (!strict && linesTotal(lines) > BigInt(MAX_AMOUNT)) continue;
      items.push({ sub, ctx: ctxOf(sub), plan, start, end, pending: subPending, lines });
    }
    if (items.length === 0) return [];
    const invoices = await this.invoices.createForSubscriptions(t, items.map(({ sub, ctx, plan, start, lines }) => ({
      ctx, spec: invoiceSpec(sub, plan, lines, start, 'subscription_cycle', accounts.get(sub.accountId)),
    })));
    for (const [i, { pending: billedLines }] of items.entries()) await this.store.billPendingLines(t, billedLines, invoices[i].id);
    const collects = items.map(({ sub }, i) => this.collectsOn(sub, invoices[i]));
    await this.store.advanceMany(t, items.map(({ sub, start, end }, i) => ({
      id: sub.id, set: periodAdvance(start, end, invoices[i].id, collects[i], now),
    })), items[0].ctx.clock.now());
    const next = await this.store.findManyIn(items.map(({ sub }) => sub.id), t);
    await this.events.recordMany(t, items.map(({ sub, ctx, plan }) => ({
      ctx, type: 'subscription.updated' as const, object: toApiSubscription(next.get(sub.id) as SubscriptionRecord, plan),
    })));
    return items.map(({ sub, ctx }, i) => ({ sub: next.get(sub.id) as SubscriptionRecord, ctx, invoice: invoices[i], collect: collects[i] }));
  }

  /**
   * A subscription's invoice in its transaction (create, renew, resume, a change invoiced now):
   * sent by e-mail when the subscription collects by invoice.
   */
  async invoiceIn(
    t: Transaction, ctx: RequestContext, sub: SubscriptionRecord, plan: Plan, lines: BillingLine[], periodStart: Date | null,
    reason: 'subscription_create' | 'subscription_cycle' | 'subscription_update' | 'subscription_resume', account?: AccountInvoicing,
    finalize = false,
  ): Promise<InvoiceRecord> {
    return this.invoices.createForSubscription(t, ctx, { ...invoiceSpec(sub, plan, lines, periodStart, reason, account), finalize });
  }

  /** Whether the subscription charges this invoice itself (automatic collection, something to pay). */
  collectsOn(sub: Pick<SubscriptionRecord, 'collectionMethod'>, invoice: InvoiceRecord): boolean {
    return sub.collectionMethod === 'charge_automatically' && invoice.status !== 'paid' && invoice.amountDue > 0;
  }

  /**
   * Collects the subscription's open invoice: charges it when it waits for a charge (never
   * charged, a charge refused before it was made, or its last outcome taken already), through the
   * one collection (`chargeAndTake`, a batch of one); else takes what the invoice shows (`take`:
   * paid, voided, a failed attempt not taken yet, a charge still out). Success makes it active; a
   * failure moves it along the account's dunning schedule.
   */
  async collect(ctx: RequestContext, id: string, run = this.newRun()): Promise<void> {
    const sub = await this.store.find(id);
    if (!sub?.collectInvoiceId) return;
    const invoice = await this.invoices.record(ctx, sub.collectInvoiceId);
    if (!waitsForCharge(sub, invoice)) return this.take(ctx, sub, invoice, run, 'dunning');
    const result = (await this.chargeAndTake([{ ctx, sub, invoice }], run, 'dunning')).get(id);
    if (result && result !== 'taken') throw result.error;
  }

  /**
   * The one collection of subscriptions' open invoices, for a run's batch and for one
   * subscription (a step, a request's invoice, a retry) alike: each charged on the card given,
   * else the subscription's, else its customer's default (one read per account and mode); the
   * charges claimed together and made concurrently (`chargeManyForSubscriptions`); their outcomes
   * settled in one transaction (`settleMany`) in which the usual case, an active subscription
   * whose invoice is now paid, is also taken set-based (`collectedMany`). Every other outcome is
   * taken one by one (`take`, `failed`): paid while past due or with an invoice waiting behind,
   * a decline, a charge still pending, a card refused before any charge, an invoice another
   * request claimed first. `failures`: `dunning` moves the schedule; `seen` (a retry the merchant
   * asked for) only records the attempt as seen. Answers per subscription: taken, or the error
   * that stopped it (nothing is lost: the invoice keeps what happened and the next step takes it).
   */
  async chargeAndTake(
    items: Array<{ ctx: RequestContext; sub: SubscriptionRecord; invoice: InvoiceRecord; card?: string | null }>, run: BillingRun, failures: Failures,
  ): Promise<Map<string, 'taken' | { error: unknown }>> {
    const results = new Map<string, 'taken' | { error: unknown }>();
    if (items.length === 0) return results;
    const cards = new Map<string, string | null>();
    for (const item of items) if (item.card !== undefined || item.sub.defaultPaymentMethodId) cards.set(item.sub.id, item.card ?? item.sub.defaultPaymentMethodId);
    for (const group of groupBy(items.filter((item) => !cards.has(item.sub.id)), (item) => `${item.sub.accountId}|${item.sub.mode}`).values()) {
      const found = await this.customers.lookup(group[0].ctx, group.map((item) => item.sub.customerId));
      for (const item of group) cards.set(item.sub.id, found.get(item.sub.customerId)?.defaultPaymentMethodId ?? null);
    }
    type Item = (typeof items)[number];
    // What is taken one by one once the charges are made and settled.
    const single: Array<{ item: Item; work: () => Promise<void> }> = [];
    const charging: Item[] = [];
    for (const item of items) {
      if (cards.get(item.sub.id) !== null) charging.push(item);
      else single.push({ item, work: () => this.failed(item.ctx, item.sub.id, item.invoice.id, null, run, failures) });
    }
    const outcomes = await this.invoices.chargeManyForSubscriptions(charging.map((item) => ({ ctx: item.ctx, invoice: item.invoice, paymentMethod: cards.get(item.sub.id) as string })));
    const settling: Array<Item & { payment: Payment }> = [];
    for (const item of charging) {
      const outcome = outcomes.get(item.invoice.id);
      const { ctx, sub, invoice } = item;
      if (!outcome) {
        // Not claimed: paid, voided or charged by someone else meanwhile; what the invoice shows is taken.
        single.push({ item, work: async () => this.take(ctx, sub, await this.invoices.record(ctx, invoice.id), run, failures) });
      } else if (!('error' in outcome)) {
        settling.push({ ...item, payment: outcome.payment });
      } else if (refusedBeforeCharge(outcome.error)) {
        single.push({ item, work: async () => this.failed(ctx, sub.id, invoice.id, await this.refusedAttempt(ctx, invoice), run, failures) });
      } else {
        results.set(sub.id, { error: outcome.error });
      }
    }
    if (settling.length) {
      try {
        const { invoices, done } = await this.db.transaction(async (t) => {
          const settled = await this.invoices.settleMany(t, settling.map((item) => ({ ctx: item.ctx, invoiceId: item.invoice.id, payment: item.payment })));
          const paid = settling.filter((item) => settled.invoices.get(item.invoice.id)?.status === 'paid');
          const collected = new Set(await this.store.collectedMany(t, paid.map((item) => ({ id: item.sub.id, invoiceId: item.invoice.id })), settling[0].ctx.clock.now()));
          await this.events.recordMany(t, settled.events);
          return { invoices: settled.invoices, done: collected };
        });
        for (const item of settling) {
          if (done.has(item.sub.id)) results.set(item.sub.id, 'taken');
          else single.push({ item, work: () => this.take(item.ctx, item.sub, invoices.get(item.invoice.id) as InvoiceRecord, run, failures) });
        }
      } catch (err) {
        // Charged, not settled: the invoice settles from its payment when next read (`InvoiceService.record`).
        this.logger.error({ invoices: settling.length, err: errorForLog(err) }, 'subscription invoices charged but not settled; settled from their payments when next read');
        for (const item of settling) results.set(item.sub.id, { error: err });
      }
    }
    await inParallel(single, this.store.stepWidth(PARALLEL_STEPS), async ({ item, work }) => {
      try {
        await work();
        results.set(item.sub.id, 'taken');
      } catch (err) {
        results.set(item.sub.id, { error: err });
      }
    });
    return results;
  }

  /**
   * What the collected invoice shows, taken without a charge: paid (active again, dunning over),
   * voided (the merchant forgave it: nothing owed), a failed attempt not taken yet, a charge still
   * out (looked at again a minute later, unless it is a retry asked for, which leaves the
   * schedule alone; the invoice's reconciling settles it). An invoice with
   * nothing to charge and no outcome to take counts as a failed attempt without a charge.
   */
  private async take(ctx: RequestContext, sub: SubscriptionRecord, invoice: InvoiceRecord, run: BillingRun, failures: Failures): Promise<void> {
    const id = sub.id;
    if (invoice.status === 'paid') return this.paid(ctx, id, invoice.id);
    if (invoice.status === 'void') {
      const next = await this.waitingInvoice(ctx, id, invoice.id);
      await this.change(ctx, id, (current) => {
        if (current.collectInvoiceId !== invoice.id) return null;
        const set = collectionOver(current, next, ctx.clock.now());
        return current.status === 'past_due' ? { move: 'invoice_voided', set } : { set };
      });
      return;
    }
    if (invoice.paymentStatus === 'requires_action') return this.awaitingAuthentication(ctx, id, invoice.id, failures);
    if (invoice.paymentStatus === 'processing') {
      // A retry the merchant asked for leaves the schedule as it was; the run looks again in a minute.
      if (failures === 'dunning') await SubscriptionModel.update({ nextBillingAt: new Date(ctx.clock.now().getTime() + RETRY_STEP_MS) }, { where: { id } });
      return;
    }
    return this.failed(ctx, id, invoice.id, invoice.paymentStatus === 'failed' ? invoice.paymentAttempts : null, run, failures);
  }

  /**
   * The collected invoice's charge waits for the customer to authenticate it (3-D Secure) on the
   * hosted invoice page (Stripe's `past_due` with the invoice open): an active subscription is
   * past due (event subscription.past_due), but no dunning failure is counted, as the charge has
   * not failed. It is looked at again once the challenge would have expired (its payment then
   * failed, `authentication_expired`: a failed attempt on the schedule); the customer's answer is
   * taken sooner through `takeSettled`. A retry the merchant asked for leaves the schedule alone.
   */
  private async awaitingAuthentication(ctx: RequestContext, id: string, invoiceId: string, failures: Failures): Promise<void> {
    const nextBillingAt = new Date(ctx.clock.now().getTime() + ACTION_LIFETIME_MS + RETRY_STEP_MS);
    await this.change(ctx, id, (current) => {
      if (current.collectInvoiceId !== invoiceId) return null;
      if (current.status === 'active') return { move: 'authentication_required', set: { nextBillingAt } };
      return current.status === 'past_due' && failures === 'dunning' ? { set: { nextBillingAt } } : null;
    });
  }

  /**
   * The open invoice is paid: no longer collected, dunning over, active again when past due. An
   * invoice made while it was collected (a resume while it was owed) is collected next.
   */
  private async paid(ctx: RequestContext, id: string, invoiceId: string): Promise<void> {
    const next = await this.waitingInvoice(ctx, id, invoiceId);
    await this.change(ctx, id, (current) => {
      if (current.collectInvoiceId !== invoiceId) return null;
      const set = collectionOver(current, next, ctx.clock.now());
      return current.status === 'past_due' ? { move: 'charge_succeeded', set } : { set };
    });
  }

  /**
   * The attempt a charge refused before any payment used up (its number is never given back), or
   * null when it was refused before it claimed one: counted as a failure either way.
   */
  private async refusedAttempt(ctx: RequestContext, before: InvoiceRecord): Promise<number | null> {
    const after = (await this.invoices.record(ctx, before.id)).paymentAttempts;
    return after > before.paymentAttempts ? after : null;
  }

  /**
   * The latest invoice of the subscription when it waits to be collected after `settled` (made
   * while that one was collected): finalised, owing something, collected by charge.
   */
  private async waitingInvoice(ctx: RequestContext, id: string, settled: string): Promise<string | null> {
    const sub = await this.store.find(id);
    if (!sub?.latestInvoiceId || sub.latestInvoiceId === settled || sub.collectionMethod !== 'charge_automatically') return null;
    const latest = await this.invoices.record(ctx, sub.latestInvoiceId);
    return latest.status === 'sent' && latest.paymentStatus !== 'processing' && latest.amountDue > 0 ? latest.id : null;
  }

  /**
   * A failed attempt to collect the open invoice (`attempts`: the invoice's attempt count it is
   * taken up to; null when no charge could be made, no card): past due with the next retry on
   * the account's schedule (days after the first failure), or canceled after the last retry.
   * Each charge attempt counts once, under the row lock: the request that made it and a run that
   * read its outcome meanwhile both take it, and the second changes nothing. `seen` (a retry
   * the merchant asked for): the attempt is only recorded as seen, the schedule stays as it was.
   */
  private async failed(ctx: RequestContext, id: string, invoiceId: string, attempts: number | null, run: BillingRun, failures: Failures = 'dunning'): Promise<void> {
    const now = ctx.clock.now();
    const { dunningRetryDays } = await run.account(ctx.accountId);
    await this.change(ctx, id, (current) => {
      if (current.collectInvoiceId !== invoiceId) return null;
      if (attempts !== null && attempts <= current.invoiceAttemptsSeen) return null;
      if (failures === 'seen') return attempts === null ? null : { set: { invoiceAttemptsSeen: attempts } };
      const failed = current.dunningFailures + 1;
      const firstFailedAt = current.firstFailedAt ?? now;
      const seen = attempts ?? current.invoiceAttemptsSeen;
      if (failed > dunningRetryDays.length) {
        return {
          move: current.status === 'past_due' ? 'dunning_exhausted' : 'cancel',
          set: { canceledAt: now, endedAt: now, nextBillingAt: null, collectInvoiceId: null, dunningFailures: failed, invoiceAttemptsSeen: seen },
        };
      }
      const set = {
        dunningFailures: failed, firstFailedAt, invoiceAttemptsSeen: seen,
        nextBillingAt: new Date(firstFailedAt.getTime() + dunningRetryDays[failed - 1] * DAY_MS),
      };
      return current.status === 'past_due' ? { set, event: 'subscription.updated' } : { move: 'charge_failed', set };
    });
  }

  /** A step that failed, logged and postponed. */
  private async stepFailed(id: string, err: unknown, now: Date, token: string): Promise<void> {
    this.logger.error({ subscriptionId: id, err: errorForLog(err) }, 'billing step failed; tried again later');
    await this.postpone(id, now, token).catch(() => undefined);
  }

  /**
   * A step that failed (a gateway down): tried again a minute later, not at once in a loop. Only
   * while this run's claim holds it: a run that took it over since may have moved it on already.
   */
  private async postpone(id: string, now: Date, token: string): Promise<void> {
    await SubscriptionModel.update({ nextBillingAt: new Date(now.getTime() + RETRY_STEP_MS) }, { where: { id, billingLockToken: token } });
  }

  /**
   * One change of a subscription under its row lock, with its event in the same transaction: the
   * move (checked against the state table, whose event is written) or plain changes (with
   * `event` when given). `decide` sees the row as locked; null changes nothing.
   */
  async change(
    ctx: RequestContext, id: string,
    decide: (current: SubscriptionRecord) => { move?: SubscriptionMove; set: Record<string, unknown>; event?: SubscriptionEventType } | null,
  ): Promise<Subscription | null> {
    return this.db.transaction(async (t) => {
      const current = await this.store.find(id, undefined, t, true);
      if (!current) throw notFound('subscription', id);
      const decision = decide(current);
      if (!decision) return null;
      if (!decision.move) return this.write(t, ctx, current, await this.planOf(current, t), decision.set, decision.event);
      // The status, the time it stamps and the event are the move's (the table's), checked against where it starts.
      const rule = transition(current.status, decision.move);
      const set = { ...decision.set, ...SUBSCRIPTION_MOVES.columns(decision.move, ctx.clock.now()) };
      return this.write(t, ctx, current, await this.planOf(current, t), set, rule.event);
    });
  }

  /** Writes `set` on the subscription and, when given, its event with the object as it now is. */
  async write(t: Transaction, ctx: RequestContext, current: SubscriptionRecord, plan: Plan, set: Record<string, unknown>, event?: SubscriptionEventType | 'subscription.created' | null): Promise<Subscription> {
    const now = ctx.clock.now();
    await SubscriptionModel.update({ ...set, updatedAt: now }, { where: { id: current.id }, transaction: t });
    const next = (await this.store.find(current.id, undefined, t)) as SubscriptionRecord;
    const api = toApiSubscription(next, plan.priceId === next.priceId ? plan : await this.planOf(next, t));
    if (event) await this.events.record(ctx, t, event, api);
    return api;
  }

  async planOf(sub: Pick<SubscriptionRecord, 'accountId' | 'mode' | 'priceId'>, t?: Transaction): Promise<Plan> {
    const plan = (await this.store.plans(sub, [sub.priceId], t)).get(sub.priceId);
    if (!plan) throw notFound('price', sub.priceId, 'priceId');
    return plan;
  }
}

/**
 * A billing step's context: its writes stamped by `stamps` when given (real time; never before
 * the instant the work fell due, which a run called for a later instant may name), else at `now`.
 */
function stepContext(sub: Pick<SubscriptionRecord, 'id' | 'accountId' | 'mode'>, now: Date, stamps?: Clock): RequestContext {
  const ctx = systemContext(sub.accountId, sub.mode, now, `billing_${sub.id}`);
  if (!stamps) return ctx;
  return { ...ctx, clock: { now: () => { const at = stamps.now(); return at.getTime() > now.getTime() ? at : now; } } };
}

/** A subscription's invoice as the billing run and subscription requests create it (the single and the batch path). */
function invoiceSpec(
  sub: SubscriptionRecord, plan: Plan, lines: BillingLine[], periodStart: Date | null,
  reason: SubscriptionInvoiceSpec['billingReason'], account: AccountInvoicing | undefined,
): SubscriptionInvoiceSpec {
  return {
    customerId: sub.customerId, subscriptionId: sub.id, currency: plan.currency, lines, billingPeriodStart: periodStart,
    billingReason: reason, send: sub.collectionMethod === 'send_invoice', account, defaultTaxRateIds: sub.defaultTaxRateIds,
  };
}

/** What a renewal writes (`renew` one by one, `advanceMany` for a batch): collected now when it charges its invoice. */
function periodAdvance(start: Date, end: Date, invoiceId: string, collect: boolean, now: Date): PeriodAdvance {
  return {
    currentPeriodStart: start, currentPeriodEnd: end, latestInvoiceId: invoiceId, collectInvoiceId: collect ? invoiceId : null,
    invoiceAttemptsSeen: 0, nextBillingAt: collect ? now : end,
  };
}

/**
 * The collected invoice is settled (paid, or voided): dunning over; the invoice waiting behind it
 * (`next`) collected at once, else nothing collected and the next work at the period's end.
 */
function collectionOver(current: SubscriptionRecord, next: string | null = null, now?: Date): Record<string, unknown> {
  return { collectInvoiceId: next, invoiceAttemptsSeen: 0, dunningFailures: 0, firstFailedAt: null, nextBillingAt: next && now ? now : current.currentPeriodEnd };
}

/**
 * Whether a subscription invoice's charge was refused before any was made (a card the gateway or
 * the vault refused: removed, another customer's): a failed attempt, for `collect` and the batch
 * alike. A charge already under way, or a server-side failure, is not.
 */
function refusedBeforeCharge(err: unknown): boolean {
  return isDomainError(err) && err.status < 500 && err.code !== 'invoice_payment_in_progress';
}

/**
 * Whether the collected invoice waits for a charge: open, no charge out, and never charged, or
 * its last attempt's outcome taken already (`invoiceAttemptsSeen`).
 */
function waitsForCharge(sub: SubscriptionRecord, invoice: InvoiceRecord): boolean {
  return (invoice.status === 'draft' || invoice.status === 'sent') && invoice.paymentStatus !== 'processing' && invoice.paymentStatus !== 'requires_action'
    && (invoice.paymentStatus === 'unpaid' || invoice.paymentAttempts <= sub.invoiceAttemptsSeen);
}

/**
 * Whether the claimed subscription's due work is the common renewal the batch takes: active,
 * nothing being collected, its period ended, not ending at period end, collected by charge, on
 * real time. Everything else is stepped one by one.
 */
function isCommonRenewal(sub: SubscriptionRecord, now: Date): boolean {
  return sub.status === 'active' && sub.collectInvoiceId === null && sub.currentPeriodEnd.getTime() <= now.getTime()
    && !sub.cancelAtPeriodEnd && sub.collectionMethod === 'charge_automatically' && sub.testClockId === null;
}

/** Runs `work` over `items`, at most `width` at a time. */
async function inParallel<T>(items: readonly T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(width, items.length) }, async () => {
    while (next < items.length) await work(items[next++]);
  });
  await Promise.all(lanes);
}
