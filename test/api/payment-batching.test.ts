import { randomBytes } from 'node:crypto';
import { startTestApp, type TestApp } from '../helpers/app';
import { DIALECT } from '../helpers/db';
import { IdempotencyStore } from '../../src/modules/idempotency/idempotency.store';
import { PaymentBatchStore } from '../../src/modules/payments/payment-batch.store';
import { GatewayTransactionStore } from '../../src/modules/payments/gateway-transaction.store';
import type { Payment } from '../../src/modules/payments/payment.service';
import type { RequestContext } from '../../src/core/context';
import { storedRestBody, type ObjectClaim } from '../../src/core/idempotency';
import { newId } from '../../src/core/ids';
import { CheckoutStore } from '../../src/modules/checkout/checkout.store';
import { waitFor } from '../helpers/wait';

/**
 * Concurrent `POST /v1/payments` share their writes (group commit): on PostgreSQL one pending
 * insert and one settling statement for every payment ready at that moment; on SQLite each
 * payment's statements, but those waiting for the one writer together under one COMMIT. Each
 * payment must still come out exactly as if written alone.
 */

let app: TestApp;
let key: string;
let accountId: string;
beforeAll(async () => {
  app = await startTestApp({ env: { API_KEY_CACHE_MS: '60000' } });
  ({ testKey: key, accountId } = await app.createAccount());
});
afterAll(() => app.stop());

const db = () => app.server.services.db;
const newKey = () => `pb-${randomBytes(8).toString('hex')}`;

describe('concurrent payments', () => {
  it('should write each of many concurrent payments exactly as if alone, sharing statements on PostgreSQL', async () => {
    // Warm the caches a payment reads (key, routing, gateways) so the burst arrives together.
    expect((await app.request('POST', '/v1/payments', { key, body: { amount: 100, currency: 'usd', paymentMethod: 'pm_card_visa' } })).status).toBe(201);
    app.sql.length = 0;
    const plans = Array.from({ length: 24 }, (_, i) => ({
      idem: i % 3 === 2 ? undefined : newKey(),
      body: { amount: 1000 + i, currency: 'usd', paymentMethod: i % 4 === 1 ? 'pm_card_declined' : 'pm_card_visa', metadata: { n: String(i) } },
    }));
    const results = await Promise.all(plans.map((p) =>
      app.request('POST', '/v1/payments', { key, body: p.body, headers: p.idem ? { 'Idempotency-Key': p.idem } : {} })));
    const burst = [...app.sql];

    const ids = new Set<string>();
    for (const [i, res] of results.entries()) {
      expect(res.status).toBe(201);
      const pay = res.body.data;
      ids.add(pay.id);
      expect(pay.amount).toBe(1000 + i);
      expect(pay.metadata).toEqual({ n: String(i) });
      expect(pay.status).toBe(i % 4 === 1 ? 'failed' : 'succeeded');
      // What was answered is what was stored.
      const read = await app.request('GET', `/v1/payments/${pay.id}`, { key });
      expect(read.body.data).toEqual(pay);
      // One event of the right type, carrying this payment.
      const [event] = await db().select<{ type: string; data: string }>('SELECT type, data FROM events WHERE data LIKE $1', [`%"id":"${pay.id}"%`]);
      expect(event.type).toBe(pay.status === 'succeeded' ? 'payment.succeeded' : 'payment.failed');
      expect(JSON.parse(event.data)).toEqual({ object: pay });
      const calls = await app.request('GET', `/v1/payments/${pay.id}/gateway-transactions`, { key });
      expect(calls.body.data).toHaveLength(1);
      expect(calls.body.data[0]).toMatchObject({ paymentId: pay.id, kind: 'charge', outcome: pay.status === 'succeeded' ? 'succeeded' : 'declined' });
      if (plans[i].idem) {
        const [stored] = await db().select<{ state: string; response_body: string }>(
          'SELECT state, response_body FROM idempotency_keys WHERE idempotency_key = $1', [plans[i].idem],
        );
        expect(stored.state).toBe('completed');
        // The payment is stored; REST replays it in its own envelope, byte for byte.
        expect(storedRestBody(stored.response_body)).toBe(res.text);
        const again = await app.request('POST', '/v1/payments', { key, body: plans[i].body, headers: { 'Idempotency-Key': plans[i].idem! } });
        expect(again.headers['idempotent-replayed']).toBe('true');
        expect(again.text).toBe(res.text);
      }
    }
    expect(ids.size).toBe(24);

    const inserts = burst.filter((s) => /INSERT INTO payments/.test(s));
    const settles = burst.filter((s) => /UPDATE payments( p)? SET status/.test(s));
    if (DIALECT === 'postgres') {
      // Fewer statements than payments: concurrent payments shared them.
      expect(inserts.length).toBeLessThan(24);
      expect(settles.length).toBeLessThan(24);
      expect(inserts.length).toBeGreaterThanOrEqual(1);
    } else {
      expect(inserts).toHaveLength(24);
      expect(settles).toHaveLength(24);
    }
  });

  it('should write the payments waiting for the SQLite writer together under one transaction, each in a savepoint', async () => {
    if (DIALECT !== 'sqlite') return; // PostgreSQL: PaymentBatchStore, below
    // Warm the caches a payment reads, so the burst reaches the writer together.
    expect((await app.request('POST', '/v1/payments', { key, body: { amount: 100, currency: 'usd', paymentMethod: 'pm_card_visa' } })).status).toBe(201);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const writer = db().transaction(() => gate);
    const plans = Array.from({ length: 6 }, (_, i) => ({ idem: newKey(), body: { amount: 2000 + i, currency: 'usd', paymentMethod: 'pm_card_visa' } }));
    const results = Promise.all(plans.map((p) => app.request('POST', '/v1/payments', { key, body: p.body, headers: { 'Idempotency-Key': p.idem } })));
    await waitFor(() => db().sqliteWaiting >= 6, { timeoutMs: 10_000, intervalMs: 10, what: 'six payments waiting for the writer' });
    const from = app.sql.length;
    release();
    await writer;
    const answered = await results;
    for (const [i, res] of answered.entries()) {
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({ amount: 2000 + i, status: 'succeeded' });
    }
    const statements = app.sql.slice(from).map((s) => s.replace(/^Executing \([^)]*\): /, ''));
    // The six pending rows: one BEGIN, six savepoints, one COMMIT.
    const begins = (list: string[]) => list.filter((s) => s.startsWith('BEGIN IMMEDIATE'));
    const begin = statements.findIndex((s) => s.startsWith('BEGIN IMMEDIATE'));
    const group = statements.slice(begin, statements.indexOf('COMMIT', begin) + 1);
    expect(group.filter((s) => /^INSERT INTO payments/.test(s))).toHaveLength(6);
    expect(group.filter((s) => /^INSERT INTO idempotency_keys/.test(s))).toHaveLength(6);
    expect(group.filter((s) => /(^|; )SAVEPOINT payorch_item$/.test(s))).toHaveLength(6);
    expect(begins(group)).toHaveLength(1);
    // Fewer transactions than writes (6 pending + 6 settling) in all.
    expect(begins(statements).length).toBeLessThan(12);
  });

  it('should take text with an unpaired surrogate as U+FFFD, answered, stored and replayed alike', async () => {
    const idem = newKey();
    const body = { amount: 777, currency: 'usd', paymentMethod: 'pm_card_visa', description: 'odd \ud800 text', metadata: { note: '\udc00' } };
    const res = await app.request('POST', '/v1/payments', { key, body, headers: { 'Idempotency-Key': idem } });
    expect(res.status).toBe(201);
    expect(res.body.data.description).toBe('odd \uFFFD text');
    expect(res.body.data.metadata).toEqual({ note: '\uFFFD' });
    const read = await app.request('GET', `/v1/payments/${res.body.data.id}`, { key });
    expect(read.body.data).toEqual(res.body.data);
    const again = await app.request('POST', '/v1/payments', { key, body, headers: { 'Idempotency-Key': idem } });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(res.text);
  });

  it('should make concurrent first uses of one key in one burst create exactly one payment', async () => {
    const idem = newKey();
    const body = { amount: 4321, currency: 'usd', paymentMethod: 'pm_card_visa' };
    const [before] = await db().select<{ n: number | string }>('SELECT count(*) AS n FROM payments WHERE amount = 4321');
    const results = await Promise.all(Array.from({ length: 8 }, () =>
      app.request('POST', '/v1/payments', { key, body, headers: { 'Idempotency-Key': idem } })));
    const fresh = results.filter((r) => r.status === 201 && r.headers['idempotent-replayed'] === undefined);
    expect(fresh).toHaveLength(1);
    for (const r of results) expect([201, 409]).toContain(r.status);
    const [after] = await db().select<{ n: number | string }>('SELECT count(*) AS n FROM payments WHERE amount = 4321');
    expect(Number(after.n)).toBe(Number(before.n) + 1);
  });
});

// The batched writer exists on PostgreSQL only (SQLite groups whole transactions: Database.transaction).
if (DIALECT === 'postgres') {
  describe('PaymentBatchStore (PostgreSQL)', () => {
    const writer = () => {
      const s = app.server.services;
      return new PaymentBatchStore(s.db, s.events, new GatewayTransactionStore(s.db), new IdempotencyStore(s.db, s.clock, s.config.idempotencyTtlHours), { maxBatch: 64, maxInFlight: 1 });
    };
    const ctx = (): RequestContext => ({ accountId: 'acct_batch_test', mode: 'test', permissions: ['*'], requestId: 'req_batch_test', clock: app.server.services.clock });
    const payment = (): Payment => {
      const now = new Date().toISOString();
      return {
        id: newId('pay'), object: 'payment', livemode: false, customerId: null, amount: 500, currency: 'usd', originalCurrency: 'usd',
        originalAmount: null, exchangeRate: null, paymentMethod: 'pm_card_visa',
        paymentMethodDetails: { type: 'card', brand: 'visa', last4: '4242', expMonth: null, expYear: null, fingerprint: null },
        description: null, receiptEmail: null, metadata: {}, status: 'pending', failureCode: null, failureMessage: null, amountRefunded: 0, refunded: false,
        captureMethod: 'automatic', amountCapturable: 0, amountCaptured: 0, nextAction: null,
        gatewayId: null, attempts: [], invoiceId: null, subscriptionId: null, checkoutSessionId: null, paymentLinkId: null, createdAt: now, updatedAt: now,
      };
    };
    const handle = (k: string, p: Payment): ObjectClaim => ({ scope: 'acct_batch_test:test', key: k, fingerprint: 'f', status: 201, objectId: p.id });
    const pending = (p: Payment, k?: string) => ({ ctx: ctx(), payment: p, plan: '[]', leaseMs: 60_000, searchText: '', idem: k ? handle(k, p) : undefined });

    it('should let only the first of two writes with one Idempotency-Key submitted together insert', async () => {
      const w = writer();
      const k = newKey();
      const [a, b, c] = [payment(), payment(), payment()];
      const results = await Promise.all([w.writePending(pending(a, k)), w.writePending(pending(b, k)), w.writePending(pending(c, newKey()))]);
      expect(results).toEqual([true, false, true]);
      const rows = await db().select<{ id: string }>('SELECT id FROM payments WHERE id IN ($1, $2, $3) ORDER BY id', [a.id, b.id, c.id]);
      expect(rows.map((r) => r.id).sort()).toEqual([a.id, c.id].sort());
    });

    it('should settle every payment of a batch when one gateway answer carries text PostgreSQL refuses', async () => {
      const w = writer();
      const [a, b] = [payment(), payment()];
      expect(await Promise.all([w.writePending(pending(a)), w.writePending(pending(b))])).toEqual([true, true]);
      const result = { outcome: 'declined' as const, reference: null, declineCode: 'card_declined', message: 'bad\u0000text', latencyMs: 1, request: {}, response: { m: 'x\ud800' } };
      const settle = (p: Payment, message: string | null) => {
        const done: Payment = { ...p, status: 'failed', failureCode: 'card_declined', failureMessage: 'The card was declined.' };
        return w.writeFinal({
          ctx: ctx(), done, doneJson: JSON.stringify(done), reference: null, eventType: 'payment.failed',
          log: [{ kind: 'charge', gatewayId: 'gw_x', gatewayType: 'stripe', attempt: 1, idempotencyKey: `${p.id}_a1`, result: { ...result, message } }],
        });
      };
      expect(await Promise.all([settle(a, 'bad\u0000text'), settle(b, 'fine')])).toEqual([true, true]);
      const rows = await db().select<{ payment_id: string; message: string; response: string }>(
        'SELECT payment_id, message, response FROM gateway_transactions WHERE payment_id IN ($1, $2)', [a.id, b.id],
      );
      const byPayment = Object.fromEntries(rows.map((r) => [r.payment_id, r]));
      expect(byPayment[a.id].message).toBe('bad\uFFFDtext');
      expect(JSON.parse(byPayment[a.id].response)).toEqual({ m: 'x\ud800' }); // an escape inside the stored JSON
      expect(byPayment[b.id].message).toBe('fine');
    });

    it('should answer committed payments as settled even when an event listener throws', async () => {
      const w = writer();
      const [a, b] = [payment(), payment()];
      expect(await Promise.all([w.writePending(pending(a)), w.writePending(pending(b))])).toEqual([true, true]);
      const off = app.server.services.bus.subscribe(() => {
        throw new Error('listener bug');
      });
      try {
        const settle = (p: Payment) => {
          const done: Payment = { ...p, status: 'succeeded' };
          return w.writeFinal({ ctx: ctx(), done, doneJson: JSON.stringify(done), reference: 'ref', log: [], eventType: 'payment.succeeded' });
        };
        expect(await Promise.all([settle(a), settle(b)])).toEqual([true, true]);
      } finally {
        off();
      }
    });

    it('should insert only one of two payments holding one checkout session submitted together, and complete it with its settle', async () => {
      const w = writer();
      w.useHolds(new CheckoutStore(db()));
      const s = (await app.request('POST', '/v1/checkout-sessions', { key, body: { mode: 'payment', amount: 500, currency: 'usd' } })).body.data;
      const own = (): RequestContext => ({ ...ctx(), accountId });
      const now = app.server.services.clock.now();
      const holding = (p: Payment, token: string) => ({
        ...pending({ ...p, checkoutSessionId: s.id }), ctx: own(),
        hold: { paymentId: p.id, holdId: s.id, token, leaseMs: 60_000, accountId, mode: 'test', now },
      });
      const [a, b] = [payment(), payment()];
      const results = await Promise.all([w.writePending(holding(a, 'token-a')), w.writePending(holding(b, 'token-b'))]);
      expect([...results].sort()).toEqual([true, 'hold_refused'].sort());
      const winner = results[0] === true ? a : b;
      const rows = await db().select<{ id: string }>('SELECT id FROM payments WHERE checkout_session_id = $1', [s.id]);
      expect(rows.map((r) => r.id)).toEqual([winner.id]);
      const token = winner === a ? 'token-a' : 'token-b';
      expect((await db().select<{ paying_token: string }>('SELECT paying_token FROM checkout_sessions WHERE id = $1', [s.id]))[0].paying_token).toBe(token);
      // Settled as succeeded: the session is completed in the same statement, with its event.
      const done: Payment = { ...winner, checkoutSessionId: s.id, status: 'succeeded', updatedAt: now.toISOString() };
      const object = { id: s.id, object: 'checkout_session', status: 'complete', paymentId: winner.id };
      expect(await w.writeFinal({
        ctx: own(), done, doneJson: JSON.stringify(done), reference: 'ref', log: [], eventType: 'payment.succeeded',
        hold: { holdId: s.id, token, paymentId: winner.id, customerId: null, now, outcome: 'complete', event: { type: 'checkout.session.completed', object: object as never }, json: JSON.stringify(object) },
      })).toBe(true);
      const [session] = await db().select<{ status: string; payment_id: string; paying_token: string | null }>('SELECT status, payment_id, paying_token FROM checkout_sessions WHERE id = $1', [s.id]);
      expect(session).toEqual({ status: 'complete', payment_id: winner.id, paying_token: null });
      const events = await db().select<{ data: string }>("SELECT data FROM events WHERE type = 'checkout.session.completed' AND data LIKE $1", [`%${s.id}%`]);
      expect(events.map((e) => JSON.parse(e.data))).toEqual([{ object }]);
    });

    it('should settle only the payments still pending, and record events and responses for those alone', async () => {
      const w = writer();
      const [a, b] = [payment(), payment()];
      const ka = newKey();
      const kb = newKey();
      expect(await Promise.all([w.writePending(pending(a, ka)), w.writePending(pending(b, kb))])).toEqual([true, true]);
      // b is settled by someone else first (recovery, say).
      await db().execute("UPDATE payments SET status = 'failed' WHERE id = $1", [b.id]);
      const settle = (p: Payment, k: string) => {
        const done: Payment = { ...p, status: 'succeeded' };
        return w.writeFinal({ ctx: ctx(), done, doneJson: JSON.stringify(done), reference: 'ref', log: [], eventType: 'payment.succeeded', idem: handle(k, p) });
      };
      expect(await Promise.all([settle(a, ka), settle(b, kb)])).toEqual([true, false]);
      const statuses = await db().select<{ id: string; status: string }>('SELECT id, status FROM payments WHERE id IN ($1, $2)', [a.id, b.id]);
      expect(Object.fromEntries(statuses.map((r) => [r.id, r.status]))).toEqual({ [a.id]: 'succeeded', [b.id]: 'failed' });
      const events = await db().select<{ data: string }>("SELECT data FROM events WHERE account_id = 'acct_batch_test' AND (data LIKE $1 OR data LIKE $2)", [`%${a.id}%`, `%${b.id}%`]);
      expect(events).toHaveLength(1);
      expect(JSON.parse(events[0].data).object.id).toBe(a.id);
      const keys = await db().select<{ idempotency_key: string; state: string; response_body: string | null }>(
        'SELECT idempotency_key, state, response_body FROM idempotency_keys WHERE idempotency_key IN ($1, $2)', [ka, kb],
      );
      const byKey = Object.fromEntries(keys.map((r) => [r.idempotency_key, r]));
      expect(byKey[ka].state).toBe('completed');
      // The object is stored; each transport wraps it in its own envelope on a replay.
      expect(byKey[ka].response_body).toBe(JSON.stringify({ ...a, status: 'succeeded' }));
      expect(byKey[kb].state).toBe('running');
    });
  });
}
