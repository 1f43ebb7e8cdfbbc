import { Op, type QueryInterface } from 'sequelize';

// The billing run's claim orders due work by (next_billing_at, id): with the index on
// next_billing_at alone, PostgreSQL sorted every due row for each claim (a run of 100,000 due
// subscriptions that fell due at the same instant: a scan and sort of all of them per batch).
const where = { test_clock_id: null, next_billing_at: { [Op.ne]: null } };

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addIndex('subscriptions', ['next_billing_at', 'id'], { name: 'subscriptions_billing_claim_idx', where });
  await qi.removeIndex('subscriptions', 'subscriptions_billing_due_idx');
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addIndex('subscriptions', ['next_billing_at'], { name: 'subscriptions_billing_due_idx', where });
  await qi.removeIndex('subscriptions', 'subscriptions_billing_claim_idx');
}
