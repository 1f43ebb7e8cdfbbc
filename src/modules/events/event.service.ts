import { z } from 'zod';
import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { isoTime, readJson } from '../../db/database';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { newId } from '../../core/ids';
import { notFound } from '../../core/errors';
import { parseInput } from '../../core/validation';
import { listSchema, type Page } from '../../core/pagination';
import { Filter, listPage } from '../../db/list';
import type { EventBus, PublishedEvent, StreamScope } from '../../core/event-bus';
import type { Params } from '../../db/params';
import { EventModel } from './event.model';

export const EVENT_TYPES = [
  'customer.created', 'customer.updated',
  'product.created', 'product.updated', 'price.created', 'price.updated',
  'payment.succeeded', 'payment.failed', 'payment.requires_review', 'payment.updated',
  'refund.created', 'refund.succeeded', 'refund.failed',
  'checkout.session.completed', 'checkout.session.expired',
  'subscription.created', 'subscription.updated', 'subscription.paused', 'subscription.resumed',
  'subscription.canceled', 'subscription.past_due',
  'invoice.created', 'invoice.sent', 'invoice.paid', 'invoice.payment_failed', 'invoice.voided',
  'payment_link.created', 'payment_link.updated',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface ApiEvent {
  id: string;
  object: 'event';
  type: string;
  createdAt: string;
  livemode: boolean;
  data: { object: Record<string, unknown> };
}

/** An event of a batch statement. */
export interface BatchedEvent {
  event: ApiEvent;
  accountId: string;
  mode: string;
}

/**
 * Writes that go with every event (the webhook outbox plugs in here): run inside the event's
 * transaction, or as one more part of a single PostgreSQL statement (see `batchParts`).
 */
export interface EventWriteHook {
  inTransaction(event: ApiEvent, ctx: RequestContext, t: Transaction): Promise<void>;
  /**
   * A data-modifying CTE body writing for those of `events` that the CTE named `eventCte`
   * inserted (it returns the inserted rows' `id`, `account_id`, `mode`, `type`, `data` and
   * `created_at`; `eventJsonSql` turns such a row into the event's JSON).
   */
  batchStatementPart(events: BatchedEvent[], p: Params, eventCte: string): string;
}

/** Events written as CTE parts of the caller's statement; `publish(i)` once that has committed. */
export interface EventBatchStatement {
  parts: Array<{ name: string; sql: string }>;
  publish(index: number): void;
}

/** One event of a batch: written only if its `sourceId` is among the ids the guard CTE returns. */
export interface EventBatchItem {
  ctx: RequestContext;
  type: EventType;
  object: Record<string, unknown>;
  /** The id of the caller's row that holds this event's object as JSON text (see `batchParts`). */
  sourceId: string;
}

/**
 * SQL for an events row (alias `e`) as the JSON text of the event: the same bytes as
 * JSON.stringify of the API object (`id`, `object`, `type`, `createdAt`, `livemode`, `data`;
 * ids and types never need escaping).
 */
export function eventJsonSql(e: string): string {
  return `'{"id":"' || ${e}.id || '","object":"event","type":"' || ${e}.type || '","createdAt":"'
    || to_char(${e}.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '","livemode":'
    || CASE WHEN ${e}.mode = 'live' THEN 'true' ELSE 'false' END || ',"data":' || ${e}.data || '}'`;
}

const listEventsInput = listSchema(['createdAt'] as const, {
  type: z.string().max(64).optional(),
});

export class EventService {
  private readonly writeHooks: EventWriteHook[] = [];

  constructor(
    private readonly db: Database,
    private readonly bus: EventBus,
  ) {}

  onWrite(hook: EventWriteHook): void {
    this.writeHooks.push(hook);
  }

  /** Writes the event in the caller's transaction; it is published only once that commits. */
  async record(ctx: RequestContext, t: Transaction, type: EventType, object: Record<string, unknown>): Promise<ApiEvent> {
    const event = newEvent(ctx, type, object);
    await this.db.execute(
      'INSERT INTO events (id, account_id, mode, type, data, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
      [event.id, ctx.accountId, ctx.mode, type, JSON.stringify(event.data), new Date(event.createdAt)],
      t,
    );
    for (const hook of this.writeHooks) await hook.inTransaction(event, ctx, t);
    const published: PublishedEvent = { ...event, accountId: ctx.accountId };
    t.afterCommit(() => this.bus.publish(published));
    return event;
  }

  /**
   * The same writes as `record` for many events, as parts of one PostgreSQL statement
   * (data-modifying CTEs). Each event's object is read from the caller's relation `source`
   * (its `id` column is the item's `sourceId`, `jsonColumn` the object's JSON text), so it is not
   * bound a second time; an event is inserted only if the CTE `guard` returned its `sourceId` as
   * `id`, and so are the hooks' writes. The statement text does not depend on the number of
   * events (they are bound as one JSON parameter).
   */
  batchParts(items: EventBatchItem[], p: Params, guard: string, source: { relation: string; jsonColumn: string }): EventBatchStatement {
    const batched: BatchedEvent[] = [];
    const rows = items.map((item) => {
      const event = newEvent(item.ctx, item.type, item.object);
      batched.push({ event, accountId: item.ctx.accountId, mode: item.ctx.mode });
      return { id: event.id, account_id: item.ctx.accountId, mode: item.ctx.mode, type: item.type, created_at: event.createdAt, source: item.sourceId };
    });
    const parts = [{
      name: 'evt',
      sql: `INSERT INTO events (id, account_id, mode, type, data, created_at)
        SELECT v.id, v.account_id, v.mode, v.type, '{"object":' || s.${source.jsonColumn} || '}', v.created_at
          FROM json_to_recordset(${p.add(this.db.jsonParam(rows), 'json')})
               AS v(id text, account_id text, mode text, type text, created_at timestamptz, source text)
          JOIN ${source.relation} s ON s.id = v.source
         WHERE v.source IN (SELECT id FROM ${guard})
        RETURNING id, account_id, mode, type, data, created_at`,
    }];
    this.writeHooks.forEach((hook, i) => parts.push({ name: `evt_hook${i}`, sql: hook.batchStatementPart(batched, p, 'evt') }));
    return {
      parts,
      publish: (i) => this.bus.publish({ ...batched[i].event, accountId: batched[i].accountId }),
    };
  }

  async retrieve(ctx: RequestContext, id: string): Promise<ApiEvent> {
    requirePermission(ctx, 'events', 'read');
    const event = await findEvent(ctx, id);
    if (!event) throw notFound('event', id);
    return event;
  }

  /** Events as the bus carries them, by id (for fan-out messages that carry ids only). */
  async loadPublished(ids: string[]): Promise<PublishedEvent[]> {
    const rows = this.db.dialect === 'postgres'
      ? await this.db.select('SELECT id, type, data, created_at, mode, account_id FROM events WHERE id IN (SELECT json_array_elements_text($1::json))', [
        this.db.jsonParam(ids),
      ])
      : await this.db.select(`SELECT id, type, data, created_at, mode, account_id FROM events WHERE id IN (${ids.map((_, i) => `$${i + 1}`).join(', ')})`, ids);
    return rows.map((row) => ({ ...toApiEvent(row), accountId: row.account_id as string }));
  }

  /**
   * One account and mode's committed events from `since` on, oldest first, after the `after`
   * cursor: what the live fan-out reads back once it may have missed some.
   */
  async loadPublishedSince(scope: StreamScope, since: Date, after: { createdAt: string; id: string } | undefined, limit: number): Promise<PublishedEvent[]> {
    const cursor = after ? ' AND (created_at > $4 OR (created_at = $4 AND id > $5))' : '';
    const rows = await this.db.select(
      `SELECT id, type, data, created_at, mode, account_id FROM events WHERE account_id = $1 AND mode = $2 AND created_at >= $3${cursor}
       ORDER BY created_at, id LIMIT ${Math.trunc(limit)}`,
      [scope.accountId, scope.livemode ? 'live' : 'test', since, ...(after ? [new Date(after.createdAt), after.id] : [])],
    );
    return rows.map((row) => ({ ...toApiEvent(row), accountId: row.account_id as string }));
  }

  async list(ctx: RequestContext, query: unknown): Promise<Page<ApiEvent>> {
    requirePermission(ctx, 'events', 'read');
    const input = parseInput(listEventsInput, query);
    const filter = new Filter({ account_id: ctx.accountId, mode: ctx.mode, type: input.type });
    return listPage(this.db, {
      table: 'events', columns: 'id, type, data, created_at, mode', filter, params: input, sortColumns: { createdAt: 'created_at' }, toApi: toApiEvent,
    });
  }
}

function newEvent(ctx: RequestContext, type: EventType, object: Record<string, unknown>): ApiEvent {
  return {
    id: newId('evt'),
    object: 'event',
    type,
    createdAt: ctx.clock.now().toISOString(),
    livemode: ctx.mode === 'live',
    data: { object },
  };
}

/** One event of the caller's account and mode, or null. */
export async function findEvent(ctx: { accountId: string; mode: string }, id: string): Promise<ApiEvent | null> {
  const row = await EventModel.findOne({
    attributes: ['id', 'type', 'data', 'createdAt', 'mode'], where: { id, accountId: ctx.accountId, mode: ctx.mode }, raw: true,
  });
  return row && toApiEvent({ id: row.id, type: row.type, data: row.data, created_at: row.createdAt, mode: row.mode });
}

export function toApiEvent(row: Record<string, unknown>): ApiEvent {
  return {
    id: row.id as string,
    object: 'event',
    type: row.type as string,
    createdAt: isoTime(row.created_at) as string,
    livemode: row.mode === 'live',
    data: readJson(row.data, { object: {} }),
  };
}
