import type { QueryInterface } from 'sequelize';

// The dashboard's authorisation rate per gateway reads the last hour of gateway calls; the only
// indexes there started with payment_id or refund_id.
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addIndex('gateway_transactions', ['account_id', 'mode', 'created_at'], { name: 'gtx_recent_idx' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.removeIndex('gateway_transactions', 'gtx_recent_idx');
}
