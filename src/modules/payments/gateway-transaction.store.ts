import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { Params } from '../../db/params';
import type { CtePart } from '../../db/statement';
import { isoTime, readJson } from '../../db/database';
import { Filter, NESTED_LIST_LIMIT, groupBy, listPage, newestPerParent } from '../../db/list';
import type { RequestContext } from '../../core/context';
import { randomBase62 } from '../../core/ids';
import { parseInput } from '../../core/validation';
import { type Counted, type ListOptions, type PageFor } from '../../core/pagination';
import type { GatewayResult } from '../../connectors/connector';

/** One gateway call waiting to be written with the outcome it led to. */
export interface PendingTransaction {
  kind: 'charge' | 'refund' | 'status' | 'save_card' | 'capture' | 'cancel';
  gatewayId: string;
  gatewayType: string;
  attempt: number;
  idempotencyKey: string;
  result: GatewayResult;
}

export interface GatewayTransaction {
  id: string;
  object: 'gateway_transaction';
  livemode: boolean;
  paymentId: string | null;
  refundId: string | null;
  gatewayId: string;
  gatewayType: string;
  kind: string;
  attempt: number;
  idempotencyKey: string;
  outcome: string;
  code: string | null;
  message: string | null;
  reference: string | null;
  latencyMs: number;
  request: Record<string, unknown>;
  response: Record<string, unknown>;
  createdAt: string;
  /** A call's record never changes: always `createdAt`. */
  updatedAt: string;
}

import { listAccountGatewayTransactionsInput, listGatewayTransactionsInput } from './payment.inputs';

export { listGatewayTransactionsInput } from './payment.inputs';
const INSERT_COLUMNS = 'id, account_id, mode, payment_id, refund_id, gateway_id, gateway_type, kind, attempt, idempotency_key, outcome, code, message, reference, latency_ms, request, response, created_at';
const COLUMNS = 'id, mode, payment_id, refund_id, gateway_id, gateway_type, kind, attempt, idempotency_key, outcome, code, message, reference, latency_ms, request, response, created_at';

/**
 * Ids for the calls of one operation, which are written together with one `created_at`: one
 * random stem and the call's number, so "ties by id" lists them in the order they were made
 * (charge, its repeat, the status look-up, the next gateway's attempt) under any collation, as
 * only the trailing digits differ. Same length as other ids (24 characters after the prefix).
 */
function idsInCallOrder(n: number): string[] {
  const width = Math.max(2, String(n - 1).length);
  const stem = randomBase62(24 - width);
  return Array.from({ length: n }, (_, i) => `gtx_${stem}${String(i).padStart(width, '0')}`);
}

/** Every gateway call, with the connector's redacted request/response summaries. */
export class GatewayTransactionStore {
  constructor(private readonly db: Database) {}

  async insert(ctx: RequestContext, t: Transaction, owner: { paymentId?: string; refundId?: string }, entries: PendingTransaction[]): Promise<void> {
    if (entries.length === 0) return;
    const p = new Params();
    await this.db.execute(this.insertSql(ctx, owner, entries, p), p.values, t);
  }

  /**
   * The calls on their own, for an operation whose state does not change with them (recovery
   * asked and could not conclude): they are still calls the gateway saw.
   */
  async record(ctx: RequestContext, owner: { paymentId?: string; refundId?: string }, entries: PendingTransaction[]): Promise<void> {
    if (entries.length === 0) return;
    await this.db.transaction((t) => this.insert(ctx, t, owner, entries));
  }

  /** One INSERT for all `entries` (at least one). */
  private insertSql(ctx: RequestContext, owner: { paymentId?: string; refundId?: string }, entries: PendingTransaction[], p: Params): string {
    const now = ctx.clock.now();
    const ids = idsInCallOrder(entries.length);
    const values = entries.map((e, i) => {
      const row = [
        ids[i], ctx.accountId, ctx.mode, owner.paymentId ?? null, owner.refundId ?? null, e.gatewayId, e.gatewayType, e.kind,
        e.attempt, e.idempotencyKey, e.result.outcome, e.result.declineCode, e.result.message, e.result.reference,
        Math.round(e.result.latencyMs), JSON.stringify(e.result.request ?? {}), JSON.stringify(e.result.response ?? {}), now,
      ];
      return `(${row.map((v) => p.add(v)).join(', ')})`;
    });
    return `INSERT INTO gateway_transactions (${INSERT_COLUMNS}) VALUES ${values.join(', ')}`;
  }

  /**
   * One INSERT for the calls of many operations (PostgreSQL, as a CTE part): the rows are bound as
   * one JSON parameter, so the statement is the same whatever their number (none included).
   */
  insertPart(name: string, batches: Array<{ ctx: RequestContext; owner: { paymentId?: string; refundId?: string }; entries: PendingTransaction[] }>, p: Params): CtePart {
    const rows = batches.flatMap(({ ctx, owner, entries }) => {
      const now = ctx.clock.now().toISOString();
      const ids = idsInCallOrder(entries.length);
      return entries.map((e, i) => ({
        id: ids[i], account_id: ctx.accountId, mode: ctx.mode, payment_id: owner.paymentId ?? null, refund_id: owner.refundId ?? null,
        gateway_id: e.gatewayId, gateway_type: e.gatewayType, kind: e.kind, attempt: e.attempt, idempotency_key: e.idempotencyKey,
        outcome: e.result.outcome, code: e.result.declineCode, message: e.result.message, reference: e.result.reference,
        latency_ms: Math.round(e.result.latencyMs), request: JSON.stringify(e.result.request ?? {}), response: JSON.stringify(e.result.response ?? {}),
        created_at: now,
      }));
    });
    return {
      name,
      sql: `INSERT INTO gateway_transactions (${INSERT_COLUMNS})
      SELECT ${INSERT_COLUMNS} FROM json_to_recordset(${p.add(this.db.jsonParam(rows), 'json')}) AS g(
        id text, account_id text, mode text, payment_id text, refund_id text, gateway_id text, gateway_type text, kind text, attempt int,
        idempotency_key text, outcome text, code text, message text, reference text, latency_ms int, request text, response text, created_at timestamptz)`,
    };
  }

  async list<O extends ListOptions = Counted>(ctx: RequestContext, owner: { paymentId?: string; refundId?: string }, query: unknown, options?: O): Promise<PageFor<GatewayTransaction, O>> {
    const input = parseInput(listGatewayTransactionsInput, query);
    const filter = new Filter({ account_id: ctx.accountId, mode: ctx.mode, payment_id: owner.paymentId, refund_id: owner.refundId, gateway_id: input.gatewayId })
      .anyOf('outcome', input.outcome);
    return listPage(this.db, {
      table: 'gateway_transactions', columns: COLUMNS, filter, params: input, sortColumns: { createdAt: 'created_at' }, toApi,
    }, options);
  }

  /** The account's gateway calls, newest first (GET /v1/gateway-transactions), by payment, refund, gateway and outcome. */
  async listAll<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, options?: O): Promise<PageFor<GatewayTransaction, O>> {
    const input = parseInput(listAccountGatewayTransactionsInput, query);
    const filter = new Filter({ account_id: ctx.accountId, mode: ctx.mode, payment_id: input.paymentId, refund_id: input.refundId, gateway_id: input.gatewayId })
      .anyOf('outcome', input.outcome);
    return listPage(this.db, {
      table: 'gateway_transactions', columns: COLUMNS, filter, params: input, sortColumns: { createdAt: 'created_at' }, toApi,
    }, options);
  }

  /** The gateway calls of every payment of a subscription, newest first (GET /v1/subscriptions/{id}/gateway-transactions). */
  async listForSubscription<O extends ListOptions = Counted>(ctx: RequestContext, subscriptionId: string, query: unknown, options?: O): Promise<PageFor<GatewayTransaction, O>> {
    const input = parseInput(listGatewayTransactionsInput, query);
    const filter = new Filter({ account_id: ctx.accountId, mode: ctx.mode, gateway_id: input.gatewayId }).anyOf('outcome', input.outcome).raw((param) =>
      `payment_id IN (SELECT id FROM payments WHERE account_id = ${param(ctx.accountId)} AND mode = ${param(ctx.mode)} AND subscription_id = ${param(subscriptionId)})`);
    return listPage(this.db, {
      table: 'gateway_transactions', columns: COLUMNS, filter, params: input, sortColumns: { createdAt: 'created_at' }, toApi,
    }, options);
  }

  /** The newest calls of several payments (at most `limit` each) in one query, for DataLoader. */
  async forPayments(ctx: RequestContext, paymentIds: readonly string[], limit = NESTED_LIST_LIMIT): Promise<Map<string, GatewayTransaction[]>> {
    const rows = await newestPerParent<Record<string, unknown>>(this.db, {
      columns: COLUMNS, from: 'gateway_transactions', parentColumn: 'payment_id', accountId: ctx.accountId, mode: ctx.mode, parentIds: paymentIds, limit,
    });
    return groupBy(rows.map(toApi), (tx) => tx.paymentId as string);
  }

  /** Several calls of the account and mode by id, in one statement whatever their number (GraphQL's `node`). */
  async findMany(scope: { accountId: string; mode: string }, ids: readonly string[]): Promise<GatewayTransaction[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.select<Record<string, unknown>>(
      `SELECT ${COLUMNS} FROM gateway_transactions WHERE ${this.db.inJsonList('id', '$1')} AND account_id = $2 AND mode = $3`,
      [JSON.stringify([...new Set(ids)]), scope.accountId, scope.mode],
    );
    return rows.map(toApi);
  }

  /**
   * The newest calls of the payments of several subscriptions (at most `limit` each) in one
   * statement, for DataLoader: each subscription's payments (payments_subscription_idx), then
   * their calls (gtx_payment_idx); the work grows with one subscription's calls, never the account's.
   */
  async forSubscriptions(scope: { accountId: string; mode: string }, subscriptionIds: readonly string[], limit = NESTED_LIST_LIMIT): Promise<Map<string, GatewayTransaction[]>> {
    const ids = [...new Set(subscriptionIds)];
    if (ids.length === 0) return new Map();
    const columns = `${COLUMNS.split(', ').map((c) => `g.${c}`).join(', ')}, p.subscription_id AS parent_id`;
    const from = 'payments p JOIN gateway_transactions g ON g.account_id = p.account_id AND g.mode = p.mode AND g.payment_id = p.id';
    const rows = this.db.dialect === 'postgres'
      ? await this.db.select<Record<string, unknown>>(
        `SELECT newest.* FROM json_array_elements_text($4::json) AS parent(id)
           CROSS JOIN LATERAL (
             SELECT ${columns} FROM ${from}
              WHERE p.account_id = $1 AND p.mode = $2 AND p.subscription_id = parent.id
              ORDER BY g.created_at DESC, g.id DESC LIMIT $3
           ) newest
          ORDER BY newest.created_at DESC, newest.id DESC`,
        [scope.accountId, scope.mode, limit, JSON.stringify(ids)],
      )
      : await this.db.select<Record<string, unknown>>(
        `SELECT * FROM (
           SELECT ${columns}, ROW_NUMBER() OVER (PARTITION BY p.subscription_id ORDER BY g.created_at DESC, g.id DESC) AS rank_in_parent
             FROM ${from} WHERE p.account_id = $1 AND p.mode = $2 AND ${this.db.inJsonList('p.subscription_id', '$4')}
         ) ranked WHERE rank_in_parent <= $3 ORDER BY created_at DESC, id DESC`,
        [scope.accountId, scope.mode, limit, JSON.stringify(ids)],
      );
    const out = new Map<string, GatewayTransaction[]>();
    for (const [parent, group] of groupBy(rows, (row) => row.parent_id as string)) out.set(parent, group.map(toApi));
    return out;
  }
}

function toApi(row: Record<string, unknown>): GatewayTransaction {
  return {
    id: row.id as string,
    object: 'gateway_transaction',
    livemode: row.mode === 'live',
    paymentId: (row.payment_id as string | null) ?? null,
    refundId: (row.refund_id as string | null) ?? null,
    gatewayId: row.gateway_id as string,
    gatewayType: row.gateway_type as string,
    kind: row.kind as string,
    attempt: Number(row.attempt),
    idempotencyKey: row.idempotency_key as string,
    outcome: row.outcome as string,
    code: (row.code as string | null) ?? null,
    message: (row.message as string | null) ?? null,
    reference: (row.reference as string | null) ?? null,
    latencyMs: Number(row.latency_ms),
    request: readJson(row.request, {}),
    response: readJson(row.response, {}),
    createdAt: isoTime(row.created_at) as string,
    updatedAt: isoTime(row.created_at) as string,
  };
}
