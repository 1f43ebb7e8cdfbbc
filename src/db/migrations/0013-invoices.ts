import { DataTypes, type QueryInterface } from 'sequelize';

const id = { type: DataTypes.STRING(64), primaryKey: true, allowNull: false };
const accountId = { type: DataTypes.STRING(64), allowNull: false };
const mode = { type: DataTypes.STRING(4), allowNull: false };
const optionalRef = { type: DataTypes.STRING(64), allowNull: true };
const ts = { type: DataTypes.DATE(3), allowNull: false };
const optionalTs = { type: DataTypes.DATE(3), allowNull: true };
const money = { type: DataTypes.BIGINT, allowNull: false };

/**
 * Invoices, their line items and their numbers.
 * - `invoice_number_sequences` holds the last number given per account and mode; an invoice's
 *   create increments it in its own transaction (the row lock serialises concurrent creates, a
 *   rollback gives the number back), so numbers have no gap and no duplicate. Invoices are never
 *   deleted, only voided, so no number is lost. `(account_id, mode, number_seq)` is unique too.
 * - The account's own settings: the invoice number prefix (shared by both modes) and the dunning
 *   schedule (days after the first failed charge, a JSON array).
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addColumn('accounts', 'invoice_prefix', { type: DataTypes.STRING(12), allowNull: false, defaultValue: 'INV' });
  await qi.addColumn('accounts', 'dunning_retry_days', { type: DataTypes.STRING(100), allowNull: false, defaultValue: '[1,3,7]' });

  // The language of the customer's invoices and e-mails (en unless set).
  await qi.addColumn('customers', 'locale', { type: DataTypes.STRING(16), allowNull: true });

  await qi.createTable('invoice_number_sequences', {
    account_id: { ...accountId, primaryKey: true },
    mode: { ...mode, primaryKey: true },
    last_number: { type: DataTypes.INTEGER, allowNull: false },
    updated_at: ts,
  });

  await qi.createTable('invoices', {
    id,
    account_id: accountId,
    mode,
    number: { type: DataTypes.STRING(32), allowNull: false },
    number_seq: { type: DataTypes.INTEGER, allowNull: false },
    customer_id: { type: DataTypes.STRING(64), allowNull: false },
    subscription_id: optionalRef,
    // draft | sent | paid | void
    status: { type: DataTypes.STRING(8), allowNull: false },
    // unpaid | processing | paid | failed
    payment_status: { type: DataTypes.STRING(12), allowNull: false },
    currency: { type: DataTypes.STRING(3), allowNull: false },
    subtotal: money,
    total: money,
    amount_paid: money,
    amount_due: money,
    due_date: optionalTs,
    memo: { type: DataTypes.TEXT, allowNull: true },
    sent_at: optionalTs,
    paid_at: optionalTs,
    voided_at: optionalTs,
    paid_out_of_band: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
    // queued | sent | failed; null until the invoice is sent by e-mail
    email_status: { type: DataTypes.STRING(8), allowNull: true },
    // The charge in progress or last made, and how many charges have been tried (each has its own gateway key).
    latest_payment_id: optionalRef,
    payment_attempts: { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 },
    metadata: { type: DataTypes.TEXT, allowNull: false, defaultValue: '{}' },
    created_at: ts,
    updated_at: ts,
  });
  await qi.addIndex('invoices', ['account_id', 'mode', 'number_seq'], { name: 'invoices_number_key', unique: true });
  await qi.addIndex('invoices', ['account_id', 'mode', 'created_at', 'id'], { name: 'invoices_list_idx' });
  await qi.addIndex('invoices', ['account_id', 'mode', 'status', 'created_at', 'id'], { name: 'invoices_status_idx' });
  await qi.addIndex('invoices', ['account_id', 'mode', 'customer_id', 'created_at', 'id'], { name: 'invoices_customer_idx' });
  await qi.addIndex('invoices', ['account_id', 'mode', 'subscription_id', 'created_at', 'id'], { name: 'invoices_subscription_idx' });
  await qi.addIndex('invoices', ['account_id', 'mode', 'total', 'id'], { name: 'invoices_total_idx' });
  // The reconciling job: charges whose request ended before the invoice was settled.
  await qi.addIndex('invoices', ['payment_status', 'updated_at'], { name: 'invoices_processing_idx' });

  await qi.createTable('invoice_line_items', {
    id,
    invoice_id: { type: DataTypes.STRING(64), allowNull: false },
    position: { type: DataTypes.INTEGER, allowNull: false },
    description: { type: DataTypes.STRING(500), allowNull: false },
    quantity: { type: DataTypes.INTEGER, allowNull: false },
    unit_amount: money,
    amount: money,
    period_start: optionalTs,
    period_end: optionalTs,
    proration: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
    created_at: ts,
  });
  await qi.addIndex('invoice_line_items', ['invoice_id', 'position'], { name: 'invoice_line_items_invoice_idx', unique: true });

  await qi.addIndex('payments', ['invoice_id', 'created_at'], { name: 'payments_invoice_idx' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.removeIndex('payments', 'payments_invoice_idx');
  await qi.dropTable('invoice_line_items');
  await qi.dropTable('invoices');
  await qi.dropTable('invoice_number_sequences');
  await qi.sequelize.query('ALTER TABLE customers DROP COLUMN locale');
  for (const column of ['dunning_retry_days', 'invoice_prefix']) await qi.sequelize.query(`ALTER TABLE accounts DROP COLUMN ${column}`);
}
