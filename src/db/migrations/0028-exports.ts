import { DataTypes, type QueryInterface } from 'sequelize';

const ts = { type: DataTypes.DATE(3), allowNull: false };

/**
 * Exports (issue 37, API.md §2): `exports`, one row per requested export of a list to a file
 * under DATA_DIR/exports, scoped by account and mode.
 * - `filters` (JSON: the list's query parameters as the caller gave them) and `permissions` (JSON:
 *   the permissions of the key that asked, which the worker acts with);
 * - `status` (`queued` | `running` | `complete` | `failed`), `attempts`, and the worker's claim:
 *   `lock_token` and `locked_until` (on the database's clock);
 * - where the file stands, so a claim after a crash resumes: `rows_written`, `bytes_written` (the
 *   file is cut back to this length before going on) and `resume_after` (JSON `{createdAt, id}`,
 *   the keyset position of the last row written); `rows_expected` counts the rows at the start;
 * - `expires_at` (24 h after the request), `completed_at`, `file_deleted_at` (the expiry job's).
 * Indexes: the list (account, mode[, status | resource], created_at, id), the worker's claim
 * (what is still owed, oldest first) and the expiry job's (files not yet deleted, by expiry). The
 * payment summary needs none: it reads ranges of payments_list_idx and refunds_status_idx.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('exports', {
    id: { type: DataTypes.STRING(64), primaryKey: true, allowNull: false },
    account_id: { type: DataTypes.STRING(64), allowNull: false },
    mode: { type: DataTypes.STRING(4), allowNull: false },
    resource: { type: DataTypes.STRING(20), allowNull: false },
    format: { type: DataTypes.STRING(5), allowNull: false },
    filters: { type: DataTypes.TEXT, allowNull: false, defaultValue: '{}' },
    permissions: { type: DataTypes.TEXT, allowNull: false, defaultValue: '[]' },
    status: { type: DataTypes.STRING(10), allowNull: false },
    attempts: { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 },
    lock_token: { type: DataTypes.STRING(32), allowNull: true },
    locked_until: { type: DataTypes.DATE(3), allowNull: true },
    rows_expected: { type: DataTypes.BIGINT, allowNull: true },
    rows_written: { type: DataTypes.BIGINT, allowNull: false, defaultValue: 0 },
    bytes_written: { type: DataTypes.BIGINT, allowNull: false, defaultValue: 0 },
    resume_after: { type: DataTypes.TEXT, allowNull: true },
    failure_message: { type: DataTypes.TEXT, allowNull: true },
    expires_at: ts,
    completed_at: { type: DataTypes.DATE(3), allowNull: true },
    file_deleted_at: { type: DataTypes.DATE(3), allowNull: true },
    created_at: ts,
    updated_at: ts,
  });
  await qi.addIndex('exports', ['account_id', 'mode', 'created_at', 'id'], { name: 'exports_list_idx' });
  await qi.addIndex('exports', ['account_id', 'mode', 'status', 'created_at', 'id'], { name: 'exports_status_idx' });
  await qi.addIndex('exports', ['account_id', 'mode', 'resource', 'created_at', 'id'], { name: 'exports_resource_idx' });
  await qi.sequelize.query("CREATE INDEX exports_claim_idx ON exports (created_at, id) WHERE status IN ('queued', 'running')");
  await qi.sequelize.query('CREATE INDEX exports_expiry_idx ON exports (expires_at) WHERE file_deleted_at IS NULL');
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('exports');
}
