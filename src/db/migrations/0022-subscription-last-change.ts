import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * Billing right by construction (issue 33, API.md §10):
 * - `subscriptions.last_change_at`: the `prorationDate` of the latest plan change in the current
 *   period. A later change may not be prorated from before it (422 `invalid_proration_date`):
 *   the time between was already billed on the plan that change set.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addColumn('subscriptions', 'last_change_at', { type: DataTypes.DATE(3), allowNull: true });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  // Plain DROP COLUMN (see 0006: removeColumn rebuilds a SQLite table and loses its indexes).
  await qi.sequelize.query('ALTER TABLE subscriptions DROP COLUMN last_change_at');
}
