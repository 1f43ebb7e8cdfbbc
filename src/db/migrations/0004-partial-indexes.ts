import { Op, type QueryInterface } from 'sequelize';

/**
 * Indexes that only ever serve lookups of a non-null value (or of pending rows) hold only those
 * rows. A payment without a customer or subscription, a gateway call of a payment (no refund
 * id) and a settled payment or refund then cost no entry in them: fewer index writes on the
 * create-payment path, whose pending insert and settling update each write every index of the
 * row. `customer_id = $1` implies `customer_id IS NOT NULL`, so both databases still use them.
 */
const PARTIAL: Array<{ table: string; name: string; fields: string[]; where: Record<string, unknown>; was: string[] }> = [
  { table: 'payments', name: 'payments_pending_idx', fields: ['lease_until'], where: { status: 'pending' }, was: ['status', 'lease_until'] },
  { table: 'refunds', name: 'refunds_pending_idx', fields: ['lease_until'], where: { status: 'pending' }, was: ['status', 'lease_until'] },
  {
    table: 'payments', name: 'payments_customer_idx', fields: ['account_id', 'mode', 'customer_id', 'created_at', 'id'],
    where: { customer_id: { [Op.ne]: null } }, was: ['account_id', 'mode', 'customer_id', 'created_at', 'id'],
  },
  {
    table: 'payments', name: 'payments_subscription_idx', fields: ['account_id', 'mode', 'subscription_id', 'created_at', 'id'],
    where: { subscription_id: { [Op.ne]: null } }, was: ['account_id', 'mode', 'subscription_id', 'created_at', 'id'],
  },
  {
    table: 'gateway_transactions', name: 'gtx_payment_idx', fields: ['account_id', 'mode', 'payment_id', 'created_at', 'id'],
    where: { payment_id: { [Op.ne]: null } }, was: ['account_id', 'mode', 'payment_id', 'created_at', 'id'],
  },
  {
    table: 'gateway_transactions', name: 'gtx_refund_idx', fields: ['account_id', 'mode', 'refund_id', 'created_at', 'id'],
    where: { refund_id: { [Op.ne]: null } }, was: ['account_id', 'mode', 'refund_id', 'created_at', 'id'],
  },
];

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  for (const index of PARTIAL) {
    await qi.removeIndex(index.table, index.name);
    await qi.addIndex(index.table, index.fields, { name: index.name, where: index.where });
  }
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  for (const index of PARTIAL) {
    await qi.removeIndex(index.table, index.name);
    await qi.addIndex(index.table, index.was, { name: index.name });
  }
}
