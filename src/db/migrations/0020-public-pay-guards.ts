import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * Public pay that cannot be abused (issue 31, API.md §11):
 * - `payments.receipt_email`: the e-mail an anonymous payer typed on a hosted page; the payment
 *   attaches no customer.
 * - `accounts.public_declines_per_hour`: how many failed public pays an account takes per mode in
 *   a rolling hour before every public pay of that mode is refused (default 50).
 * - `public_pay_attempts`: one row per public pay attempt that counts against the caps, written
 *   `running` before the gateway is asked, `failed` once declined, and deleted when the attempt
 *   succeeds (or was refused before it reached a gateway). Shared by every
 *   instance through the database. Rows older than any window (a session lives at most 24 h) are
 *   purged by a job.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addColumn('payments', 'receipt_email', { type: DataTypes.STRING(320), allowNull: true });
  await qi.addColumn('accounts', 'public_declines_per_hour', { type: DataTypes.INTEGER, allowNull: false, defaultValue: 50 });
  await qi.createTable('public_pay_attempts', {
    id: { type: DataTypes.STRING(64), primaryKey: true, allowNull: false },
    account_id: { type: DataTypes.STRING(64), allowNull: false },
    mode: { type: DataTypes.STRING(4), allowNull: false },
    // What was paid: a checkout session, payment link or invoice id.
    target_id: { type: DataTypes.STRING(64), allowNull: false },
    // The client's address (the one the rate limit uses: TRUST_PROXY's last X-Forwarded-For entry).
    client_address: { type: DataTypes.STRING(64), allowNull: false },
    // running (counted while it runs, and for good if its outcome never came) | failed
    status: { type: DataTypes.STRING(8), allowNull: false },
    created_at: { type: DataTypes.DATE(3), allowNull: false },
  });
  // The account and mode's rolling hour.
  await qi.addIndex('public_pay_attempts', ['account_id', 'mode', 'created_at'], { name: 'public_pay_attempts_account_idx' });
  // A session's attempts in all; a link's or invoice's per address in the hour.
  await qi.addIndex('public_pay_attempts', ['target_id', 'client_address', 'created_at'], { name: 'public_pay_attempts_target_idx' });
  // The purge of rows past every window.
  await qi.addIndex('public_pay_attempts', ['created_at'], { name: 'public_pay_attempts_age_idx' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('public_pay_attempts');
  // Plain DROP COLUMN (see 0006: removeColumn rebuilds a SQLite table and loses its indexes).
  await qi.sequelize.query('ALTER TABLE accounts DROP COLUMN public_declines_per_hour');
  await qi.sequelize.query('ALTER TABLE payments DROP COLUMN receipt_email');
}
