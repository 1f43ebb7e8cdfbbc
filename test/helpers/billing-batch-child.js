'use strict';
/**
 * A billing run in its own process, killed with SIGKILL at a chosen point of its first batch
 * (test/api/billing-batch.test.ts): `BILLING_KILL_AT=charge` as the batch makes its first payment
 * (its invoices renewed and claimed for their charge, no payment written), `settle` as it is about
 * to settle the succeeded charges (payments written, invoices still processing). DATABASE_URL,
 * DATA_DIR and BILLING_LEASE_MS as the service reads them; BILLING_NOW is the run's now.
 * It runs the compiled service (dist/, built from the current sources by the tests' global set-up).
 */
require('reflect-metadata');
const path = require('node:path');

const DIST = path.join(__dirname, '..', '..', 'dist', 'src');
const { loadConfig } = require(path.join(DIST, 'config'));
const { createLogger } = require(path.join(DIST, 'logger'));
const { createServices } = require(path.join(DIST, 'services'));

async function main() {
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'warn', RUN_WORKERS: 'false' });
  const services = await createServices(config, { logger: createLogger('warn'), migrate: false });
  const die = () => {
    process.kill(process.pid, 'SIGKILL');
    return new Promise(() => undefined);
  };
  if (process.env.BILLING_KILL_AT === 'charge') services.payments.create = die;
  else services.invoices.settleMany = die;
  await services.billing.billDue(new Date(process.env.BILLING_NOW));
  process.stdout.write('finished without being killed\n');
  await services.close();
}

main().catch((err) => {
  process.stderr.write(`${(err && err.stack) || err}\n`);
  process.exit(1);
});
