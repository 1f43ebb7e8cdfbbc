import { createTask, type ScheduledTask } from 'node-cron';
import type { Services } from '../src/services';
import { JOBS, runJob } from './jobs';
import { startWebhookWorker } from './webhook-delivery.worker';

export interface Workers {
  stop(): Promise<void>;
}

/** Background jobs of one instance; each job is a service call (see jobs.ts). */
export function startWorkers(services: Services): Workers {
  const tasks: ScheduledTask[] = JOBS.map((job) => {
    const task = createTask(job.schedule, () => runJob(services, job), { name: job.name, noOverlap: true });
    task.start();
    if (job.runAtStart) void runJob(services, job);
    return task;
  });
  const webhooks = startWebhookWorker(services);

  return {
    async stop() {
      await webhooks.stop();
      await Promise.all(tasks.map((t) => t.destroy()));
    },
  };
}
