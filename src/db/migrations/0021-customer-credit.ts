import { DataTypes, Op, type QueryInterface } from 'sequelize';

const accountId = { type: DataTypes.STRING(64), allowNull: false };
const mode = { type: DataTypes.STRING(4), allowNull: false };
const ts = { type: DataTypes.DATE(3), allowNull: false };

/**
 * The customer's credit balance (API.md §7 and §12, issue 33):
 * - `customer_balances`: the credit a customer holds in each currency, in minor units, never below
 *   0 (CustomerCreditStore writes it only by statements that keep it so). One row per customer
 *   and currency, locked by whatever changes it; a row at 0 stays.
 * - `customer_balance_transactions`: every change of a balance (`amount` positive adds credit):
 *   `invoice_credit` (a negative invoice total), `applied_to_invoice` (a later invoice took
 *   credit), `adjustment` (POST /v1/customers/{id}/balance-transactions). Never changed or
 *   deleted. An invoice credits or takes credit at most once: (invoice_id, type) is unique, so a
 *   retried or replayed billing step can never count an invoice twice.
 * - `invoices.credit_applied`: what an invoice took from the credit (its own line; `amountDue` is
 *   `total` − `creditApplied` − what was paid).
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('customer_balances', {
    customer_id: { type: DataTypes.STRING(64), allowNull: false, primaryKey: true },
    currency: { type: DataTypes.STRING(3), allowNull: false, primaryKey: true },
    account_id: accountId,
    mode,
    amount: { type: DataTypes.BIGINT, allowNull: false },
    updated_at: ts,
  });

  await qi.createTable('customer_balance_transactions', {
    id: { type: DataTypes.STRING(64), primaryKey: true, allowNull: false },
    account_id: accountId,
    mode,
    customer_id: { type: DataTypes.STRING(64), allowNull: false },
    currency: { type: DataTypes.STRING(3), allowNull: false },
    amount: { type: DataTypes.BIGINT, allowNull: false },
    // invoice_credit | applied_to_invoice | adjustment
    type: { type: DataTypes.STRING(24), allowNull: false },
    invoice_id: { type: DataTypes.STRING(64), allowNull: true },
    description: { type: DataTypes.STRING(500), allowNull: true },
    created_at: ts,
  });
  // A customer's transactions, newest first (the list and GraphQL's Customer.balanceTransactions).
  await qi.addIndex('customer_balance_transactions', ['customer_id', 'created_at', 'id'], { name: 'customer_balance_transactions_customer_idx' });
  // One credit and one application per invoice, whatever retries.
  await qi.addIndex('customer_balance_transactions', ['invoice_id', 'type'], {
    name: 'customer_balance_transactions_invoice_key', unique: true, where: { invoice_id: { [Op.ne]: null } },
  });

  await qi.addColumn('invoices', 'credit_applied', { type: DataTypes.BIGINT, allowNull: false, defaultValue: 0 });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  // Plain DROP COLUMN (see 0006: removeColumn rebuilds a SQLite table and loses its indexes).
  await qi.sequelize.query('ALTER TABLE invoices DROP COLUMN credit_applied');
  await qi.dropTable('customer_balance_transactions');
  await qi.dropTable('customer_balances');
}
