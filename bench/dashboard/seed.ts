import type { Client } from 'pg';

/**
 * The dashboard benchmark's data, written straight into a migrated PostgreSQL database with a few
 * set-based statements (generate_series, INSERT … SELECT), never through the API: one account's
 * test mode holding
 *
 * - `payments` payments spread evenly over the last `days` days (1,000,000 over 10 days by
 *   default: 100,000 a day, about 4,200 in the last hour), written in creation order as a service
 *   writes them (so the table's physical order follows created_at), 86% succeeded, 12% failed, the rest
 *   canceled or in review; in USD, EUR, GBP and JPY; 70% with a customer; across three gateways;
 * - their gateway calls: one charge each, and for 5% a failed first call on another gateway
 *   before it (a failover), so the last hour's authorisation rate per gateway has work;
 * - refunds of 3.5% of the succeeded payments (with their gateway calls), each within two days of
 *   its payment (and before now), some of them today;
 * - `subscriptions` subscriptions (50,000), one customer each, on six prices (EUR, USD, GBP;
 *   weekly, monthly, yearly): 80% active, 5% past due, 3% paused, 12% canceled; two invoices each
 *   (the period before, paid, and the current one: sent and unpaid for the past-due ones and for
 *   some of those that collect by invoice).
 *
 * The payments' and gateway calls' secondary indexes are dropped before the rows go in and built
 * again after (a sorted build is many times faster than 1M inserts into 9 indexes); the tables
 * are then vacuumed and analysed, as autovacuum would have left them. Random values come from a
 * fixed seed, so two seedings differ only in their timestamps' reference, the seeding time.
 */
export interface SeedOptions {
  accountId: string;
  payments: number;
  subscriptions: number;
  days: number;
}

export const BENCH_GATEWAYS = ['gw_builtin_simulator', 'gw_bench_acquirer_b', 'gw_bench_acquirer_c'];

export async function seedDashboard(c: Client, o: SeedOptions, log: (line: string) => void = () => undefined): Promise<void> {
  const step = async (what: string, sql: string, params: unknown[] = []) => {
    const started = performance.now();
    const res = await c.query(sql, params);
    log(`  ${what}: ${res.rowCount ?? ''} ${((performance.now() - started) / 1000).toFixed(1)} s`);
  };
  await c.query("SET synchronous_commit = off; SET maintenance_work_mem = '256MB'; SELECT setseed(0.25)");
  const acct = o.accountId;

  // Two more gateways of the account, disabled so that the payments the benchmark makes over the
  // API still route to the built-in simulator alone.
  await step('gateways', `INSERT INTO gateways (id, account_id, mode, name, type, settings, enabled, created_at, updated_at)
    VALUES ('gw_bench_acquirer_b', $1, 'test', 'Acquirer B', 'simulator', '{}', false, now() - interval '400 days', now()),
           ('gw_bench_acquirer_c', $1, 'test', 'Acquirer C', 'simulator', '{}', false, now() - interval '400 days', now())`, [acct]);

  await step('customers', `INSERT INTO customers (id, account_id, mode, email, email_normalized, name, country, metadata, created_at, updated_at)
    SELECT 'cus_' || substr(md5('c' || i), 1, 24), $1, 'test', 'customer' || i || '@example.com', 'customer' || i || '@example.com',
           'Customer ' || i, (ARRAY['US', 'DE', 'FR', 'GB', 'JP'])[1 + i % 5], '{}', t, t
      FROM (SELECT i, now() - interval '400 days' * random() AS t FROM generate_series(1, $2::int) i) s`, [acct, o.subscriptions]);

  const rebuild = await dropSecondaryIndexes(c, ['payments', 'gateway_transactions', 'refunds']);

  await step('payments', `INSERT INTO payments (id, account_id, mode, customer_id, amount, currency, original_currency, payment_method,
      payment_method_details, description, metadata, status, failure_code, failure_message, amount_refunded, gateway_id, gateway_reference,
      routing_plan, search_text, lease_until, attempts, created_at, updated_at, pending_since)
    SELECT 'pay_' || substr(md5('p' || i), 1, 24), $1, 'test',
           CASE WHEN r_customer < 0.7 THEN 'cus_' || substr(md5('c' || (1 + floor(r_customer / 0.7 * $3)::int)), 1, 24) END,
           100 + floor(r_amount * 20000)::int, currency, currency, 'pm_card_visa',
           '{"type":"card","brand":"visa","last4":"4242","expMonth":null,"expYear":null,"fingerprint":null}', 'Order ' || i, '{}',
           status, CASE WHEN status = 'failed' THEN 'card_declined' END, CASE WHEN status = 'failed' THEN 'The card was declined.' END, 0,
           gateway, CASE WHEN status = 'succeeded' THEN 'simch_' || substr(md5('r' || i), 1, 24) END,
           '["gw_builtin_simulator","gw_bench_acquirer_b","gw_bench_acquirer_c"]', 'order ' || i, created_at + interval '10 seconds',
           CASE WHEN failover
             THEN '[{"gateway":"' || first_gateway || '","outcome":"retryable_error","code":"gateway_unavailable","latency":900},{"gateway":"' || gateway || '","outcome":"' || CASE WHEN status = 'succeeded' THEN 'succeeded","code":null' ELSE 'declined","code":"card_declined"' END || ',"latency":180}]'
             ELSE '[{"gateway":"' || gateway || '","outcome":"' || CASE WHEN status = 'succeeded' THEN 'succeeded","code":null' ELSE 'declined","code":"card_declined"' END || ',"latency":150}]'
           END,
           created_at, created_at + interval '300 milliseconds', created_at
      FROM (
        SELECT i, r_customer, r_amount, failover, created_at,
               CASE WHEN r_status < 0.86 THEN 'succeeded' WHEN r_status < 0.98 THEN 'failed' WHEN r_status < 0.995 THEN 'canceled' ELSE 'requires_review' END AS status,
               CASE WHEN r_currency < 0.5 THEN 'USD' WHEN r_currency < 0.8 THEN 'EUR' WHEN r_currency < 0.95 THEN 'GBP' ELSE 'JPY' END AS currency,
               CASE WHEN r_gateway < 0.6 THEN 'gw_builtin_simulator' WHEN r_gateway < 0.9 THEN 'gw_bench_acquirer_b' ELSE 'gw_bench_acquirer_c' END AS gateway,
               CASE WHEN r_gateway < 0.6 THEN 'gw_bench_acquirer_b' ELSE 'gw_builtin_simulator' END AS first_gateway
          FROM (SELECT i, random() AS r_customer, random() AS r_amount, random() AS r_status, random() AS r_currency, random() AS r_gateway,
                       random() < 0.05 AS failover,
                       -- In creation order, as a service writes them: the table's physical order follows created_at.
                       now() - interval '1 day' * $4::int * ($2::int - i) / $2::int - interval '1 second' * random() AS created_at
                  FROM generate_series(1, $2::int) i) r
      ) s`, [acct, o.payments, o.subscriptions, o.days]);

  // One charge call per payment; before a failover's, its first call (a gateway error on the
  // other gateway) a second earlier. Read from the payments in their physical (creation) order,
  // so the calls are written in that order too.
  await step('gateway calls (charges)', `INSERT INTO gateway_transactions (id, account_id, mode, payment_id, gateway_id, gateway_type, kind, attempt,
      idempotency_key, outcome, code, reference, latency_ms, request, response, created_at)
    SELECT 'gtx_' || substr(p.id, 5) || a.n, p.account_id, p.mode, p.id,
           CASE WHEN a.n < a.calls THEN (CASE WHEN p.gateway_id = 'gw_builtin_simulator' THEN 'gw_bench_acquirer_b' ELSE 'gw_builtin_simulator' END) ELSE p.gateway_id END,
           'simulator', 'charge', a.n, p.id || '_a' || a.n, a.outcome, CASE a.outcome WHEN 'declined' THEN 'card_declined' WHEN 'retryable_error' THEN 'gateway_unavailable' END,
           CASE WHEN a.outcome = 'succeeded' THEN p.gateway_reference END, CASE WHEN a.n < a.calls THEN 900 ELSE 150 END,
           '{"operation":"charge","amount":' || p.amount || ',"currency":"' || p.currency || '"}', '{"object":"charge","status":"' || a.outcome || '"}',
           p.created_at + interval '1 millisecond' * (50 + 1000 * (a.n - 1))
      FROM payments p
      CROSS JOIN LATERAL (
        SELECT n, c.calls, CASE WHEN n < c.calls THEN 'retryable_error' WHEN p.status = 'succeeded' THEN 'succeeded' ELSE 'declined' END AS outcome
          FROM (SELECT CASE WHEN p.attempts LIKE '%retryable_error%' THEN 2 ELSE 1 END AS calls) c, generate_series(1, c.calls) n
      ) a
     WHERE p.account_id = $1`, [acct]);

  await step('refunds', `INSERT INTO refunds (id, account_id, mode, payment_id, amount, currency, status, gateway_id, gateway_reference,
      lease_until, created_at, updated_at, pending_since)
    SELECT 're_' || substr(md5('f' || p.id), 1, 24), p.account_id, p.mode, p.id, CASE WHEN random() < 0.5 THEN p.amount ELSE p.amount / 2 END,
           p.currency, 'succeeded', p.gateway_id, 'simre_' || substr(md5('g' || p.id), 1, 24), t + interval '10 seconds', t, t, t
      FROM (SELECT p.*, p.created_at + LEAST(interval '2 days', now() - p.created_at) * random() AS t FROM payments p
             WHERE p.account_id = $1 AND p.status = 'succeeded' AND random() < 0.035) p`, [acct]);
  await step('payments refunded', `UPDATE payments p SET amount_refunded = r.amount FROM refunds r WHERE r.payment_id = p.id AND p.account_id = $1`, [acct]);
  await step('gateway calls (refunds)', `INSERT INTO gateway_transactions (id, account_id, mode, payment_id, refund_id, gateway_id, gateway_type, kind,
      attempt, idempotency_key, outcome, reference, latency_ms, request, response, created_at)
    SELECT 'gtx_' || substr(r.id, 4), r.account_id, r.mode, r.payment_id, r.id, r.gateway_id, 'simulator', 'refund', 1, r.id, 'succeeded',
           r.gateway_reference, 120, '{"operation":"refund"}', '{"object":"refund","status":"succeeded"}', r.created_at + interval '30 milliseconds'
      FROM refunds r WHERE r.account_id = $1`, [acct]);

  for (const sql of rebuild) {
    const started = performance.now();
    await c.query(sql);
    log(`  ${sql.replace(/ USING .*/, '')}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }

  await step('products', `INSERT INTO products (id, account_id, mode, name, active, metadata, created_at, updated_at)
    VALUES ('prod_bench_plan', $1, 'test', 'Bench plan', true, '{}', now() - interval '500 days', now() - interval '500 days')`, [acct]);
  await step('prices', `INSERT INTO prices (id, account_id, mode, product_id, unit_amount, currency, recurring_interval, recurring_interval_count,
      active, metadata, created_at, updated_at)
    SELECT 'price_bench_' || n, $1, 'test', 'prod_bench_plan', amount, currency, iv, 1, true, '{}', now() - interval '500 days', now() - interval '500 days'
      FROM (VALUES (0, 1500, 'EUR', 'month'), (1, 15000, 'EUR', 'year'), (2, 2000, 'USD', 'month'), (3, 20000, 'USD', 'year'),
                   (4, 500, 'USD', 'week'), (5, 1200, 'GBP', 'month')) v(n, amount, currency, iv)`, [acct]);

  await step('subscriptions', `INSERT INTO subscriptions (id, account_id, mode, customer_id, price_id, quantity, status, collection_method,
      current_period_start, current_period_end, billing_cycle_anchor, cancel_at_period_end, canceled_at, paused_at, ended_at, metadata,
      next_billing_at, invoice_attempts_seen, dunning_failures, first_failed_at, created_at, updated_at)
    SELECT 'sub_' || substr(md5('s' || i), 1, 24), $1, 'test', 'cus_' || substr(md5('c' || i), 1, 24), 'price_bench_' || (i % 6),
           CASE WHEN i % 10 = 0 THEN 3 ELSE 1 END, status, CASE WHEN r_collect < 0.9 THEN 'charge_automatically' ELSE 'send_invoice' END,
           period_start, period_start + span, created_at, false,
           CASE WHEN status = 'canceled' THEN period_start END, CASE WHEN status = 'paused' THEN period_start END,
           CASE WHEN status = 'canceled' THEN period_start END, '{}',
           CASE WHEN status IN ('active', 'past_due') THEN period_start + span END, 0, CASE WHEN status = 'past_due' THEN 1 ELSE 0 END,
           CASE WHEN status = 'past_due' THEN period_start END, created_at, period_start
      FROM (
        SELECT i, r_collect, created_at,
               CASE WHEN r_status < 0.8 THEN 'active' WHEN r_status < 0.85 THEN 'past_due' WHEN r_status < 0.88 THEN 'paused' ELSE 'canceled' END AS status,
               CASE (i % 6) WHEN 1 THEN interval '1 year' WHEN 3 THEN interval '1 year' WHEN 4 THEN interval '7 days' ELSE interval '1 month' END AS span,
               -- The current period started less than a week ago, so it ends in the future whatever its length.
               now() - interval '6 days' * random() AS period_start
          FROM (SELECT i, random() AS r_status, random() AS r_collect, now() - interval '400 days' * random() AS created_at
                  FROM generate_series(1, $2::int) i) r
      ) s`, [acct, o.subscriptions]);

  // Two invoices a subscription: the period before (paid) and the current one.
  await step('invoices', `INSERT INTO invoices (id, account_id, mode, number, number_seq, customer_id, subscription_id, status, payment_status,
      currency, subtotal, total, amount_paid, amount_due, sent_at, paid_at, paid_out_of_band, payment_attempts, metadata, created_at, updated_at,
      billing_period_start, billing_reason)
    SELECT 'in_' || substr(md5('i' || seq), 1, 24), $1, 'test', 'INV-' || lpad(seq::text, 7, '0'), seq, customer_id, id, status,
           CASE WHEN status = 'paid' THEN 'paid' ELSE 'unpaid' END, currency, total, total, CASE WHEN status = 'paid' THEN total ELSE 0 END,
           CASE WHEN status = 'paid' THEN 0 ELSE total END, period_start, CASE WHEN status = 'paid' THEN period_start END, false,
           CASE WHEN collection_method = 'charge_automatically' THEN 1 ELSE 0 END, '{}', period_start, period_start, period_start,
           CASE WHEN current THEN 'subscription_cycle' ELSE 'subscription_create' END
      FROM (
        SELECT s.id, s.customer_id, s.collection_method, p.currency, p.unit_amount * s.quantity AS total, k.current,
               CASE WHEN k.current THEN s.current_period_start ELSE s.current_period_start - (s.current_period_end - s.current_period_start) END AS period_start,
               CASE WHEN NOT k.current THEN 'paid'
                    WHEN s.status = 'past_due' THEN 'sent'
                    WHEN s.collection_method = 'send_invoice' AND random() < 0.3 THEN 'sent'
                    ELSE 'paid' END AS status,
               row_number() OVER (ORDER BY s.created_at, s.id, k.current) AS seq
          FROM subscriptions s JOIN prices p ON p.id = s.price_id CROSS JOIN (VALUES (false), (true)) k(current)
         WHERE s.account_id = $1
      ) x`, [acct]);
  await step('invoice numbers', `INSERT INTO invoice_number_sequences (account_id, mode, last_number, updated_at)
    SELECT $1::varchar, 'test', COALESCE(MAX(number_seq), 0), now() FROM invoices WHERE account_id = $1::varchar AND mode = 'test'
    ON CONFLICT (account_id, mode) DO UPDATE SET last_number = EXCLUDED.last_number`, [acct]);

  await step('vacuum analyze', 'VACUUM (ANALYZE) payments, gateway_transactions, refunds, customers, subscriptions, invoices, prices, gateways');
}

/** Drops the non-unique, non-constraint indexes of `tables` and returns the statements that build them again. */
async function dropSecondaryIndexes(c: Client, tables: string[]): Promise<string[]> {
  const { rows } = await c.query<{ indexname: string; indexdef: string }>(
    `SELECT i.indexname, i.indexdef FROM pg_indexes i
      WHERE i.schemaname = 'public' AND i.tablename = ANY($1)
        AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conname = i.indexname)`,
    [tables],
  );
  for (const r of rows) await c.query(`DROP INDEX ${r.indexname}`);
  return rows.map((r) => r.indexdef);
}
