import { isStatementRefused, type Database } from '../../db/database';
import { Params } from '../../db/params';
import { WriteBatcher } from '../../db/batcher';
import type { RequestContext } from '../../core/context';
import type { ObjectClaim } from '../../core/idempotency';
import { cteList } from '../../db/statement';
import type { EventPayload, EventService, EventType } from '../events/event.service';
import type { IdempotencyStore } from '../idempotency/idempotency.store';
import type { GatewayTransactionStore, PendingTransaction } from './gateway-transaction.store';
import type { Payment } from './payment.types';
import { PAYMENT_MOVES, SETTLING_MOVES } from './payment-states';
import type { HoldClaim, HoldFinish, PaymentHoldStore } from './payment-hold';
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
  /** A row the payment holds (PaymentHold): claimed in the same statement, the payment inserted only if it was. */
  hold?: HoldClaim;
  /** Where the customer goes once a 3-D Secure challenge is answered. */
  returnUrl?: string | null;
}

/** What a pending write did: inserted (true), not inserted as its key is held (false), or not inserted as its hold was refused. */
export type PendingResult = boolean | 'hold_refused';

/** A payment's settling write: outcome, gateway calls, event (with webhook deliveries), stored response. */
export interface FinalWrite {
  ctx: RequestContext;
  done: Payment;
  doneJson: string;
  reference: string | null;
  log: PendingTransaction[];
  eventType?: EventType;
  /** The authorising gateway's capture window (an authorisation's deadline). */
  captureWindowDays?: number;
  /** The Idempotency-Key whose answer (`doneJson` with its status) is stored. */
  idem?: ObjectClaim;
  /**
   * The payment's hold, finished with it: completed with its event when it succeeded, released
   * when it failed; only if the payment was still pending and the hold still this pay's.
   */
  hold?: HoldFinish & { outcome: 'complete'; event: EventPayload; json: string } | HoldFinish & { outcome: 'release' };
}

export interface PaymentBatchOptions {
  /** Most payments in one statement. */
  maxBatch: number;
  /** Most statements of each kind (pending, settling) running at once. */
  maxInFlight: number;
  /** Told about an event listener that threw after its payment was committed. */
  onPublishError?(err: unknown): void;
}

/** The settling statement's guard: the status every settling move starts from (PAYMENT_MOVES). */
const SETTLING_GUARD = PAYMENT_MOVES.sqlFrom(SETTLING_MOVES, 'p.status');

const IDEMPOTENCY_CLAIM_INPUT = 'idem_scope text, idem_key text, idem_hash text, idem_object text';
const IDEMPOTENCY_STORE_INPUT = 'done_json text, idem_scope text, idem_key text, idem_object text, idem_status int';
const HOLD_CLAIM_INPUT = ', hold_id text, hold_token text, hold_lease_ms int, hold_now timestamptz';
const HOLD_FINISH_INPUT = ', hold_id text, hold_token text, hold_outcome text, hold_customer_id text, hold_now timestamptz, hold_json text';

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
  private readonly pending: WriteBatcher<PendingWrite, PendingResult>;
  private readonly settling: WriteBatcher<FinalWrite, boolean>;
  private holds: PaymentHoldStore | undefined;

  constructor(
    private readonly db: Database,
    private readonly events: EventService,
    private readonly gtx: GatewayTransactionStore,
    private readonly keys: IdempotencyStore,
    private readonly options: PaymentBatchOptions,
  ) {
    this.pending = new WriteBatcher({
      ...options,
      name: 'payments.pending',
      isRefusal: isStatementRefused,
      run: (items) => this.insertPending(items),
      // Two claims of one key in one INSERT … ON CONFLICT would both look claimed here.
      conflictKey: (w) => (w.idem ? `${w.idem.scope}\n${w.idem.key}` : undefined),
    });
    this.settling = new WriteBatcher({ ...options, name: 'payments.settle', isRefusal: isStatementRefused, run: (items) => this.settle(items) });
  }

  /** The store of the rows payments hold (see PaymentHold); needed before a write names a hold. */
  useHolds(holds: PaymentHoldStore): void {
    this.holds = holds;
  }

  /**
   * Inserts the pending row; false when its Idempotency-Key is already held, `hold_refused` when
   * its hold could not be claimed (no payment inserted either way).
   */
  writePending(write: PendingWrite): Promise<PendingResult> {
    return this.pending.submit(write);
  }

  /** Settles the payment; false when it was no longer pending (nothing but the gateway calls written). */
  writeFinal(write: FinalWrite): Promise<boolean> {
    return this.settling.submit(write);
  }

  private async insertPending(items: PendingWrite[]): Promise<PendingResult[]> {
    const p = new Params();
    const withHolds = items.some((w) => w.hold);
    const rows = items.map(({ ctx, payment, plan, leaseMs, searchText, idem, hold, returnUrl }) => ({
      ...pendingRow(ctx, payment, plan, searchText, idem?.key ?? null, returnUrl ?? null),
      lease_ms: Math.ceil(leaseMs),
      idem_scope: idem?.scope ?? null, idem_key: idem?.key ?? null, idem_hash: idem?.fingerprint ?? null,
      // The key is claimed for this payment, and answered below only while it still is.
      idem_object: idem?.objectId ?? null,
      ...(withHolds ? { hold_id: hold?.holdId ?? null, hold_token: hold?.token ?? null, hold_lease_ms: hold ? Math.ceil(hold.leaseMs) : null, hold_now: hold?.now ?? null } : {}),
    }));
    const input = p.add(this.db.jsonParam(rows), 'json');
    // With holds: each claimed first (one pay per held row in a statement), the key claimed only
    // for a payment whose hold was, the payment inserted only if both were. A hold claimed for a
    // payment whose key was taken is released by its caller (the pay failed before charging).
    const holds = withHolds ? this.requireHolds() : undefined;
    const holdParts = holds
      ? [holds.claimPart('hold', `(SELECT DISTINCT ON (i.hold_id) i.id AS payment_id, i.hold_id, i.hold_token, i.hold_lease_ms, i.account_id, i.mode, i.hold_now
          FROM input i WHERE i.hold_id IS NOT NULL ORDER BY i.hold_id, i.id)`)]
      : [];
    const keySource = holds ? '(SELECT * FROM input i WHERE i.hold_id IS NULL OR i.id IN (SELECT payment_id FROM hold))' : 'input';
    const holdCondition = holds ? ' AND (i.hold_id IS NULL OR EXISTS (SELECT 1 FROM hold h WHERE h.payment_id = i.id))' : '';
    const inserted = await this.db.select<{ id: string; held: boolean }>(
      `WITH input AS MATERIALIZED (SELECT * FROM json_to_recordset(${input}) AS i(${recordsetDefinition(PENDING_COLUMNS)}, lease_ms int, ${IDEMPOTENCY_CLAIM_INPUT}${holds ? HOLD_CLAIM_INPUT : ''})),
      ${cteList([...holdParts, this.keys.claimPart('claim', keySource, p)])},
      ins AS (
        INSERT INTO payments (${columnList(PENDING_COLUMNS)}, lease_until, pending_since)
        SELECT ${columnList(PENDING_COLUMNS, 'i.')}, ${this.db.nowPlusSql('i.lease_ms')}, ${this.db.nowSql}
          FROM input i
         WHERE (i.idem_key IS NULL
            OR EXISTS (SELECT 1 FROM claim c WHERE c.scope = i.idem_scope AND c.idempotency_key = i.idem_key))${holdCondition}
        RETURNING id)
      SELECT id, false AS held FROM ins${holds ? ' UNION ALL SELECT payment_id, true FROM hold' : ''}`,
      p.values,
    );
    const ids = new Set(inserted.filter((r) => !r.held).map((r) => r.id));
    const held = new Set(inserted.filter((r) => r.held).map((r) => r.id));
    return items.map((w) => (ids.has(w.payment.id) ? true : w.hold && !held.has(w.payment.id) ? 'hold_refused' : false));
  }

  private requireHolds(): PaymentHoldStore {
    if (!this.holds) throw new Error('a payment names a hold but no hold store is registered (PaymentService.useHolds)');
    return this.holds;
  }

  private async settle(items: FinalWrite[]): Promise<boolean[]> {
    const p = new Params();
    const withHolds = items.some((w) => w.hold);
    // The payment's JSON is bound once: the event's data, the webhook payloads and the stored
    // response are built from it in the statement.
    const rows = items.map(({ done, doneJson, reference, idem, hold, captureWindowDays }) => ({
      id: done.id, ...settlingRow(done, reference, captureWindowDays),
      done_json: doneJson, idem_scope: idem?.scope ?? null, idem_key: idem?.key ?? null,
      idem_object: idem?.objectId ?? null, idem_status: idem?.status ?? null,
      ...(withHolds ? {
        hold_id: hold?.holdId ?? null, hold_token: hold?.token ?? null, hold_outcome: hold?.outcome ?? null,
        hold_customer_id: hold?.customerId ?? null, hold_now: hold?.now ?? null, hold_json: hold?.outcome === 'complete' ? hold.json : null,
      } : {}),
    }));
    const input = p.add(this.db.jsonParam(rows), 'json');
    const gtx = this.gtx.insertPart('gtx', items.map((w) => ({ ctx: w.ctx, owner: { paymentId: w.done.id }, entries: w.log })), p);
    const withEvents = items.filter((w) => w.eventType);
    const event = this.events.batchParts(
      withEvents.map((w) => ({ ctx: w.ctx, type: w.eventType as EventType, object: w.done, sourceId: w.done.id })),
      p,
      'upd',
      { relation: 'input', jsonColumn: 'done_json' },
    );
    // The holds of the payments settled here (still pending): completed, with the held row's
    // event and its hooks' writes, when the payment succeeded; released when it failed.
    const completing = items.filter((w) => w.hold?.outcome === 'complete');
    const holds = withHolds ? this.requireHolds() : undefined;
    const holdEvent = holds
      ? this.events.batchParts(
        completing.map((w) => {
          const { event } = w.hold as HoldFinish & { event: EventPayload };
          return { ctx: w.ctx, type: event.type, object: event.object, sourceId: w.hold?.holdId as string };
        }),
        p,
        'hold_done',
        { relation: 'held', jsonColumn: 'hold_json' },
        'hold_evt',
      )
      : undefined;
    const holdParts = holds && holdEvent
      ? [
        { name: 'held', sql: `SELECT i.hold_id AS id, i.id AS payment_id, i.hold_token, i.hold_outcome, i.hold_customer_id AS customer_id, i.hold_now, i.hold_json
          FROM input i JOIN upd ON upd.id = i.id WHERE i.hold_id IS NOT NULL` },
        holds.completePart('hold_done', "(SELECT * FROM held WHERE hold_outcome = 'complete')"),
        holds.releasePart('hold_free', "(SELECT * FROM held WHERE hold_outcome = 'release')"),
        ...holdEvent.parts,
      ]
      : [];
    const changed = await this.db.select<{ id: string; held: boolean }>(
      `WITH input AS MATERIALIZED (SELECT * FROM json_to_recordset(${input}) AS i(id text, ${recordsetDefinition(SETTLING_COLUMNS)}, ${IDEMPOTENCY_STORE_INPUT}${holds ? HOLD_FINISH_INPUT : ''})),
      upd AS (
        UPDATE payments p SET ${SETTLING_COLUMNS.map(([c]) => `${c} = i.${c}`).join(', ')}
          FROM input i
         WHERE p.id = i.id AND ${SETTLING_GUARD}
        RETURNING p.id),
      ${cteList([
        gtx,
        ...event.parts,
        this.keys.answerPart('idem', `(SELECT i.idem_scope, i.idem_key, i.idem_object, i.idem_status, i.done_json AS idem_body
          FROM input i JOIN upd ON upd.id = i.id)`),
        ...holdParts,
      ])}
      SELECT id, false AS held FROM upd${holds ? ' UNION ALL SELECT id, true FROM hold_done' : ''}`,
      p.values,
    );
    const ids = new Set(changed.filter((r) => !r.held).map((r) => r.id));
    const completed = new Set(changed.filter((r) => r.held).map((r) => r.id));
    const publish = (statement: { publish(i: number): void }, i: number) => {
      // Committed: a failing listener must not turn these payments' answers into errors.
      try {
        statement.publish(i);
      } catch (err) {
        this.options.onPublishError?.(err);
      }
    };
    withEvents.forEach((w, i) => {
      if (ids.has(w.done.id)) publish(event, i);
    });
    if (holdEvent) {
      completing.forEach((w, i) => {
        if (completed.has((w.hold as HoldFinish).holdId)) publish(holdEvent, i);
      });
    }
    return items.map((w) => ids.has(w.done.id));
  }
}
