import 'reflect-metadata';
import { Database, readTime } from '../../src/db/database';
import { PaymentCountStore } from '../../src/modules/payments/payment-count.store';
import { MODELS } from '../../src/db/models';
import { createMigrator } from '../../src/db/migrator';
import { freshDatabase, DIALECT } from '../helpers/db';

describe(`migrations on an empty ${DIALECT} database`, () => {
  it('should apply every migration, roll them all back and apply them again', async () => {
    const database = await freshDatabase();
    const db = new Database({ url: database.url, models: MODELS });
    try {
      await db.init();
      const migrator = createMigrator(db);
      const pendingBefore = await migrator.pending();
      expect(pendingBefore.length).toBeGreaterThan(0);
      const applied = await migrator.up();
      expect(applied.map((m) => m.name)).toEqual(pendingBefore.map((m) => m.name));
      expect(await migrator.pending()).toHaveLength(0);
      const tables = await db.sequelize.getQueryInterface().showAllTables();
      for (const t of [
        'accounts', 'api_keys', 'idempotency_keys', 'customers', 'products', 'prices', 'events', 'gateways', 'routing_configs',
        'fx_rates', 'payment_methods', 'payments', 'refunds', 'gateway_transactions', 'webhook_endpoints', 'webhook_deliveries', 'webhook_attempts',
      ]) expect(tables).toContain(t);
      await migrator.down({ to: 0 });
      expect(await migrator.pending()).toHaveLength(pendingBefore.length);
      await migrator.up();
      expect(await migrator.pending()).toHaveLength(0);
    } finally {
      await db.close();
      await database.drop();
    }
  });

  // Every migration rolled back and the rest re-applied: quadratic in their number (26 now), past
  // a minute on PostgreSQL when the machine is busy.
  it('should take the schema back exactly when any migration is rolled back, and forward again', async () => {
    const database = await freshDatabase();
    const db = new Database({ url: database.url, models: MODELS });
    try {
      await db.init();
      const migrator = createMigrator(db);
      // Tables, columns (with their sizes), keys, constraints and index definitions, as the database reports them.
      const schema = async (): Promise<string[]> => {
        if (db.dialect === 'sqlite') {
          const rows = await db.select<{ type: string; name: string; sql: string | null }>(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations' ORDER BY type, name",
          );
          return rows.map((r) => `${r.type} ${r.name}: ${(r.sql ?? '').replace(/\s+/g, ' ')}`);
        }
        const columns = await db.select<{ d: string }>(
          `SELECT concat_ws(' ', table_name || '.' || column_name, data_type, character_maximum_length, numeric_precision, numeric_scale,
                  datetime_precision, is_nullable, column_default) AS d
             FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> 'schema_migrations' ORDER BY 1`,
        );
        const indexes = await db.select<{ d: string }>("SELECT indexdef AS d FROM pg_indexes WHERE schemaname = 'public' AND tablename <> 'schema_migrations' ORDER BY indexname");
        const constraints = await db.select<{ d: string }>(
          `SELECT c.conrelid::regclass::text || ' ' || c.conname || ' ' || pg_get_constraintdef(c.oid) AS d
             FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
            WHERE n.nspname = 'public' AND c.conrelid::regclass::text <> 'schema_migrations' ORDER BY 1`,
        );
        const triggers = await db.select<{ d: string }>(
          "SELECT pg_get_triggerdef(t.oid) AS d FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal AND c.relname <> 'schema_migrations' ORDER BY 1",
        );
        const functions = await db.select<{ d: string }>(
          "SELECT pg_get_functiondef(p.oid) AS d FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public' ORDER BY 1",
        );
        return [...columns, ...indexes, ...constraints, ...triggers, ...functions].map((r) => r.d);
      };
      // The schema before any migration and after each one.
      const names = (await migrator.pending()).map((m) => m.name);
      const after: string[][] = [await schema()];
      for (let i = 0; i < names.length; i++) {
        await migrator.up({ step: 1 });
        after.push(await schema());
      }
      for (let i = names.length - 1; i >= 0; i--) {
        await migrator.down({ to: names[i] });
        expect({ rolledBack: names[i], schema: await schema() }).toEqual({ rolledBack: names[i], schema: after[i] });
        await migrator.up();
        expect({ reapplied: names[i], schema: await schema() }).toEqual({ reapplied: names[i], schema: after[names.length] });
      }
    } finally {
      await db.close();
      await database.drop();
    }
  }, 180_000);

  it('should date the rows pending before 0011 now on the database\'s clock, never from their creation, and give back the refunds it marked for review as succeeded', async () => {
    const database = await freshDatabase();
    const db = new Database({ url: database.url, models: MODELS });
    try {
      await db.init();
      const migrator = createMigrator(db);
      await migrator.up({ to: '0010-payment-requires-review' });
      // Business time: a test clock, or an instance's clock that lags, can put it years back.
      const created = new Date('2019-01-02T03:04:05.678Z');
      const insertPayment = (id: string, status: string) => db.execute(
        `INSERT INTO payments (id, account_id, mode, amount, currency, original_currency, payment_method, status, created_at, updated_at)
         VALUES ($1, 'acct_1', 'test', 500, 'USD', 'USD', 'pm_card_visa', $2, $3, $3)`, [id, status, created]);
      const insertRefund = (id: string, status: string) => db.execute(
        `INSERT INTO refunds (id, account_id, mode, payment_id, amount, currency, status, created_at, updated_at)
         VALUES ($1, 'acct_1', 'test', 'pay_pending', 100, 'USD', $2, $3, $3)`, [id, status, created]);
      await insertPayment('pay_pending', 'pending');
      await insertPayment('pay_done', 'succeeded');
      await insertRefund('re_pending', 'pending');
      await insertRefund('re_done', 'failed');
      const dbNow = async () => (readTime((await db.select<{ now: unknown }>(`SELECT ${db.nowSql} AS now`))[0].now) as Date).getTime();
      const before = await dbNow();
      await migrator.up();
      const after = await dbNow();
      const since = async (table: string, id: string) => readTime((await db.select<{ s: unknown }>(`SELECT pending_since AS s FROM ${table} WHERE id = $1`, [id]))[0].s);
      // Pending from when the migration ran, as far as anyone can tell: "not found" is not final at once.
      for (const [table, id] of [['payments', 'pay_pending'], ['refunds', 're_pending']]) {
        const at = (await since(table, id))!.getTime();
        expect(at).toBeGreaterThanOrEqual(before);
        expect(at).toBeLessThanOrEqual(after + 1); // PostgreSQL rounds to the millisecond
      }
      expect(await since('payments', 'pay_done')).toBeNull();
      expect(await since('refunds', 're_done')).toBeNull();
      // A refund's status now holds requires_review; rolled back, it reads as the refund it was: made.
      await db.execute("UPDATE refunds SET status = 'requires_review' WHERE id = 're_done'");
      await migrator.down({ to: '0011-pending-since-refund-review' });
      expect((await db.select<{ status: string }>("SELECT status FROM refunds WHERE id = 're_done'"))[0].status).toBe('succeeded');
    } finally {
      await db.close();
      await database.drop();
    }
  });

  it('should give the events written before 0017 the id of their object from their JSON', async () => {
    const database = await freshDatabase();
    const db = new Database({ url: database.url, models: MODELS });
    try {
      await db.init();
      const migrator = createMigrator(db);
      await migrator.up({ to: '0016-dashboard-indexes' });
      const insert = (id: string, data: unknown) => db.execute(
        `INSERT INTO events (id, account_id, mode, type, data, created_at) VALUES ($1, 'acct_1', 'test', 'payment.succeeded', $2, $3)`,
        [id, JSON.stringify(data), new Date('2026-01-02T03:04:05.678Z')]);
      await insert('evt_pay', { object: { id: 'pay_before', object: 'payment', amount: 500 } });
      await insert('evt_other', { object: { id: 're_before', paymentId: 'pay_before' } });
      await migrator.up();
      const rows = await db.select<{ id: string; object_id: string | null }>('SELECT id, object_id FROM events ORDER BY id');
      expect(rows).toEqual([{ id: 'evt_other', object_id: 're_before' }, { id: 'evt_pay', object_id: 'pay_before' }]);
    } finally {
      await db.close();
      await database.drop();
    }
  });

  it('should count the payments written before 0019 per account, mode and status, and keep counting those written, moved and deleted after', async () => {
    const database = await freshDatabase();
    const db = new Database({ url: database.url, models: MODELS });
    try {
      await db.init();
      const migrator = createMigrator(db);
      await migrator.up({ to: '0018-billing-claim-index' });
      const insertPayment = (id: string, account: string, mode: string, status: string) => db.execute(
        `INSERT INTO payments (id, account_id, mode, amount, currency, original_currency, payment_method, status, created_at, updated_at)
         VALUES ($1, $2, $3, 500, 'USD', 'USD', 'pm_card_visa', $4, $5, $5)`, [id, account, mode, status, new Date('2026-01-02T03:04:05.678Z')]);
      await insertPayment('pay_1', 'acct_1', 'test', 'succeeded');
      await insertPayment('pay_2', 'acct_1', 'test', 'succeeded');
      await insertPayment('pay_3', 'acct_1', 'test', 'failed');
      await insertPayment('pay_4', 'acct_1', 'live', 'succeeded');
      await insertPayment('pay_5', 'acct_2', 'test', 'pending');
      await migrator.up();
      const store = new PaymentCountStore(db);
      // What COUNT(*) says, per scope and status, against the kept totals.
      const check = async () => {
        for (const [accountId, mode] of [['acct_1', 'test'], ['acct_1', 'live'], ['acct_2', 'test'], ['acct_3', 'test']]) {
          const counted = await db.select<{ status: string; n: number | string }>(
            'SELECT status, COUNT(*) AS n FROM payments WHERE account_id = $1 AND mode = $2 GROUP BY status', [accountId, mode]);
          const all = counted.reduce((n, r) => n + Number(r.n), 0);
          expect({ accountId, mode, total: await store.total({ accountId, mode }) }).toEqual({ accountId, mode, total: all });
          for (const status of ['pending', 'succeeded', 'failed', 'canceled']) {
            const n = Number(counted.find((r) => r.status === status)?.n ?? 0);
            expect({ accountId, mode, status, total: await store.total({ accountId, mode }, status) }).toEqual({ accountId, mode, status, total: n });
          }
        }
      };
      await check();
      expect(await store.total({ accountId: 'acct_1', mode: 'test' }, 'succeeded')).toBe(2);
      await insertPayment('pay_6', 'acct_2', 'test', 'pending');
      await db.execute("UPDATE payments SET status = 'succeeded' WHERE id = 'pay_5'");
      await db.execute("UPDATE payments SET description = 'not a status change' WHERE id = 'pay_6'");
      await db.execute("UPDATE payments SET status = 'failed' WHERE id IN ('pay_1', 'pay_2')");
      await db.execute("DELETE FROM payments WHERE id = 'pay_3'");
      await check();
      expect(await store.total({ accountId: 'acct_1', mode: 'test' }, 'failed')).toBe(2);
      // One delta row per statement and move: the two payments failed by one UPDATE are one.
      expect(await store.fold()).toBe(db.dialect === 'postgres' ? 4 : 0);
      await check();
      expect(await db.select('SELECT * FROM payment_count_deltas')).toEqual([]);
    } finally {
      await db.close();
      await database.drop();
    }
  });

  it('should index every list filter and sort column', async () => {
    const database = await freshDatabase();
    const db = new Database({ url: database.url, models: MODELS });
    try {
      await db.init();
      await createMigrator(db).up();
      const qi = db.sequelize.getQueryInterface();
      const indexed = async (table: string) =>
        ((await qi.showIndex(table)) as Array<{ fields: Array<{ attribute: string }> }>).map((i) => i.fields.map((f) => f.attribute).join(','));
      expect(await indexed('customers')).toEqual(expect.arrayContaining(['account_id,mode,created_at,id', 'account_id,mode,email_normalized']));
      expect(await indexed('events')).toEqual(expect.arrayContaining(['account_id,mode,created_at,id', 'account_id,mode,type,created_at,id']));
      expect(await indexed('prices')).toEqual(expect.arrayContaining(['account_id,mode,unit_amount,id', 'account_id,mode,product_id,created_at,id']));
      expect(await indexed('products')).toEqual(expect.arrayContaining(['account_id,mode,active,created_at,id', 'account_id,mode,name,id']));
      expect(await indexed('payments')).toEqual(expect.arrayContaining([
        'account_id,mode,created_at,id', 'account_id,mode,amount,id', 'account_id,mode,status,created_at,id',
        'account_id,mode,customer_id,created_at,id', 'account_id,mode,subscription_id,created_at,id', 'lease_until',
      ]));
      // Partial indexes: pending rows only for recovery, non-null owners for the owner filters.
      const definition = async (name: string) => {
        const [row] = db.dialect === 'postgres'
          ? await db.select<{ sql: string }>('SELECT indexdef AS sql FROM pg_indexes WHERE indexname = $1', [name])
          : await db.select<{ sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = $1", [name]);
        return row.sql.replace(/[`"()]|::text/g, '').replace(/\s+/g, ' ');
      };
      expect(await definition('payments_pending_idx')).toMatch(/lease_until WHERE status = 'pending'$/);
      expect(await definition('refunds_pending_idx')).toMatch(/lease_until WHERE status = 'pending'$/);
      expect(await definition('payments_customer_idx')).toMatch(/WHERE customer_id IS NOT NULL$/);
      expect(await definition('payments_subscription_idx')).toMatch(/WHERE subscription_id IS NOT NULL$/);
      expect(await definition('gtx_payment_idx')).toMatch(/WHERE payment_id IS NOT NULL$/);
      expect(await definition('gtx_refund_idx')).toMatch(/WHERE refund_id IS NOT NULL$/);
      // …and a bound `column = $n` filter still uses them (a generic plan on PostgreSQL).
      const plan = async (sql: string, bind: unknown[]) => {
        if (db.dialect === 'sqlite') return JSON.stringify(await db.select(`EXPLAIN QUERY PLAN ${sql}`, bind));
        return db.transaction(async (t) => {
          await db.execute('SET LOCAL enable_seqscan = off', [], t);
          await db.execute('SET LOCAL plan_cache_mode = force_generic_plan', [], t);
          return JSON.stringify(await db.select(`EXPLAIN ${sql}`, bind, t));
        });
      };
      expect(await plan('SELECT id FROM payments WHERE account_id = $1 AND mode = $2 AND customer_id = $3 ORDER BY created_at DESC, id DESC LIMIT 10', ['a', 'test', 'cus_1']))
        .toContain('payments_customer_idx');
      expect(await plan('SELECT id FROM payments WHERE account_id = $1 AND mode = $2 AND subscription_id = $3 ORDER BY created_at DESC, id DESC LIMIT 10', ['a', 'test', 'sub_1']))
        .toContain('payments_subscription_idx');
      expect(await plan('SELECT id FROM gateway_transactions WHERE account_id = $1 AND mode = $2 AND refund_id = $3 ORDER BY created_at DESC, id DESC LIMIT 10', ['a', 'test', 're_1']))
        .toContain('gtx_refund_idx');
      // The events of one object (GraphQL `events(objectId:)`, the dashboard's payment detail).
      expect(await plan('SELECT id FROM events WHERE account_id = $1 AND mode = $2 AND object_id = $3 ORDER BY created_at DESC, id DESC LIMIT 10', ['a', 'test', 'pay_1']))
        .toContain('events_object_idx');
      // Recovery's look, with leases on the database's clock.
      expect(await plan(`SELECT id FROM payments WHERE status = 'pending' AND lease_until < ${db.nowSql} ORDER BY lease_until LIMIT 50`, []))
        .toContain('payments_pending_idx');
      expect(await plan(`SELECT id FROM refunds WHERE status = 'pending' AND lease_until < ${db.nowSql} ORDER BY lease_until LIMIT 50`, []))
        .toContain('refunds_pending_idx');
      expect(await indexed('refunds')).toEqual(expect.arrayContaining(['account_id,mode,payment_id,created_at,id', 'account_id,mode,status,created_at,id']));
      expect(await indexed('gateways')).toEqual(expect.arrayContaining(['account_id,mode,type,created_at,id', 'account_id,mode,name,id']));
      expect(await indexed('webhook_deliveries')).toEqual(expect.arrayContaining(['account_id,mode,endpoint_id,created_at,id']));
      expect(await indexed('webhook_endpoints')).toEqual(expect.arrayContaining(['account_id,mode,status,created_at,id']));
    } finally {
      await db.close();
      await database.drop();
    }
  });
});
