import { startTestApp, type TestApp } from '../helpers/app';
import { spawnBeside, type SpawnedInstance } from '../helpers/spawn';

/**
 * A process killed (kill -9) while it waits for a gateway: its pending payment or refund stops
 * being renewed, and recovery on a live instance (this test's app, running its jobs) settles it
 * soon after the lease runs out; a retry with the same Idempotency-Key then replays that outcome.
 * The killed process leases for PAYMENT_LEASE_MS = 3 s (10 s by default): the recovery waits it
 * out, as it would the default.
 */
const RESOLVED_WITHIN_MS = 15_000;
const VICTIM_LEASE_MS = 3_000;

let app: TestApp;
let key: string;
let victim: SpawnedInstance | undefined;
let gatewayId: string;

beforeAll(async () => {
  app = await startTestApp({ runWorkers: true });
  key = app.account.testKey;
  const gw = await app.request('POST', '/v1/gateways', { key, body: { name: 'Stalls', type: 'simulator', settings: { latencyMs: 0 } } });
  gatewayId = gw.body.data.id;
  await app.request('PUT', '/v1/routing', { key, body: { rules: [], fallback: [gatewayId], maxAttempts: 1 } });
});
afterAll(async () => {
  await victim?.stop('SIGKILL');
  await app?.stop();
});

async function setLatency(latencyMs: number): Promise<void> {
  const res = await app.request('PATCH', `/v1/gateways/${gatewayId}`, { key, body: { settings: { latencyMs } } });
  expect(res.body.error).toBeNull();
  expect(res.body.data.settings).toMatchObject({ latencyMs });
}

async function startVictim(): Promise<SpawnedInstance> {
  victim = await spawnBeside(app, { PAYMENT_LEASE_MS: String(VICTIM_LEASE_MS) });
  return victim;
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, withinMs: number): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${withinMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Sends the request to the victim, kills it once `inFlight` says the gateway call is under way. */
async function killDuring(path: string, body: unknown, idemKey: string, inFlight: () => Promise<boolean>): Promise<number> {
  const instance = await startVictim();
  // Longer than the wait for the pending row below, so the kill lands during the gateway call.
  await setLatency(10_000);
  const pending = instance.request('POST', path, { key, body, headers: { 'Idempotency-Key': idemKey } }).catch(() => null);
  await waitFor('the pending write', async () => ((await inFlight()) ? true : undefined), 8_000);
  await instance.stop('SIGKILL');
  victim = undefined;
  const killedAt = Date.now();
  expect(await pending).toBeNull();
  // The gateway answers again; what the dead process asked it is gone with it.
  await setLatency(0);
  return killedAt;
}

describe('a process killed while it waits for the gateway', () => {
  it('should have its payment settled by recovery and the retry replay it, within 15 s', async () => {
    const body = { amount: 4321, currency: 'usd', paymentMethod: 'pm_card_visa', metadata: { crash: 'payment' } };
    const pendingPayment = async () => (await app.server.services.db.select("SELECT id FROM payments WHERE status = 'pending' AND amount = 4321")).length > 0;
    const killedAt = await killDuring('/v1/payments', body, 'crash-payment', pendingPayment);
    const replay = await waitFor('the replayed payment', async () => {
      const res = await app.request('POST', '/v1/payments', { key, body, headers: { 'Idempotency-Key': 'crash-payment' } });
      if (res.status === 409) {
        expect(res.body.error.code).toBe('idempotency_key_in_use');
        return undefined;
      }
      return res;
    }, RESOLVED_WITHIN_MS + 5_000);
    const took = Date.now() - killedAt;
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.data.status).not.toBe('pending');
    expect(took).toBeLessThan(RESOLVED_WITHIN_MS);
    // Not before the dead process's lease could have run out: recovery never races a live owner.
    expect(took).toBeGreaterThan(VICTIM_LEASE_MS / 4);
    const all = await app.request('GET', '/v1/payments?search=payment', { key });
    expect(all.body.data.filter((p: { amount: number }) => p.amount === 4321)).toHaveLength(1);
  }, 90_000);

  it('should have its refund settled by recovery, the reservation kept or given back, and the retry replay it, within 15 s', async () => {
    const paid = await app.request('POST', '/v1/payments', { key, body: { amount: 5000, currency: 'usd', paymentMethod: 'pm_card_visa' } });
    expect(paid.body.data.status).toBe('succeeded');
    const paymentId = paid.body.data.id as string;
    const body = { paymentId, amount: 1200 };
    const pendingRefund = async () => (await app.server.services.db.select("SELECT id FROM refunds WHERE status = 'pending' AND payment_id = $1", [paymentId])).length > 0;
    const killedAt = await killDuring('/v1/refunds', body, 'crash-refund', pendingRefund);
    const replay = await waitFor('the replayed refund', async () => {
      const res = await app.request('POST', '/v1/refunds', { key, body, headers: { 'Idempotency-Key': 'crash-refund' } });
      return res.status === 409 ? undefined : res;
    }, RESOLVED_WITHIN_MS + 5_000);
    expect(Date.now() - killedAt).toBeLessThan(RESOLVED_WITHIN_MS);
    expect(replay.status).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body.data.status).not.toBe('pending');
    const payment = (await app.request('GET', `/v1/payments/${paymentId}`, { key })).body.data;
    expect(payment.amountRefunded).toBe(replay.body.data.status === 'succeeded' ? 1200 : 0);
    const refunds = (await app.request('GET', `/v1/payments/${paymentId}/refunds`, { key })).body.data;
    expect(refunds).toHaveLength(1);
  }, 90_000);
});
