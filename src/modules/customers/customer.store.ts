import type { Database } from '../../db/database';
import { isoTime, readJson } from '../../db/database';
import { Filter, listPage, modelSource } from '../../db/list';
import { keysetPage, type KeysetCursor } from '../../db/keyset';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';
import type { Metadata } from '../../core/validation';
import { CustomerModel } from './customer.model';
import { readAddress, readTaxIds, type PostalAddress, type TaxId } from '../../core/parties';

export interface Customer {
  id: string;
  object: 'customer';
  livemode: boolean;
  email: string;
  name: string | null;
  country: string | null;
  phone: string | null;
  defaultPaymentMethodId: string | null;
  testClockId: string | null;
  /** Language of the customer's invoices and e-mails: `en` unless set. */
  locale: string;
  /** The buyer's address on invoices, or null. */
  address: PostalAddress | null;
  /** `[]` when none. */
  taxIds: TaxId[];
  /** Whether its invoices carry tax (API.md §12): `none` unless set. */
  taxExempt: 'none' | 'exempt' | 'reverse';
  metadata: Metadata;
  /** Read only: the credit the customer holds, currency → minor units (CustomerCredit); `{}` when none. */
  creditBalance: Record<string, number>;
  createdAt: string;
  updatedAt: string;
}

/** A customer as stored: the API object without its credit balance, which CustomerCredit keeps apart (CustomerService.withCredit adds it). */
export type CustomerRecord = Omit<Customer, 'creditBalance'>;

type Scope = { accountId: string; mode: string };

/** Customers' list page (ordinary reads and writes go through CustomerModel in the service). */
export class CustomerStore {
  constructor(private readonly db: Database) {}

  list<O extends ListOptions = Counted>(scope: Scope, input: { email?: string; search?: string; page: number; pageSize: number; sortField: 'createdAt'; sortDirection: 'asc' | 'desc' }, options?: O): Promise<PageFor<CustomerRecord, O>> {
    const filter = new Filter({ account_id: scope.accountId, mode: scope.mode, email_normalized: input.email?.toLowerCase() || undefined })
      .search(['email_normalized', 'name'], input.search);
    return listPage(this.db, { ...modelSource(CustomerModel), filter, params: input, sortColumns: { createdAt: 'created_at' }, toApi: toCustomerRecord }, options);
  }

  /** A page of an export (ExportService): the list's filters, newest first, the `limit` customers after `after` by keyset. */
  exportPage(scope: Scope, input: CustomerExportFilters, after: KeysetCursor | null, limit: number): Promise<CustomerRecord[]> {
    const filter = new Filter({ account_id: scope.accountId, mode: scope.mode, email_normalized: input.email?.toLowerCase() || undefined })
      .search(['email_normalized', 'name'], input.search);
    return keysetPage(this.db, { ...modelSource(CustomerModel), filter, after, limit, toApi: toCustomerRecord });
  }
}

/** The list filters an export of customers applies (CustomerStore.exportPage). */
export interface CustomerExportFilters {
  email?: string;
  search?: string;
}

/** The API object of a customer's row, with its credit balance (CustomerCredit.balancesOf). */
export function toApiCustomer(row: Record<string, unknown>, creditBalance: Record<string, number>): Customer {
  return { ...toCustomerRecord(row), creditBalance };
}

export function toCustomerRecord(row: Record<string, unknown>): CustomerRecord {
  return {
    id: row.id as string,
    object: 'customer',
    livemode: row.mode === 'live',
    email: row.email as string,
    name: (row.name as string | null) ?? null,
    country: (row.country as string | null) ?? null,
    phone: (row.phone as string | null) ?? null,
    defaultPaymentMethodId: (row.defaultPaymentMethodId as string | null) ?? null,
    testClockId: (row.testClockId as string | null) ?? null,
    locale: (row.locale as string | null) ?? 'en',
    address: readAddress(row.address),
    taxIds: readTaxIds(row.taxIds),
    taxExempt: (row.taxExempt as Customer['taxExempt'] | null) ?? 'none',
    metadata: readJson<Metadata>(row.metadata, {}),
    createdAt: isoTime(row.createdAt) as string,
    updatedAt: isoTime(row.updatedAt) as string,
  };
}

/** The events that carry this module's objects (EventObjects: the events module's map of type to payload). */
declare module '../events/event-objects' {
  interface EventObjects {
    'customer.created': Customer;
    'customer.updated': Customer;
  }
}
