import { DataTypes, type QueryInterface } from 'sequelize';

const ts = { type: DataTypes.DATE(3), allowNull: false };
const idList = { type: DataTypes.TEXT, allowNull: false, defaultValue: '[]' };

/**
 * Tax rates (API.md §12, issue 34):
 * - `tax_rates`: a rate of the account and mode. `percentage_e4` is the percentage in
 *   ten-thousandths (19.5 % → 195000): exact, so no tax amount carries a float's error. It never
 *   changes once written (a new rate is made instead), so an invoice's breakdown stays true.
 * - `invoice_line_items.tax_rate_ids`, `invoices.default_tax_rate_ids`,
 *   `subscriptions.default_tax_rate_ids`: JSON lists of `txr_` ids (a line's own, else the
 *   invoice's, else the subscription's).
 * - `invoices.tax` (the exclusive taxes, minor units; `total` = `subtotal` + `tax`),
 *   `invoices.tax_breakdown` (JSON: per rate its name, percentage, taxable amount and tax as the
 *   invoice computed them) and `invoices.customer_tax_exempt` (the customer's `taxExempt` the
 *   taxes were computed with: `reverse` prints the reverse-charge notice).
 * - `customers.tax_exempt`: `none` | `exempt` | `reverse`.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('tax_rates', {
    id: { type: DataTypes.STRING(64), primaryKey: true, allowNull: false },
    account_id: { type: DataTypes.STRING(64), allowNull: false },
    mode: { type: DataTypes.STRING(4), allowNull: false },
    display_name: { type: DataTypes.STRING(50), allowNull: false },
    description: { type: DataTypes.STRING(500), allowNull: true },
    percentage_e4: { type: DataTypes.INTEGER, allowNull: false },
    inclusive: { type: DataTypes.BOOLEAN, allowNull: false },
    country: { type: DataTypes.STRING(2), allowNull: true },
    jurisdiction: { type: DataTypes.STRING(50), allowNull: true },
    active: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: true },
    metadata: { type: DataTypes.TEXT, allowNull: false, defaultValue: '{}' },
    created_at: ts,
    updated_at: ts,
  });
  await qi.addIndex('tax_rates', ['account_id', 'mode', 'created_at', 'id'], { name: 'tax_rates_list_idx' });
  await qi.addIndex('tax_rates', ['account_id', 'mode', 'active', 'created_at', 'id'], { name: 'tax_rates_active_idx' });

  await qi.addColumn('invoice_line_items', 'tax_rate_ids', idList);
  await qi.addColumn('invoices', 'default_tax_rate_ids', idList);
  await qi.addColumn('invoices', 'tax', { type: DataTypes.BIGINT, allowNull: false, defaultValue: 0 });
  await qi.addColumn('invoices', 'tax_breakdown', idList);
  await qi.addColumn('invoices', 'customer_tax_exempt', { type: DataTypes.STRING(8), allowNull: false, defaultValue: 'none' });
  await qi.addColumn('subscriptions', 'default_tax_rate_ids', idList);
  await qi.addColumn('customers', 'tax_exempt', { type: DataTypes.STRING(8), allowNull: false, defaultValue: 'none' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  // Plain DROP COLUMN (see 0006: removeColumn rebuilds a SQLite table and loses its indexes).
  for (const [table, column] of [
    ['customers', 'tax_exempt'], ['subscriptions', 'default_tax_rate_ids'], ['invoices', 'customer_tax_exempt'], ['invoices', 'tax_breakdown'],
    ['invoices', 'tax'], ['invoices', 'default_tax_rate_ids'], ['invoice_line_items', 'tax_rate_ids'],
  ]) {
    await qi.sequelize.query(`ALTER TABLE ${table} DROP COLUMN ${column}`);
  }
  await qi.dropTable('tax_rates');
}
