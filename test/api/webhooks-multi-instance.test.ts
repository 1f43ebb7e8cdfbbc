import { randomBytes } from 'node:crypto';
import { startTestApp, type TestApp } from '../helpers/app';
import { spawnInstance, type SpawnedInstance } from '../helpers/spawn';
import type { DeliveryLoop } from '../../src/modules/webhooks';
import { ReceiverHarness, makeCertificate, waitFor, type Certificate } from '../unit/webhooks/receiver-harness';

// Several instances share one database: FOR UPDATE SKIP LOCKED on PostgreSQL; on SQLite the
// single writer makes the conditional claim atomic across processes too.
const describePg = describe;

let app: TestApp;
let rx: ReceiverHarness;
let tls: Certificate;
let other: SpawnedInstance | undefined;
let loop: DeliveryLoop | undefined;

beforeAll(async () => {
  tls = await makeCertificate();
  rx = new ReceiverHarness(tls);
  await rx.start();
  app = await startTestApp({ env: { WEBHOOK_CA_FILE: tls.caFile }, runWorkers: false, serviceOptions: { webhooks: { pollMs: 20 } } });
});

afterAll(async () => {
  await loop?.stop();
  await other?.stop('SIGKILL');
  await app?.stop();
  await rx?.stop();
});

const createCustomers = async (n: number, prefix: string) => {
  for (let i = 0; i < n; i += 8) {
    const batch = Array.from({ length: Math.min(8, n - i) }, (_, j) =>
      app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: `${prefix}${i + j}_${randomBytes(3).toString('hex')}@example.com` } }),
    );
    for (const res of await Promise.all(batch)) expect(res.status).toBe(201);
  }
};

describePg('webhook delivery with two instances on one database', () => {
  it('should never send the same attempt of a delivery twice', async () => {
    const route = rx.route('shared', [], () => ({ holdMs: 25, then: 200 }));
    const created = await app.request('POST', '/v1/webhook-endpoints', { key: app.account.testKey, body: { url: route.url, events: ['customer.created'] } });
    expect(created.status).toBe(201);
    // A backlog that both claimers go after at the same moment …
    await createCustomers(80, 'backlog');

    other = await spawnInstance(
      {
        DATABASE_URL: app.config.databaseUrl,
        DATA_DIR: app.config.dataDir,
        WEBHOOK_CA_FILE: tls.caFile,
        WEBHOOK_ALLOW_PRIVATE: 'true',
        RUN_WORKERS: 'true',
        WEBHOOK_POLL_MS: '20',
      },
      app.server.cert,
    );
    const deliver = jest.spyOn(app.server.services.webhooks.deliveries, 'deliver');
    loop = app.server.services.webhooks.startDeliveryLoop();
    // … and new events while both run (each commit wakes both, through NOTIFY for the other one).
    await createCustomers(40, 'live');

    const TOTAL = 120;
    await waitFor(async () => {
      const [row] = await app.server.services.db.select<{ n: number }>("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'delivered'");
      return Number(row.n) === TOTAL;
    }, 20_000, 'every delivery');

    const pairs = route.requests.map((r) => `${r.eventId}#${r.attempt}`);
    expect(new Set(pairs).size).toBe(pairs.length);
    expect(route.requests).toHaveLength(TOTAL);
    expect(route.requests.every((r) => r.attempt === 1)).toBe(true);
    // Both instances did part of the work.
    const here = deliver.mock.calls.length;
    expect(here).toBeGreaterThan(0);
    expect(here).toBeLessThan(TOTAL);
    const [attempts] = await app.server.services.db.select<{ n: number }>('SELECT COUNT(*) AS n FROM webhook_attempts');
    expect(Number(attempts.n)).toBe(TOTAL);
  });
});
