import { DataTypes, type QueryInterface } from 'sequelize';

// The payments list's total (`meta.total`, GraphQL `total`) without counting the rows: how many
// payments each account and mode has in each status, kept by triggers in the same transaction as
// the write that changes it, so no code path that inserts a payment or moves its status can
// forget it.
//
// On PostgreSQL the triggers do not update the counts themselves: every payment written would
// then wait on the lock of its account's count row until the writer before it committed (and two
// writers touching two statuses in opposite orders could deadlock). They append rows to
// payment_count_deltas instead (insert only, nothing shared): per statement, how many payments of
// an account and mode were written, moved from one status to another, or deleted. A job folds them
// into payment_counts every few seconds (PaymentCountStore.fold). A total is the counts plus the
// deltas not yet folded, read in one statement: one snapshot, so a fold that commits meanwhile is
// seen whole or not at all. SQLite has one writer at a time and no statement-level triggers: there
// row triggers update payment_counts directly and the deltas stay empty.
//
// A payment's account and mode never change; only its status does.

const FUNCTIONS = ['payorch_payment_count_insert', 'payorch_payment_count_update', 'payorch_payment_count_delete'];
const TRIGGERS = ['payments_count_insert', 'payments_count_update', 'payments_count_delete'];

// Statement-level triggers: one call and one delta row per group (account, mode, status move) of
// a statement, not one per payment. The payments' group commit writes many payments in one
// statement; row-level triggers (a PL/pgSQL call and an INSERT per payment) cost 25 to 30% of
// POST /v1/payments' throughput on the create-payment benchmark. A statement-level UPDATE trigger
// cannot name its columns when it reads the transition tables, so it runs for every UPDATE of
// payments and keeps the rows whose status changed.
const delta = (select: string) => `INSERT INTO payment_count_deltas (id, account_id, mode, old_status, new_status, n) ${select}`;
const POSTGRES_UP = [
  `CREATE FUNCTION payorch_payment_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     ${delta(`SELECT gen_random_uuid()::text, account_id, mode, NULL, status, COUNT(*) FROM counted_new GROUP BY account_id, mode, status`)};
     RETURN NULL;
   END $$`,
  `CREATE FUNCTION payorch_payment_count_update() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     ${delta(`SELECT gen_random_uuid()::text, n.account_id, n.mode, o.status, n.status, COUNT(*)
                FROM counted_old o JOIN counted_new n ON n.id = o.id
               WHERE o.status IS DISTINCT FROM n.status
               GROUP BY n.account_id, n.mode, o.status, n.status`)};
     RETURN NULL;
   END $$`,
  `CREATE FUNCTION payorch_payment_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
   BEGIN
     ${delta(`SELECT gen_random_uuid()::text, account_id, mode, status, NULL, COUNT(*) FROM counted_old GROUP BY account_id, mode, status`)};
     RETURN NULL;
   END $$`,
  `CREATE TRIGGER payments_count_insert AFTER INSERT ON payments REFERENCING NEW TABLE AS counted_new
     FOR EACH STATEMENT EXECUTE FUNCTION payorch_payment_count_insert()`,
  `CREATE TRIGGER payments_count_update AFTER UPDATE ON payments REFERENCING OLD TABLE AS counted_old NEW TABLE AS counted_new
     FOR EACH STATEMENT EXECUTE FUNCTION payorch_payment_count_update()`,
  `CREATE TRIGGER payments_count_delete AFTER DELETE ON payments REFERENCING OLD TABLE AS counted_old
     FOR EACH STATEMENT EXECUTE FUNCTION payorch_payment_count_delete()`,
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
      // How many payments made this move in one statement.
      n: { type: DataTypes.BIGINT, allowNull: false },
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
  if (postgres) for (const name of FUNCTIONS) await qi.sequelize.query(`DROP FUNCTION IF EXISTS ${name}()`);
  await qi.dropTable('payment_count_deltas');
  await qi.dropTable('payment_counts');
}
