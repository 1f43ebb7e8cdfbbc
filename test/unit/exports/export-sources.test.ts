import type { z } from 'zod';
import { PAGING_KEYS, exportSources } from '../../../src/modules/exports/export-sources';
import { EXPORT_RESOURCES } from '../../../src/modules/exports/export.inputs';
import { listPaymentsInput, listRefundsInput } from '../../../src/modules/payments/payment.inputs';
import { listCustomersInput } from '../../../src/modules/customers/customer.inputs';
import { listInvoicesInput } from '../../../src/modules/invoices/invoice.inputs';
import { listSubscriptionsInput } from '../../../src/modules/subscriptions/subscription.inputs';
import { listEventsInput } from '../../../src/modules/events/event.inputs';

/** The services are only called when a page is read: none is here. */
const sources = exportSources({ payments: {}, refunds: {}, customers: {}, invoices: {}, subscriptions: {}, events: {} } as never);
const LISTS: Record<string, z.ZodObject> = {
  payments: listPaymentsInput, refunds: listRefundsInput, customers: listCustomersInput, invoices: listInvoicesInput,
  subscriptions: listSubscriptionsInput, events: listEventsInput,
};

describe('what an export of each list reads', () => {
  // A list that gains a filter fails here until its exportPage applies it (and `applied` says so);
  // meanwhile an export naming it is refused (400) rather than quietly ignoring it.
  it.each(EXPORT_RESOURCES.map((r) => [r]))('should apply every filter the %s list takes, and no paging', (resource) => {
    const filters = Object.keys(LISTS[resource].shape).filter((key) => !(PAGING_KEYS as readonly string[]).includes(key));
    expect([...sources[resource].applied].sort()).toEqual(filters.sort());
    expect(Object.keys((sources[resource].filters as unknown as z.ZodObject).shape).sort()).toEqual(filters.sort());
  });
});
