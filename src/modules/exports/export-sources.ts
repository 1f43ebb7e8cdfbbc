import type { z } from 'zod';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import type { KeysetCursor } from '../../db/keyset';
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
  const paging = Object.keys(list.shape).filter((key) => (PAGING_KEYS as readonly string[]).includes(key));
  return list.omit(Object.fromEntries(paging.map((key) => [key, true])) as never) as unknown as z.ZodType<FiltersOf<S>>;
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
  /**
   * The filters the page applies: every one of the list's (a test holds them to the list's
   * schema); one the list gained and the export does not apply yet is refused at creation.
   */
  applied: readonly string[];
  /** The csv's columns. */
  columns: readonly string[];
  /** Checks beyond the resource's read permission that the list makes of its filters (an event type's resource). */
  authorize?(ctx: RequestContext, filters: F): void;
  /** Up to `limit` rows after `after`, newest first, as the REST API answers them. */
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
  const rows = <T>(items: Promise<T[]>) => items as unknown as Promise<ExportRow[]>;
  return {
    payments: source({
      permission: 'payments', filters: filterSchema(listPaymentsInput), applied: ['search', 'status', 'customerId'], columns: columnsOf(paymentSchema),
      page: (ctx, f, after, limit) => rows(payments.exportPage(ctx, f, after, limit)),
      count: async (ctx, query) => (await payments.list(ctx, { ...query, pageSize: 1 })).total,
    }),
    refunds: source({
      permission: 'refunds', filters: filterSchema(listRefundsInput), applied: ['status', 'paymentId'], columns: columnsOf(refundSchema),
      page: (ctx, f, after, limit) => rows(refunds.exportPage(ctx, f, after, limit)),
      count: async (ctx, query) => (await refunds.list(ctx, { ...query, pageSize: 1 })).total,
    }),
    customers: source({
      permission: 'customers', filters: filterSchema(listCustomersInput), applied: ['search', 'email'], columns: columnsOf(customerSchema),
      page: (ctx, f, after, limit) => rows(customers.exportPage(ctx, f, after, limit)),
      count: async (ctx, query) => (await customers.list(ctx, { ...query, pageSize: 1 })).total,
    }),
    invoices: source({
      permission: 'invoices', filters: filterSchema(listInvoicesInput), applied: ['customerId', 'subscriptionId', 'status'], columns: columnsOf(invoiceSchema),
      page: (ctx, f, after, limit) => rows(invoices.exportPage(ctx, f, after, limit)),
      count: async (ctx, query) => (await invoices.list(ctx, { ...query, pageSize: 1 })).total,
    }),
    subscriptions: source({
      permission: 'subscriptions', filters: filterSchema(listSubscriptionsInput), applied: ['customerId', 'status'], columns: columnsOf(subscriptionSchema),
      page: (ctx, f, after, limit) => rows(subscriptions.exportPage(ctx, f, after, limit)),
      count: async (ctx, query) => (await subscriptions.list(ctx, { ...query, pageSize: 1 })).total,
    }),
    events: source({
      permission: 'events', filters: filterSchema(listEventsInput), applied: ['type', 'createdAfter', 'createdBefore'], columns: columnsOf(eventSchema),
      // As the list: a type of a resource the key may not read is refused, by name.
      authorize: (ctx, f) => {
        if (f.type !== undefined && eventResource(f.type) !== null) requireEventTypePermission(ctx, f.type, 'exporting', 'filters.type');
      },
      page: (ctx, f, after, limit) => rows(events.exportPage(ctx, f, after, limit)),
      count: async (ctx, query) => (await events.list(ctx, { ...query, pageSize: 1 })).total,
    }),
  };
}

/** The read permission an export of `resource` needs, besides `exports:read`. */
export function requireSourcePermission(ctx: RequestContext, s: ExportSource): void {
  requirePermission(ctx, s.permission, 'read');
}
