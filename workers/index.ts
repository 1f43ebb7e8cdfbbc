import { createTask, type ScheduledTask } from 'node-cron';
import type { Services } from '../src/services';
import { errorForLog } from '../src/logger';
import { startWebhookWorker } from './webhook-delivery.worker';

export interface Workers {
  stop(): Promise<void>;
}

/** Background jobs of one instance; each job is a service call. */
export function startWorkers(services: Services): Workers {
  const { logger } = services;
  const tasks: ScheduledTask[] = [];
  const job = (name: string, expression: string, run: () => Promise<unknown>) => {
    const task = createTask(
      expression,
      async () => {
        try {
          await run();
        } catch (err) {
          logger.error({ job: name, err: errorForLog(err) }, 'job failed');
        }
      },
      { name, noOverlap: true },
    );
    task.start();
    tasks.push(task);
  };

  job('purge-idempotency-keys', '*/10 * * * *', async () => {
    const purged = await services.idempotency.purgeExpired();
    if (purged) logger.info({ job: 'purge-idempotency-keys', purged }, 'expired idempotency keys purged');
  });

  // Payments or refunds left pending by a crash or an unanswered gateway are settled by asking
  // the gateway under the original idempotency key: never a second charge.
  job('recover-pending-payments', '* * * * *', async () => {
    const resolved = await services.payments.recoverPending(services.clock.now());
    if (resolved) logger.info({ job: 'recover-pending-payments', resolved }, 'pending payments resolved');
  });
  job('recover-pending-refunds', '* * * * *', async () => {
    const resolved = await services.refunds.recoverPending(services.clock.now());
    if (resolved) logger.info({ job: 'recover-pending-refunds', resolved }, 'pending refunds resolved');
  });

  job('purge-webhook-log', '17 3 * * *', async () => {
    const purged = await services.webhooks.deliveries.purgeOld();
    if (purged.deliveries || purged.attempts) logger.info({ job: 'purge-webhook-log', ...purged }, 'old webhook deliveries purged');
  });

  const webhooks = startWebhookWorker(services);

  return {
    async stop() {
      await webhooks.stop();
      await Promise.all(tasks.map((t) => t.destroy()));
    },
  };
}
