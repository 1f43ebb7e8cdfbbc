import { z } from 'zod';
import type { Transaction } from 'sequelize';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { newId } from '../../core/ids';
import { notFound } from '../../core/errors';
import { parseInput } from '../../core/validation';
import { listSchema, type Counted, type ListOptions, type PageFor } from '../../core/pagination';
import type { EventBus, PublishedEvent, StreamScope } from '../../core/event-bus';
import type { Params } from '../../db/params';
import type { CtePart } from '../../db/statement';
import type { ApiEvent, EventStore } from './event.store';


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
  parts: CtePart[];
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

export const listEventsInput = listSchema(['createdAt'] as const, {
  type: z.string().max(64).optional(),
});

export class EventService {
  private readonly writeHooks: EventWriteHook[] = [];

  constructor(
    private readonly store: EventStore,
    private readonly bus: EventBus,
  ) {}

  onWrite(hook: EventWriteHook): void {
    this.writeHooks.push(hook);
  }

  /** Writes the event in the caller's transaction; it is published only once that commits. */
  async record(ctx: RequestContext, t: Transaction, type: EventType, object: Record<string, unknown>): Promise<ApiEvent> {
    const event = newEvent(ctx, type, object);
    await this.store.insert(t, event, ctx);
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
    const batched: BatchedEvent[] = items.map((item) => ({ event: newEvent(item.ctx, item.type, item.object), accountId: item.ctx.accountId, mode: item.ctx.mode }));
    const parts = [this.store.insertPart('evt', batched.map((b, i) => ({ ...b, sourceId: items[i].sourceId })), p, guard, source)];
    this.writeHooks.forEach((hook, i) => parts.push({ name: `evt_hook${i}`, sql: hook.batchStatementPart(batched, p, 'evt') }));
    return {
      parts,
      publish: (i) => this.bus.publish({ ...batched[i].event, accountId: batched[i].accountId }),
    };
  }

  async retrieve(ctx: RequestContext, id: string): Promise<ApiEvent> {
    requirePermission(ctx, 'events', 'read');
    const event = await this.store.find(ctx, id);
    if (!event) throw notFound('event', id);
    return event;
  }

  /** Events as the bus carries them, by id (for fan-out messages that carry ids only). */
  loadPublished(ids: string[]): Promise<PublishedEvent[]> {
    return this.store.loadPublished(ids);
  }

  /**
   * One account and mode's committed events from `since` on, oldest first, after the `after`
   * cursor: what the live fan-out reads back once it may have missed some.
   */
  loadPublishedSince(scope: StreamScope, since: Date, after: { createdAt: string; id: string } | undefined, limit: number): Promise<PublishedEvent[]> {
    return this.store.loadPublishedSince(scope, since, after, limit);
  }

  async list<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, options?: O): Promise<PageFor<ApiEvent, O>> {
    requirePermission(ctx, 'events', 'read');
    return this.store.list(ctx, parseInput(listEventsInput, query), options);
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
