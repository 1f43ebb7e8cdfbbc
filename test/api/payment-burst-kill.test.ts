import { randomBytes } from 'node:crypto';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { spawnBeside, type SpawnedInstance } from '../helpers/spawn';
import { waitFor } from '../helpers/wait';

/**
 * A process killed (kill -9) during a burst of payments loses none it answered: on SQLite its
 * payments' writes are committed in groups (Database.transaction's `group`), on PostgreSQL in
 * batched statements, and an answer is given only once its group is committed. Every payment
 * answered 201 is stored as answered, with its event and its Idempotency-Key's answer.
 */
let app: TestApp;
let victim: SpawnedInstance | undefined;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(async () => {
  await victim?.stop('SIGKILL');
  await app?.stop();
});

describe(`a process killed during a burst of payments (${DIALECT})`, () => {
  it('should have stored every payment it answered, with its event and its key answered', async () => {
    const key = app.account.testKey;
    victim = await spawnBeside(app);
    const instance = victim;
    const answered: Array<{ id: string; status: string; idem: string }> = [];
    let killed = false;
    const client = async () => {
      while (!killed) {
        const idem = `burst-${randomBytes(8).toString('hex')}`;
        const body = { amount: 1500, currency: 'usd', paymentMethod: answered.length % 5 === 4 ? 'pm_card_declined' : 'pm_card_visa' };
        const res = await instance.request('POST', '/v1/payments', { key, body, headers: { 'Idempotency-Key': idem } }).catch(() => null);
        if (!res) return;
        if (res.status === 201) answered.push({ id: res.body.data.id, status: res.body.data.status, idem });
      }
    };
    const clients = Array.from({ length: 16 }, client);
    // Killed mid-burst: sixteen requests in flight, some of them inside a group's transaction.
    await waitFor(() => answered.length >= 60, { timeoutMs: 60_000, intervalMs: 5, what: '60 payments answered' });
    await instance.stop('SIGKILL');
    killed = true;
    victim = undefined;
    await Promise.all(clients);

    const db = app.server.services.db;
    for (const paid of answered) {
      const [row] = await db.select<{ status: string }>('SELECT status FROM payments WHERE id = $1', [paid.id]);
      expect({ id: paid.id, status: row?.status }).toEqual({ id: paid.id, status: paid.status });
      const events = await db.select<{ type: string }>('SELECT type FROM events WHERE object_id = $1', [paid.id]);
      expect(events.map((e) => e.type)).toEqual([paid.status === 'succeeded' ? 'payment.succeeded' : 'payment.failed']);
      const [stored] = await db.select<{ state: string; object_id: string }>('SELECT state, object_id FROM idempotency_keys WHERE idempotency_key = $1', [paid.idem]);
      expect(stored).toEqual({ state: 'completed', object_id: paid.id });
    }
    expect(answered.length).toBeGreaterThanOrEqual(60);
  }, 120_000);
});
