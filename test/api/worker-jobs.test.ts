import { FixedClock } from '../../src/core/clock';
import { JOBS, runJob, type Job } from '../../workers/jobs';
import { startTestApp, type TestApp } from '../helpers/app';

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
