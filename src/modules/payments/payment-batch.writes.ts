import { isStatementRefused, type Database } from '../../db/database';
import { Params } from '../../db/params';
import { WriteBatcher } from '../../db/batcher';
import type { RequestContext } from '../../core/context';
import { dataEnvelopeSql, type IdempotencyHandle } from '../../core/idempotency';
import type { EventService, EventType } from '../events/event.service';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import type { GatewayTransactionLog, PendingTransaction } from './gateway-transaction.log';
import type { Payment } from './payment.service';

/** A payment's pending row, with the Idempotency-Key to claim in the same write. */
export interface PendingWrite {
  ctx: RequestContext;
  payment: Payment;
  plan: string;
  leaseUntil: Date;
  searchText: string;
  idem?: IdempotencyHandle;
}

/** A payment's settling write: outcome, gateway calls, event (with webhook deliveries), stored response. */
export interface FinalWrite {
  ctx: RequestContext;
  done: Payment;
  doneJson: string;
  reference: string | null;
  log: PendingTransaction[];
  eventType?: EventType;
  /** The Idempotency-Key whose response (`dataEnvelope(doneJson)` with this status) is stored. */
  idem?: { handle: IdempotencyHandle; status: number };
}

export interface PaymentBatchOptions {
  /** Most payments in one statement. */
  maxBatch: number;
  /** Most statements of each kind (pending, settling) running at once. */
  maxInFlight: number;
  /** Told about an event listener that threw after its payment was committed. */
  onPublishError?(err: unknown): void;
}

const PENDING_INPUT = `id text, account_id text, mode text, customer_id text, amount bigint, currency text, original_currency text,
  original_amount bigint, exchange_rate text, payment_method text, payment_method_details text, description text, metadata text,
  routing_plan text, invoice_id text, subscription_id text, checkout_session_id text, payment_link_id text, created_at timestamptz,
  search_text text, lease_until timestamptz, idem_scope text, idem_key text, idem_hash text`;

const PENDING_COLUMNS = `id, account_id, mode, customer_id, amount, currency, original_currency, original_amount, exchange_rate,
  payment_method, payment_method_details, description, metadata, status, amount_refunded, routing_plan, attempts, invoice_id,
  subscription_id, checkout_session_id, payment_link_id, created_at, updated_at, search_text, lease_until`;

const FINAL_INPUT = `id text, status text, failure_code text, failure_message text, gateway_id text, gateway_reference text,
  attempts text, updated_at timestamptz, done_json text, idem_scope text, idem_key text, idem_status int`;

/**
 * PostgreSQL writes of `POST /v1/payments`, each one statement for every payment that is ready
 * when it runs (group commit, see WriteBatcher). Concurrent payments then share round trips,
 * plan executions and commits; a payment alone is written at once, as before.
 *
 * - The pending insert claims each payment's Idempotency-Key in the same statement; a payment
 *   whose key is already held is not inserted.
 * - The settling write records each outcome, the gateway calls, the event with its webhook
 *   deliveries and the stored response; all but the gateway calls only for payments still
 *   pending (recovery or a racing request may have settled one first).
 *
 * Rows are bound as one JSON parameter each, so every statement has one text whatever the
 * batch holds and is prepared once per connection.
 */
export class PaymentBatchWrites {
  private readonly pending: WriteBatcher<PendingWrite, boolean>;
  private readonly settling: WriteBatcher<FinalWrite, boolean>;

  constructor(
    private readonly db: Database,
    private readonly events: EventService,
    private readonly gtx: GatewayTransactionLog,
    private readonly idempotency: IdempotencyService,
    private readonly options: PaymentBatchOptions,
  ) {
    this.pending = new WriteBatcher({
      ...options,
      isRefusal: isStatementRefused,
      run: (items) => this.insertPending(items),
      // Two claims of one key in one INSERT … ON CONFLICT would both look claimed here.
      conflictKey: (w) => (w.idem ? `${w.idem.scope}\n${w.idem.key}` : undefined),
    });
    this.settling = new WriteBatcher({ ...options, isRefusal: isStatementRefused, run: (items) => this.settle(items) });
  }

  /** Inserts the pending row; false when its Idempotency-Key is already held (nothing written). */
  writePending(write: PendingWrite): Promise<boolean> {
    return this.pending.submit(write);
  }

  /** Settles the payment; false when it was no longer pending (nothing but the gateway calls written). */
  writeFinal(write: FinalWrite): Promise<boolean> {
    return this.settling.submit(write);
  }

  private async insertPending(items: PendingWrite[]): Promise<boolean[]> {
    const p = new Params();
    const rows = items.map(({ ctx, payment, plan, leaseUntil, searchText, idem }) => ({
      id: payment.id, account_id: ctx.accountId, mode: ctx.mode, customer_id: payment.customerId, amount: payment.amount,
      currency: payment.currency, original_currency: payment.originalCurrency, original_amount: payment.originalAmount,
      exchange_rate: payment.exchangeRate, payment_method: payment.paymentMethod,
      payment_method_details: JSON.stringify(payment.paymentMethodDetails), description: payment.description,
      metadata: JSON.stringify(payment.metadata), routing_plan: plan, invoice_id: payment.invoiceId,
      subscription_id: payment.subscriptionId, checkout_session_id: payment.checkoutSessionId, payment_link_id: payment.paymentLinkId,
      created_at: payment.createdAt, search_text: searchText, lease_until: leaseUntil.toISOString(),
      idem_scope: idem?.scope ?? null, idem_key: idem?.key ?? null, idem_hash: idem?.fingerprint ?? null,
    }));
    const input = p.add(this.db.jsonParam(rows), 'json');
    const inserted = await this.db.select<{ id: string }>(
      `WITH input AS MATERIALIZED (SELECT * FROM json_to_recordset(${input}) AS i(${PENDING_INPUT})),
      claim AS (${this.idempotency.claimFromSql('input', p)}),
      ins AS (
        INSERT INTO payments (${PENDING_COLUMNS})
        SELECT i.id, i.account_id, i.mode, i.customer_id, i.amount, i.currency, i.original_currency, i.original_amount, i.exchange_rate,
               i.payment_method, i.payment_method_details, i.description, i.metadata, 'pending', 0, i.routing_plan, '[]', i.invoice_id,
               i.subscription_id, i.checkout_session_id, i.payment_link_id, i.created_at, i.created_at, i.search_text, i.lease_until
          FROM input i
         WHERE i.idem_key IS NULL
            OR EXISTS (SELECT 1 FROM claim c WHERE c.scope = i.idem_scope AND c.idempotency_key = i.idem_key)
        RETURNING id)
      SELECT id FROM ins`,
      p.values,
    );
    const ids = new Set(inserted.map((r) => r.id));
    return items.map((w) => ids.has(w.payment.id));
  }

  private async settle(items: FinalWrite[]): Promise<boolean[]> {
    const p = new Params();
    // The payment's JSON is bound once: the event's data, the webhook payloads and the stored
    // response are built from it in the statement.
    const rows = items.map(({ done, doneJson, reference, idem }) => ({
      id: done.id, status: done.status, failure_code: done.failureCode, failure_message: done.failureMessage, gateway_id: done.gatewayId,
      gateway_reference: done.status === 'succeeded' ? reference : null, attempts: JSON.stringify(done.attempts), updated_at: done.updatedAt,
      done_json: doneJson, idem_scope: idem?.handle.scope ?? null, idem_key: idem?.handle.key ?? null, idem_status: idem?.status ?? null,
    }));
    const input = p.add(this.db.jsonParam(rows), 'json');
    const gtx = this.gtx.batchInsertSql(items.map((w) => ({ ctx: w.ctx, owner: { paymentId: w.done.id }, entries: w.log })), p);
    const withEvents = items.filter((w) => w.eventType);
    const event = this.events.batchParts(
      withEvents.map((w) => ({ ctx: w.ctx, type: w.eventType as EventType, object: w.done as unknown as Record<string, unknown>, sourceId: w.done.id })),
      p,
      'upd',
      { relation: 'input', jsonColumn: 'done_json' },
    );
    const changed = await this.db.select<{ id: string }>(
      `WITH input AS MATERIALIZED (SELECT * FROM json_to_recordset(${input}) AS i(${FINAL_INPUT})),
      upd AS (
        UPDATE payments p SET status = i.status, failure_code = i.failure_code, failure_message = i.failure_message,
               gateway_id = i.gateway_id, gateway_reference = i.gateway_reference, attempts = i.attempts, updated_at = i.updated_at
          FROM input i
         WHERE p.id = i.id AND p.status = 'pending'
        RETURNING p.id),
      gtx AS (${gtx}),
      ${event.parts.map((part) => `${part.name} AS (${part.sql})`).join(',\n')},
      idem AS (${this.idempotency.completeFromSql(`(SELECT i.idem_scope, i.idem_key, i.idem_status, ${dataEnvelopeSql('i.done_json')} AS idem_body
        FROM input i JOIN upd ON upd.id = i.id)`)})
      SELECT id FROM upd`,
      p.values,
    );
    const ids = new Set(changed.map((r) => r.id));
    withEvents.forEach((w, i) => {
      if (!ids.has(w.done.id)) return;
      // Committed: a failing listener must not turn these payments' answers into errors.
      try {
        event.publish(i);
      } catch (err) {
        this.options.onPublishError?.(err);
      }
    });
    return items.map((w) => ids.has(w.done.id));
  }
}
