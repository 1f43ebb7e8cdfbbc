import { DataTypes, type QueryInterface } from 'sequelize';

const id = { type: DataTypes.STRING(64), primaryKey: true, allowNull: false };
const accountId = { type: DataTypes.STRING(64), allowNull: false };
const mode = { type: DataTypes.STRING(4), allowNull: false };
const ts = { type: DataTypes.DATE(3), allowNull: false };
const json = (defaultValue: string) => ({ type: DataTypes.TEXT, allowNull: false, defaultValue });
const str = (n: number) => ({ type: DataTypes.STRING(n), allowNull: true });

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('gateways', {
    id,
    account_id: accountId,
    mode,
    name: { type: DataTypes.STRING(200), allowNull: false },
    type: { type: DataTypes.STRING(40), allowNull: false },
    credentials_sealed: { type: DataTypes.TEXT, allowNull: true },
    settings: json('{}'),
    currencies: { type: DataTypes.TEXT, allowNull: true },
    enabled: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: true },
    deleted_at: { type: DataTypes.DATE(3), allowNull: true },
    created_at: ts,
    updated_at: ts,
  });
  await qi.addIndex('gateways', ['account_id', 'mode', 'created_at', 'id'], { name: 'gateways_list_idx' });
  await qi.addIndex('gateways', ['account_id', 'mode', 'type', 'created_at', 'id'], { name: 'gateways_type_idx' });
  await qi.addIndex('gateways', ['account_id', 'mode', 'name', 'id'], { name: 'gateways_name_idx' });

  await qi.createTable('routing_configs', {
    account_id: { ...accountId, primaryKey: true },
    mode: { ...mode, primaryKey: true },
    config: { type: DataTypes.TEXT, allowNull: false },
    updated_at: ts,
  });

  await qi.createTable('fx_rates', {
    account_id: { ...accountId, primaryKey: true },
    mode: { ...mode, primaryKey: true },
    from_currency: { type: DataTypes.STRING(3), allowNull: false, primaryKey: true },
    to_currency: { type: DataTypes.STRING(3), allowNull: false, primaryKey: true },
    rate: { type: DataTypes.STRING(40), allowNull: false },
    updated_at: ts,
  });

  await qi.createTable('payment_methods', {
    id,
    account_id: accountId,
    mode,
    customer_id: { type: DataTypes.STRING(64), allowNull: false },
    gateway_id: { type: DataTypes.STRING(64), allowNull: false },
    gateway_token: { type: DataTypes.TEXT, allowNull: false },
    brand: { type: DataTypes.STRING(20), allowNull: false },
    last4: { type: DataTypes.STRING(4), allowNull: false },
    exp_month: { type: DataTypes.INTEGER, allowNull: false },
    exp_year: { type: DataTypes.INTEGER, allowNull: false },
    fingerprint: { type: DataTypes.STRING(64), allowNull: false },
    created_at: ts,
    updated_at: ts,
  });
  await qi.addIndex('payment_methods', ['account_id', 'mode', 'customer_id', 'created_at', 'id'], { name: 'payment_methods_customer_idx' });

  await qi.createTable('payments', {
    id,
    account_id: accountId,
    mode,
    customer_id: str(64),
    amount: { type: DataTypes.BIGINT, allowNull: false },
    currency: { type: DataTypes.STRING(3), allowNull: false },
    original_currency: { type: DataTypes.STRING(3), allowNull: false },
    original_amount: { type: DataTypes.BIGINT, allowNull: true },
    exchange_rate: str(40),
    payment_method: { type: DataTypes.STRING(64), allowNull: false },
    payment_method_details: json('{}'),
    description: { type: DataTypes.TEXT, allowNull: true },
    metadata: json('{}'),
    status: { type: DataTypes.STRING(12), allowNull: false },
    failure_code: str(64),
    failure_message: { type: DataTypes.TEXT, allowNull: true },
    amount_refunded: { type: DataTypes.BIGINT, allowNull: false, defaultValue: 0 },
    gateway_id: str(64),
    gateway_reference: str(255),
    routing_plan: json('[]'),
    // Lower-cased description, metadata values and customer e-mail: what `search` matches.
    search_text: { type: DataTypes.TEXT, allowNull: false, defaultValue: '' },
    // Until then the creating request owns the pending row; afterwards recovery may claim it.
    lease_until: { type: DataTypes.DATE(3), allowNull: true },
    attempts: json('[]'),
    invoice_id: str(64),
    subscription_id: str(64),
    checkout_session_id: str(64),
    payment_link_id: str(64),
    created_at: ts,
    updated_at: ts,
  });
  await qi.addIndex('payments', ['account_id', 'mode', 'created_at', 'id'], { name: 'payments_list_idx' });
  await qi.addIndex('payments', ['account_id', 'mode', 'amount', 'id'], { name: 'payments_amount_idx' });
  await qi.addIndex('payments', ['account_id', 'mode', 'status', 'created_at', 'id'], { name: 'payments_status_idx' });
  await qi.addIndex('payments', ['account_id', 'mode', 'customer_id', 'created_at', 'id'], { name: 'payments_customer_idx' });
  await qi.addIndex('payments', ['status', 'lease_until'], { name: 'payments_pending_idx' });
  await qi.addIndex('payments', ['account_id', 'mode', 'subscription_id', 'created_at', 'id'], { name: 'payments_subscription_idx' });

  await qi.createTable('refunds', {
    id,
    account_id: accountId,
    mode,
    payment_id: { type: DataTypes.STRING(64), allowNull: false },
    amount: { type: DataTypes.BIGINT, allowNull: false },
    currency: { type: DataTypes.STRING(3), allowNull: false },
    reason: { type: DataTypes.STRING(200), allowNull: true },
    status: { type: DataTypes.STRING(12), allowNull: false },
    gateway_id: str(64),
    gateway_reference: str(255),
    failure_code: str(64),
    failure_message: { type: DataTypes.TEXT, allowNull: true },
    lease_until: { type: DataTypes.DATE(3), allowNull: true },
    created_at: ts,
    updated_at: ts,
  });
  await qi.addIndex('refunds', ['account_id', 'mode', 'created_at', 'id'], { name: 'refunds_list_idx' });
  await qi.addIndex('refunds', ['account_id', 'mode', 'amount', 'id'], { name: 'refunds_amount_idx' });
  await qi.addIndex('refunds', ['account_id', 'mode', 'status', 'created_at', 'id'], { name: 'refunds_status_idx' });
  await qi.addIndex('refunds', ['account_id', 'mode', 'payment_id', 'created_at', 'id'], { name: 'refunds_payment_idx' });
  await qi.addIndex('refunds', ['status', 'lease_until'], { name: 'refunds_pending_idx' });

  await qi.createTable('gateway_transactions', {
    id,
    account_id: accountId,
    mode,
    payment_id: str(64),
    refund_id: str(64),
    gateway_id: { type: DataTypes.STRING(64), allowNull: false },
    gateway_type: { type: DataTypes.STRING(40), allowNull: false },
    kind: { type: DataTypes.STRING(12), allowNull: false },
    attempt: { type: DataTypes.INTEGER, allowNull: false },
    idempotency_key: { type: DataTypes.STRING(255), allowNull: false },
    outcome: { type: DataTypes.STRING(20), allowNull: false },
    code: str(64),
    message: { type: DataTypes.TEXT, allowNull: true },
    reference: str(255),
    latency_ms: { type: DataTypes.INTEGER, allowNull: false },
    request: json('{}'),
    response: json('{}'),
    created_at: ts,
  });
  await qi.addIndex('gateway_transactions', ['account_id', 'mode', 'payment_id', 'created_at', 'id'], { name: 'gtx_payment_idx' });
  await qi.addIndex('gateway_transactions', ['account_id', 'mode', 'refund_id', 'created_at', 'id'], { name: 'gtx_refund_idx' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  for (const t of ['gateway_transactions', 'refunds', 'payments', 'payment_methods', 'fx_rates', 'routing_configs', 'gateways']) {
    await qi.dropTable(t);
  }
}
