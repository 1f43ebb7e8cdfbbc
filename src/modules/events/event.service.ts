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
import { Filter, rawPage } from '../../db/list';
import type { EventBus, PublishedEvent } from '../../core/event-bus';
import type { Params } from '../../db/params';

export const EVENT_TYPES = [
  'customer.created', 'customer.updated',
  'product.created', 'product.updated', 'price.created', 'price.updated',
  'payment.succeeded', 'payment.failed', 'payment.updated',
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

/**
 * Writes that go with every event (the webhook outbox plugs in here): run inside the event's
 * transaction, or as one more part of a single PostgreSQL statement (see `statementParts`).
 */
export interface EventWriteHook {
  inTransaction(event: ApiEvent, ctx: RequestContext, t: Transaction): Promise<void>;
  /** A data-modifying CTE body that writes only if the CTE named `eventCte` inserted the event. */
  statementPart(event: ApiEvent, eventJson: string, ctx: RequestContext, p: Params, eventCte: string): string;
}

/** An event written as CTE parts of the caller's statement; `publish` once that has committed. */
export interface EventStatement {
  event: ApiEvent;
  parts: Array<{ name: string; sql: string }>;
  publish(): void;
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
   * The same writes as `record` as parts of one PostgreSQL statement (data-modifying CTEs):
   * the event is inserted only if the CTE named `guard` returned a row, and so are the hooks'
   * writes. `objectJson` is `object` already serialised (the caller serialises it once).
   */
  statementParts(ctx: RequestContext, type: EventType, object: Record<string, unknown>, objectJson: string, p: Params, guard: string): EventStatement {
    const event = newEvent(ctx, type, object);
    const dataJson = `{"object":${objectJson}}`;
    // JSON.stringify(event) without serialising the object again (same keys, same order).
    const eventJson = `${JSON.stringify({ id: event.id, object: event.object, type, createdAt: event.createdAt, livemode: event.livemode }).slice(0, -1)},"data":${dataJson}}`;
    const parts = [{
      name: 'evt',
      sql: `INSERT INTO events (id, account_id, mode, type, data, created_at)
        SELECT ${p.add(event.id, 'text')}, ${p.add(ctx.accountId, 'text')}, ${p.add(ctx.mode, 'text')}, ${p.add(type, 'text')},
               ${p.add(dataJson, 'text')}, ${p.add(new Date(event.createdAt), 'timestamptz')}
        WHERE EXISTS (SELECT 1 FROM ${guard}) RETURNING id`,
    }];
    this.writeHooks.forEach((hook, i) => parts.push({ name: `evt_hook${i}`, sql: hook.statementPart(event, eventJson, ctx, p, 'evt') }));
    const published: PublishedEvent = { ...event, accountId: ctx.accountId };
    return { event, parts, publish: () => this.bus.publish(published) };
  }

  async retrieve(ctx: RequestContext, id: string): Promise<ApiEvent> {
    requirePermission(ctx, 'events', 'read');
    const [row] = await this.db.select(
      'SELECT id, type, data, created_at, mode FROM events WHERE id = $1 AND account_id = $2 AND mode = $3',
      [id, ctx.accountId, ctx.mode],
    );
    if (!row) throw notFound('event', id);
    return toApiEvent(row);
  }

  /** An event as the bus carries it (for fan-out of events too big to send inline). */
  async loadPublished(id: string): Promise<PublishedEvent | null> {
    const [row] = await this.db.select('SELECT id, type, data, created_at, mode, account_id FROM events WHERE id = $1', [id]);
    return row ? { ...toApiEvent(row), accountId: row.account_id as string } : null;
  }

  async list(ctx: RequestContext, query: unknown): Promise<Page<ApiEvent>> {
    requirePermission(ctx, 'events', 'read');
    const input = parseInput(listEventsInput, query);
    const filter = new Filter({ account_id: ctx.accountId, mode: ctx.mode, type: input.type });
    const { rows, total } = await rawPage<Record<string, unknown>>(this.db, {
      table: 'events', columns: 'id, type, data, created_at, mode', filter, sortColumn: 'created_at', params: input,
    });
    return { data: rows.map(toApiEvent), total, page: input.page, pageSize: input.pageSize };
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
