import { z } from 'zod';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { PAGE_SIZE_MAX, type Page } from '../../core/pagination';
import type { KeysetCursor } from './export.store';
import { customerSchema } from '../customers/customer.schemas';
import { listCustomersInput } from '../customers/customer.inputs';
import type { CustomerService } from '../customers/customer.service';
import { eventSchema } from '../events/event.schemas';
import { eventResource, listEventsInput, requireEventTypePermission, type EventService } from '../events/event.service';
import { invoiceSchema } from '../invoices/invoice.schemas';
import { listInvoicesInput } from '../invoices/invoice.inputs';
import type { InvoiceService } from '../invoices/invoice.service';
import { listPaymentsInput, listRefundsInput } from '../payments/payment.inputs';
import { paymentSchema, refundSchema } from '../payments/payment.schemas';
import type { PaymentService } from '../payments/payment.service';
import type { RefundService } from '../payments/refund.service';
import { subscriptionSchema } from '../subscriptions/subscription.schemas';
import { listSubscriptionsInput } from '../subscriptions/subscription.inputs';
import type { SubscriptionService } from '../subscriptions/subscription.service';
import type { ExportResource } from './export.inputs';

/**
 * A list's parameters that say which page and in what order, not which rows: not filters. An
 * export holds every row the filters match, newest first (the lists' default order), read by
 * keyset; cursors of later lists (`startingAfter`, `endingBefore`) are paging too.
 */
export const PAGING_KEYS = ['page', 'pageSize', 'sortField', 'sortDirection', 'startingAfter', 'endingBefore'] as const;
type PagingKey = (typeof PAGING_KEYS)[number];

/** The filters of a list: its schema without the paging keys (still strict: an unknown key is refused). */
type FiltersOf<S extends z.ZodObject> = Omit<z.output<S>, PagingKey>;

function filterSchema<S extends z.ZodObject>(list: S): z.ZodType<FiltersOf<S>> {
  const shape = Object.fromEntries(Object.entries(list.shape).filter(([key]) => !(PAGING_KEYS as readonly string[]).includes(key)));
  return z.object(shape).strict() as unknown as z.ZodType<FiltersOf<S>>;
}

/** The fields of a response object, in its schema's order: the csv's columns. */
const columnsOf = (schema: z.ZodObject): string[] => Object.keys(schema.shape);

/** An object an export writes: every API object has these. */
export interface ExportRow extends Record<string, unknown> {
  id: string;
  createdAt: string;
}

/** What an export of one resource reads, through that resource's service. */
export interface ExportSource<F = unknown> {
  /** The permission resource whose read permission the export needs. */
  permission: string;
  /** The list's filters, validated at creation and again by the worker. */
  filters: z.ZodType<F>;
  /** The csv's columns. */
  columns: readonly string[];
  /** Checks beyond the resource's read permission that the list makes of its filters (an event type's resource). */
  authorize?(ctx: RequestContext, filters: F): void;
  /**
   * Up to `limit` rows after `after`, newest first, as the REST API answers them: a page of the
   * list itself, read by its cursor (a keyset), so every filter the list takes applies as it does
   * there.
   */
  page(ctx: RequestContext, filters: F, after: KeysetCursor | null, limit: number): Promise<ExportRow[]>;
  /** How many rows the list holds now (its `total`), for the progress. */
  count(ctx: RequestContext, query: Record<string, unknown>): Promise<number | null>;
}

export type ExportSources = Record<ExportResource, ExportSource>;

/** Typed at each entry, held untyped in the table (the service passes each source its own filters). */
const source = <F>(s: ExportSource<F>): ExportSource => s as unknown as ExportSource;

/** The six lists an export reads. */
export function exportSources(services: {
  payments: PaymentService;
  refunds: RefundService;
  customers: CustomerService;
  invoices: InvoiceService;
  subscriptions: SubscriptionService;
  events: EventService;
}): ExportSources {
  const { payments, refunds, customers, invoices, subscriptions, events } = services;
  /** A page of the list after `after` (its cursor), up to a list page's size, newest first, not counted. */
  const page = (read: (query: Record<string, unknown>, options: { countTotal: false }) => Promise<Page<unknown, number | null>>) =>
    async (_ctx: RequestContext, filters: unknown, after: KeysetCursor | null, limit: number): Promise<ExportRow[]> => {
      const query = { ...(filters as Record<string, unknown>), pageSize: Math.min(limit, PAGE_SIZE_MAX), ...(after ? { startingAfter: after.id } : {}) };
      return (await read(query, { countTotal: false })).data as ExportRow[];
    };
  return {
    payments: source({
      permission: 'payments', filters: filterSchema(listPaymentsInput), columns: columnsOf(paymentSchema),
      page: (ctx, f, after, limit) => page((q, o) => payments.list(ctx, q, {}, o))(ctx, f, after, limit),
      count: async (ctx, query) => (await payments.list(ctx, { ...query, pageSize: 1 })).total,
    }),
    refunds: source({
      permission: 'refunds', filters: filterSchema(listRefundsInput), columns: columnsOf(refundSchema),
      page: (ctx, f, after, limit) => page((q, o) => refunds.list(ctx, q, undefined, o))(ctx, f, after, limit),
      count: async (ctx, query) => (await refunds.list(ctx, { ...query, pageSize: 1 })).total,
    }),
    customers: source({
      permission: 'customers', filters: filterSchema(listCustomersInput), columns: columnsOf(customerSchema),
      page: (ctx, f, after, limit) => page((q, o) => customers.list(ctx, q, o))(ctx, f, after, limit),
      count: async (ctx, query) => (await customers.list(ctx, { ...query, pageSize: 1 })).total,
    }),
    invoices: source({
      permission: 'invoices', filters: filterSchema(listInvoicesInput), columns: columnsOf(invoiceSchema),
      page: (ctx, f, after, limit) => page((q, o) => invoices.list(ctx, q, o))(ctx, f, after, limit),
      count: async (ctx, query) => (await invoices.list(ctx, { ...query, pageSize: 1 })).total,
    }),
    subscriptions: source({
      permission: 'subscriptions', filters: filterSchema(listSubscriptionsInput), columns: columnsOf(subscriptionSchema),
      page: (ctx, f, after, limit) => page((q, o) => subscriptions.list(ctx, q, o))(ctx, f, after, limit),
      count: async (ctx, query) => (await subscriptions.list(ctx, { ...query, pageSize: 1 })).total,
    }),
    events: source({
      permission: 'events', filters: filterSchema(listEventsInput), columns: columnsOf(eventSchema),
      // As the list: a type of a resource the key may not read is refused, by name.
      authorize: (ctx, f) => {
        const type = (f as { type?: string }).type;
        if (type !== undefined && eventResource(type) !== null) requireEventTypePermission(ctx, type, 'exporting', 'filters.type');
      },
      page: (ctx, f, after, limit) => page((q, o) => events.list(ctx, q, o))(ctx, f, after, limit),
      count: async (ctx, query) => (await events.list(ctx, { ...query, pageSize: 1 })).total,
    }),
  };
}

/** The read permission an export of `resource` needs, besides `exports:read`. */
export function requireSourcePermission(ctx: RequestContext, s: ExportSource): void {
  requirePermission(ctx, s.permission, 'read');
}
