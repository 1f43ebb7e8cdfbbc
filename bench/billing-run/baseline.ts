/**
 * The baseline of bench/billing-run: the rows one billed subscription leaves, written for every
 * due subscription directly with `pg`, BATCH subscriptions per statement, one transaction per
 * batch, two connections (the machine's two cores).
 *
 * The rows are the service's own: before the due subscriptions are seeded, the template database
 * bills one sample subscription through `BillingService.step` and keeps every row that wrote
 * (`captureSample`: invoice, line item, payment, gateway transaction, events, idempotency key),
 * then removes them. The baseline copies those rows for each due subscription with new ids (the
 * subscription's, its customer's and card's where the sample had its own), inserts them with
 * `json_populate_recordset`, takes the invoice numbers from the account's sequence in one upsert
 * a batch, and moves each subscription's period on in one UPDATE a batch: the same inserts and
 * updates, with the round trips a batch instead of a few dozen a subscription.
 */
import { Client } from 'pg';
// The service's session settings (no JIT), so the two sides run their statements alike.
import { POSTGRES_SESSION_OPTIONS } from '../../src/db/postgres-session';
import { newId, type IdPrefix } from '../../src/core/ids';
import type { Database } from '../../src/db/database';

export const BATCH = 1_000;
const CONNECTIONS = 2;
const TABLES = ['invoices', 'invoice_line_items', 'payments', 'gateway_transactions', 'events', 'idempotency_keys'] as const;

type Row = Record<string, unknown>;
export interface Sample {
  subscriptionId: string;
  customerId: string;
  paymentMethodId: string;
  rows: Record<string, Row[]>;
  /** The subscription's columns the billing changed, as they are after it. */
  subscriptionAfter: Row;
}

async function tableRows(db: Database, table: string): Promise<Array<{ k: string; j: string }>> {
  return db.select<{ k: string; j: string }>(`SELECT ctid::text AS k, row_to_json(t)::text AS j FROM ${table} t`);
}

/** Bills one subscription through the service and keeps (then removes) the rows it wrote. */
export async function captureSample(db: Database, bill: () => Promise<void>, sub: { id: string; customerId: string; paymentMethodId: string }): Promise<Sample> {
  const before = new Map<string, Set<string>>();
  for (const t of TABLES) before.set(t, new Set((await tableRows(db, t)).map((r) => r.k)));
  await bill();
  const rows: Record<string, Row[]> = {};
  for (const t of TABLES) {
    const added = (await tableRows(db, t)).filter((r) => !before.get(t)!.has(r.k));
    rows[t] = added.map((r) => JSON.parse(r.j) as Row);
    if (added.length) await db.execute(`DELETE FROM ${t} WHERE ctid::text IN (${db.jsonTextList('$1')})`, [JSON.stringify(added.map((r) => r.k))]);
  }
  const [after] = await db.select<Row>('SELECT row_to_json(s)::text AS j FROM subscriptions s WHERE id = $1', [sub.id]);
  await db.execute('DELETE FROM subscriptions WHERE id = $1', [sub.id]);
  return { subscriptionId: sub.id, customerId: sub.customerId, paymentMethodId: sub.paymentMethodId, rows, subscriptionAfter: JSON.parse(after.j as string) as Row };
}

const PREFIXES: Record<string, IdPrefix> = { in: 'in', il: 'il', pay: 'pay', gtx: 'gtx', evt: 'evt' };

/** The sample's rows as JSON text with every id of its own replaced, for one subscription. */
function rowsFor(sample: Sample, texts: Record<string, string>, ownIds: string[], target: { id: string; customerId: string; paymentMethodId: string }): Record<string, string> {
  const map = new Map<string, string>([[sample.subscriptionId, target.id], [sample.customerId, target.customerId], [sample.paymentMethodId, target.paymentMethodId]]);
  for (const id of ownIds) map.set(id, newId(PREFIXES[id.split('_')[0]]));
  const pattern = new RegExp([...map.keys()].map((k) => k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
  const out: Record<string, string> = {};
  for (const [t, text] of Object.entries(texts)) out[t] = text.replace(pattern, (m) => map.get(m)!);
  return out;
}

export async function runBaseline(url: string, sample: Sample): Promise<{ ms: number; batch: number }> {
  const setup = new Client({ connectionString: url, options: POSTGRES_SESSION_OPTIONS });
  await setup.connect();
  const subs = (await setup.query<{ id: string; customer_id: string; default_payment_method_id: string; account_id: string; mode: string }>(
    'SELECT id, customer_id, default_payment_method_id, account_id, mode FROM subscriptions WHERE next_billing_at <= now() ORDER BY next_billing_at, id',
  )).rows;
  await setup.end();
  // Ids the sample's rows have of their own (invoice, lines, payment, transactions, events), and
  // the rows without their number (set a row at a time below).
  const ownIds: string[] = [];
  for (const t of TABLES) for (const r of sample.rows[t]) if (typeof r.id === 'string' && PREFIXES[r.id.split('_')[0]]) ownIds.push(r.id);
  const texts: Record<string, string> = {};
  for (const t of TABLES) texts[t] = JSON.stringify(sample.rows[t]);
  const after = sample.subscriptionAfter;
  const [account, mode] = [subs[0]?.account_id, subs[0]?.mode];
  const invoice = sample.rows.invoices[0];
  const prefix = String(invoice.number).replace(/-?\d+$/, '');
  const pad = String(invoice.number).length - prefix.length - (String(invoice.number).slice(prefix.length).startsWith('-') ? 1 : 0);
  const sep = String(invoice.number).slice(prefix.length).startsWith('-') ? '-' : '';

  const clients = await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    const c = new Client({ connectionString: url, options: POSTGRES_SESSION_OPTIONS });
    await c.connect();
    return c;
  }));
  let next = 0;
  const started = performance.now();
  await Promise.all(clients.map(async (c) => {
    for (;;) {
      const batch = subs.slice(next, next + BATCH);
      next += BATCH;
      if (batch.length === 0) return;
      // Each table's rows as JSON text pieces (the sample's text with its ids replaced); only the
      // invoice is parsed, for its number.
      const perTable: Record<string, string[]> = Object.fromEntries(TABLES.map((t) => [t, []]));
      const invoices: Row[] = [];
      const periods: Row[] = [];
      for (const s of batch) {
        const made = rowsFor(sample, texts, ownIds, { id: s.id, customerId: s.customer_id, paymentMethodId: s.default_payment_method_id });
        for (const t of TABLES) if (t !== 'invoices' && made[t].length > 2) perTable[t].push(made[t].slice(1, -1));
        const inv = (JSON.parse(made.invoices) as Row[])[0];
        invoices.push(inv);
        periods.push({ id: s.id, latest_invoice_id: inv.id });
      }
      await c.query('BEGIN');
      const { rows: [seq] } = await c.query<{ last_number: string }>(
        `INSERT INTO invoice_number_sequences (account_id, mode, last_number, updated_at) VALUES ($1, $2, $3, now())
          ON CONFLICT (account_id, mode) DO UPDATE SET last_number = invoice_number_sequences.last_number + $3, updated_at = now() RETURNING last_number`,
        [account, mode, batch.length],
      );
      const first = Number(seq.last_number) - batch.length + 1;
      invoices.forEach((r, i) => {
        r.number_seq = first + i;
        r.number = `${prefix}${sep}${String(first + i).padStart(pad, '0')}`;
      });
      perTable.invoices = [JSON.stringify(invoices).slice(1, -1)];
      for (const t of TABLES) {
        if (perTable[t].length === 0) continue;
        await c.query(`INSERT INTO ${t} SELECT * FROM json_populate_recordset(NULL::${t}, $1::json)`, [`[${perTable[t].join(',')}]`]);
      }
      await c.query(
        `UPDATE subscriptions s SET current_period_start = $2, current_period_end = $3, next_billing_at = $4, latest_invoice_id = p.latest_invoice_id,
                collect_invoice_id = NULL, updated_at = now()
           FROM json_to_recordset($1::json) AS p(id text, latest_invoice_id text) WHERE s.id = p.id`,
        [JSON.stringify(periods), after.current_period_start, after.current_period_end, after.next_billing_at],
      );
      await c.query('COMMIT');
    }
  }));
  const ms = performance.now() - started;
  await Promise.all(clients.map((c) => c.end()));
  return { ms, batch: BATCH };
}
