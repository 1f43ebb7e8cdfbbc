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
import type { AccountService } from '../accounts/account.service';
import { linesTotal, type InvoiceService, type SubscriptionInvoiceSpec } from '../invoices/invoice.service';
import type { InvoiceRecord } from '../invoices/invoice.store';
import type { Payment } from '../payments/payment.service';
import { nextCycle, type BillingLine } from './billing-lines';
import { SubscriptionModel } from './subscription.model';
import { SubscriptionStore, type PendingLine, type PeriodAdvance, type Plan, type SubscriptionRecord } from './subscription.store';
import { groupBy } from '../../db/list';
import { MAX_AMOUNT } from '../../core/money';
import { SUBSCRIPTION_MOVES, transition, type SubscriptionEventType, type SubscriptionMove } from './subscription-states';
import { toApiSubscription, type Subscription } from './subscription-view';

type AccountInvoicing = { name: string; invoicePrefix: string; dunningRetryDays: number[] };

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
   * together (one transaction: invoices numbered in claim order from one move of the sequence,
   * lines, period advances, events with their webhook deliveries), their invoices charged
   * together (one claim statement, then the payments concurrently under the keys the single
   * charge uses), and the succeeded ones settled together (one transaction). Every state this
   * leaves between its steps is one the single path (`step`) takes on, so a crash anywhere is
   * recovered by it, and whatever the batch does not finish (unusual subscriptions, no card, a
   * declined or pending charge, a refused payment) is left to it: the ids returned neither
   * `billed` nor `failed` are stepped one by one by the caller.
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
    const toCharge = renewedSubs.filter((r) => r.collect);
    if (toCharge.length === 0) return { billed, failed };

    // The card: the subscription's, else its customer's default (one read a scope); none: the single path fails the attempt.
    const defaults = new Map<string, string | null>();
    for (const group of groupBy(toCharge.filter((r) => !r.sub.defaultPaymentMethodId), (r) => `${r.sub.accountId}|${r.sub.mode}`).values()) {
      const found = await this.customers.lookup(group[0].ctx, group.map((r) => r.sub.customerId));
      for (const r of group) defaults.set(r.sub.id, found.get(r.sub.customerId)?.defaultPaymentMethodId ?? null);
    }
    const charging = toCharge.flatMap((r) => {
      const card = r.sub.defaultPaymentMethodId ?? defaults.get(r.sub.id) ?? null;
      return card === null ? [] : [{ ...r, card }];
    });
    const outcomes = await this.invoices.chargeManyForSubscriptions(charging.map((r) => ({ ctx: r.ctx, invoice: r.invoice, paymentMethod: r.card })));
    const succeeded: typeof charging = [];
    const refused: typeof charging = [];
    const otherwise: Array<(typeof charging)[number] & { payment: Payment }> = [];
    for (const r of charging) {
      const outcome = outcomes.get(r.invoice.id);
      if (!outcome) continue;
      if ('error' in outcome) {
        const err = outcome.error;
        if (refusedBeforeCharge(err)) refused.push(r);
        else {
          failed.push(r.sub.id);
          await this.stepFailed(r.sub.id, err, now, token);
        }
      } else if (outcome.payment.status === 'succeeded') succeeded.push(r);
      else otherwise.push({ ...r, payment: outcome.payment });
    }
    // A refused payment is a failed attempt; a declined or pending charge is taken one by one, as `collect` takes it.
    const single: Array<{ r: (typeof charging)[number]; work: () => Promise<void> }> = [
      ...refused.map((r) => ({ r, work: async () => this.failed(r.ctx, r.sub.id, r.invoice.id, await this.refusedAttempt(r.ctx, r.invoice), run) })),
      ...otherwise.map((r) => ({
        r, work: async () => this.take(r.ctx, r.sub.id, r.invoice.id, await this.invoices.settleCharge(r.ctx, r.invoice.id, r.payment), run),
      })),
    ];
    await inParallel(single, this.store.stepWidth(PARALLEL_STEPS), async ({ r, work }) => {
      try {
        await work();
        billed.push(r.sub.id);
      } catch (err) {
        failed.push(r.sub.id);
        await this.stepFailed(r.sub.id, err, now, token);
      }
    });
    if (succeeded.length === 0) return { billed, failed };
    const paymentOf = new Map(succeeded.map((r) => {
      const outcome = outcomes.get(r.invoice.id) as { payment: { id: string; amount: number } };
      return [r.invoice.id, outcome.payment];
    }));
    const collected = await this.db.transaction(async (t) => {
      const { invoices, events } = await this.invoices.settleMany(t, succeeded.map((r) => ({ ctx: r.ctx, invoiceId: r.invoice.id, payment: paymentOf.get(r.invoice.id) as Payment })));
      const paidSet = new Set([...invoices.values()].filter((inv) => inv.status === 'paid').map((inv) => inv.id));
      const done = await this.store.collectedMany(t, succeeded.filter((r) => paidSet.has(r.invoice.id)).map((r) => ({ id: r.sub.id, invoiceId: r.invoice.id })), this.clock.now());
      await this.events.recordMany(t, events);
      return done;
    }).catch((err: unknown) => {
      // Charged, not settled: the single path settles each from its payment.
      this.logger.error({ subscriptions: succeeded.length, err: errorForLog(err) }, 'billing batch settle failed; settled one by one');
      return [] as string[];
    });
    billed.push(...collected);
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
   * Collects the subscription's open invoice: takes an outcome it has not taken yet (a charge
   * made before a crash, a retry that finished late), or charges it now on the subscription's
   * card, or the customer's default, and takes that outcome. Success makes it active; a failure
   * moves it along the account's dunning schedule.
   */
  async collect(ctx: RequestContext, id: string, run = this.newRun()): Promise<void> {
    const sub = await this.store.find(id);
    if (!sub?.collectInvoiceId) return;
    const invoiceId = sub.collectInvoiceId;
    let invoice = await this.invoices.record(ctx, invoiceId);
    if (invoice.status === 'paid') return this.paid(ctx, id, invoiceId);
    if (invoice.status === 'void') {
      // Voided while collected (the merchant forgave it): nothing is owed; a past-due subscription is active again.
      const next = await this.waitingInvoice(ctx, id, invoiceId);
      await this.change(ctx, id, (current) => {
        if (current.collectInvoiceId !== invoiceId) return null;
        const set = collectionOver(current, next, ctx.clock.now());
        return current.status === 'past_due' ? { move: 'invoice_voided', set } : { set };
      });
      return;
    }
    if (invoice.paymentStatus === 'processing') {
      // Its charge is still out (a gateway that has not answered): the invoice's reconciling settles it.
      await SubscriptionModel.update({ nextBillingAt: new Date(ctx.clock.now().getTime() + RETRY_STEP_MS) }, { where: { id } });
      return;
    }
    // Nothing to take (never charged, a charge refused before it was made, or an outcome taken
    // already): charge it now.
    if (invoice.paymentStatus === 'unpaid' || invoice.paymentAttempts <= sub.invoiceAttemptsSeen) {
      const card = sub.defaultPaymentMethodId ?? (await this.customers.lookup(ctx, [sub.customerId])).get(sub.customerId)?.defaultPaymentMethodId ?? null;
      if (card === null) return this.failed(ctx, id, invoiceId, null, run);
      try {
        invoice = await this.invoices.chargeForSubscription(ctx, invoiceId, card);
      } catch (err) {
        if (refusedBeforeCharge(err)) return this.failed(ctx, id, invoiceId, await this.refusedAttempt(ctx, invoice), run);
        throw err;
      }
    }
    await this.take(ctx, id, invoiceId, invoice, run);
  }

  /** What a charge of the collected invoice came to, taken: paid, a failed attempt, or a look again later (still pending). */
  private async take(ctx: RequestContext, id: string, invoiceId: string, invoice: InvoiceRecord, run: BillingRun): Promise<void> {
    if (invoice.status === 'paid') return this.paid(ctx, id, invoiceId);
    if (invoice.paymentStatus === 'failed') return this.failed(ctx, id, invoiceId, invoice.paymentAttempts, run);
    await SubscriptionModel.update({ nextBillingAt: new Date(ctx.clock.now().getTime() + RETRY_STEP_MS) }, { where: { id } });
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
   * read its outcome meanwhile both take it, and the second changes nothing.
   */
  private async failed(ctx: RequestContext, id: string, invoiceId: string, attempts: number | null, run: BillingRun): Promise<void> {
    const now = ctx.clock.now();
    const { dunningRetryDays } = await run.account(ctx.accountId);
    await this.change(ctx, id, (current) => {
      if (current.collectInvoiceId !== invoiceId) return null;
      if (attempts !== null && attempts <= current.invoiceAttemptsSeen) return null;
      const failures = current.dunningFailures + 1;
      const firstFailedAt = current.firstFailedAt ?? now;
      const seen = attempts ?? current.invoiceAttemptsSeen;
      if (failures > dunningRetryDays.length) {
        return {
          move: current.status === 'past_due' ? 'dunning_exhausted' : 'cancel',
          set: { canceledAt: now, endedAt: now, nextBillingAt: null, collectInvoiceId: null, dunningFailures: failures, invoiceAttemptsSeen: seen },
        };
      }
      const set = {
        dunningFailures: failures, firstFailedAt, invoiceAttemptsSeen: seen,
        nextBillingAt: new Date(firstFailedAt.getTime() + dunningRetryDays[failures - 1] * DAY_MS),
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
