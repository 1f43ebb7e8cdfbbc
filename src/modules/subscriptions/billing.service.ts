import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { randomBase62 } from '../../core/ids';
import type { RequestContext } from '../../core/context';
import { systemContext } from '../../core/context';
import { invalidState, isDomainError, notFound } from '../../core/errors';
import { errorForLog, type Logger } from '../../logger';
import type { EventService } from '../events/event.service';
import type { CustomerService } from '../customers/customer.service';
import type { AccountService } from '../accounts/account.service';
import type { InvoiceService } from '../invoices/invoice.service';
import type { InvoiceRecord } from '../invoices/invoice.store';
import { periodEndAfter } from './billing-period';
import { cycleLines, type BillingLine } from './billing-lines';
import { SubscriptionModel, SubscriptionPendingLineModel } from './subscription.model';
import { SubscriptionStore, type Plan, type SubscriptionRecord } from './subscription.store';
import { transition, type SubscriptionEventType, type SubscriptionMove } from './subscription-states';
import { toApiSubscription, type Subscription } from './subscription-view';

type AccountInvoicing = { name: string; invoicePrefix: string; dunningRetryDays: number[] };

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

export interface BillingOptions {
  /** How long a claim holds a subscription (database clock); a crashed run's claims free after it. */
  leaseMs?: number;
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
  }

  /**
   * The billing run at `now` (subscriptions on real time): claims due subscriptions in batches
   * (SKIP LOCKED on PostgreSQL, so several instances share a run) and runs each one's due step.
   */
  async billDue(now: Date, limit = 100_000): Promise<{ billed: number; failed: number }> {
    let billed = 0;
    let failed = 0;
    const token = randomBase62(16);
    const run = this.newRun();
    while (billed + failed < limit) {
      const ids = await this.store.claimDue(now, Math.min(CLAIM_BATCH, limit - billed - failed), this.leaseMs, token, null);
      if (ids.length === 0) break;
      await inParallel(ids, PARALLEL_STEPS, async (id) => {
        try {
          await this.step(id, now, run);
          billed++;
        } catch (err) {
          failed++;
          this.logger.error({ subscriptionId: id, err: errorForLog(err) }, 'billing step failed; tried again later');
          await this.postpone(id, now, token).catch(() => undefined);
        } finally {
          await this.store.release(id, token).catch(() => undefined);
        }
      });
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

  /** One subscription's due work at `now`: collect an invoice's charge, or end or renew its period. */
  async step(id: string, now: Date, run = this.newRun()): Promise<void> {
    const sub = await this.store.find(id);
    if (!sub) return;
    const ctx = systemContext(sub.accountId, sub.mode, now, `billing_${id}`);
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
        set: { status: 'canceled', endedAt: current.currentPeriodEnd, canceledAt: current.canceledAt ?? now, nextBillingAt: null, collectInvoiceId: null },
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
    if (await this.renew(ctx, id, await run.account(sub.accountId))) await this.collect(ctx, id, run);
  }

  /** A run's reads made once (each account's invoicing settings). */
  newRun(): BillingRun {
    return new BillingRun((accountId) => this.accounts.invoicing(accountId));
  }

  /**
   * The period that starts at the current one's end: its invoice (the prorations waiting for it
   * and the plan) and the period's advance in one transaction. The invoice's unique key on the
   * subscription and period start, and the subscription's row lock with its period re-read,
   * make a second run of the same step bill nothing.
   */
  private async renew(ctx: RequestContext, id: string, account: AccountInvoicing): Promise<boolean> {
    const now = ctx.clock.now();
    return this.db.transaction(async (t) => {
      const sub = await this.store.find(id, undefined, t, true);
      if (!sub || sub.status !== 'active' || sub.collectInvoiceId || sub.currentPeriodEnd.getTime() > now.getTime()) return false;
      const plan = await this.planOf(sub, t);
      const start = sub.currentPeriodEnd;
      const end = periodEndAfter(sub.billingCycleAnchor, plan, start);
      const pending = await this.store.pendingLines(id, t);
      const invoice = await this.invoiceIn(t, ctx, sub, plan, cycleLines(plan, sub.quantity, pending, start, end), start, 'subscription_cycle', account);
      if (pending.length) await SubscriptionPendingLineModel.update({ invoiceId: invoice.id }, { where: { id: pending.map((p) => p.id) }, transaction: t });
      const collect = this.collectsOn(sub, invoice);
      await this.write(t, ctx, sub, plan, {
        currentPeriodStart: start, currentPeriodEnd: end, latestInvoiceId: invoice.id, collectInvoiceId: collect ? invoice.id : null,
        invoiceAttemptsSeen: 0, nextBillingAt: collect ? now : end,
      }, 'subscription.updated');
      return collect;
    });
  }

  /**
   * A subscription's invoice in its transaction (create, renew, resume, a change invoiced now):
   * sent by e-mail when the subscription collects by invoice.
   */
  async invoiceIn(
    t: Transaction, ctx: RequestContext, sub: SubscriptionRecord, plan: Plan, lines: BillingLine[], periodStart: Date | null,
    reason: 'subscription_create' | 'subscription_cycle' | 'subscription_update' | 'subscription_resume', account?: AccountInvoicing,
  ): Promise<InvoiceRecord> {
    return this.invoices.createForSubscription(t, ctx, {
      customerId: sub.customerId, subscriptionId: sub.id, currency: plan.currency, lines, billingPeriodStart: periodStart,
      billingReason: reason, send: sub.collectionMethod === 'send_invoice', account,
    });
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
      await this.change(ctx, id, (current) => {
        if (current.collectInvoiceId !== invoiceId) return null;
        const set = { collectInvoiceId: null, invoiceAttemptsSeen: 0, dunningFailures: 0, firstFailedAt: null, nextBillingAt: current.currentPeriodEnd };
        return current.status === 'past_due' ? { move: 'invoice_voided', set: { ...set, status: 'active' } } : { set };
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
      if (card === null) return this.failed(ctx, id, invoiceId, invoice.paymentAttempts, run);
      try {
        invoice = await this.invoices.chargeForSubscription(ctx, invoiceId, card);
      } catch (err) {
        // A card the gateway or the vault refused before any charge (removed, another customer's): a failed attempt.
        if (isDomainError(err) && err.status < 500 && err.code !== 'invoice_payment_in_progress') return this.failed(ctx, id, invoiceId, invoice.paymentAttempts, run);
        throw err;
      }
    }
    if (invoice.status === 'paid') return this.paid(ctx, id, invoiceId);
    if (invoice.paymentStatus === 'failed') return this.failed(ctx, id, invoiceId, invoice.paymentAttempts, run);
    await SubscriptionModel.update({ nextBillingAt: new Date(ctx.clock.now().getTime() + RETRY_STEP_MS) }, { where: { id } });
  }

  /** The open invoice is paid: no longer collected, dunning over, active again when past due. */
  private async paid(ctx: RequestContext, id: string, invoiceId: string): Promise<void> {
    await this.change(ctx, id, (current) => {
      if (current.collectInvoiceId !== invoiceId) return null;
      const set = { collectInvoiceId: null, invoiceAttemptsSeen: 0, dunningFailures: 0, firstFailedAt: null, nextBillingAt: current.currentPeriodEnd };
      return current.status === 'past_due' ? { move: 'charge_succeeded', set: { ...set, status: 'active' } } : { set };
    });
  }

  /**
   * A failed charge of the open invoice (`attempts`: the invoice's attempt count it is taken up
   * to): past due with the next retry on the account's schedule (days after the first failure),
   * or canceled after the last retry.
   */
  private async failed(ctx: RequestContext, id: string, invoiceId: string, attempts: number, run: BillingRun): Promise<void> {
    const now = ctx.clock.now();
    const { dunningRetryDays } = await run.account(ctx.accountId);
    await this.change(ctx, id, (current) => {
      if (current.collectInvoiceId !== invoiceId) return null;
      const failures = current.dunningFailures + 1;
      const firstFailedAt = current.firstFailedAt ?? now;
      if (failures > dunningRetryDays.length) {
        return {
          move: current.status === 'past_due' ? 'dunning_exhausted' : 'cancel',
          set: { status: 'canceled', canceledAt: now, endedAt: now, nextBillingAt: null, collectInvoiceId: null, dunningFailures: failures, invoiceAttemptsSeen: attempts },
        };
      }
      const set = {
        dunningFailures: failures, firstFailedAt, invoiceAttemptsSeen: attempts,
        nextBillingAt: new Date(firstFailedAt.getTime() + dunningRetryDays[failures - 1] * DAY_MS),
      };
      return current.status === 'past_due' ? { set, event: 'subscription.updated' } : { move: 'charge_failed', set: { ...set, status: 'past_due' } };
    });
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
      const event = decision.move ? transition(current.status, decision.move).event : decision.event;
      return this.write(t, ctx, current, await this.planOf(current, t), decision.set, event);
    });
  }

  /** Writes `set` on the subscription and, when given, its event with the object as it now is. */
  async write(t: Transaction, ctx: RequestContext, current: SubscriptionRecord, plan: Plan, set: Record<string, unknown>, event?: SubscriptionEventType | 'subscription.created'): Promise<Subscription> {
    const now = ctx.clock.now();
    await SubscriptionModel.update({ ...set, updatedAt: now }, { where: { id: current.id }, transaction: t });
    const next = (await this.store.find(current.id, undefined, t)) as SubscriptionRecord;
    const api = toApiSubscription(next, plan.priceId === next.priceId ? plan : await this.planOf(next, t));
    if (event) await this.events.record(ctx, t, event, api as unknown as Record<string, unknown>);
    return api;
  }

  async planOf(sub: Pick<SubscriptionRecord, 'accountId' | 'mode' | 'priceId'>, t?: Transaction): Promise<Plan> {
    const plan = (await this.store.plans(sub, [sub.priceId], t)).get(sub.priceId);
    if (!plan) throw notFound('price', sub.priceId, 'priceId');
    return plan;
  }
}

/** Runs `work` over `items`, at most `width` at a time. */
async function inParallel<T>(items: readonly T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(width, items.length) }, async () => {
    while (next < items.length) await work(items[next++]);
  });
  await Promise.all(lanes);
}
