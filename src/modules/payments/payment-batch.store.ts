import { isStatementRefused, type Database } from '../../db/database';
import { Params } from '../../db/params';
import { WriteBatcher } from '../../db/batcher';
import type { RequestContext } from '../../core/context';
import type { ObjectClaim } from '../../core/idempotency';
import { cteList } from '../../db/statement';
import type { EventService, EventType } from '../events/event.service';
import type { IdempotencyStore } from '../idempotency/idempotency.store';
import type { GatewayTransactionStore, PendingTransaction } from './gateway-transaction.store';
import type { Payment } from './payment.types';
import { PENDING_COLUMNS, SETTLING_COLUMNS, columnList, pendingRow, recordsetDefinition, settlingRow } from './payment.rows';

/** A payment's pending row, with the Idempotency-Key to claim in the same write. */
export interface PendingWrite {
  ctx: RequestContext;
  payment: Payment;
  plan: string;
  /** The lease the row is written with, from the database's now. */
  leaseMs: number;
  searchText: string;
  idem?: ObjectClaim;
}

/** A payment's settling write: outcome, gateway calls, event (with webhook deliveries), stored response. */
export interface FinalWrite {
  ctx: RequestContext;
  done: Payment;
  doneJson: string;
  reference: string | null;
  log: PendingTransaction[];
  eventType?: EventType;
  /** The Idempotency-Key whose answer (`doneJson` with its status) is stored. */
  idem?: ObjectClaim;
}

export interface PaymentBatchOptions {
  /** Most payments in one statement. */
  maxBatch: number;
  /** Most statements of each kind (pending, settling) running at once. */
  maxInFlight: number;
  /** Told about an event listener that threw after its payment was committed. */
  onPublishError?(err: unknown): void;
}

const IDEMPOTENCY_CLAIM_INPUT = 'idem_scope text, idem_key text, idem_hash text, idem_object text';
const IDEMPOTENCY_STORE_INPUT = 'done_json text, idem_scope text, idem_key text, idem_object text, idem_status int';

/**
 * PostgreSQL writes of `POST /v1/payments`, each one statement for every payment that is ready
 * when it runs (group commit, see WriteBatcher). Concurrent payments then share round trips,
 * plan executions and commits; a payment alone is written at once, as before.
 *
 * - The pending insert claims each payment's Idempotency-Key in the same statement; a payment
 *   whose key is already held is not inserted.
 * - The other modules' tables are written through the parts their stores hand out
 *   (IdempotencyStore's claim and answer, the event with its hooks' writes, the gateway calls);
 *   this file only arranges them and writes the payments table.
 * - The settling write records each outcome, the gateway calls, the event with its webhook
 *   deliveries and the stored response; all but the gateway calls only for payments still
 *   pending (recovery or a racing request may have settled one first).
 *
 * Rows are bound as one JSON parameter each, so every statement has one text whatever the
 * batch holds and is prepared once per connection.
 */
export class PaymentBatchStore {
  private readonly pending: WriteBatcher<PendingWrite, boolean>;
  private readonly settling: WriteBatcher<FinalWrite, boolean>;

  constructor(
    private readonly db: Database,
    private readonly events: EventService,
    private readonly gtx: GatewayTransactionStore,
    private readonly keys: IdempotencyStore,
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
    const rows = items.map(({ ctx, payment, plan, leaseMs, searchText, idem }) => ({
      ...pendingRow(ctx, payment, plan, searchText, idem?.key ?? null),
      lease_ms: Math.ceil(leaseMs),
      idem_scope: idem?.scope ?? null, idem_key: idem?.key ?? null, idem_hash: idem?.fingerprint ?? null,
      // The key is claimed for this payment, and answered below only while it still is.
      idem_object: idem?.objectId ?? null,
    }));
    const input = p.add(this.db.jsonParam(rows), 'json');
    const inserted = await this.db.select<{ id: string }>(
      `WITH input AS MATERIALIZED (SELECT * FROM json_to_recordset(${input}) AS i(${recordsetDefinition(PENDING_COLUMNS)}, lease_ms int, ${IDEMPOTENCY_CLAIM_INPUT})),
      ${cteList([this.keys.claimPart('claim', 'input', p)])},
      ins AS (
        INSERT INTO payments (${columnList(PENDING_COLUMNS)}, lease_until, pending_since)
        SELECT ${columnList(PENDING_COLUMNS, 'i.')}, ${this.db.nowPlusSql('i.lease_ms')}, ${this.db.nowSql}
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
      id: done.id, ...settlingRow(done, reference),
      done_json: doneJson, idem_scope: idem?.scope ?? null, idem_key: idem?.key ?? null,
      idem_object: idem?.objectId ?? null, idem_status: idem?.status ?? null,
    }));
    const input = p.add(this.db.jsonParam(rows), 'json');
    const gtx = this.gtx.insertPart('gtx', items.map((w) => ({ ctx: w.ctx, owner: { paymentId: w.done.id }, entries: w.log })), p);
    const withEvents = items.filter((w) => w.eventType);
    const event = this.events.batchParts(
      withEvents.map((w) => ({ ctx: w.ctx, type: w.eventType as EventType, object: w.done as unknown as Record<string, unknown>, sourceId: w.done.id })),
      p,
      'upd',
      { relation: 'input', jsonColumn: 'done_json' },
    );
    const changed = await this.db.select<{ id: string }>(
      `WITH input AS MATERIALIZED (SELECT * FROM json_to_recordset(${input}) AS i(id text, ${recordsetDefinition(SETTLING_COLUMNS)}, ${IDEMPOTENCY_STORE_INPUT})),
      upd AS (
        UPDATE payments p SET ${SETTLING_COLUMNS.map(([c]) => `${c} = i.${c}`).join(', ')}
          FROM input i
         WHERE p.id = i.id AND p.status = 'pending'
        RETURNING p.id),
      ${cteList([
        gtx,
        ...event.parts,
        this.keys.answerPart('idem', `(SELECT i.idem_scope, i.idem_key, i.idem_object, i.idem_status, i.done_json AS idem_body
          FROM input i JOIN upd ON upd.id = i.id)`),
      ])}
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
