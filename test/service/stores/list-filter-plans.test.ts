import type { Database } from '../../../src/db/database';
import type { RequestContext } from '../../../src/core/context';
import { DIALECT } from '../../helpers/db';
import { postgresPlans } from '../../helpers/plans';
import { startServices, type ServiceHarness } from '../../helpers/services';

// Every list filter is read from its own index (migration 0027 and earlier): the statement the
// service runs for each filter, captured as it runs, is planned against 20,000 rows of one
// account and mode whose filtered value is rare, where reading the account's rows in order and
// dropping the others would cost the most. PostgreSQL: the custom and the generic plan (the code's
// statements are prepared) must use the filter's index. SQLite (no statistics): the statement
// must search by an index of the filter's column, never scan the table.

let harness: ServiceHarness;
let db: Database;
let ctx: RequestContext;
const captured: Array<{ sql: string; args: unknown[] }> = [];

beforeAll(async () => {
  harness = await startServices();
  db = harness.services.db;
  ctx = (await harness.account()).test;
  const select = db.select.bind(db);
  jest.spyOn(db, 'select').mockImplementation(async (sql, bind, t) => {
    captured.push({ sql, args: [...(bind as unknown[] ?? [])] });
    return select(sql, bind, t);
  });
});
afterAll(async () => {
  jest.restoreAllMocks();
  await harness.stop();
});

/** The page statement (not the count) a list call runs on `table`. */
async function pageStatement(table: string, call: () => Promise<unknown>): Promise<{ sql: string; args: unknown[] }> {
  captured.length = 0;
  await call();
  const pages = captured.filter((s) => new RegExp(`^SELECT .* FROM ${table} WHERE .*ORDER BY`, 's').test(s.sql) && !/COUNT\(\*\)/.test(s.sql));
  expect(pages).toHaveLength(1);
  return pages[0];
}

const N = 20_000;
/** Rows 1..N: `g` the row number; one in 200 has the rare value. */
const series = (insert: string, select: string) => DIALECT === 'postgres'
  ? `${insert} SELECT ${select} FROM generate_series(1, ${N}) g`
  : `WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < ${N}) ${insert} SELECT ${select} FROM s`;
const at = DIALECT === 'postgres' ? "now() - g * interval '1 second'" : "strftime('%Y-%m-%d %H:%M:%f +00:00', 'now', '-' || g || ' seconds')";
const rare = (value: string, otherwise = 'NULL') => `CASE WHEN g % 200 = 0 THEN ${value} ELSE ${otherwise} END`;

function seeds(accountId: string): string[] {
  const a = `'${accountId}'`;
  return [
    series(
      `INSERT INTO payments (id, account_id, mode, amount, currency, original_currency, payment_method, status, failure_code, gateway_id,
         invoice_id, checkout_session_id, payment_link_id, customer_id, metadata, created_at, updated_at)`,
      `'pay_plan_' || g, ${a}, 'test', g, ${rare("'JPY'", "'EUR'")}, 'EUR', 'card', ${rare("'requires_review'", "'succeeded'")},
       ${rare("'expired_card'")}, ${rare("'gw_rare'", "'gw_main'")}, ${rare("'in_plan'")}, ${rare("'cs_plan'")}, ${rare("'plink_plan'")},
       ${rare("'cus_plan'")}, ${rare(`'{"plan":"gold"}'`, "'{}'")}, ${at}, ${at}`,
    ),
    series(
      'INSERT INTO refunds (id, account_id, mode, payment_id, customer_id, amount, currency, status, created_at, updated_at)',
      `'re_plan_' || g, ${a}, 'test', 'pay_plan_' || g, ${rare("'cus_plan'")}, 1, 'EUR', 'succeeded', ${at}, ${at}`,
    ),
    series(
      `INSERT INTO gateway_transactions (id, account_id, mode, payment_id, refund_id, gateway_id, gateway_type, kind, attempt, idempotency_key,
         outcome, latency_ms, created_at)`,
      `'gtx_plan_' || g, ${a}, 'test', 'pay_plan_' || g, ${rare("'re_plan'")}, ${rare("'gw_rare'", "'gw_main'")}, 'simulator', 'charge', 1, 'k' || g,
       ${rare("'timeout'", "'succeeded'")}, 5, ${at}`,
    ),
    series(
      `INSERT INTO webhook_attempts (id, account_id, mode, endpoint_id, delivery_id, event_id, event_type, attempt, succeeded, latency_ms, created_at)`,
      `'wha_plan_' || g, ${a}, 'test', 'we_plan', 'whd_plan_' || g, 'evt_plan_' || (g / 2), 'customer.created', 1,
       ${rare(DIALECT === 'postgres' ? 'false' : '0', DIALECT === 'postgres' ? 'true' : '1')}, 5, ${at}`,
    ),
    series(
      'INSERT INTO test_clocks (id, account_id, mode, frozen_time, status, created_at, updated_at)',
      `'clock_plan_' || g, ${rare(a, "'acct_other'")}, 'test', ${at}, 'ready', ${at}, ${at}`,
    ),
  ];
}

describe(`list filter plans (${DIALECT})`, () => {
  it('should read each filtered list from its filter\'s index', async () => {
    const { services } = harness;
    // The endpoint the attempts belong to (the list answers 404 for an unknown one).
    await db.execute(`INSERT INTO webhook_endpoints (id, account_id, mode, url, events, secret_sealed, status, created_at, updated_at)
      VALUES ('we_plan', $1, 'test', 'https://hooks.example.com/', '["*"]', 'sealed', 'enabled', $2, $2)`, [ctx.accountId, new Date()]);
    // `generic`: what a generic plan may read instead, where it cannot know which values were asked
    // (a closed set of a few values: a status asked may be most of the rows; PostgreSQL keeps
    // planning such a statement for its values while that is cheaper than its generic plan).
    const cases: Array<{ what: string; table: string; index: RegExp; generic?: RegExp; call: () => Promise<unknown> }> = [
      {
        what: 'payments by status (several)', table: 'payments', index: /payments_status_idx/, generic: /payments_status_idx|payments_list_idx/,
        call: () => services.payments.list(ctx, { status: 'requires_review,canceled' }),
      },
      { what: 'payments by currency', table: 'payments', index: /payments_currency_idx/, call: () => services.payments.list(ctx, { currency: 'JPY' }) },
      { what: 'payments by amount range', table: 'payments', index: /payments_amount_idx/, call: () => services.payments.list(ctx, { amountGte: '100', amountLte: '150' }) },
      { what: 'payments by failure code', table: 'payments', index: /payments_failure_code_idx/, call: () => services.payments.list(ctx, { failureCode: 'expired_card' }) },
      { what: 'payments by gateway', table: 'payments', index: /payments_gateway_idx/, call: () => services.payments.list(ctx, { gatewayId: 'gw_rare' }) },
      { what: 'payments by invoice', table: 'payments', index: /payments_invoice_list_idx/, call: () => services.payments.list(ctx, { invoiceId: 'in_plan' }) },
      // A session has a payment or a few: PostgreSQL may read them from the index of the column alone (0012).
      { what: 'payments by checkout session', table: 'payments', index: DIALECT === 'postgres' ? /payments_checkout_session(_list)?_idx/ : /payments_checkout_session_list_idx/, call: () => services.payments.list(ctx, { checkoutSessionId: 'cs_plan' }) },
      { what: 'payments by payment link', table: 'payments', index: /payments_payment_link_list_idx/, call: () => services.payments.list(ctx, { paymentLinkId: 'plink_plan' }) },
      { what: 'payments by customer', table: 'payments', index: /payments_customer_idx/, call: () => services.payments.list(ctx, { customerId: 'cus_plan' }) },
      // SQLite has no index inside the JSON: there the account's list index bounds it.
      { what: 'payments by metadata', table: 'payments', index: DIALECT === 'postgres' ? /payments_metadata_idx/ : /payments_list_idx/, call: () => services.payments.list(ctx, { metadata: { plan: 'gold' } }) },
      { what: 'refunds by customer', table: 'refunds', index: /refunds_customer_idx/, call: () => services.refunds.list(ctx, { customerId: 'cus_plan' }) },
      { what: 'gateway transactions', table: 'gateway_transactions', index: /gtx_list_idx/, call: () => services.payments.listGatewayTransactions(ctx, {}) },
      { what: 'gateway transactions by gateway', table: 'gateway_transactions', index: /gtx_gateway_idx/, call: () => services.payments.listGatewayTransactions(ctx, { gatewayId: 'gw_rare' }) },
      { what: 'gateway transactions by outcome', table: 'gateway_transactions', index: /gtx_outcome_idx/, call: () => services.payments.listGatewayTransactions(ctx, { outcome: 'timeout' }) },
      { what: 'gateway transactions by refund', table: 'gateway_transactions', index: /gtx_refund_idx/, call: () => services.payments.listGatewayTransactions(ctx, { refundId: 're_plan' }) },
      { what: 'delivery attempts by event', table: 'webhook_attempts', index: /webhook_attempts_event_idx/, call: () => services.webhooks.deliveries.attempts(ctx, 'we_plan', { eventId: 'evt_plan_7' }) },
      { what: 'failed delivery attempts', table: 'webhook_attempts', index: /webhook_attempts_failed_idx/, call: () => services.webhooks.deliveries.attempts(ctx, 'we_plan', { status: 'failed' }) },
      { what: 'test clocks', table: 'test_clocks', index: /test_clocks_list_idx/, call: () => services.testClocks.list(ctx, {}) },
    ];
    const statements = [];
    for (const c of cases) statements.push({ ...c, ...(await pageStatement(c.table, c.call)) });

    if (DIALECT === 'postgres') {
      const plans = await postgresPlans(db, seeds(ctx.accountId), statements.map(({ sql, args }) => ({ sql, args })));
      const wrong: string[] = [];
      statements.forEach((s, i) => {
        for (const [kind, plan] of [['custom', plans[2 * i]], ['generic', plans[2 * i + 1]]]) {
          const index = kind === 'generic' ? s.generic ?? s.index : s.index;
          if (!index.test(plan) || new RegExp(`Seq Scan on ${s.table}`).test(plan)) wrong.push(`${s.what} (${kind} plan):\n${plan}`);
        }
      });
      expect(wrong).toEqual([]);
      return;
    }
    for (const sql of seeds(ctx.accountId)) await db.execute(sql);
    try {
      // Without statistics SQLite plans as a generic plan does.
      const wrong: string[] = [];
      for (const s of statements) {
        const plan = (await db.select<{ detail: string }>(`EXPLAIN QUERY PLAN ${s.sql}`, s.args)).map((r) => r.detail).join('\n');
        if (!new RegExp(`(SEARCH|SCAN) ${s.table} USING (COVERING )?INDEX (${(s.generic ?? s.index).source})`).test(plan)) wrong.push(`${s.what}:\n${plan}`);
      }
      expect(wrong).toEqual([]);
    } finally {
      for (const table of ['payments', 'refunds', 'gateway_transactions', 'webhook_attempts', 'test_clocks']) await db.execute(`DELETE FROM ${table} WHERE id LIKE '%_plan_%'`);
    }
  });
});
