import { startServices, type ServiceHarness } from '../helpers/services';
import type { SpawnedInstance } from '../helpers/spawn';
import { countRows, spawnOnHarness } from '../helpers/crash';
import type { HttpResponse } from '../helpers/http';
import { DIALECT } from '../helpers/db';
import { readTime } from '../../src/db/database';
import { waitFor } from '../helpers/wait';

/**
 * A test clock's advance whose process is killed (SIGKILL) half-way: the clock is left
 * `advancing` by a process that no longer exists. Once the advance's lease (BILLING_LEASE_MS,
 * 2 s here) has passed without a step, the next advance takes the clock over and finishes the
 * work: every period invoiced once, the invoice numbers gapless, the clock ready at its time.
 * While an advance is alive, a second one is refused.
 */
const SUBSCRIPTIONS = 8;
const MONTHS = 12;
const BILLING_LEASE_MS = 2_000;

let h: ServiceHarness;
let key: string;
let accountId: string;
let instance: SpawnedInstance | undefined;

beforeAll(async () => {
  h = await startServices();
  const created = await h.services.accounts.createAccount({ name: 'Crash clock' });
  key = created.testKey.secret as string;
  accountId = created.accountId;
});

afterAll(async () => {
  await instance?.stop('SIGKILL');
  await h?.stop();
});

function startInstance(): Promise<SpawnedInstance> {
  // No scheduled jobs: only the advance bills these subscriptions (they live on the clock).
  return spawnOnHarness(h, { RUN_WORKERS: 'false', BILLING_LEASE_MS: String(BILLING_LEASE_MS) });
}

async function ok(res: Promise<HttpResponse>, status = 200): Promise<Record<string, any>> {
  const r = await res;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${JSON.stringify(r.body)}`);
  return (r.body as { data: Record<string, any> }).data;
}

function count(sql: string, bind: unknown[] = []): Promise<number> {
  return countRows(h.services.db, sql, bind);
}

describe(`a test clock's advance killed (SIGKILL) half-way (${DIALECT})`, () => {
  it('should be taken over by the next advance once its lease has passed, billing every period once', async () => {
    instance = await startInstance();
    const post = (p: string, body: unknown) => instance!.request('POST', p, { key, body });
    const clock = await ok(post('/v1/test-clocks', { frozenTime: '2027-01-01T00:00:00Z' }), 201);
    const product = await ok(post('/v1/products', { name: 'Clock plan' }), 201);
    const price = await ok(post('/v1/prices', { productId: product.id, unitAmount: 900, currency: 'usd', recurring: { interval: 'month' } }), 201);
    const subs: string[] = [];
    for (let i = 0; i < SUBSCRIPTIONS; i++) {
      const customer = await ok(post('/v1/customers', { email: `clock-crash-${i}@example.com`, testClockId: clock.id }), 201);
      // Collected by invoice: no charge is under way when the process dies, only the advance.
      subs.push((await ok(post('/v1/subscriptions', { customerId: customer.id, priceId: price.id, collectionMethod: 'send_invoice' }), 201)).id);
    }
    const target = new Date(Date.UTC(2027, MONTHS, 1)).toISOString();
    const cycleInvoices = () => count("SELECT COUNT(*) AS n FROM invoices WHERE billing_reason = 'subscription_cycle'");

    const first = post(`/v1/test-clocks/${clock.id}/advance`, { frozenTime: target }).catch((err: Error) => err);
    for (const deadline = Date.now() + 120_000; (await cycleInvoices()) < SUBSCRIPTIONS * 3;) {
      if (Date.now() > deadline) throw new Error(`the advance did not get under way: ${JSON.stringify(await first)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // While it runs, a second advance of the same clock is refused.
    const second = await post(`/v1/test-clocks/${clock.id}/advance`, { frozenTime: target });
    expect([second.status, (second.body as any).error?.code]).toEqual([422, 'invalid_state']);

    await instance.stop('SIGKILL');
    instance = undefined;
    // The first advance never answered: its connection died with the process.
    expect((await first as { status?: number }).status).toBeUndefined();
    const atKill = await cycleInvoices();
    expect(atKill).toBeLessThan(SUBSCRIPTIONS * MONTHS);
    const [left] = await h.services.db.select<{ status: string }>('SELECT status FROM test_clocks WHERE id = $1', [clock.id]);
    expect(left.status).toBe('advancing');

    // Restarted, and once the lease has passed since the dead advance's last step (the clock's
    // updatedAt, on the instances' clock: this host's), the advance goes on.
    instance = await startInstance();
    const [{ updated_at: lastStep }] = await h.services.db.select<{ updated_at: unknown }>('SELECT updated_at FROM test_clocks WHERE id = $1', [clock.id]);
    const leaseEnd = readTime(lastStep)!.getTime() + BILLING_LEASE_MS;
    await waitFor(() => Date.now() > leaseEnd, { timeoutMs: BILLING_LEASE_MS + 1_000, intervalMs: 20, what: "the dead advance's lease to pass" });
    const done = await ok(instance.request('POST', `/v1/test-clocks/${clock.id}/advance`, { key, body: { frozenTime: target } }));
    expect(done).toMatchObject({ id: clock.id, status: 'ready', frozenTime: target });

    // Every month of every subscription invoiced exactly once, numbered without a gap.
    expect(await cycleInvoices()).toBe(SUBSCRIPTIONS * MONTHS);
    for (const id of subs) {
      expect(await count("SELECT COUNT(DISTINCT billing_period_start) AS n FROM invoices WHERE subscription_id = $1 AND billing_reason = 'subscription_cycle'", [id])).toBe(MONTHS);
    }
    const numbers = await h.services.db.select<{ number_seq: number | string }>('SELECT number_seq FROM invoices WHERE account_id = $1 ORDER BY number_seq', [accountId]);
    expect(numbers.map((r) => Number(r.number_seq))).toEqual(Array.from({ length: numbers.length }, (_, i) => i + 1));
    const last = await ok(instance.request('GET', `/v1/subscriptions/${subs[0]}`, { key }));
    expect(last.currentPeriodEnd).toBe(new Date(Date.UTC(2027, MONTHS + 1, 1)).toISOString());
  }, 300_000);
});
