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
  // The pages are the list's own (read by its cursor): every filter it takes applies there.
  it.each(EXPORT_RESOURCES.map((r) => [r]))('should take every filter the %s list takes, and no paging', (resource) => {
    const filters = Object.keys(LISTS[resource].shape).filter((key) => !(PAGING_KEYS as readonly string[]).includes(key));
    expect(Object.keys((sources[resource].filters as unknown as z.ZodObject).shape).sort()).toEqual(filters.sort());
  });
});
