import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * The parties an invoice names (issue 34, API.md §3, §7, §12):
 * - `accounts.address` (JSON `{line1, line2, postalCode, city, state, country}`), `tax_id` (e.g. a
 *   VAT number) and `support_email`: the seller's block on invoices.
 * - `customers.address` (the same JSON) and `tax_ids` (JSON `[{type, value}]`, `[]` when none):
 *   the buyer's block.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addColumn('accounts', 'address', { type: DataTypes.TEXT, allowNull: true });
  await qi.addColumn('accounts', 'tax_id', { type: DataTypes.STRING(64), allowNull: true });
  await qi.addColumn('accounts', 'support_email', { type: DataTypes.STRING(320), allowNull: true });
  await qi.addColumn('customers', 'address', { type: DataTypes.TEXT, allowNull: true });
  await qi.addColumn('customers', 'tax_ids', { type: DataTypes.TEXT, allowNull: false, defaultValue: '[]' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  // Plain DROP COLUMN (see 0006: removeColumn rebuilds a SQLite table and loses its indexes).
  for (const [table, column] of [['customers', 'tax_ids'], ['customers', 'address'], ['accounts', 'support_email'], ['accounts', 'tax_id'], ['accounts', 'address']]) {
    await qi.sequelize.query(`ALTER TABLE ${table} DROP COLUMN ${column}`);
  }
}
