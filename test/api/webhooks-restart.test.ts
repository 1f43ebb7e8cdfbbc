import { randomBytes } from 'node:crypto';
import { startTestApp, type TestApp } from '../helpers/app';
import { spawnInstance, type SpawnedInstance } from '../helpers/spawn';
import { ReceiverHarness, makeCertificate, waitFor, type Certificate } from '../unit/webhooks/receiver-harness';

let app: TestApp;
let rx: ReceiverHarness;
let tls: Certificate;
const spawned: SpawnedInstance[] = [];

beforeAll(async () => {
  tls = await makeCertificate();
  rx = new ReceiverHarness(tls);
  await rx.start();
  // API only: the backlog builds up with nobody delivering it.
  app = await startTestApp({ env: { WEBHOOK_CA_FILE: tls.caFile }, runWorkers: false });
});

afterAll(async () => {
  for (const instance of spawned) await instance.stop('SIGKILL');
  await app?.stop();
  await rx?.stop();
});

function workerEnv(): Record<string, string> {
  return {
    DATABASE_URL: app.config.databaseUrl,
    DATA_DIR: app.config.dataDir,
    WEBHOOK_CA_FILE: tls.caFile,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    RUN_WORKERS: 'true',
    WEBHOOK_POLL_MS: '50',
    WEBHOOK_RETRY_BASE_MS: '50',
    WEBHOOK_RETRY_MAX_MS: '200',
    WEBHOOK_TIMEOUT_MS: '1000',
    // A killed worker's claims come free again after this.
    WEBHOOK_LEASE_MS: '1500',
  };
}

describe('webhook delivery across a crash', () => {
  it('should deliver every queued event at least once when a worker is killed mid-backlog', async () => {
    const TOTAL = 40;
    const route = rx.route('backlog', [], () => ({ holdMs: 150, then: 200 }));
    const created = await app.request('POST', '/v1/webhook-endpoints', { key: app.account.testKey, body: { url: route.url, events: ['customer.created'] } });
    expect(created.status).toBe(201);
    const secret = created.body.data.secret;
    for (let i = 0; i < TOTAL; i += 1) {
      const res = await app.request('POST', '/v1/customers', { key: app.account.testKey, body: { email: `b${i}_${randomBytes(3).toString('hex')}@example.com` } });
      expect(res.status).toBe(201);
    }
    const events = await app.request('GET', `/v1/events?type=customer.created&pageSize=100`, { key: app.account.testKey });
    const eventIds = new Set<string>(events.body.data.map((e: { id: string }) => e.id));
    expect(eventIds.size).toBe(TOTAL);
    const pending = await app.server.services.db.select<{ n: number }>("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'pending'");
    expect(Number(pending[0].n)).toBe(TOTAL);

    const first = await spawnInstance(workerEnv(), app.server.cert);
    spawned.push(first);
    await waitFor(() => route.requests.length >= 8, 20_000, 'the first worker to get going');
    await first.stop('SIGKILL');
    const beforeCrash = new Set(route.requests.map((r) => r.eventId));
    expect(beforeCrash.size).toBeLessThan(TOTAL);

    // A fresh instance takes over once the killed worker's leases have run out.
    const second = await spawnInstance(workerEnv(), app.server.cert);
    spawned.push(second);
    await waitFor(async () => {
      const [row] = await app.server.services.db.select<{ n: number }>("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'delivered'");
      return Number(row.n) === TOTAL;
    }, 25_000, 'every delivery to be delivered');
    await second.stop('SIGTERM');

    const received = new Set(route.requests.map((r) => r.eventId));
    expect([...eventIds].filter((id) => !received.has(id))).toEqual([]);
    for (const r of route.requests) expect(ReceiverHarness.signedWith(r, secret)).toBe(true);
    // A delivery cut off by the crash is sent again under a new attempt number, never the same one twice.
    const pairs = route.requests.map((r) => `${r.eventId}#${r.attempt}`);
    expect(new Set(pairs).size).toBe(pairs.length);
  });
});
