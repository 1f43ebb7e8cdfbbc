import type { Services } from '../src/services';
import { errorForLog } from '../src/logger';

/**
 * A scheduled job: a service call whose "now" is the services' clock (a test clock drives
 * jobs exactly as it drives requests). The cron schedule only says how often it runs.
 */
export interface Job {
  name: string;
  /** A cron expression, or the configuration's (the billing run's BILLING_CRON). */
  schedule: string | ((services: Services) => string);
  /** Also run once as the instance starts (recovery: a restart settles what a crash left). */
  runAtStart?: boolean;
  /** The level its non-zero counts are logged at (info unless said): a job that does something every few seconds says so at debug. */
  logLevel?: 'info' | 'debug';
  /** What the run did, as counts; logged when any is non-zero. */
  run(services: Services): Promise<Record<string, number>>;
}

export const JOBS: readonly Job[] = [
  {
    name: 'purge-idempotency-keys',
    schedule: '*/10 * * * *',
    run: async (services) => ({ purged: await services.idempotency.purgeExpired() }),
  },
  // Payments or refunds left pending by a crash or an unanswered gateway are settled by asking
  // the gateway under the original idempotency key: never a second charge. Every few seconds, so
  // a row whose process died is settled soon after its lease (LEASE_MS) runs out.
  {
    name: 'recover-pending-payments',
    schedule: '*/3 * * * * *',
    runAtStart: true,
    run: async (services) => ({ resolved: await services.payments.recoverPending(services.clock.now()) }),
  },
  // Captures and cancels whose process died before writing the gateway's answer (asked again
  // under their own key), challenges left unanswered (30 min) and authorisations not captured in time.
  {
    name: 'recover-payment-operations',
    schedule: '*/3 * * * * *',
    runAtStart: true,
    run: async (services) => ({ resolved: await services.paymentActions.recoverClaims() }),
  },
  {
    name: 'expire-payment-authorizations',
    schedule: '*/30 * * * * *',
    run: (services) => services.paymentActions.expireDue(services.clock.now()),
  },
  {
    name: 'recover-pending-refunds',
    schedule: '*/3 * * * * *',
    runAtStart: true,
    run: async (services) => ({ resolved: await services.refunds.recoverPending(services.clock.now()) }),
  },
  // The payments list's totals: the deltas the payments table's triggers append are folded into
  // the counts (PostgreSQL; nothing to do on SQLite), so a total reads few rows. Folds of several
  // instances never overlap: one finds the other's lock and does nothing.
  {
    name: 'fold-payment-counts',
    schedule: '*/2 * * * * *',
    runAtStart: true,
    logLevel: 'debug',
    run: async (services) => ({ folded: await services.payments.foldCounts() }),
  },
  // Checkout sessions past their time are expired (event checkout.session.expired); reads and pays
  // already treat them so. The same run completes sessions whose payment succeeded after their
  // request ended (recovery settled it).
  {
    name: 'expire-checkout-sessions',
    schedule: '*/30 * * * * *',
    run: (services) => services.checkoutSessions.expireDue(services.clock.now()),
  },
  // An invoice whose card charge's request ended first (it died, or the gateway's answer came
  // later through recovery) is settled from its payment.
  {
    name: 'reconcile-invoice-charges',
    schedule: '*/30 * * * * *',
    run: (services) => services.invoices.reconcileCharges(services.clock.now()),
  },
  // The billing run: every due subscription's step (its period's invoice and charge, dunning
  // retries, ends at period end). Every instance runs it; claims are shared (SKIP LOCKED).
  {
    name: 'bill-subscriptions',
    schedule: (services) => services.config.billingCron,
    runAtStart: true,
    run: (services) => services.billing.billDue(services.clock.now()),
  },
  {
    name: 'purge-webhook-log',
    schedule: '17 3 * * *',
    run: async (services) => services.webhooks.deliveries.purgeOld(),
  },
  // Failed public pay attempts past every window of their caps (a session lives 24 hours at most).
  {
    name: 'purge-public-pay-attempts',
    schedule: '7 * * * *',
    run: async (services) => ({ purged: await services.publicAttempts.purge(services.clock.now()) }),
  },
  // Exports: the files asked for, written page by page (a claim whose process died resumes where
  // its file stands), and the files of expired exports deleted. Every instance runs it; claims are shared.
  {
    name: 'run-exports',
    schedule: '*/2 * * * * *',
    runAtStart: true,
    run: async (services) => ({ ...(await services.exports.runDue(services.clock.now())) }),
  },
  // Sent and failed mail keep the invoice snapshot their PDF was made from: not kept for ever.
  {
    name: 'purge-mail-outbox',
    schedule: '27 3 * * *',
    run: async (services) => ({ purged: await services.mail.purgeOld() }),
  },
];

/** The jobs running now, per instance: a run at start and the scheduler's ticks never overlap. */
const running = new WeakMap<Services, Set<string>>();

/**
 * One run of a job, as the scheduler does it: a failure is logged, never thrown. A job whose
 * last run is still going is not started again (node-cron's noOverlap covers only its own ticks,
 * not the run at start).
 */
export async function runJob(services: Services, job: Job): Promise<void> {
  let now = running.get(services);
  if (!now) running.set(services, (now = new Set()));
  if (now.has(job.name)) return;
  now.add(job.name);
  const started = performance.now();
  try {
    const done = await job.run(services);
    services.metrics.observeJob(job.name, true, (performance.now() - started) / 1000, done);
    if (Object.values(done).some((n) => n > 0)) services.logger[job.logLevel ?? 'info']({ job: job.name, ...done }, 'job done');
  } catch (err) {
    services.metrics.observeJob(job.name, false, (performance.now() - started) / 1000);
    services.logger.error({ job: job.name, err: errorForLog(err) }, 'job failed');
  } finally {
    now.delete(job.name);
  }
}
