import { createTask, setLogger as setCronLogger, type Logger as CronLogger, type ScheduledTask } from 'node-cron';
import type { Services } from '../src/services';
import { errorForLog, type Logger } from '../src/logger';
import { JOBS, runJob, type Job } from './jobs';
import { startWebhookWorker } from './webhook-delivery.worker';
import { startMailWorker } from './mail.worker';

export interface Workers {
  stop(): Promise<void>;
}

/**
 * node-cron's own messages (a tick skipped because the job's last run is still going, say while
 * recovery waits on gateway timeouts; a tick missed under load) as JSON lines through pino,
 * under the job's name, or as the scheduler's when they concern no job. Its default logger
 * prints coloured plain text to the console.
 */
export function cronLogger(logger: Logger, job?: string): CronLogger {
  const log = logger.child(job ? { job } : { component: 'scheduler' });
  const report = (level: 'error' | 'debug', message: string | Error, err?: Error) =>
    message instanceof Error ? log[level]({ err: errorForLog(message) }, 'scheduler error') : log[level](err ? { err: errorForLog(err) } : {}, message);
  return {
    info: (message) => log.info(message),
    warn: (message) =>
      /still running/.test(message)
        ? log.warn({ skipped: true }, 'job still running at its next tick; that tick is skipped')
        : log.warn(message),
    error: (message, err) => report('error', message, err),
    debug: (message, err) => report('debug', message, err),
  };
}

/** One job on its cron schedule; a tick that comes while the last run is still going is skipped. */
export function scheduleJob(services: Services, job: Job): ScheduledTask {
  const schedule = typeof job.schedule === 'function' ? job.schedule(services) : job.schedule;
  const task = createTask(schedule, () => runJob(services, job), {
    name: job.name,
    noOverlap: true,
    logger: cronLogger(services.logger, job.name),
  });
  // A task made from a function runs in this process and starts synchronously: start() returns
  // nothing. The promise in its type is that of a task run in a child process, never made here.
  void task.start();
  return task;
}

/** Background jobs of one instance; each job is a service call (see jobs.ts). */
export function startWorkers(services: Services): Workers {
  // node-cron's global logger speaks for whatever no task's logger covers (stopping tasks at
  // shutdown, a task created without one).
  setCronLogger(cronLogger(services.logger));
  const tasks: ScheduledTask[] = JOBS.map((job) => {
    const task = scheduleJob(services, job);
    if (job.runAtStart) void runJob(services, job);
    return task;
  });
  const webhooks = startWebhookWorker(services);
  const mail = startMailWorker(services);

  return {
    async stop() {
      await Promise.all([webhooks.stop(), mail.stop()]);
      // Synchronous too for a task made from a function (see scheduleJob).
      for (const t of tasks) await t.destroy();
    },
  };
}
