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

/** Hook run inside the event's transaction (the webhook outbox plugs in here). */
export type EventWriteHook = (event: ApiEvent, ctx: RequestContext, t: Transaction) => Promise<void>;

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
    const createdAt = ctx.clock.now();
    const event: ApiEvent = {
      id: newId('evt'),
      object: 'event',
      type,
      createdAt: createdAt.toISOString(),
      livemode: ctx.mode === 'live',
      data: { object },
    };
    await this.db.execute(
      'INSERT INTO events (id, account_id, mode, type, data, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
      [event.id, ctx.accountId, ctx.mode, type, JSON.stringify(event.data), createdAt],
      t,
    );
    for (const hook of this.writeHooks) await hook(event, ctx, t);
    const published: PublishedEvent = { ...event, accountId: ctx.accountId };
    t.afterCommit(() => this.bus.publish(published));
    return event;
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
