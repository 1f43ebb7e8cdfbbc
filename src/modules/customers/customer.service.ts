import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { isUniqueViolation } from '../../db/list';
import { CustomerStore, toApiCustomer, toCustomerRecord, type Customer, type CustomerRecord } from './customer.store';
import type { CustomerExportFilters } from './customer.store';
import type { KeysetCursor } from '../../db/keyset';
import type { CustomerCredit } from './customer-credit';
import { CustomerModel } from './customer.model';
import { createCustomerInput, listCustomersInput, updateCustomerInput } from './customer.inputs';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { DomainError, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { mergeMetadata, parseInput } from '../../core/validation';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';
import type { EventService } from '../events/event.service';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import type { IdempotencyKey } from '../../core/idempotency';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';
import { storeAddress, type PostalAddress, type TaxId } from '../../core/parties';

export { toApiCustomer, toCustomerRecord, type Customer, type CustomerRecord } from './customer.store';

/** What a new customer is made of (POST /v1/customers, or a hosted page's payer). */
export interface NewCustomer {
  email: string;
  name?: string | null;
  country?: string | null;
  phone?: string | null;
  locale?: string | null;
  address?: PostalAddress | null;
  taxIds?: TaxId[] | null;
  taxExempt?: 'none' | 'exempt' | 'reverse';
  testClockId?: string | null;
  metadata?: Record<string, string>;
}

const duplicateEmail = (email: string) =>
  new DomainError('duplicate_email', `A customer with the e-mail '${email}' already exists`, 'email');

/** Where a customer's test clock is checked and read (TestClockService, set once services are built). */
export interface CustomerClocks {
  mustExist(ctx: RequestContext, testClockId: string): Promise<void>;
  contextFor(ctx: RequestContext, testClockId: string | null): Promise<RequestContext>;
}

export class CustomerService {
  private readonly store: CustomerStore;
  private testClocks: CustomerClocks | null = null;

  useTestClocks(clocks: CustomerClocks): void {
    this.testClocks = clocks;
  }

  constructor(
    private readonly db: Database,
    private readonly events: EventService,
    private readonly idempotency: IdempotencyService,
    /** The customers' credit balances (`creditBalance`). */
    private readonly credit: CustomerCredit,
  ) {
    this.store = new CustomerStore(db);
  }

  async create(ctx: RequestContext, input: unknown, idem?: IdempotencyKey): Promise<Customer> {
    requirePermission(ctx, 'customers', 'write');
    const data = parseInput(createCustomerInput, input);
    // Attached to a test clock: the clock must be the account's (test mode only), and the
    // customer is created at the clock's time.
    if (data.testClockId) {
      if (!this.testClocks) throw new DomainError('invalid_parameter', 'Test clocks are not available', 'testClockId');
      await this.testClocks.mustExist(ctx, data.testClockId);
      ctx = await this.testClocks.contextFor(ctx, data.testClockId);
    }
    try {
      return await this.db.transaction((transaction) => this.idempotency.once(transaction, idem, IDEMPOTENT_OPERATIONS.createCustomer, () => this.insert(ctx, transaction, data)));
    } catch (err) {
      // The unique index decides, so two concurrent creates cannot both win.
      if (isUniqueViolation(err)) throw duplicateEmail(data.email);
      throw err;
    }
  }

  /**
   * Writes a new customer and its `customer.created` event in the caller's transaction, at the
   * context's time. A customer with the same e-mail (compared case-insensitively) fails on the
   * unique index: the caller maps it (isUniqueViolation).
   */
  async insert(ctx: RequestContext, transaction: Transaction, data: NewCustomer): Promise<Customer> {
    const now = ctx.clock.now();
    const row = await CustomerModel.create(
      {
        id: newId('cus'),
        accountId: ctx.accountId,
        mode: ctx.mode,
        email: data.email,
        emailNormalized: data.email.toLowerCase(),
        name: data.name ?? null,
        country: data.country ?? null,
        phone: data.phone ?? null,
        locale: data.locale ?? null,
        address: storeAddress(data.address),
        taxIds: JSON.stringify(data.taxIds ?? []),
        taxExempt: data.taxExempt ?? 'none',
        defaultPaymentMethodId: null,
        testClockId: data.testClockId ?? null,
        metadata: JSON.stringify(data.metadata ?? {}),
        createdAt: now,
        updatedAt: now,
      },
      { transaction },
    );
    // A new customer holds no credit.
    const customer = toApiCustomer(row.get({ plain: true }), {});
    await this.events.record(ctx, transaction, 'customer.created', customer);
    return customer;
  }

  /** Whether the account and mode has a customer with this e-mail (compared case-insensitively). */
  async emailTaken(scope: { accountId: string; mode: string }, email: string): Promise<boolean> {
    const row = await CustomerModel.findOne({ where: { accountId: scope.accountId, mode: scope.mode, emailNormalized: email.toLowerCase() }, attributes: ['id'], raw: true });
    return row !== null;
  }

  async retrieve(ctx: RequestContext, id: string): Promise<Customer> {
    requirePermission(ctx, 'customers', 'read');
    const row = await CustomerModel.findOne({ where: { id, accountId: ctx.accountId, mode: ctx.mode }, raw: true });
    if (!row) throw notFound('customer', id);
    const [customer] = await this.withCredit(ctx, [toCustomerRecord(row as unknown as Record<string, unknown>)]);
    return customer;
  }

  /**
   * The API objects of stored customers: each with its credit balance, all read in one statement
   * (in `t` when given, so an event carries the balances its transaction leaves).
   */
  async withCredit(ctx: RequestContext, records: readonly CustomerRecord[], t?: Transaction): Promise<Customer[]> {
    const balances = await this.credit.balancesOf(ctx, records.map((c) => c.id), t);
    return records.map((c) => ({ ...c, creditBalance: balances.get(c.id) ?? {} }));
  }

  /**
   * Batch lookup for DataLoader (needs customers:read); unknown ids are simply absent. Without
   * the credit balances: GraphQL reads `creditBalance` through its own loader, when asked.
   */
  async findMany(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, CustomerRecord>> {
    requirePermission(ctx, 'customers', 'read');
    return this.lookup(ctx, ids);
  }

  /** For other services acting on the caller's behalf (a payment names its customer): the account and mode's customers by id, no permission asked, without their credit balances. */
  async lookup(scope: { accountId: string; mode: string }, ids: readonly string[], t?: Transaction): Promise<Map<string, CustomerRecord>> {
    const rows = await CustomerModel.findAll({
      where: { id: [...new Set(ids)], accountId: scope.accountId, mode: scope.mode },
      raw: true,
      transaction: t,
    });
    return new Map(rows.map((r) => [r.id, toCustomerRecord(r as unknown as Record<string, unknown>)]));
  }

  async list<O extends ListOptions = Counted>(ctx: RequestContext, query: unknown, options?: O): Promise<PageFor<Customer, O>> {
    requirePermission(ctx, 'customers', 'read');
    const input = parseInput(listCustomersInput, query);
    const page = await this.store.list(ctx, input, options);
    // One statement for the whole page's balances.
    return { ...page, data: await this.withCredit(ctx, page.data) };
  }

  async update(ctx: RequestContext, id: string, input: unknown): Promise<Customer> {
    requirePermission(ctx, 'customers', 'write');
    const data = parseInput(updateCustomerInput, input);
    try {
      return await this.db.transaction(async (transaction) => {
        const row = await this.lockCustomer(ctx, id, transaction);
        const current = toCustomerRecord(row.get({ plain: true }));
        const changes: Record<string, unknown> = {};
        if (data.email !== undefined) {
          changes.email = data.email;
          changes.emailNormalized = data.email.toLowerCase();
        }
        if (data.name !== undefined) changes.name = data.name;
        if (data.country !== undefined) changes.country = data.country;
        if (data.phone !== undefined) changes.phone = data.phone;
        if (data.locale !== undefined) changes.locale = data.locale;
        if (data.address !== undefined) changes.address = storeAddress(data.address);
        if (data.taxIds !== undefined) changes.taxIds = JSON.stringify(data.taxIds ?? []);
        if (data.taxExempt !== undefined) changes.taxExempt = data.taxExempt;
        if (data.metadata !== undefined) changes.metadata = JSON.stringify(mergeMetadata(current.metadata, data.metadata));
        if (Object.keys(changes).length === 0) return (await this.withCredit(ctx, [current], transaction))[0];
        changes.updatedAt = ctx.clock.now();
        await row.update(changes, { transaction });
        const [customer] = await this.withCredit(ctx, [toCustomerRecord(row.get({ plain: true }))], transaction);
        await this.events.record(ctx, transaction, 'customer.updated', customer);
        return customer;
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw duplicateEmail(data.email ?? '');
      throw err;
    }
  }

  private async lockCustomer(ctx: RequestContext, id: string, transaction: Transaction): Promise<CustomerModel> {
    const row = await CustomerModel.findOne({
      where: { id, accountId: ctx.accountId, mode: ctx.mode },
      transaction,
      lock: this.db.rowLock(transaction),
    });
    if (!row) throw notFound('customer', id);
    return row;
  }

  /** A page of an export of customers (ExportService): the list's filters, newest first, by keyset after `after`, with their credit balances. */
  async exportPage(ctx: RequestContext, filters: CustomerExportFilters, after: KeysetCursor | null, limit: number): Promise<Customer[]> {
    requirePermission(ctx, 'customers', 'read');
    return this.withCredit(ctx, await this.store.exportPage(ctx, filters, after, limit));
  }
}
