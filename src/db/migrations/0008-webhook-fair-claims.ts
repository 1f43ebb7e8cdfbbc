import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * Webhook delivery, issue 18:
 * - `webhook_endpoints.gone_since`: when the receiver's current run of 410 answers began. The
 *   endpoint is disabled only once 410s have persisted for the gone window.
 * - Claims take due rows round-robin per endpoint: for each endpoint with pending rows, its
 *   oldest due ones. `webhook_deliveries_pending_idx` (pending rows only) serves both the walk
 *   over endpoints with pending rows and each endpoint's oldest due rows; it replaces the index
 *   on (status, next_attempt_at), which held every row, delivered ones included.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addColumn('webhook_endpoints', 'gone_since', { type: DataTypes.DATE(3), allowNull: true });
  await qi.removeIndex('webhook_deliveries', 'webhook_deliveries_due_idx');
  await qi.addIndex('webhook_deliveries', ['endpoint_id', 'next_attempt_at', 'id'], {
    name: 'webhook_deliveries_pending_idx',
    where: { status: 'pending' },
  });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.removeIndex('webhook_deliveries', 'webhook_deliveries_pending_idx');
  await qi.addIndex('webhook_deliveries', ['status', 'next_attempt_at'], { name: 'webhook_deliveries_due_idx' });
  // Plain DROP COLUMN (see 0006: removeColumn rebuilds a SQLite table and loses its indexes).
  await qi.sequelize.query('ALTER TABLE webhook_endpoints DROP COLUMN gone_since');
}
