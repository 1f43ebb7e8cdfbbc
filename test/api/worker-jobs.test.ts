import { FixedClock } from '../../src/core/clock';
import { JOBS, runJob, type Job } from '../../workers/jobs';
import { createTask } from 'node-cron';
import { scheduleJob, startWorkers } from '../../workers';
import { startTestApp, type TestApp } from '../helpers/app';
import { waitFor } from '../helpers/wait';

// Far from the wall clock on either side, so a job reading the wall clock would act differently.
const FUTURE = new Date('2035-01-01T00:00:00.000Z');
const PAST = new Date('2020-01-01T00:00:00.000Z');
const HOUR = 3_600_000;

const clock = new FixedClock(FUTURE);
let app: TestApp;
beforeAll(async () => {
  app = await startTestApp({ clock });
});
afterAll(() => app.stop());
afterEach(() => jest.restoreAllMocks());

function job(name: string): Job {
  const found = JOBS.find((j) => j.name === name);
  if (!found) throw new Error(`no job ${name}`);
  return found;
}

async function storeKey(idempotencyKey: string): Promise<void> {
  const res = await app.request('POST', '/v1/customers', {
    key: app.account.testKey,
    body: { email: `${idempotencyKey}@example.com` },
    headers: { 'Idempotency-Key': idempotencyKey },
  });
  expect(res.status).toBe(201);
}

async function keyStored(idempotencyKey: string): Promise<boolean> {
  const rows = await app.server.services.db.select('SELECT 1 AS one FROM idempotency_keys WHERE idempotency_key = $1', [idempotencyKey]);
  return rows.length > 0;
}

describe('scheduled jobs under an injected clock', () => {
  it('should purge idempotency keys when the clock says they expired, whatever the wall clock says', async () => {
    const purge = job('purge-idempotency-keys');

    clock.set(FUTURE);
    await storeKey('job-future');
    await runJob(app.server.services, purge);
    expect(await keyStored('job-future')).toBe(true);
    clock.advance(25 * HOUR); // still years ahead of the wall clock
    await runJob(app.server.services, purge);
    expect(await keyStored('job-future')).toBe(false);

    clock.set(PAST);
    await storeKey('job-past');
    clock.advance(HOUR); // expired by the wall clock, not by this one
    await runJob(app.server.services, purge);
    expect(await keyStored('job-past')).toBe(true);
    clock.advance(24 * HOUR);
    await runJob(app.server.services, purge);
    expect(await keyStored('job-past')).toBe(false);
    expect(app.logs.some((l) => l.includes('"job":"purge-idempotency-keys"') && l.includes('"purged":1'))).toBe(true);
  });

  it('should recover pending payments and refunds as of the clock time', async () => {
    clock.set(PAST);
    const payments = jest.spyOn(app.server.services.payments, 'recoverPending').mockResolvedValue(0);
    const refunds = jest.spyOn(app.server.services.refunds, 'recoverPending').mockResolvedValue(0);
    await runJob(app.server.services, job('recover-pending-payments'));
    await runJob(app.server.services, job('recover-pending-refunds'));
    expect(payments).toHaveBeenCalledWith(PAST);
    expect(refunds).toHaveBeenCalledWith(PAST);
  });

  it('should log a failing job and not throw', async () => {
    jest.spyOn(app.server.services.idempotency, 'purgeExpired').mockRejectedValue(new Error('database went away'));
    await expect(runJob(app.server.services, job('purge-idempotency-keys'))).resolves.toBeUndefined();
    expect(app.logs.some((l) => l.includes('"job":"purge-idempotency-keys"') && l.includes('job failed'))).toBe(true);
  });
});

describe("the scheduler's own messages", () => {
  it('should log a tick skipped because the last run is still going as a JSON line, and nothing as plain text', async () => {
    const consoleCalls = (['log', 'info', 'warn', 'error', 'debug'] as const).map((m) => jest.spyOn(console, m).mockImplementation(() => undefined));
    const stdout = jest.spyOn(process.stdout, 'write');
    const stderr = jest.spyOn(process.stderr, 'write');
    app.logs.length = 0;
    let finish: (() => void) | undefined;
    // A run that outlasts its schedule, as recovery does while it waits on gateway timeouts.
    const slow: Job = {
      name: 'slow-recovery',
      schedule: '* * * * * *',
      run: () => new Promise((resolve) => (finish = () => resolve({}))),
    };
    const task = scheduleJob(app.server.services, slow);
    try {
      // The first tick starts the run that never ends; the next one is skipped, and says so.
      await waitFor(() => app.logs.some((l) => l.includes('"job":"slow-recovery"')), { timeoutMs: 5_000, what: 'a log line of the slow job' }).catch(() => undefined);
    } finally {
      finish?.();
      await task.destroy();
    }
    const lines = app.logs.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toContainEqual(expect.objectContaining({ level: 'warn', job: 'slow-recovery', skipped: true }));
    for (const spy of [...consoleCalls, stdout, stderr]) expect(spy).not.toHaveBeenCalled();
  });

  it("should log node-cron's own messages outside any job as JSON lines once the workers start, and nothing as plain text", async () => {
    const consoleCalls = (['log', 'info', 'warn', 'error', 'debug'] as const).map((m) => jest.spyOn(console, m).mockImplementation(() => undefined));
    const stdout = jest.spyOn(process.stdout, 'write');
    const stderr = jest.spyOn(process.stderr, 'write');
    const workers = startWorkers(app.server.services);
    try {
      app.logs.length = 0;
      // A task made without a logger of its own reports through node-cron's global one.
      const task = createTask('0 0 1 1 *', () => {
        throw new Error('failed outside any job');
      });
      await task.execute().catch(() => undefined);
      await task.destroy();
    } finally {
      await workers.stop();
    }
    const lines = app.logs.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toContainEqual(expect.objectContaining({
      level: 'error', component: 'scheduler', err: expect.objectContaining({ message: 'failed outside any job' }),
    }));
    for (const spy of [...consoleCalls, stdout, stderr]) expect(spy).not.toHaveBeenCalled();
  });
});
