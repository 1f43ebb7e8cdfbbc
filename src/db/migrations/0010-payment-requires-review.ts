import type { QueryInterface } from 'sequelize';

/**
 * A payment's status may be `requires_review` (15 characters): recovery's verdict on a charge
 * whose outcome stayed unknown. The column grows from varchar(12) to varchar(20).
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await statusLength(qi, 12, 20);
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.sequelize.query("UPDATE payments SET status = 'pending' WHERE status = 'requires_review'");
  await statusLength(qi, 20, 12);
}

async function statusLength(qi: QueryInterface, from: number, to: number): Promise<void> {
  const db = qi.sequelize;
  if (db.getDialect() === 'postgres') {
    await db.query(`ALTER TABLE payments ALTER COLUMN status TYPE varchar(${to})`);
    return;
  }
  // SQLite cannot change a column's type (it does not enforce the length, but the declared
  // type is the schema's contract): the table is rebuilt with the same definition and indexes.
  // No table references payments, so dropping the old one breaks no foreign key.
  await db.transaction(async (transaction) => {
    const [[table]] = (await db.query("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'payments'", { transaction })) as [Array<{ sql: string }>, unknown];
    const [indexes] = (await db.query("SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'payments' AND sql IS NOT NULL", { transaction })) as [Array<{ sql: string }>, unknown];
    const declared = /`status` VARCHAR\(\d+\)/;
    if (!table.sql.includes(`\`status\` VARCHAR(${from})`)) throw new Error(`payments.status is not varchar(${from}): ${table.sql}`);
    // Created under its own name, so the stored definition reads as the migrations wrote it.
    await db.query('ALTER TABLE payments RENAME TO payments_before_rebuild', { transaction });
    await db.query(table.sql.replace(declared, `\`status\` VARCHAR(${to})`), { transaction });
    await db.query('INSERT INTO payments SELECT * FROM payments_before_rebuild', { transaction });
    await db.query('DROP TABLE payments_before_rebuild', { transaction });
    for (const index of indexes) await db.query(index.sql, { transaction });
  });
}
