import 'reflect-metadata';
import { Database } from '../../src/db/database';
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
      // The recovery indexes hold pending rows only (a settled row leaves them).
      for (const table of ['payments', 'refunds']) {
        const [definition] = db.dialect === 'postgres'
          ? await db.select<{ sql: string }>('SELECT indexdef AS sql FROM pg_indexes WHERE indexname = $1', [`${table}_pending_idx`])
          : await db.select<{ sql: string }>("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = $1", [`${table}_pending_idx`]);
        expect(definition.sql.replace(/[`"()]|::text/g, '')).toMatch(/lease_until WHERE status = 'pending'$/);
      }
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
