import { DataTypes, type QueryInterface } from 'sequelize';

const id = { type: DataTypes.STRING(64), primaryKey: true, allowNull: false };
const accountId = { type: DataTypes.STRING(64), allowNull: false };
const mode = { type: DataTypes.STRING(4), allowNull: false };
const timestamps = {
  created_at: { type: DataTypes.DATE(3), allowNull: false },
  updated_at: { type: DataTypes.DATE(3), allowNull: false },
};
const metadata = { type: DataTypes.TEXT, allowNull: false, defaultValue: '{}' };

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('accounts', {
    id,
    name: { type: DataTypes.STRING(200), allowNull: false },
    rate_limit_per_minute: { type: DataTypes.INTEGER, allowNull: true },
    ...timestamps,
  });

  await qi.createTable('api_keys', {
    id,
    account_id: { ...accountId, references: { model: 'accounts', key: 'id' } },
    mode,
    key_hash: { type: DataTypes.STRING(64), allowNull: false },
    key_hint: { type: DataTypes.STRING(32), allowNull: false },
    name: { type: DataTypes.STRING(200), allowNull: true },
    permissions: { type: DataTypes.TEXT, allowNull: false, defaultValue: '["*"]' },
    revoked_at: { type: DataTypes.DATE(3), allowNull: true },
    ...timestamps,
  });
  await qi.addIndex('api_keys', ['key_hash'], { unique: true, name: 'api_keys_key_hash_uq' });
  await qi.addIndex('api_keys', ['account_id', 'mode', 'created_at', 'id'], { name: 'api_keys_list_idx' });

  await qi.createTable('idempotency_keys', {
    scope: { type: DataTypes.STRING(80), allowNull: false, primaryKey: true },
    idempotency_key: { type: DataTypes.STRING(255), allowNull: false, primaryKey: true },
    request_hash: { type: DataTypes.STRING(64), allowNull: false },
    state: { type: DataTypes.STRING(12), allowNull: false },
    response_status: { type: DataTypes.INTEGER, allowNull: true },
    response_body: { type: DataTypes.TEXT, allowNull: true },
    created_at: { type: DataTypes.DATE(3), allowNull: false },
    expires_at: { type: DataTypes.DATE(3), allowNull: false },
  });
  await qi.addIndex('idempotency_keys', ['expires_at'], { name: 'idempotency_keys_expires_idx' });

  await qi.createTable('customers', {
    id,
    account_id: accountId,
    mode,
    email: { type: DataTypes.STRING(320), allowNull: false },
    email_normalized: { type: DataTypes.STRING(320), allowNull: false },
    name: { type: DataTypes.STRING(200), allowNull: true },
    country: { type: DataTypes.STRING(2), allowNull: true },
    phone: { type: DataTypes.STRING(40), allowNull: true },
    default_payment_method_id: { type: DataTypes.STRING(64), allowNull: true },
    test_clock_id: { type: DataTypes.STRING(64), allowNull: true },
    metadata,
    ...timestamps,
  });
  await qi.addIndex('customers', ['account_id', 'mode', 'email_normalized'], { unique: true, name: 'customers_email_uq' });
  await qi.addIndex('customers', ['account_id', 'mode', 'created_at', 'id'], { name: 'customers_list_idx' });

  await qi.createTable('products', {
    id,
    account_id: accountId,
    mode,
    name: { type: DataTypes.STRING(250), allowNull: false },
    description: { type: DataTypes.TEXT, allowNull: true },
    active: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: true },
    metadata,
    ...timestamps,
  });
  await qi.addIndex('products', ['account_id', 'mode', 'created_at', 'id'], { name: 'products_list_idx' });
  await qi.addIndex('products', ['account_id', 'mode', 'active', 'created_at', 'id'], { name: 'products_active_idx' });
  await qi.addIndex('products', ['account_id', 'mode', 'name', 'id'], { name: 'products_name_idx' });

  await qi.createTable('prices', {
    id,
    account_id: accountId,
    mode,
    product_id: { type: DataTypes.STRING(64), allowNull: false, references: { model: 'products', key: 'id' } },
    unit_amount: { type: DataTypes.BIGINT, allowNull: false },
    currency: { type: DataTypes.STRING(3), allowNull: false },
    recurring_interval: { type: DataTypes.STRING(5), allowNull: true },
    recurring_interval_count: { type: DataTypes.INTEGER, allowNull: true },
    nickname: { type: DataTypes.STRING(200), allowNull: true },
    active: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: true },
    metadata,
    ...timestamps,
  });
  await qi.addIndex('prices', ['account_id', 'mode', 'created_at', 'id'], { name: 'prices_list_idx' });
  await qi.addIndex('prices', ['account_id', 'mode', 'unit_amount', 'id'], { name: 'prices_amount_idx' });
  await qi.addIndex('prices', ['account_id', 'mode', 'active', 'created_at', 'id'], { name: 'prices_active_idx' });
  await qi.addIndex('prices', ['account_id', 'mode', 'product_id', 'created_at', 'id'], { name: 'prices_product_idx' });
  await qi.addIndex('prices', ['account_id', 'mode', 'currency', 'created_at', 'id'], { name: 'prices_currency_idx' });

  await qi.createTable('events', {
    id,
    account_id: accountId,
    mode,
    type: { type: DataTypes.STRING(64), allowNull: false },
    data: { type: DataTypes.TEXT, allowNull: false },
    created_at: { type: DataTypes.DATE(3), allowNull: false },
  });
  await qi.addIndex('events', ['account_id', 'mode', 'created_at', 'id'], { name: 'events_list_idx' });
  await qi.addIndex('events', ['account_id', 'mode', 'type', 'created_at', 'id'], { name: 'events_type_idx' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  for (const table of ['events', 'prices', 'products', 'customers', 'idempotency_keys', 'api_keys', 'accounts']) {
    await qi.dropTable(table);
  }
}
