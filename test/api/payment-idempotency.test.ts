import { randomBytes } from 'node:crypto';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import type { HttpResponse } from '../helpers/http';

/**
 * `POST /v1/payments` with an Idempotency-Key takes the folded path: the payment service claims
 * the key in the statement (PostgreSQL) or transaction (SQLite) of the pending insert and stores
 * the response with its final write. These tests fail if that folding is broken or removed.
 */

let app: TestApp;
let key: string;
beforeAll(async () => {
  // A long API key cache: the statement counts below must not see the key lookup.
  app = await startTestApp({ env: { API_KEY_CACHE_MS: '60000' } });
  key = app.account.testKey;
});
afterAll(() => app.stop());

const BODY = { amount: 1999, currency: 'usd', paymentMethod: 'pm_card_visa' };
const DECLINED = { amount: 1999, currency: 'usd', paymentMethod: 'pm_card_declined' };

/** A key no other test (or earlier run) uses. */
const newKey = (label: string) => `pi-${label}-${randomBytes(6).toString('hex')}`;

const pay = (idem: string | undefined, body: unknown = BODY, k = key): Promise<HttpResponse> =>
  app.request('POST', '/v1/payments', { key: k, body, headers: idem === undefined ? {} : { 'Idempotency-Key': idem } });

const db = () => app.server.services.db;

async function paymentCount(): Promise<number> {
  const [row] = await db().select<{ n: number | string }>('SELECT count(*) AS n FROM payments');
  return Number(row.n);
}

async function paymentRows(id: string): Promise<number> {
  const [row] = await db().select<{ n: number | string }>('SELECT count(*) AS n FROM payments WHERE id = $1', [id]);
  return Number(row.n);
}

async function storedKey(idem: string) {
  return db().select<{ state: string; response_status: number | string | null; response_body: string | null }>(
    'SELECT state, response_status, response_body FROM idempotency_keys WHERE idempotency_key = $1',
    [idem],
  );
}

/** `Executing (<connection or transaction>): <sql>` as the onSql hook receives it. */
interface Logged {
  tx: string;
  sql: string;
}

function parseLogged(line: string): Logged {
  const m = /^Executing \(([^)]*)\): ([\s\S]*)$/.exec(line);
  if (!m) throw new Error(`unexpected SQL log line: ${line.slice(0, 120)}`);
  return { tx: m[1], sql: m[2].trim() };
}

/** Statements that write or read what a payment request writes (routing/gateway lookups excluded). */
const TOUCHES_REQUEST = /\b(idempotency_keys|payments|events|webhook_deliveries|gateway_transactions)\b/;

/** Warms every cache a payment request uses, then runs `fn` with an empty statement log. */
async function recordSql(fn: () => Promise<HttpResponse>): Promise<{ res: HttpResponse; sql: Logged[] }> {
  const warm = await pay(newKey('warm'));
  expect(warm.status).toBe(201);
  app.sql.length = 0;
  const res = await fn();
  const sql = app.sql.map(parseLogged);
  return { res, sql };
}

describe('POST /v1/payments with an Idempotency-Key: replay', () => {
  it('should replay a succeeded payment byte for byte with Idempotent-Replayed and write one row', async () => {
    const idem = newKey('replay');
    const before = await paymentCount();
    const first = await pay(idem);
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    expect(first.body.data.status).toBe('succeeded');
    const id = first.body.data.id as string;
    expect(id).toMatch(/^pay_/);
    expect(await paymentCount()).toBe(before + 1);

    const again = await pay(idem, { paymentMethod: 'pm_card_visa', currency: 'usd', amount: 1999 });
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    expect(await paymentRows(id)).toBe(1);
    expect(await paymentCount()).toBe(before + 1);
  });

  it('should answer the first request with the same payment the database holds', async () => {
    const first = await pay(newKey('faithful'));
    expect(first.status).toBe(201);
    const read = await app.request('GET', `/v1/payments/${first.body.data.id}`, { key });
    expect(read.status).toBe(200);
    expect(first.body.data).toEqual(read.body.data);
    // The envelope a route sends for { data, error: null }: those two keys, in that order.
    expect(first.text).toBe(JSON.stringify({ data: first.body.data, error: null }));
  });

  it('should replay a declined payment (201 failed) byte for byte', async () => {
    const idem = newKey('declined');
    const before = await paymentCount();
    const first = await pay(idem, DECLINED);
    expect(first.status).toBe(201);
    expect(first.body.data).toMatchObject({ status: 'failed', failureCode: 'card_declined' });
    const again = await pay(idem, DECLINED);
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    expect(await paymentRows(first.body.data.id)).toBe(1);
    expect(await paymentCount()).toBe(before + 1);
  });

  it('should store the response as completed, 201, with exactly the bytes sent', async () => {
    const idem = newKey('stored');
    const first = await pay(idem);
    expect(first.status).toBe(201);
    const rows = await storedKey(idem);
    expect(rows).toHaveLength(1);
    expect(rows[0].state).toBe('completed');
    expect(Number(rows[0].response_status)).toBe(201);
    expect(rows[0].response_body).toBe(first.text);

    const declinedKey = newKey('stored-declined');
    const declined = await pay(declinedKey, DECLINED);
    const [declinedRow] = await storedKey(declinedKey);
    expect(declinedRow.state).toBe('completed');
    expect(Number(declinedRow.response_status)).toBe(201);
    expect(declinedRow.response_body).toBe(declined.text);
  });
});

describe('POST /v1/payments with an Idempotency-Key: statements', () => {
  it('should run no idempotency statement of its own (claim with the insert, store with the final write)', async () => {
    const idem = newKey('sql');
    const { res, sql } = await recordSql(() => pay(idem));
    expect(res.status).toBe(201);
    const dump = sql.map((s) => `${s.tx}: ${s.sql}`).join('\n---\n');
    const idemStatements = sql.filter((s) => s.sql.includes('idempotency_keys'));
    // Whatever the dialect: one claim and one store, never a standalone claim before the payment
    // insert nor an UPDATE issued after the payment's final write on its own.
    expect(idemStatements.filter((s) => /INSERT INTO idempotency_keys/.test(s.sql))).toHaveLength(1);
    expect(idemStatements.filter((s) => /UPDATE idempotency_keys/.test(s.sql))).toHaveLength(1);
    expect(idemStatements.filter((s) => /^SELECT/.test(s.sql))).toHaveLength(0);

    if (DIALECT === 'postgres') {
      const touching = sql.filter((s) => TOUCHES_REQUEST.test(s.sql) && !/pg_notify/.test(s.sql));
      if (touching.length !== 2) throw new Error(`expected 2 statements, got ${touching.length}:\n${dump}`);
      const [claim, final] = touching;
      // One statement claims the key and inserts the pending row only if the claim took.
      expect(claim.sql).toMatch(/^WITH input AS /);
      expect(claim.sql).toMatch(/claim AS \(INSERT INTO idempotency_keys /);
      expect(claim.sql).toContain('INSERT INTO payments');
      expect(claim.sql).toContain('ON CONFLICT (scope, idempotency_key) DO NOTHING');
      expect(claim.sql).toMatch(/EXISTS \(SELECT 1 FROM claim /);
      // Keys are claimed in one order by every statement, so two batches cannot deadlock on them.
      expect(claim.sql).toMatch(/ORDER BY s\.idem_scope, s\.idem_key\s+ON CONFLICT/);
      expect(final.sql).toMatch(/^WITH /);
      expect(final.sql).toContain('UPDATE payments');
      expect(final.sql).toContain('INSERT INTO gateway_transactions');
      expect(final.sql).toContain('INSERT INTO events');
      expect(final.sql).toContain('INSERT INTO webhook_deliveries');
      expect(final.sql).toContain('UPDATE idempotency_keys');
      // Neither statement runs inside an explicit transaction: each is atomic on its own.
      expect(sql.some((s) => /^(BEGIN|START TRANSACTION|COMMIT)/i.test(s.sql))).toBe(false);
    } else {
      // SQLite: Sequelize logs `Executing (<transaction id>)` inside a transaction, `(default)` outside.
      const claim = sql.find((s) => /^INSERT INTO idempotency_keys/.test(s.sql))!;
      const insert = sql.find((s) => /^INSERT INTO payments/.test(s.sql))!;
      expect(insert).toBeDefined();
      expect(claim.tx).not.toBe('default');
      expect(insert.tx).toBe(claim.tx);
      const claimTx = sql.filter((s) => s.tx === claim.tx).map((s) => s.sql);
      expect(claimTx[0]).toMatch(/^BEGIN/);
      expect(claimTx[claimTx.length - 1]).toMatch(/^COMMIT/);
      // The claim comes first, then the insert, and nothing else is written in that transaction.
      expect(claimTx.slice(1, -1).map((s) => s.split(/\s/).slice(0, 3).join(' '))).toEqual([
        'INSERT INTO idempotency_keys', 'INSERT INTO payments',
      ]);

      const store = sql.find((s) => /^UPDATE idempotency_keys/.test(s.sql))!;
      const update = sql.find((s) => /^UPDATE payments/.test(s.sql))!;
      const event = sql.find((s) => /^INSERT INTO events/.test(s.sql))!;
      expect(update).toBeDefined();
      expect(event).toBeDefined();
      expect(store.tx).not.toBe('default');
      expect(store.tx).not.toBe(claim.tx);
      expect(update.tx).toBe(store.tx);
      expect(event.tx).toBe(store.tx);
      const finalTx = sql.filter((s) => s.tx === store.tx).map((s) => s.sql);
      expect(finalTx[0]).toMatch(/^BEGIN/);
      expect(finalTx[finalTx.length - 1]).toMatch(/^COMMIT/);
      expect(finalTx.indexOf(store.sql)).toBeGreaterThan(finalTx.indexOf(update.sql));

      // Every write of the request is inside one of those two transactions.
      const writes = sql.filter((s) => /^(INSERT|UPDATE|DELETE)\b/.test(s.sql));
      const outside = writes.filter((s) => s.tx !== claim.tx && s.tx !== store.tx);
      if (outside.length > 0) throw new Error(`writes outside the two transactions:\n${dump}`);
      expect(new Set(sql.filter((s) => /^BEGIN/.test(s.sql)).map((s) => s.tx)).size).toBe(2);
    }
  });

  it('should spend no more statements on a keyed payment than on an unkeyed one', async () => {
    const count = (sql: Logged[]) => sql.filter((s) => TOUCHES_REQUEST.test(s.sql) && !/^(BEGIN|COMMIT)/.test(s.sql)).length;
    const keyed = await recordSql(() => pay(newKey('count')));
    const unkeyed = await recordSql(() => pay(undefined));
    expect(keyed.res.status).toBe(201);
    expect(unkeyed.res.status).toBe(201);
    // PostgreSQL: 2 and 2 (the claim and the store ride in the payment's own statements).
    // SQLite: the claim and the store are one extra statement each inside the same transactions.
    const extra = DIALECT === 'postgres' ? 0 : 2;
    expect(count(keyed.sql)).toBe(count(unkeyed.sql) + extra);
    if (DIALECT === 'sqlite') {
      const tx = (sql: Logged[]) => new Set(sql.filter((s) => /^BEGIN/.test(s.sql)).map((s) => s.tx)).size;
      expect(tx(keyed.sql)).toBe(2);
      expect(tx(unkeyed.sql)).toBe(1);
    }
  });
});

describe('POST /v1/payments with an Idempotency-Key: conflicts', () => {
  it('should create exactly one payment from 10 concurrent first uses of a key', async () => {
    const idem = newKey('concurrent');
    const before = await paymentCount();
    const results = await Promise.all(Array.from({ length: 10 }, () => pay(idem)));
    const created = results.filter((r) => r.status === 201);
    expect(created.length).toBeGreaterThanOrEqual(1);
    for (const r of results) {
      expect(r.status).toBeLessThan(500);
      if (r.status === 201) {
        expect(r.text).toBe(created[0].text);
      } else {
        expect(r.status).toBe(409);
        expect(r.body.error).toMatchObject({ code: 'idempotency_key_in_use', param: 'Idempotency-Key' });
      }
    }
    expect(created.filter((r) => r.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
    expect(await paymentCount()).toBe(before + 1);
    expect(await paymentRows(created[0].body.data.id)).toBe(1);
    const [row] = await storedKey(idem);
    expect(row.state).toBe('completed');
    expect(row.response_body).toBe(created[0].text);
    // Once the first has finished, every retry is a replay.
    const later = await pay(idem);
    expect(later.status).toBe(201);
    expect(later.headers['idempotent-replayed']).toBe('true');
    expect(later.text).toBe(created[0].text);
  });

  it('should refuse the same key with a different body with 409 idempotency_key_reused and write nothing', async () => {
    const idem = newKey('reused');
    const first = await pay(idem);
    expect(first.status).toBe(201);
    const before = await paymentCount();
    app.sql.length = 0;
    const other = await pay(idem, { ...BODY, amount: 2999 });
    expect(other.status).toBe(409);
    // The folded claim's answer is final: the middleware does not claim the key a second time.
    expect(app.sql.filter((q) => q.includes('INSERT INTO idempotency_keys'))).toHaveLength(1);
    expect(other.headers['idempotent-replayed']).toBeUndefined();
    expect(other.body.data).toBeNull();
    expect(other.body.error).toMatchObject({ code: 'idempotency_key_reused', param: 'Idempotency-Key' });
    expect(await paymentCount()).toBe(before);
    // The stored answer is untouched.
    const [row] = await storedKey(idem);
    expect(row.response_body).toBe(first.text);
    const replay = await pay(idem);
    expect(replay.text).toBe(first.text);
  });

  it('should store a validation error, replay it, and refuse a valid body under that key', async () => {
    const idem = newKey('invalid');
    const before = await paymentCount();
    const invalid = { ...BODY, amount: -5 };
    const first = await pay(idem, invalid);
    expect(first.status).toBe(400);
    expect(first.body.error.param).toBe('amount');
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const [row] = await storedKey(idem);
    expect(row.state).toBe('completed');
    expect(Number(row.response_status)).toBe(400);
    expect(row.response_body).toBe(first.text);

    const again = await pay(idem, invalid);
    expect(again.status).toBe(400);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);

    const valid = await pay(idem, BODY);
    expect(valid.status).toBe(409);
    expect(valid.body.error).toMatchObject({ code: 'idempotency_key_reused', param: 'Idempotency-Key' });
    expect(await paymentCount()).toBe(before);
  });

  it('should store a 422 no_gateway_available (live key, no gateway) and replay it', async () => {
    const idem = newKey('no-gateway');
    const live = { amount: 300, currency: 'usd', paymentMethod: 'card', card: { number: '4242424242424242', expMonth: 12, expYear: 2034, cvc: '123' } };
    const first = await pay(idem, live, app.account.liveKey);
    expect(first.status).toBe(422);
    expect(first.body.error.code).toBe('no_gateway_available');
    const again = await pay(idem, live, app.account.liveKey);
    expect(again.status).toBe(422);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
  });

  it('should let an expired key create a new payment through the folded claim', async () => {
    const idem = newKey('expired');
    const first = await pay(idem);
    expect(first.status).toBe(201);
    const expired = await db().execute('UPDATE idempotency_keys SET expires_at = $1 WHERE idempotency_key = $2', [new Date(Date.now() - 60_000), idem]);
    expect(expired).toBe(1);
    const before = await paymentCount();

    const { res: second, sql } = await recordSql(() => pay(idem));
    expect(second.status).toBe(201);
    expect(second.headers['idempotent-replayed']).toBeUndefined();
    expect(second.body.data.id).not.toBe(first.body.data.id);
    expect(await paymentCount()).toBe(before + 2); // the warm-up and the new one
    expect(await paymentRows(second.body.data.id)).toBe(1);
    const [row] = await storedKey(idem);
    expect(row.state).toBe('completed');
    expect(row.response_body).toBe(second.text);

    // The expired row was deleted and the key claimed again together with the payment insert.
    expect(sql.filter((s) => /^DELETE FROM idempotency_keys/.test(s.sql))).toHaveLength(1);
    const claims = sql.filter((s) => /INSERT INTO idempotency_keys/.test(s.sql));
    expect(claims).toHaveLength(2);
    if (DIALECT === 'postgres') {
      for (const c of claims) {
        expect(c.sql).toMatch(/claim AS \(INSERT INTO idempotency_keys /);
        expect(c.sql).toContain('INSERT INTO payments');
      }
    } else {
      for (const c of claims) expect(c.tx).not.toBe('default');
      const insert = sql.find((s) => /^INSERT INTO payments/.test(s.sql))!;
      expect(insert.tx).toBe(claims[1].tx);
    }

    const replay = await pay(idem);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.text).toBe(second.text);
  });
});

describe('GraphQL createPayment with an Idempotency-Key (middleware claim, not folded)', () => {
  const mutation = 'mutation($input: CreatePaymentInput!) { createPayment(input: $input) { id status amount } }';
  const gql = (idem: string) =>
    app.request('POST', '/graphql', { key, body: { query: mutation, variables: { input: BODY } }, headers: { 'Idempotency-Key': idem } });

  it('should replay the same payment for the same key', async () => {
    const idem = newKey('graphql');
    const before = await paymentCount();
    const first = await gql(idem);
    expect(first.status).toBe(200);
    expect(first.body.errors).toBeUndefined();
    expect(first.body.data.createPayment).toMatchObject({ status: 'succeeded', amount: 1999 });
    const again = await gql(idem);
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.data.createPayment.id).toBe(first.body.data.createPayment.id);
    expect(again.text).toBe(first.text);
    expect(await paymentCount()).toBe(before + 1);
    const [row] = await storedKey(idem);
    expect(row.state).toBe('completed');
    expect(Number(row.response_status)).toBe(200);
    expect(row.response_body).toBe(first.text);
  });
});

describe('events and webhook deliveries written by the folded final write', () => {
  it('should write one payment event and one delivery per subscribed endpoint for a keyed payment', async () => {
    const account = await app.createAccount();
    const k = account.testKey;
    const endpoint = await app.request('POST', '/v1/webhook-endpoints', {
      key: k,
      body: { url: 'https://127.0.0.1:9/payorch-hook', events: ['payment.succeeded', 'payment.failed'] },
    });
    expect(endpoint.status).toBe(201);
    const endpointId = endpoint.body.data.id as string;

    for (const [body, type, status] of [[BODY, 'payment.succeeded', 'succeeded'], [DECLINED, 'payment.failed', 'failed']] as const) {
      const idem = newKey('events');
      const res = await pay(idem, body, k);
      expect(res.status).toBe(201);
      expect(res.body.data.status).toBe(status);
      const paymentId = res.body.data.id as string;

      const events = (await db().select<{ id: string; type: string; data: string }>(
        'SELECT id, type, data FROM events WHERE account_id = $1 AND type = $2',
        [account.accountId, type],
      )).filter((e) => JSON.parse(String(e.data)).object.id === paymentId);
      expect(events).toHaveLength(1);
      expect(JSON.parse(String(events[0].data)).object).toEqual(res.body.data);

      const deliveries = await db().select<{ endpoint_id: string; event_type: string; status: string; payload: string }>(
        'SELECT endpoint_id, event_type, status, payload FROM webhook_deliveries WHERE event_id = $1',
        [events[0].id],
      );
      expect(deliveries).toHaveLength(1);
      expect(deliveries[0]).toMatchObject({ endpoint_id: endpointId, event_type: type });
      const payload = JSON.parse(deliveries[0].payload);
      expect(payload).toMatchObject({ id: events[0].id, object: 'event', type });
      expect(payload.data.object).toEqual(res.body.data);

      // The stored response of the same write is there too, and replays.
      const [row] = await storedKey(idem);
      expect(row.response_body).toBe(res.text);
      const replay = await pay(idem, body, k);
      expect(replay.text).toBe(res.text);
      expect(replay.headers['idempotent-replayed']).toBe('true');
    }
    // Replays wrote no further event.
    const [all] = await db().select<{ n: number | string }>('SELECT count(*) AS n FROM events WHERE account_id = $1 AND type LIKE $2', [account.accountId, 'payment.%']);
    expect(Number(all.n)).toBe(2);
  });
});
