import { DataTypes, Op, type QueryInterface } from 'sequelize';

const id = { type: DataTypes.STRING(64), primaryKey: true, allowNull: false };
const accountId = { type: DataTypes.STRING(64), allowNull: false };
const mode = { type: DataTypes.STRING(4), allowNull: false };
const ref = { type: DataTypes.STRING(64), allowNull: false };
const optionalRef = { type: DataTypes.STRING(64), allowNull: true };
const ts = { type: DataTypes.DATE(3), allowNull: false };
const optionalTs = { type: DataTypes.DATE(3), allowNull: true };
const money = { type: DataTypes.BIGINT, allowNull: false };

/**
 * Subscriptions, their pending proration lines, and test clocks.
 * - A subscription's billing state lives on its row: `next_billing_at` is when the billing run
 *   next has work for it (its period end while active, its next dunning retry while past due;
 *   null while paused or canceled), `collect_invoice_id` the invoice whose charge outcome the
 *   subscription has not taken yet, `dunning_failures` and `first_failed_at` where dunning stands,
 *   and `billing_locked_until`/`billing_lock_token` the lease of the run that claimed it.
 * - One invoice per subscription and period: invoices carry the period they bill
 *   (`billing_period_start`) under a unique index with the subscription, so two instances, or a
 *   run restarted after a crash, can never bill a period twice.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('test_clocks', {
    id,
    account_id: accountId,
    mode,
    name: { type: DataTypes.STRING(200), allowNull: true },
    frozen_time: ts,
    // ready | advancing
    status: { type: DataTypes.STRING(10), allowNull: false },
    created_at: ts,
    updated_at: ts,
  });
  await qi.addIndex('test_clocks', ['account_id', 'mode', 'created_at', 'id'], { name: 'test_clocks_list_idx' });
  await qi.addIndex('customers', ['test_clock_id'], { name: 'customers_test_clock_idx', where: { test_clock_id: { [Op.ne]: null } } });

  await qi.createTable('subscriptions', {
    id,
    account_id: accountId,
    mode,
    customer_id: ref,
    price_id: ref,
    quantity: { type: DataTypes.INTEGER, allowNull: false },
    // active | past_due | paused | canceled
    status: { type: DataTypes.STRING(10), allowNull: false },
    // charge_automatically | send_invoice
    collection_method: { type: DataTypes.STRING(24), allowNull: false },
    current_period_start: ts,
    current_period_end: ts,
    billing_cycle_anchor: ts,
    cancel_at_period_end: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
    canceled_at: optionalTs,
    paused_at: optionalTs,
    ended_at: optionalTs,
    latest_invoice_id: optionalRef,
    default_payment_method_id: optionalRef,
    test_clock_id: optionalRef,
    metadata: { type: DataTypes.TEXT, allowNull: false, defaultValue: '{}' },
    next_billing_at: optionalTs,
    collect_invoice_id: optionalRef,
    // How many charges of collect_invoice_id the subscription has taken the outcome of.
    invoice_attempts_seen: { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 },
    dunning_failures: { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 },
    first_failed_at: optionalTs,
    billing_locked_until: optionalTs,
    billing_lock_token: { type: DataTypes.STRING(32), allowNull: true },
    created_at: ts,
    updated_at: ts,
  });
  await qi.addIndex('subscriptions', ['account_id', 'mode', 'created_at', 'id'], { name: 'subscriptions_list_idx' });
  await qi.addIndex('subscriptions', ['account_id', 'mode', 'status', 'created_at', 'id'], { name: 'subscriptions_status_idx' });
  await qi.addIndex('subscriptions', ['account_id', 'mode', 'customer_id', 'created_at', 'id'], { name: 'subscriptions_customer_idx' });
  // The billing run's claim: due work of subscriptions on real time, in the order it fell due.
  await qi.addIndex('subscriptions', ['next_billing_at'], { name: 'subscriptions_billing_due_idx', where: { test_clock_id: null, next_billing_at: { [Op.ne]: null } } });
  // A test clock's advance: its subscriptions' due work.
  await qi.addIndex('subscriptions', ['test_clock_id', 'next_billing_at'], { name: 'subscriptions_test_clock_idx', where: { test_clock_id: { [Op.ne]: null } } });

  await qi.createTable('subscription_pending_lines', {
    id,
    account_id: accountId,
    mode,
    subscription_id: ref,
    description: { type: DataTypes.STRING(500), allowNull: false },
    quantity: { type: DataTypes.INTEGER, allowNull: false },
    unit_amount: money,
    amount: money,
    period_start: optionalTs,
    period_end: optionalTs,
    proration: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: true },
    // The invoice that took the line; null while it waits for the next one.
    invoice_id: optionalRef,
    created_at: ts,
  });
  await qi.addIndex('subscription_pending_lines', ['subscription_id', 'created_at'], { name: 'subscription_pending_lines_waiting_idx', where: { invoice_id: null } });

  await qi.addColumn('invoices', 'billing_period_start', optionalTs);
  // subscription_create | subscription_cycle | subscription_update | subscription_resume; null for an invoice made by hand
  await qi.addColumn('invoices', 'billing_reason', { type: DataTypes.STRING(24), allowNull: true });
  await qi.addIndex('invoices', ['subscription_id', 'billing_period_start'], { name: 'invoices_subscription_period_key', unique: true });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.removeIndex('invoices', 'invoices_subscription_period_key');
  for (const column of ['billing_reason', 'billing_period_start']) await qi.sequelize.query(`ALTER TABLE invoices DROP COLUMN ${column}`);
  await qi.dropTable('subscription_pending_lines');
  await qi.dropTable('subscriptions');
  await qi.removeIndex('customers', 'customers_test_clock_idx');
  await qi.dropTable('test_clocks');
}
