import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * A refund records the Idempotency-Key its request claimed in the reservation write (the key's
 * row already names its object, migration 0006). When the process dies between the reservation
 * and the settling write, recovery stores the settled refund as that key's answer, so a retry
 * gets the refund instead of a 409 for a day and, after that, a second refund.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addColumn('refunds', 'idempotency_key', { type: DataTypes.STRING(255), allowNull: true });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  // Plain DROP COLUMN (see 0006: removeColumn rebuilds a SQLite table and loses its indexes).
  await qi.sequelize.query('ALTER TABLE refunds DROP COLUMN idempotency_key');
}
