import type { Transaction } from 'sequelize';
import type { RequestContext } from '../../core/context';
import { hasPermission, requirePermission } from '../../core/context';
import { newId } from '../../core/ids';
import { DomainError, notFound } from '../../core/errors';
import { parseInput } from '../../core/validation';
import { type Counted, type ListOptions, type PageFor } from '../../core/pagination';
import type { EventBus, PublishedEvent, StreamScope } from '../../core/event-bus';
import type { Params } from '../../db/params';
import type { CtePart } from '../../db/statement';
import type { ApiEvent, EventStore } from './event.store';
import { listEventsInput, listObjectEventsInput, streamEventsInput } from './event.inputs';
import type { EventTail } from './event-tail';
import { onPrimary } from '../../db/read-routing';
import { EVENT_STREAM_LIMITS, ResumableEventStream, type EventStreamLimits } from './event-stream';
import type { EventObjects } from './event-objects';
import { EVENT_TYPES, type EventType } from './event-types';

export type { EventObjects } from './event-objects';

export { listEventsInput } from './event.inputs';

export { EVENT_TYPES, type EventType } from './event-types';

/** An event's type and the object that type carries (EventObjects): a pair the compiler checks. */
export type EventPayload = { [T in EventType]: { type: T; object: EventObjects[T] } }[EventType];

/** An event to record, with the context it is recorded in. */
export type EventItem = EventPayload & { ctx: RequestContext };

/**
 * The resource whose object an event carries, by the type's object part (`checkout.session` of
 * `checkout.session.completed`). An event shows that object in full, so reading it, or
 * subscribing an endpoint to it, needs that resource's read permission as well.
 */
const EVENT_OBJECT_RESOURCES: Readonly<Record<string, string>> = {
  customer: 'customers',
  product: 'products',
  price: 'prices',
  payment: 'payments',
  refund: 'refunds',
  'checkout.session': 'checkout_sessions',
  subscription: 'subscriptions',
  invoice: 'invoices',
  payment_link: 'payment_links',
  tax_rate: 'tax_rates',
  account: 'account',
};

/** The permission resource of an event type's object; null for a type no resource claims. */
export function eventResource(type: string): string | null {
  return EVENT_OBJECT_RESOURCES[type.slice(0, type.lastIndexOf('.'))] ?? null;
}

/** Whether a key may see events of `type` (a type no resource claims: full keys only). */
export function canReadEventType(permissions: string[], type: string): boolean {
  const resource = eventResource(type);
  return resource === null ? permissions.includes('*') : hasPermission(permissions, resource, 'read');
}

/** The event types a key may see, or null when it may see them all (no filter needed). */
export function readableEventTypes(permissions: string[]): string[] | null {
  if (permissions.includes('*')) return null;
  const readable = EVENT_TYPES.filter((type) => canReadEventType(permissions, type));
  return readable.length === EVENT_TYPES.length ? null : readable;
}

/** What a key lacks to see events of `type` ("the 'customers:read' permission"), or null. */
export function missingEventPermission(permissions: string[], type: string): string | null {
  if (canReadEventType(permissions, type)) return null;
  const resource = eventResource(type);
  return resource === null ? 'full access' : `the '${resource}:read' permission`;
}

/**
 * 403 unless the key may see events of `type`; `doing` says what needed it ("reading", …) and
 * `param` names the input entry that asked for it, if any.
 */
export function requireEventTypePermission(ctx: RequestContext, type: string, doing: string, param?: string): void {
  const missing = missingEventPermission(ctx.permissions, type);
  if (missing) throw new DomainError('permission_denied', `This API key does not have ${missing}, which ${doing} '${type}' events needs`, param);
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
  parts: CtePart[];
  publish(index: number): void;
}

/** One event of a batch: written only if its `sourceId` is among the ids the guard CTE returns. */
export interface EventBatchItem {
  ctx: RequestContext;
  type: EventType;
  /** Not bound (the statement reads it from the caller's relation): only its type is checked. */
  object: object;
  /** The id of the caller's row that holds this event's object as JSON text (see `batchParts`). */
  sourceId: string;
}

export class EventService {
  private readonly writeHooks: EventWriteHook[] = [];

  constructor(
    private readonly store: EventStore,
    private readonly bus: EventBus,
    /** How much a live stream holds for its subscriber (tests make it small). */
    public streamLimits: EventStreamLimits = EVENT_STREAM_LIMITS,
    /**
     * Where the ordered streams (`ordered`: the events subscription, which a subscriber resumes
     * after its last event) take their live events from, in the order they were written. Without
     * it (some unit tests), from the bus as they are published.
     */
    public tail?: EventTail,
  ) {}

  onWrite(hook: EventWriteHook): void {
    this.writeHooks.push(hook);
  }

  /** Whether an event of `type` was written for the account and mode after `since` (in `t`, if given). */
  recordedSince(scope: { accountId: string; mode: string }, type: EventType, since: Date, t?: Transaction): Promise<boolean> {
    return this.store.existsSince(scope, type, since, t);
  }

  /** Writes the event in the caller's transaction; it is published only once that commits. */
  async record<T extends EventType>(ctx: RequestContext, t: Transaction, type: T, object: EventObjects[T]): Promise<ApiEvent> {
    const event = newEvent(ctx, type, object as object as Record<string, unknown>);
    await this.store.insert(t, event, ctx);
    for (const hook of this.writeHooks) await hook.inTransaction(event, ctx, t);
    const published: PublishedEvent = { ...event, accountId: ctx.accountId };
    t.afterCommit(() => this.bus.publish(published));
    return event;
  }

  /** `record` for a type and object carried together (a payload made elsewhere, such as a held row's completion). */
  recordPayload(ctx: RequestContext, t: Transaction, payload: EventPayload): Promise<ApiEvent> {
    return this.record<EventType>(ctx, t, payload.type, payload.object as EventObjects[EventType]);
  }

  /**
   * The same writes as `record` for many events in the caller's transaction, in a few statements
   * whatever their number (the events, then each hook's writes): the billing run's batches. Each
   * is published once that commits, in the order given.
   */
  async recordMany(t: Transaction, items: readonly EventItem[]): Promise<ApiEvent[]> {
    if (items.length === 0) return [];
    const batched: BatchedEvent[] = items.map((item) => ({ event: newEvent(item.ctx, item.type, item.object as object as Record<string, unknown>), accountId: item.ctx.accountId, mode: item.ctx.mode }));
    const parts = this.writeHooks.map((hook) => (p: Params, eventCte: string) => hook.batchStatementPart(batched, p, eventCte));
    if (!(await this.store.insertManyWith(t, batched, parts))) {
      // SQLite: a statement per event and per hook, as `record` writes them.
      for (const [i, b] of batched.entries()) {
        await this.store.insert(t, b.event, b);
        for (const hook of this.writeHooks) await hook.inTransaction(b.event, items[i].ctx, t);
      }
    }
    t.afterCommit(() => {
      for (const b of batched) this.bus.publish({ ...b.event, accountId: b.accountId });
    });
    return batched.map((b) => b.event);
  }

  /**
   * The same writes as `record` for many events, as parts of one PostgreSQL statement
   * (data-modifying CTEs). Each event's object is read from the caller's relation `source`
   * (its `id` column is the item's `sourceId`, `jsonColumn` the object's JSON text), so it is not
   * bound a second time; an event is inserted only if the CTE `guard` returned its `sourceId` as
   * `id`, and so are the hooks' writes. The statement text does not depend on the number of
   * events (they are bound as one JSON parameter). `name` names the parts (`name`, `name_hook0`,
   * …), so one statement can hold the events of two sources.
   */
  batchParts(items: EventBatchItem[], p: Params, guard: string, source: { relation: string; jsonColumn: string }, name = 'evt'): EventBatchStatement {
    const batched: BatchedEvent[] = items.map((item) => ({ event: newEvent(item.ctx, item.type, item.object as Record<string, unknown>), accountId: item.ctx.accountId, mode: item.ctx.mode }));
    const parts = [this.store.insertPart(name, batched.map((b, i) => ({ ...b, sourceId: items[i].sourceId })), p, guard, source)];
    this.writeHooks.forEach((hook, i) => parts.push({ name: `${name}_hook${i}`, sql: hook.batchStatementPart(batched, p, name) }));
    return {
      parts,
      publish: (i) => this.bus.publish({ ...batched[i].event, accountId: batched[i].accountId }),
    };
  }

  async retrieve(ctx: RequestContext, id: string): Promise<ApiEvent> {
    requirePermission(ctx, 'events', 'read');
    const event = await this.store.find(ctx, id);
    if (!event) throw notFound('event', id);
    requireEventTypePermission(ctx, event.type, 'reading');
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

  /** Whether the caller may see events of `type` (live subscriptions filter with it). */
  canSee(ctx: RequestContext, type: string): boolean {
    return canReadEventType(ctx.permissions, type);
  }

  /**
   * `GET /v1/events`; GraphQL's `events` passes `byObject` and may filter by `objectIds` too.
   * `type` or `types` narrow the list to those types; each needs the read permission of its object.
   */
  async list<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, options?: O, { byObject = false } = {}): Promise<PageFor<ApiEvent, O>> {
    requirePermission(ctx, 'events', 'read');
    const input = parseInput(byObject ? listObjectEventsInput : listEventsInput, query);
    if (input.type !== undefined && eventResource(input.type) !== null) requireEventTypePermission(ctx, input.type, 'listing', 'type');
    input.types?.forEach((type, i) => requireEventTypePermission(ctx, type, 'listing', `types[${i}]`));
    // Filtered in the statement, so pages and `total` count only what the key may see.
    return this.store.list(ctx, input, narrowTypes(input.types ?? null, readableEventTypes(ctx.permissions)), options);
  }

  /**
   * Several events by id (GraphQL's `node` and `WebhookDeliveryAttempt.event`, batched), each as
   * `retrieve` answers it: an event of a type the key may not read is that refusal (its
   * permission_denied error) instead; ids of another account or mode are not found.
   */
  async findMany(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, ApiEvent | DomainError>> {
    requirePermission(ctx, 'events', 'read');
    const found = new Map<string, ApiEvent | DomainError>();
    for (const event of await this.store.findMany(ctx, ids)) {
      try {
        requireEventTypePermission(ctx, event.type, 'reading');
        found.set(event.id, event);
      } catch (err) {
        if (!(err instanceof DomainError)) throw err;
        found.set(event.id, err);
      }
    }
    return found;
  }

  /**
   * The caller's account and mode's events as they are committed, for a GraphQL subscription:
   * those of `types` (null: every type) that the key may see and `about` accepts. With `after`
   * (an event id of the account and mode, else 400 invalid_parameter naming `after`), first every
   * such event written after that one, in the order they were written (seq), then live, with no gap and
   * no duplicate (ResumableEventStream). Needs `resource`:read.
   */
  async stream(
    ctx: RequestContext,
    input: unknown,
    filter: { resource: string; types: readonly string[] | null; about?: (event: PublishedEvent) => boolean; ordered?: boolean },
  ): Promise<ResumableEventStream> {
    requirePermission(ctx, filter.resource, 'read');
    const { after } = parseInput(streamEventsInput, input);
    const start = after === undefined ? null : await this.store.positionOf(ctx, after);
    if (after !== undefined && start === null) {
      throw new DomainError('invalid_parameter', `No event ${after.slice(0, 64)} in this account and mode to resume after; give the id of the last event received (evt_…)`, 'after');
    }
    const scope: StreamScope = { accountId: ctx.accountId, livemode: ctx.mode === 'live' };
    const types = filter.types === null ? null : new Set(filter.types);
    const accepts = (e: PublishedEvent) => (types === null || types.has(e.type)) && (filter.about?.(e) ?? true) && this.canSee(ctx, e.type);
    const sqlTypes = narrowTypes(filter.types, readableEventTypes(ctx.permissions));
    const tail = filter.ordered ? this.tail : undefined;
    return new ResumableEventStream(
      tail
        ? {
          live: () => tail.stream(scope, accepts),
          // Up to where the tail has read: settled (nothing read back comes before an event not
          // yet committed), and at least where the live side started (nothing between is missed).
          after: async (position, limit) => {
            const upTo = await tail.readUpTo(scope);
            return onPrimary(() => this.store.loadAfter(ctx, position, sqlTypes, limit, upTo));
          },
        }
        : {
          live: () => this.bus.stream(scope, accepts),
          after: (position, limit) => this.store.loadAfter(ctx, position, sqlTypes, limit),
        },
      start,
      accepts,
      this.streamLimits,
    );
  }
}

/** The types both lists allow (null: any type). */
function narrowTypes(asked: readonly string[] | null, readable: readonly string[] | null): string[] | null {
  if (asked === null) return readable === null ? null : [...readable];
  return readable === null ? [...asked] : asked.filter((t) => readable.includes(t));
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
