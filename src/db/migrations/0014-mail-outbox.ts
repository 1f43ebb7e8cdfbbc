import { DataTypes, type QueryInterface } from 'sequelize';

const ts = { type: DataTypes.DATE(3), allowNull: false };
const optionalTs = { type: DataTypes.DATE(3), allowNull: true };

/**
 * The mail outbox (issue 23): one row per e-mail, written in the same transaction as the change
 * it reports (an invoice sent), sent after commit by the mail worker. Attachments are stored as
 * what they are made from (an invoice's document snapshot), rendered when the mail is sent.
 * - A claim leases a row (`locked_until` on the database's clock, `lock_token` naming the claim),
 *   as webhook deliveries are leased: `mail_outbox_due_idx` holds queued rows only, in the order
 *   the worker takes them.
 * - `about_type`/`about_id`: the object whose `emailStatus` follows the mail's.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('mail_outbox', {
    id: { type: DataTypes.STRING(64), primaryKey: true, allowNull: false },
    account_id: { type: DataTypes.STRING(64), allowNull: false },
    mode: { type: DataTypes.STRING(4), allowNull: false },
    about_type: { type: DataTypes.STRING(32), allowNull: false },
    about_id: { type: DataTypes.STRING(64), allowNull: false },
    to_address: { type: DataTypes.STRING(320), allowNull: false },
    subject: { type: DataTypes.TEXT, allowNull: false },
    text_body: { type: DataTypes.TEXT, allowNull: false },
    html_body: { type: DataTypes.TEXT, allowNull: false },
    // JSON [{filename, contentType, source}]: what each attachment is rendered from at send time.
    attachments: { type: DataTypes.TEXT, allowNull: false, defaultValue: '[]' },
    // queued | sent | failed (retries spent, or the server refused the message for good)
    status: { type: DataTypes.STRING(10), allowNull: false },
    attempts: { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 },
    next_attempt_at: ts,
    first_attempt_at: optionalTs,
    last_error: { type: DataTypes.STRING(255), allowNull: true },
    locked_until: optionalTs,
    lock_token: { type: DataTypes.STRING(32), allowNull: true },
    created_at: ts,
    updated_at: ts,
    sent_at: optionalTs,
  });
  await qi.addIndex('mail_outbox', ['next_attempt_at', 'id'], { name: 'mail_outbox_due_idx', where: { status: 'queued' } });
  await qi.addIndex('mail_outbox', ['account_id', 'mode', 'about_type', 'about_id', 'created_at'], { name: 'mail_outbox_about_idx' });
  // The retention sweep of sent and failed mail.
  await qi.addIndex('mail_outbox', ['status', 'updated_at'], { name: 'mail_outbox_age_idx' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('mail_outbox');
}
