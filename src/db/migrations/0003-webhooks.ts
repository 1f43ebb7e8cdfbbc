import { DataTypes, type QueryInterface } from 'sequelize';

const id = { type: DataTypes.STRING(64), primaryKey: true, allowNull: false };
const ref = { type: DataTypes.STRING(64), allowNull: false };
const accountId = { type: DataTypes.STRING(64), allowNull: false };
const mode = { type: DataTypes.STRING(4), allowNull: false };
const ts = { type: DataTypes.DATE(3), allowNull: false };
const optionalTs = { type: DataTypes.DATE(3), allowNull: true };

/**
 * Webhooks: registered endpoints (secret sealed with the webhook SecretBox, never in clear), the
 * durable outbox of deliveries (one row per event × endpoint, written in the event's
 * transaction) and the log of every HTTP attempt.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('webhook_endpoints', {
    id,
    account_id: accountId,
    mode,
    url: { type: DataTypes.STRING(2048), allowNull: false },
    description: { type: DataTypes.TEXT, allowNull: true },
    // JSON array of event types, or ["*"].
    events: { type: DataTypes.TEXT, allowNull: false, defaultValue: '[]' },
    // SecretBox "v1.<iv>.<tag>.<ciphertext>" of the whsec_ secret.
    secret_sealed: { type: DataTypes.TEXT, allowNull: false },
    status: { type: DataTypes.STRING(10), allowNull: false, defaultValue: 'enabled' },
    disabled_reason: { type: DataTypes.STRING(40), allowNull: true },
    created_at: ts,
    updated_at: ts,
    deleted_at: optionalTs,
  });
  await qi.addIndex('webhook_endpoints', ['account_id', 'mode', 'created_at', 'id'], { name: 'webhook_endpoints_list_idx' });
  await qi.addIndex('webhook_endpoints', ['account_id', 'mode', 'status', 'created_at', 'id'], { name: 'webhook_endpoints_status_idx' });

  await qi.createTable('webhook_deliveries', {
    id,
    account_id: accountId,
    mode,
    endpoint_id: ref,
    event_id: ref,
    event_type: { type: DataTypes.STRING(64), allowNull: false },
    // The exact bytes POSTed (and signed): {id, object, type, createdAt, livemode, data}.
    payload: { type: DataTypes.TEXT, allowNull: false },
    // pending | delivered | failed (retry window exhausted) | abandoned (endpoint disabled, gone or deleted)
    status: { type: DataTypes.STRING(10), allowNull: false },
    attempts: { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 },
    next_attempt_at: ts,
    first_attempt_at: optionalTs,
    last_status_code: { type: DataTypes.INTEGER, allowNull: true },
    last_error: { type: DataTypes.STRING(255), allowNull: true },
    last_latency_ms: { type: DataTypes.INTEGER, allowNull: true },
    // Claim lease: a worker owns the row until locked_until; lock_token identifies the claim.
    locked_until: optionalTs,
    lock_token: { type: DataTypes.STRING(32), allowNull: true },
    created_at: ts,
    updated_at: ts,
    delivered_at: optionalTs,
  });
  await qi.addIndex('webhook_deliveries', ['status', 'next_attempt_at'], { name: 'webhook_deliveries_due_idx' });
  await qi.addIndex('webhook_deliveries', ['account_id', 'mode', 'endpoint_id', 'created_at', 'id'], { name: 'webhook_deliveries_list_idx' });
  await qi.addIndex('webhook_deliveries', ['endpoint_id', 'status'], { name: 'webhook_deliveries_endpoint_idx' });

  await qi.createTable('webhook_attempts', {
    id,
    account_id: accountId,
    mode,
    endpoint_id: ref,
    delivery_id: ref,
    event_id: ref,
    event_type: { type: DataTypes.STRING(64), allowNull: false },
    attempt: { type: DataTypes.INTEGER, allowNull: false },
    succeeded: { type: DataTypes.BOOLEAN, allowNull: false },
    status_code: { type: DataTypes.INTEGER, allowNull: true },
    latency_ms: { type: DataTypes.INTEGER, allowNull: false },
    error: { type: DataTypes.STRING(255), allowNull: true },
    next_retry_at: optionalTs,
    created_at: ts,
  });
  await qi.addIndex('webhook_attempts', ['account_id', 'mode', 'endpoint_id', 'created_at', 'id'], { name: 'webhook_attempts_list_idx' });
  // Retention sweeps.
  await qi.addIndex('webhook_attempts', ['created_at'], { name: 'webhook_attempts_age_idx' });
  await qi.addIndex('webhook_deliveries', ['status', 'updated_at'], { name: 'webhook_deliveries_age_idx' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  for (const t of ['webhook_attempts', 'webhook_deliveries', 'webhook_endpoints']) await qi.dropTable(t);
}
