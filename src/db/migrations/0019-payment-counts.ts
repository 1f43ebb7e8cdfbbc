import { DataTypes, type QueryInterface } from 'sequelize';

// The payments list's total (`meta.total`, GraphQL `total`) without counting the rows: how many
// payments each account and mode has in each status, kept by triggers in the same transaction as
// the write that changes it, so no code path that inserts a payment or moves its status can
// forget it.
//
// On PostgreSQL a trigger does not update the count itself: every payment written would then wait
// on the lock of its account's one count row until the writer before it committed (and two
// writers touching two statuses in opposite orders could deadlock). It appends a row to
// payment_count_deltas instead (insert only, nothing shared), and a job folds the appended rows
// into payment_counts now and then (PaymentCountStore.fold). A total is the counts plus the
// deltas not yet folded, read in one statement: one snapshot, so a fold that commits meanwhile is
// seen whole or not at all. SQLite has one writer at a time, so there the triggers update
// payment_counts directly and the deltas stay empty.
//
// A payment's account and mode never change; only its status does.

const FUNCTION = 'payorch_payment_count_delta';
const TRIGGERS = ['payments_count_insert', 'payments_count_update', 'payments_count_delete'];

const POSTGRES_UP = [
  `CREATE FUNCTION ${FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     IF TG_OP = 'INSERT' THEN
       INSERT INTO payment_count_deltas (id, account_id, mode, old_status, new_status) VALUES (gen_random_uuid()::text, NEW.account_id, NEW.mode, NULL, NEW.status);
     ELSIF TG_OP = 'UPDATE' THEN
       INSERT INTO payment_count_deltas (id, account_id, mode, old_status, new_status) VALUES (gen_random_uuid()::text, NEW.account_id, NEW.mode, OLD.status, NEW.status);
     ELSE
       INSERT INTO payment_count_deltas (id, account_id, mode, old_status, new_status) VALUES (gen_random_uuid()::text, OLD.account_id, OLD.mode, OLD.status, NULL);
     END IF;
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER payments_count_insert AFTER INSERT ON payments FOR EACH ROW EXECUTE FUNCTION ${FUNCTION}()`,
  // Only when the status changes: the other updates of a payment (its lease, its details) do not call the function.
  `CREATE TRIGGER payments_count_update AFTER UPDATE OF status ON payments FOR EACH ROW
     WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION ${FUNCTION}()`,
  `CREATE TRIGGER payments_count_delete AFTER DELETE ON payments FOR EACH ROW EXECUTE FUNCTION ${FUNCTION}()`,
];

const bump = (row: 'NEW' | 'OLD', by: string) =>
  `INSERT INTO payment_counts (account_id, mode, status, n) VALUES (${row}.account_id, ${row}.mode, ${row}.status, ${by})
     ON CONFLICT (account_id, mode, status) DO UPDATE SET n = n + ${by};`;

const SQLITE_UP = [
  `CREATE TRIGGER payments_count_insert AFTER INSERT ON payments BEGIN ${bump('NEW', '1')} END`,
  `CREATE TRIGGER payments_count_update AFTER UPDATE OF status ON payments WHEN OLD.status IS NOT NEW.status
     BEGIN ${bump('OLD', '-1')} ${bump('NEW', '1')} END`,
  `CREATE TRIGGER payments_count_delete AFTER DELETE ON payments BEGIN ${bump('OLD', '-1')} END`,
];

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  const postgres = qi.sequelize.getDialect() === 'postgres';
  await qi.sequelize.transaction(async (transaction) => {
    await qi.createTable('payment_counts', {
      account_id: { type: DataTypes.STRING(64), allowNull: false, primaryKey: true },
      mode: { type: DataTypes.STRING(4), allowNull: false, primaryKey: true },
      status: { type: DataTypes.STRING(20), allowNull: false, primaryKey: true },
      n: { type: DataTypes.BIGINT, allowNull: false },
    }, { transaction });
    // Folded whole and often: no index but the key; a reader scans what is waiting.
    await qi.createTable('payment_count_deltas', {
      id: { type: DataTypes.STRING(36), allowNull: false, primaryKey: true },
      account_id: { type: DataTypes.STRING(64), allowNull: false },
      mode: { type: DataTypes.STRING(4), allowNull: false },
      old_status: { type: DataTypes.STRING(20), allowNull: true },
      new_status: { type: DataTypes.STRING(20), allowNull: true },
    }, { transaction });
    // No payment is written between the count of the rows already there and the triggers taking over.
    if (postgres) await qi.sequelize.query('LOCK TABLE payments IN SHARE ROW EXCLUSIVE MODE', { transaction });
    for (const sql of postgres ? POSTGRES_UP : SQLITE_UP) await qi.sequelize.query(sql, { transaction });
    await qi.sequelize.query(
      `INSERT INTO payment_counts (account_id, mode, status, n)
       SELECT account_id, mode, status, COUNT(*) FROM payments GROUP BY account_id, mode, status`,
      { transaction },
    );
  });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  const postgres = qi.sequelize.getDialect() === 'postgres';
  for (const name of TRIGGERS) await qi.sequelize.query(postgres ? `DROP TRIGGER IF EXISTS ${name} ON payments` : `DROP TRIGGER IF EXISTS ${name}`);
  if (postgres) await qi.sequelize.query(`DROP FUNCTION IF EXISTS ${FUNCTION}()`);
  await qi.dropTable('payment_count_deltas');
  await qi.dropTable('payment_counts');
}
