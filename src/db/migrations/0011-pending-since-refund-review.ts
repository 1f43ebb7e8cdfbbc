import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * - `pending_since` on payments and refunds: when the row was written pending, on the database's
 *   clock (as its `lease_until` now is). Recovery measures how long an operation has been
 *   pending on it, never on an instance's clock, whose jump would make a gateway's "not found"
 *   look final too early. Rows pending when this runs are dated now, on the database's clock:
 *   their `created_at` is business time (a test clock can put it years back, an instance's clock
 *   may lag), which could make "not found" final at once; dating them late only delays recovery.
 * - A refund's status may be `requires_review` (15 characters): the gateway made a refund that
 *   had been recorded failed. The column grows from varchar(12) to varchar(20), as payments' did
 *   (0010).
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  for (const table of ['payments', 'refunds']) {
    await qi.addColumn(table, 'pending_since', { type: DataTypes.DATE(3), allowNull: true });
    await qi.sequelize.query(`UPDATE ${table} SET pending_since = ${databaseNow(qi)} WHERE status = 'pending'`);
  }
  await refundStatusLength(qi, 12, 20);
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  // The gateway made these refunds: as earlier versions know them, succeeded.
  await qi.sequelize.query("UPDATE refunds SET status = 'succeeded' WHERE status = 'requires_review'");
  await refundStatusLength(qi, 20, 12);
  for (const table of ['refunds', 'payments']) await qi.sequelize.query(`ALTER TABLE ${table} DROP COLUMN pending_since`);
}

/** The database's now as SQL, in the form the application writes it (Database.nowSql). */
function databaseNow(qi: QueryInterface): string {
  return qi.sequelize.getDialect() === 'postgres' ? 'statement_timestamp()' : "(strftime('%Y-%m-%d %H:%M:%f', 'now') || ' +00:00')";
}

async function refundStatusLength(qi: QueryInterface, from: number, to: number): Promise<void> {
  const db = qi.sequelize;
  if (db.getDialect() === 'postgres') {
    await db.query(`ALTER TABLE refunds ALTER COLUMN status TYPE varchar(${to})`);
    return;
  }
  // SQLite cannot change a column's type (it does not enforce the length, but the declared type
  // is the schema's contract): the table is rebuilt with the same definition and indexes, as in
  // 0010. No table references refunds, so dropping the old one breaks no foreign key.
  await db.transaction(async (transaction) => {
    const [[table]] = (await db.query("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'refunds'", { transaction })) as [Array<{ sql: string }>, unknown];
    const [indexes] = (await db.query("SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'refunds' AND sql IS NOT NULL", { transaction })) as [Array<{ sql: string }>, unknown];
    const declared = /`status` VARCHAR\(\d+\)/;
    if (!table.sql.includes(`\`status\` VARCHAR(${from})`)) throw new Error(`refunds.status is not varchar(${from}): ${table.sql}`);
    await db.query('ALTER TABLE refunds RENAME TO refunds_before_rebuild', { transaction });
    await db.query(table.sql.replace(declared, `\`status\` VARCHAR(${to})`), { transaction });
    await db.query('INSERT INTO refunds SELECT * FROM refunds_before_rebuild', { transaction });
    await db.query('DROP TABLE refunds_before_rebuild', { transaction });
    for (const index of indexes) await db.query(index.sql, { transaction });
  });
}
