import { DataTypes, type QueryInterface } from 'sequelize';

const id = { type: DataTypes.STRING(64), primaryKey: true, allowNull: false };
const accountId = { type: DataTypes.STRING(64), allowNull: false };
const mode = { type: DataTypes.STRING(4), allowNull: false };
const optionalRef = { type: DataTypes.STRING(64), allowNull: true };
const ts = { type: DataTypes.DATE(3), allowNull: false };
const optionalTs = { type: DataTypes.DATE(3), allowNull: true };
const metadata = { type: DataTypes.TEXT, allowNull: false, defaultValue: '{}' };

/**
 * Checkout sessions and payment links: what a customer pays on the hosted pages.
 * - A session's kind is `checkout_mode` (payment | setup | subscription): `mode` is the
 *   account's test/live mode, as on every table. A pay claims the session for a short lease
 *   (`paying_until`, on the database's clock, `paying_token` naming the claim), so concurrent pays
 *   of one session charge at most once; once its payment row exists, that pending payment holds
 *   the session instead.
 * - A payment link's `slug` is its public name: random, unique across accounts and modes.
 * Each list filter and sort has its index.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.createTable('checkout_sessions', {
    id,
    account_id: accountId,
    mode,
    checkout_mode: { type: DataTypes.STRING(12), allowNull: false },
    // open | complete | expired
    status: { type: DataTypes.STRING(10), allowNull: false },
    amount: { type: DataTypes.BIGINT, allowNull: true },
    currency: { type: DataTypes.STRING(3), allowNull: true },
    price_id: optionalRef,
    description: { type: DataTypes.STRING(500), allowNull: true },
    customer_id: optionalRef,
    customer_email: { type: DataTypes.STRING(320), allowNull: true },
    success_url: { type: DataTypes.STRING(2048), allowNull: true },
    cancel_url: { type: DataTypes.STRING(2048), allowNull: true },
    expires_at: ts,
    payment_id: optionalRef,
    payment_method_id: optionalRef,
    subscription_id: optionalRef,
    invoice_id: optionalRef,
    paying_until: optionalTs,
    paying_token: { type: DataTypes.STRING(32), allowNull: true },
    metadata,
    created_at: ts,
    updated_at: ts,
    completed_at: optionalTs,
    expired_at: optionalTs,
  });
  await qi.addIndex('checkout_sessions', ['account_id', 'mode', 'created_at', 'id'], { name: 'checkout_sessions_list_idx' });
  await qi.addIndex('checkout_sessions', ['account_id', 'mode', 'status', 'created_at', 'id'], { name: 'checkout_sessions_status_idx' });
  await qi.addIndex('checkout_sessions', ['account_id', 'mode', 'checkout_mode', 'created_at', 'id'], { name: 'checkout_sessions_kind_idx' });
  await qi.addIndex('checkout_sessions', ['account_id', 'mode', 'customer_id', 'created_at', 'id'], { name: 'checkout_sessions_customer_idx' });
  await qi.addIndex('checkout_sessions', ['account_id', 'mode', 'amount', 'id'], { name: 'checkout_sessions_amount_idx' });
  // The jobs: open sessions by when they expire, and claims whose lease ran out.
  await qi.addIndex('checkout_sessions', ['status', 'expires_at'], { name: 'checkout_sessions_due_idx' });
  await qi.addIndex('checkout_sessions', ['status', 'paying_until'], { name: 'checkout_sessions_claims_idx' });

  await qi.createTable('payment_links', {
    id,
    account_id: accountId,
    mode,
    slug: { type: DataTypes.STRING(64), allowNull: false },
    name: { type: DataTypes.STRING(200), allowNull: false },
    description: { type: DataTypes.STRING(500), allowNull: true },
    amount: { type: DataTypes.BIGINT, allowNull: false },
    currency: { type: DataTypes.STRING(3), allowNull: false },
    price_id: optionalRef,
    // active | inactive
    status: { type: DataTypes.STRING(10), allowNull: false },
    // Lower-cased name, description, slug and id: what `search` matches.
    search_text: { type: DataTypes.TEXT, allowNull: false },
    metadata,
    created_at: ts,
    updated_at: ts,
  });
  await qi.addIndex('payment_links', ['slug'], { name: 'payment_links_slug_key', unique: true });
  await qi.addIndex('payment_links', ['account_id', 'mode', 'created_at', 'id'], { name: 'payment_links_list_idx' });
  await qi.addIndex('payment_links', ['account_id', 'mode', 'status', 'created_at', 'id'], { name: 'payment_links_status_idx' });
  await qi.addIndex('payment_links', ['account_id', 'mode', 'amount', 'id'], { name: 'payment_links_amount_idx' });

  // A session's or link's payments (the session's claim checks for a pending one).
  await qi.addIndex('payments', ['checkout_session_id'], { name: 'payments_checkout_session_idx' });
  await qi.addIndex('payments', ['payment_link_id', 'created_at'], { name: 'payments_payment_link_idx' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.removeIndex('payments', 'payments_payment_link_idx');
  await qi.removeIndex('payments', 'payments_checkout_session_idx');
  await qi.dropTable('payment_links');
  await qi.dropTable('checkout_sessions');
}
