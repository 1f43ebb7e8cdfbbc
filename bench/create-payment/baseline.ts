/**
 * Baseline for bench/create-payment: the minimal writes one payment needs (idempotency row,
 * payment row, event row, delivery row, in one transaction) from a bare Koa route over HTTPS,
 * with raw prepared statements (pg) or the sqlite3 driver. No validation, no routing, no ORM.
 * Without DATABASE_URL it writes nothing: the figure for HTTPS and the load generator alone.
 *
 * BASELINE_COMMITS=2 (PostgreSQL): the same rows in the two transactions a payment that calls a
 * gateway needs to survive a crash, as the service writes it: first the idempotency row and the
 * payment as pending, committed before the gateway is called (a crash after the gateway took the
 * money must find the payment to recover it), then the payment's outcome, the event, the delivery
 * and the idempotency row's answer, committed together.
 */
import https from 'node:https';
import { randomBytes } from 'node:crypto';
import Koa from 'koa';
import pg from 'pg';
import sqlite3 from 'sqlite3';
import { generateSelfSigned } from '../../src/tls';
// The service's session settings (no JIT), so the two sides run their statements alike.
import { POSTGRES_SESSION_OPTIONS } from '../../src/db/postgres-session';

const id = (p: string) => `${p}_${randomBytes(12).toString('hex')}`;

async function main(): Promise<void> {
  const url = process.env.DATABASE_URL ?? '';
  const port = Number(process.env.PORT ?? 0);
  let write: (key: string, body: string) => Promise<string>;
  let settings = '';
  const schema = [
    'CREATE TABLE IF NOT EXISTS b_idem (scope TEXT, k TEXT, state TEXT, body TEXT, created_at TEXT, PRIMARY KEY (scope, k))',
    'CREATE TABLE IF NOT EXISTS b_payments (id TEXT PRIMARY KEY, account_id TEXT, mode TEXT, amount BIGINT, currency TEXT, status TEXT, details TEXT, created_at TEXT)',
    'CREATE TABLE IF NOT EXISTS b_events (id TEXT PRIMARY KEY, account_id TEXT, type TEXT, data TEXT, created_at TEXT)',
    'CREATE TABLE IF NOT EXISTS b_deliveries (id TEXT PRIMARY KEY, event_id TEXT, status TEXT, next_attempt_at TEXT)',
  ];
  if (!url) {
    write = async (_key, body) => JSON.stringify({ id: id('pay'), object: 'payment', status: 'succeeded', body: JSON.parse(body) });
  } else if (url.startsWith('postgres') && process.env.BASELINE_COMMITS === '2') {
    const pool = new pg.Pool({ connectionString: url, max: 10, options: POSTGRES_SESSION_OPTIONS });
    for (const s of schema) await pool.query(s);
    write = async (key, body) => {
      const c = await pool.connect();
      try {
        const pay = id('pay');
        const evt = id('evt');
        const pending = JSON.stringify({ id: pay, object: 'payment', status: 'pending', body: JSON.parse(body) });
        const now = new Date().toISOString();
        await c.query('BEGIN');
        await c.query({ name: 'i', text: 'INSERT INTO b_idem VALUES ($1, $2, $3, $4, $5)', values: ['acct', key, 'pending', null, now] });
        await c.query({ name: 'p', text: 'INSERT INTO b_payments VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', values: [pay, 'acct', 'test', 1000, 'USD', 'pending', pending, now] });
        await c.query('COMMIT');
        // The gateway's answer would come here.
        const payment = JSON.stringify({ id: pay, object: 'payment', status: 'succeeded', body: JSON.parse(body) });
        await c.query('BEGIN');
        await c.query({ name: 'u', text: "UPDATE b_payments SET status = 'succeeded', details = $2 WHERE id = $1 AND status = 'pending'", values: [pay, payment] });
        await c.query({ name: 'e', text: 'INSERT INTO b_events VALUES ($1, $2, $3, $4, $5)', values: [evt, 'acct', 'payment.succeeded', payment, now] });
        await c.query({ name: 'd', text: 'INSERT INTO b_deliveries VALUES ($1, $2, $3, $4)', values: [id('whd'), evt, 'pending', now] });
        await c.query({ name: 'a', text: "UPDATE b_idem SET state = 'done', body = $3 WHERE scope = $1 AND k = $2", values: ['acct', key, payment] });
        await c.query('COMMIT');
        return payment;
      } finally {
        c.release();
      }
    };
  } else if (url.startsWith('postgres')) {
    const pool = new pg.Pool({ connectionString: url, max: 10, options: POSTGRES_SESSION_OPTIONS });
    for (const s of schema) await pool.query(s);
    write = async (key, body) => {
      const c = await pool.connect();
      try {
        const now = new Date().toISOString();
        const pay = id('pay');
        const evt = id('evt');
        const payment = JSON.stringify({ id: pay, object: 'payment', status: 'succeeded', body: JSON.parse(body) });
        await c.query('BEGIN');
        await c.query({ name: 'i', text: 'INSERT INTO b_idem VALUES ($1, $2, $3, $4, $5)', values: ['acct', key, 'done', payment, now] });
        await c.query({ name: 'p', text: 'INSERT INTO b_payments VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', values: [pay, 'acct', 'test', 1000, 'USD', 'succeeded', '{}', now] });
        await c.query({ name: 'e', text: 'INSERT INTO b_events VALUES ($1, $2, $3, $4, $5)', values: [evt, 'acct', 'payment.succeeded', payment, now] });
        await c.query({ name: 'd', text: 'INSERT INTO b_deliveries VALUES ($1, $2, $3, $4)', values: [id('whd'), evt, 'pending', now] });
        await c.query('COMMIT');
        return payment;
      } finally {
        c.release();
      }
    };
  } else {
    const file = url.replace(/^sqlite:/, '');
    const db = new sqlite3.Database(file);
    const run = (sql: string, params: unknown[] = []) =>
      new Promise<void>((resolve, reject) => db.run(sql, params, (err) => (err ? reject(err) : resolve())));
    await run('PRAGMA journal_mode=WAL');
    await run('PRAGMA synchronous=NORMAL');
    // Read back and printed: bench/create-payment compares them with the service's.
    const pragma = (name: string) => new Promise<unknown>((resolve, reject) => db.get(`PRAGMA ${name}`, (err, row: Record<string, unknown>) => (err ? reject(err) : resolve(row[name]))));
    settings = ` journal_mode=${String(await pragma('journal_mode'))} synchronous=${['OFF', 'NORMAL', 'FULL', 'EXTRA'][Number(await pragma('synchronous'))]}`;
    for (const s of schema) await run(s);
    let queue: Promise<unknown> = Promise.resolve();
    write = (key, body) => {
      const job = queue.then(async () => {
        const now = new Date().toISOString();
        const pay = id('pay');
        const evt = id('evt');
        const payment = JSON.stringify({ id: pay, object: 'payment', status: 'succeeded', body: JSON.parse(body) });
        await run('BEGIN IMMEDIATE');
        await run('INSERT INTO b_idem VALUES (?, ?, ?, ?, ?)', ['acct', key, 'done', payment, now]);
        await run('INSERT INTO b_payments VALUES (?, ?, ?, ?, ?, ?, ?, ?)', [pay, 'acct', 'test', 1000, 'USD', 'succeeded', '{}', now]);
        await run('INSERT INTO b_events VALUES (?, ?, ?, ?, ?)', [evt, 'acct', 'payment.succeeded', payment, now]);
        await run('INSERT INTO b_deliveries VALUES (?, ?, ?, ?)', [id('whd'), evt, 'pending', now]);
        await run('COMMIT');
        return payment;
      });
      queue = job.catch(() => undefined);
      return job as Promise<string>;
    };
  }
  const app = new Koa();
  app.use(async (ctx) => {
    const chunks: Buffer[] = [];
    for await (const c of ctx.req) chunks.push(c as Buffer);
    const payment = await write(ctx.get('idempotency-key'), Buffer.concat(chunks).toString() || '{}');
    ctx.status = 201;
    ctx.type = 'application/json';
    ctx.body = `{"data":${payment},"error":null}`;
  });
  const tls = await generateSelfSigned();
  const handle = app.callback();
  // Koa catches a request's failures itself: its promise never rejects.
  const server = https.createServer({ cert: tls.cert, key: tls.key }, (req, res) => void handle(req, res));
  server.listen(port, '127.0.0.1', () => {
    const address = server.address() as { port: number };
    process.stdout.write(`baseline listening ${address.port}${settings}\n`);
  });
}

void main();
