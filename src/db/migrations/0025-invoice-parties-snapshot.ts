import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * An issued invoice keeps the parties it was issued with (issue 34, API.md §12): `invoices.parties`
 * (JSON `{merchant: {name, address, taxId, supportEmail}, customer: {name, email, address, taxIds,
 * locale}}`), written by the statement that moves the invoice out of `draft` (a subscription's
 * invoice takes it at its insert, which its charge's settle then issues). A draft shows the
 * account and the customer as they are now whatever it holds; invoices issued before this column
 * have none and fall back to the live details too.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addColumn('invoices', 'parties', { type: DataTypes.TEXT, allowNull: true });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  // Plain DROP COLUMN (see 0006: removeColumn rebuilds a SQLite table and loses its indexes).
  await qi.sequelize.query('ALTER TABLE invoices DROP COLUMN parties');
}
