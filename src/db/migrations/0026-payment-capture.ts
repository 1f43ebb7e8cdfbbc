import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * Authorise now, capture later, and 3-D Secure (issue 36, API.md §9):
 * - `payments.capture_method` (`automatic` | `manual`), `amount_capturable` (what an authorisation
 *   still holds), `amount_captured` (what was taken; refunds are held to it);
 * - `payments.next_action` (JSON `{type, url}` while the customer has a 3-D Secure challenge to
 *   answer), `action_expires_at` (when an unanswered challenge fails, `authentication_expired`),
 *   `capture_before` (when an uncaptured authorisation is voided: the gateway's `captureWindowDays`);
 * - `payments.return_url`: where the customer goes once the challenge is answered (the
 *   merchant's, for a payment made through the API; a hosted page's own otherwise);
 * - `payments.pending_operation`: a capture (`capture:<amount>`), cancel, expiry or 3-D Secure
 *   read under way, claimed with `lease_until` before the gateway is called: one at a time per
 *   payment, and after a crash recovery asks the gateway how the claimed operation ended;
 * - `checkout_sessions.capture_method`, `payment_links.capture_method`: passed to their payments.
 * The two expiry jobs find their rows through partial indexes on the deadline.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addColumn('payments', 'capture_method', { type: DataTypes.STRING(9), allowNull: false, defaultValue: 'automatic' });
  await qi.addColumn('payments', 'amount_capturable', { type: DataTypes.BIGINT, allowNull: false, defaultValue: 0 });
  await qi.addColumn('payments', 'amount_captured', { type: DataTypes.BIGINT, allowNull: false, defaultValue: 0 });
  await qi.addColumn('payments', 'next_action', { type: DataTypes.TEXT, allowNull: true });
  await qi.addColumn('payments', 'action_expires_at', { type: DataTypes.DATE(3), allowNull: true });
  await qi.addColumn('payments', 'capture_before', { type: DataTypes.DATE(3), allowNull: true });
  await qi.addColumn('payments', 'return_url', { type: DataTypes.TEXT, allowNull: true });
  await qi.addColumn('payments', 'pending_operation', { type: DataTypes.STRING(40), allowNull: true });
  // Captured payments made before this column existed: what they charged was captured.
  await qi.sequelize.query(`UPDATE payments SET amount_captured = amount WHERE status = 'succeeded'`);
  await qi.addIndex('payments', ['action_expires_at'], { name: 'payments_action_expiry_idx', where: { status: 'requires_action' } });
  await qi.addIndex('payments', ['capture_before'], { name: 'payments_capture_expiry_idx', where: { status: 'requires_capture' } });
  await qi.sequelize.query('CREATE INDEX payments_operation_lease_idx ON payments (lease_until) WHERE pending_operation IS NOT NULL');
  await qi.addColumn('checkout_sessions', 'capture_method', { type: DataTypes.STRING(9), allowNull: false, defaultValue: 'automatic' });
  await qi.addColumn('payment_links', 'capture_method', { type: DataTypes.STRING(9), allowNull: false, defaultValue: 'automatic' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.removeIndex('payments', 'payments_operation_lease_idx');
  await qi.removeIndex('payments', 'payments_capture_expiry_idx');
  await qi.removeIndex('payments', 'payments_action_expiry_idx');
  // Plain DROP COLUMN (see 0006: removeColumn rebuilds a SQLite table and loses its indexes).
  for (const [table, column] of [
    ['payment_links', 'capture_method'], ['checkout_sessions', 'capture_method'], ['payments', 'pending_operation'], ['payments', 'return_url'], ['payments', 'capture_before'],
    ['payments', 'action_expires_at'], ['payments', 'next_action'], ['payments', 'amount_captured'], ['payments', 'amount_capturable'], ['payments', 'capture_method'],
  ]) {
    await qi.sequelize.query(`ALTER TABLE ${table} DROP COLUMN ${column}`);
  }
}
