import { Client } from 'pg';
import sqlite3 from 'sqlite3';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { spawnBeside, type SpawnedInstance } from '../helpers/spawn';
import { assertStaysTrue, waitFor } from '../helpers/wait';

/**
 * A process killed (kill -9) in the middle of an operation that writes in one transaction: the
 * key is claimed by that transaction, so the crash takes the claim with it and the retry runs at
 * once instead of meeting 409 idempotency_key_in_use until the key expires.
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

/** Holds the customers table so a create waits inside its transaction, after the key's claim. */
async function holdCustomersTable(): Promise<{ waiting(): Promise<boolean>; release(): Promise<void> }> {
  if (DIALECT === 'postgres') {
    const client = new Client({ connectionString: app.config.databaseUrl });
    await client.connect();
    await client.query('BEGIN');
    await client.query('LOCK TABLE customers IN EXCLUSIVE MODE');
    return {
      // A backend of the victim waiting for the table: it is inside its transaction.
      waiting: async () => (await client.query("SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'customers' AND NOT l.granted")).rowCount! > 0,
      release: async () => {
        await client.query('ROLLBACK');
        await client.end();
      },
    };
  }
  // SQLite has one writer: a held write lock makes the create wait for its transaction; that it
  // waits is seen from its answer not coming (checked below). Earlier versions' separate claim
  // statement waited for the same lock, so on SQLite this checks the retry's answer only; the
  // PostgreSQL run is the one that tells the two designs apart.
  const file = app.config.databaseUrl.slice('sqlite:'.length);
  const db = new sqlite3.Database(file);
  const run = (sql: string) => new Promise<void>((resolve, reject) => db.run(sql, (err) => (err ? reject(err) : resolve())));
  await run('BEGIN EXCLUSIVE');
  return {
    waiting: async () => true, // the lock is held; that the create waits on it is checked by `answered`
    release: async () => {
      await run('ROLLBACK');
      await new Promise<void>((resolve) => db.close(() => resolve()));
    },
  };
}

describe('a process killed in the middle of a keyed create', () => {
  it('should leave the key free, so the retry creates the object at once and exactly once', async () => {
    const key = app.account.testKey;
    victim = await spawnBeside(app);
    const body = { email: 'crash-mid-create@example.com' };
    const headers = { 'Idempotency-Key': 'idem-crash-create' };
    const hold = await holdCustomersTable();
    let answered = false;
    const inFlight = victim.request('POST', '/v1/customers', { key, body, headers }).then(
      (res) => ((answered = true), res),
      () => null,
    );
    // PostgreSQL: the create's backend waits for the table, inside its transaction.
    await waitFor(() => hold.waiting(), { timeoutMs: 10_000, intervalMs: 50, what: 'the create to wait for the customers table' });
    if (DIALECT === 'sqlite') {
      // SQLite shows no waiter: the create is given time to get into its transaction (waiting
      // for the lock), and is seen held there by its answer not coming meanwhile.
      await assertStaysTrue(() => !answered, 500, 'the keyed create unanswered');
    }
    // Still unanswered: the create is held at the table (it reached the database), not refused.
    expect(answered).toBe(false);
    await victim.stop('SIGKILL');
    victim = undefined;
    expect(await inFlight).toBeNull();
    await hold.release();

    const started = Date.now();
    const retry = await app.request('POST', '/v1/customers', { key, body, headers });
    expect(retry.status).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBeUndefined();
    expect(Date.now() - started).toBeLessThan(5_000);
    const again = await app.request('POST', '/v1/customers', { key, body, headers });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(retry.text);
    const list = await app.request('GET', '/v1/customers?search=crash-mid-create', { key });
    expect(list.body.meta.total).toBe(1);
  }, 120_000);
});
