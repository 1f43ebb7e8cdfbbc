import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * The indexes of the list filters (issue 37, API.md §2): each filter of a list is read from an
 * index that leads with the list's scope and the filtered column, then its order
 * (`account_id, mode, <column>, created_at, id`), so a filtered page reads its rows in order and
 * stops at the page's end. Where most rows have no value (an invoice, a checkout session or a
 * payment link of a payment, a failure code, a refund's customer), the index holds only the rows
 * that have one, as migration 0004's do: `column = $n` implies `column IS NOT NULL`, so both
 * databases still use it, and the create-payment path writes fewer index entries.
 *
 * - payments: currency, failure code, gateway, invoice, checkout session and payment link (the
 *   older single-column indexes of the last three stay: the checkout and invoice paths look
 *   payments up by them alone; without statistics SQLite preferred the account's list index to
 *   them); metadata on PostgreSQL, a GIN index of the JSON (`@>` containment) holding only
 *   payments with metadata. SQLite has no index reaching inside the JSON: its metadata filter
 *   reads the account's list index.
 * - refunds: `customer_id`, the payment's customer copied onto the refund (a payment's customer
 *   never changes), filled in here for the refunds already written.
 * - gateway_transactions: the account-wide list (`GET /v1/gateway-transactions`) in its order
 *   (created_at, id, replacing 0016's (account_id, mode, created_at), which it covers), by
 *   gateway and by outcome.
 * - webhook_attempts: an endpoint's attempts by event, and its failed attempts alone.
 * The amount range is answered by the amount index (account_id, mode, amount, id); the status,
 * customer and subscription filters of every list had theirs already.
 */
const PARTIAL: Array<{ table: string; name: string; columns: string[]; where: string }> = [
  { table: 'payments', name: 'payments_failure_code_idx', columns: ['account_id', 'mode', 'failure_code', 'created_at', 'id'], where: 'failure_code IS NOT NULL' },
  { table: 'payments', name: 'payments_gateway_idx', columns: ['account_id', 'mode', 'gateway_id', 'created_at', 'id'], where: 'gateway_id IS NOT NULL' },
  { table: 'payments', name: 'payments_invoice_list_idx', columns: ['account_id', 'mode', 'invoice_id', 'created_at', 'id'], where: 'invoice_id IS NOT NULL' },
  { table: 'payments', name: 'payments_checkout_session_list_idx', columns: ['account_id', 'mode', 'checkout_session_id', 'created_at', 'id'], where: 'checkout_session_id IS NOT NULL' },
  { table: 'payments', name: 'payments_payment_link_list_idx', columns: ['account_id', 'mode', 'payment_link_id', 'created_at', 'id'], where: 'payment_link_id IS NOT NULL' },
  { table: 'refunds', name: 'refunds_customer_idx', columns: ['account_id', 'mode', 'customer_id', 'created_at', 'id'], where: 'customer_id IS NOT NULL' },
  // Written as the attempts list writes its filter (`NOT succeeded`), so SQLite matches the two.
  { table: 'webhook_attempts', name: 'webhook_attempts_failed_idx', columns: ['account_id', 'mode', 'endpoint_id', 'created_at', 'id'], where: 'NOT succeeded' },
];

const FULL: Array<{ table: string; name: string; columns: string[] }> = [
  { table: 'payments', name: 'payments_currency_idx', columns: ['account_id', 'mode', 'currency', 'created_at', 'id'] },
  { table: 'gateway_transactions', name: 'gtx_list_idx', columns: ['account_id', 'mode', 'created_at', 'id'] },
  { table: 'gateway_transactions', name: 'gtx_gateway_idx', columns: ['account_id', 'mode', 'gateway_id', 'created_at', 'id'] },
  { table: 'gateway_transactions', name: 'gtx_outcome_idx', columns: ['account_id', 'mode', 'outcome', 'created_at', 'id'] },
  { table: 'webhook_attempts', name: 'webhook_attempts_event_idx', columns: ['account_id', 'mode', 'endpoint_id', 'event_id', 'created_at', 'id'] },
];

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  const db = qi.sequelize;
  await qi.addColumn('refunds', 'customer_id', { type: DataTypes.STRING(64), allowNull: true });
  await db.query('UPDATE refunds SET customer_id = (SELECT p.customer_id FROM payments p WHERE p.id = refunds.payment_id)');
  for (const index of FULL) await qi.addIndex(index.table, index.columns, { name: index.name });
  for (const index of PARTIAL) await db.query(`CREATE INDEX ${index.name} ON ${index.table} (${index.columns.join(', ')}) WHERE ${index.where}`);
  await qi.removeIndex('gateway_transactions', 'gtx_recent_idx');
  if (db.getDialect() === 'postgres') {
    // The payments list's `metadata[key]=value` (PaymentStore.list): `metadata <> '{}' AND metadata::jsonb @> $n::jsonb`.
    await db.query("CREATE INDEX payments_metadata_idx ON payments USING gin ((metadata::jsonb) jsonb_path_ops) WHERE metadata <> '{}'");
  }
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  const db = qi.sequelize;
  if (db.getDialect() === 'postgres') await db.query('DROP INDEX payments_metadata_idx');
  await qi.addIndex('gateway_transactions', ['account_id', 'mode', 'created_at'], { name: 'gtx_recent_idx' });
  for (const index of [...PARTIAL].reverse()) await qi.removeIndex(index.table, index.name);
  for (const index of [...FULL].reverse()) await qi.removeIndex(index.table, index.name);
  // Plain DROP COLUMN (see 0006: removeColumn rebuilds a SQLite table and loses its indexes).
  await db.query('ALTER TABLE refunds DROP COLUMN customer_id');
}
