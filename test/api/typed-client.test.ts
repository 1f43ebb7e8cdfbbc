import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { ROOT } from '../helpers/spawn';

const EXAMPLE = path.join(ROOT, 'examples', 'typed-client.ts');

let app: TestApp;
let dir: string;
let caFile: string;

beforeAll(async () => {
  app = await startTestApp();
  // The example trusts the service's generated certificate as a merchant's would: NODE_EXTRA_CA_CERTS.
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'payorch-typed-client-'));
  caFile = path.join(dir, 'cert.pem');
  fs.writeFileSync(caFile, app.server.cert);
});
afterAll(async () => {
  await app?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** Runs examples/typed-client.ts as its header says, against the live service. */
function runExample(key: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', EXAMPLE],
      { cwd: ROOT, env: { ...process.env, PAYORCH_URL: app.baseUrl, PAYORCH_KEY: key, NODE_EXTRA_CA_CERTS: caFile }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe(`examples/typed-client.ts against a live service (${DIALECT})`, () => {
  it('should create a customer, a payment, a refund, a checkout session, an invoice and a subscription through openapi-fetch', async () => {
    const run = await runExample(app.account.testKey);
    expect([run.code, run.stderr]).toEqual([0, '']);
    const ids = JSON.parse(run.stdout.trim()) as Record<string, string>;
    const key = app.account.testKey;
    const get = async (p: string) => {
      const res = await app.request('GET', p, { key });
      expect([p, res.status]).toEqual([p, 200]);
      return res.body.data;
    };

    const customer = await get(`/v1/customers/${ids.customer}`);
    expect(customer).toMatchObject({ name: 'Ada Lovelace', country: 'GB', defaultPaymentMethodId: ids.paymentMethod });
    const payment = await get(`/v1/payments/${ids.payment}`);
    expect(payment).toMatchObject({ customerId: ids.customer, amount: 2500, currency: 'EUR', status: 'succeeded', amountRefunded: 500 });
    expect(await get(`/v1/refunds/${ids.refund}`)).toMatchObject({ paymentId: ids.payment, amount: 500, status: 'succeeded' });
    const session = await get(`/v1/checkout-sessions/${ids.checkoutSession}`);
    expect(session).toMatchObject({ mode: 'payment', amount: 4900, status: 'open', url: expect.stringContaining(`/checkout/${ids.checkoutSession}`) });
    const invoice = await get(`/v1/invoices/${ids.invoice}`);
    expect(invoice).toMatchObject({ customerId: ids.customer, status: 'sent', total: 128000, amountDue: 128000 });
    expect(await get(`/v1/prices/${ids.price}`)).toMatchObject({ productId: ids.product, unitAmount: 1900, recurring: { interval: 'month' } });
    const subscription = await get(`/v1/subscriptions/${ids.subscription}`);
    expect(subscription).toMatchObject({ customerId: ids.customer, priceId: ids.price, status: 'active', quantity: 1 });
  });

  it("should stop with the API's error code when the key is refused", async () => {
    const run = await runExample(`sk_test_${'x'.repeat(43)}`);
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toMatch(/^create customer: 401 invalid_api_key /);
  });
});
