import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * A payment whose Idempotency-Key is claimed in its own first write names that key, and the
 * key's row names the payment. When the creating process dies between the pending write and the
 * settling one, the key stays `running`; recovery, settling the payment later, stores the
 * settled payment as the key's response (only while the row is still this payment's and still
 * running), so a retry gets the payment instead of a 409 until the key expires.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addColumn('payments', 'idempotency_key', { type: DataTypes.STRING(255), allowNull: true });
  await qi.addColumn('idempotency_keys', 'object_id', { type: DataTypes.STRING(64), allowNull: true });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  // Plain DROP COLUMN on both databases: Sequelize's removeColumn rebuilds a SQLite table, which
  // loses its indexes and turns a composite primary key into one UNIQUE per column.
  await qi.sequelize.query('ALTER TABLE idempotency_keys DROP COLUMN object_id');
  await qi.sequelize.query('ALTER TABLE payments DROP COLUMN idempotency_key');
}
