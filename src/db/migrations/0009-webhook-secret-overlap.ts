import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * A rotated webhook secret may keep signing for an overlap the caller chooses (default 24 h):
 * the replaced secret (sealed like the current one) and when it stops signing. Both null when
 * no overlap is running.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addColumn('webhook_endpoints', 'previous_secret_sealed', { type: DataTypes.TEXT, allowNull: true });
  await qi.addColumn('webhook_endpoints', 'previous_secret_expires_at', { type: DataTypes.DATE(3), allowNull: true });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  // Plain DROP COLUMN (see 0006: removeColumn rebuilds a SQLite table and loses its indexes).
  await qi.sequelize.query('ALTER TABLE webhook_endpoints DROP COLUMN previous_secret_expires_at');
  await qi.sequelize.query('ALTER TABLE webhook_endpoints DROP COLUMN previous_secret_sealed');
}
