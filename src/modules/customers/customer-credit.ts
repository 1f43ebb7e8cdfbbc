import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import type { RequestContext } from '../../core/context';
import { requirePermission } from '../../core/context';
import { DomainError, notFound } from '../../core/errors';
import { newId } from '../../core/ids';
import { formatAmount } from '../../core/money';
import { parseInput } from '../../core/validation';
import type { Counted, ListOptions, PageFor } from '../../core/pagination';
import type { IdempotencyKey } from '../../core/idempotency';
import { IDEMPOTENT_OPERATIONS } from '../../core/idempotent-operations';
import type { EventService } from '../events/event.service';
import type { IdempotencyService } from '../idempotency/idempotency.service';
import { adjustBalanceInput, listBalanceTransactionsInput, MAX_BALANCE_DESCRIPTION } from './customer-credit.inputs';
import { CustomerCreditStore, writtenTransaction, type BalanceTransaction, type NewBalanceTransaction } from './customer-credit.store';
import { toApiCustomer } from './customer.store';

export type { BalanceTransaction } from './customer-credit.store';

type Scope = { accountId: string; mode: string };

const insufficientCredit = (currency: string, balance: number, debit: number) =>
  new DomainError(
    'insufficient_credit',
    `The customer's credit balance in ${currency} is ${balance} (${formatAmount(balance, currency)}): a debit of ${debit} would take it below 0`,
    'amount',
  );

/** A programming error of a caller inside the service (never a client's input): a 500. */
function internalArgument(what: string): never {
  throw new Error(`CustomerCredit: ${what}`);
}

/**
 * The customers' credit balances (API.md §7 and §12): per customer and currency, never below 0,
 * every change a balance transaction written in the same database transaction, with the
 * customer's `customer.updated` event carrying its new `creditBalance`.
 *
 * Invoices use it inside their own transaction: `creditFromInvoice` keeps the rest of a negative
 * total, `applyToInvoice` takes credit for what an invoice is due. Each does so at most once per
 * invoice, whatever retries (the unique (invoice_id, type) index). Locks: a change locks the
 * customer's balance row of that currency first, then the customer's row (its `updatedAt`): one
 * order for all of them, so two never wait on each other crosswise.
 */
export class CustomerCredit {
  private readonly store: CustomerCreditStore;

  constructor(
    private readonly db: Database,
    private readonly events: EventService,
    private readonly idempotency: IdempotencyService,
  ) {
    this.store = new CustomerCreditStore(db);
  }

  /**
   * Takes up to `amountDue` of the customer's credit in `currency` for the invoice, inside the
   * caller's transaction (balance row locked FOR UPDATE on PostgreSQL); writes an
   * `applied_to_invoice` transaction (amount negative) and records `customer.updated`. Returns
   * what was applied (0 when none; no rows written then). Idempotent per invoice (the unique
   * index): a second call for an invoice that already took credit writes nothing and returns
   * what the first took.
   */
  async applyToInvoice(t: Transaction, ctx: RequestContext, p: { customerId: string; currency: string; invoiceId: string; amountDue: number }): Promise<number> {
    if (!Number.isSafeInteger(p.amountDue) || p.amountDue < 0) internalArgument(`applyToInvoice: amountDue must be an integer ≥ 0, not ${p.amountDue}`);
    const currency = p.currency.toUpperCase();
    // The balance row first: applications of the same customer's credit queue here, each
    // seeing what the one before it left.
    const balance = await this.store.lockBalance(t, ctx, p.customerId, currency);
    const earlier = await this.store.forInvoice(t, ctx, p.invoiceId, 'applied_to_invoice');
    if (earlier !== null) return -earlier;
    const applied = Math.min(balance ?? 0, p.amountDue);
    if (applied <= 0) return 0;
    const row: NewBalanceTransaction = {
      id: newId('cbtxn'), customerId: p.customerId, currency, amount: -applied, type: 'applied_to_invoice', invoiceId: p.invoiceId,
      description: null, createdAt: ctx.clock.now(),
    };
    if (!(await this.store.insertTransaction(t, ctx, row))) return -((await this.store.forInvoice(t, ctx, p.invoiceId, 'applied_to_invoice')) ?? 0);
    const left = await this.store.addToBalance(t, ctx, p.customerId, currency, -applied, row.createdAt);
    // The row is locked and held at least `applied`: nothing else can have taken it.
    if (left === null) throw new Error(`CustomerCredit.applyToInvoice: the balance of ${p.customerId} in ${currency} moved under its lock`);
    await this.customerChanged(t, ctx, p.customerId, row.createdAt);
    return applied;
  }

  /**
   * Adds `amount` (> 0) to the customer's credit for a negative invoice total, inside the
   * caller's transaction; `invoice_credit` transaction; records `customer.updated`. Idempotent
   * per invoice: a second call for the same invoice writes nothing.
   */
  async creditFromInvoice(t: Transaction, ctx: RequestContext, p: { customerId: string; currency: string; invoiceId: string; amount: number; description?: string }): Promise<void> {
    if (!Number.isSafeInteger(p.amount) || p.amount <= 0) internalArgument(`creditFromInvoice: amount must be an integer > 0, not ${p.amount}`);
    const currency = p.currency.toUpperCase();
    const row: NewBalanceTransaction = {
      id: newId('cbtxn'), customerId: p.customerId, currency, amount: p.amount, type: 'invoice_credit', invoiceId: p.invoiceId,
      description: p.description === undefined ? null : p.description.slice(0, MAX_BALANCE_DESCRIPTION), createdAt: ctx.clock.now(),
    };
    if (!(await this.store.insertTransaction(t, ctx, row))) return;
    await this.store.addToBalance(t, ctx, p.customerId, currency, p.amount, row.createdAt);
    await this.customerChanged(t, ctx, p.customerId, row.createdAt);
  }

  /** Balances of several customers (for API output and loaders): customer id → {currency: amount}, only amounts above 0; `{}` for a customer without credit. */
  balancesOf(ctx: RequestContext, customerIds: readonly string[], t?: Transaction): Promise<Map<string, Record<string, number>>> {
    return this.store.balancesOf(ctx, customerIds, t);
  }

  /**
   * POST /v1/customers/{id}/balance-transactions: credit added (amount > 0) or taken away
   * (amount < 0) by hand, an `adjustment`, with its `customer.updated` event, in one transaction
   * under the request's Idempotency-Key. A debit beyond the balance is refused (422
   * `insufficient_credit`, nothing written, the key left unused), also when debits race: the
   * balance never goes below 0.
   */
  async adjust(ctx: RequestContext, customerId: string, input: unknown, idem?: IdempotencyKey): Promise<BalanceTransaction> {
    requirePermission(ctx, 'customers', 'write');
    const data = parseInput(adjustBalanceInput, input);
    return this.db.transaction((t) => this.idempotency.once(t, idem, IDEMPOTENT_OPERATIONS.adjustCustomerBalance, async () => {
      if (!(await this.store.customerExists(ctx, customerId, t))) throw notFound('customer', customerId);
      const now = ctx.clock.now();
      const left = await this.store.addToBalance(t, ctx, customerId, data.currency, data.amount, now);
      if (left === null) throw insufficientCredit(data.currency, await this.store.balance(ctx, customerId, data.currency, t), -data.amount);
      const row: NewBalanceTransaction = {
        id: newId('cbtxn'), customerId, currency: data.currency, amount: data.amount, type: 'adjustment', invoiceId: null,
        description: data.description, createdAt: now,
      };
      await this.store.insertTransaction(t, ctx, row);
      await this.customerChanged(t, ctx, customerId, now);
      return writtenTransaction(ctx, row);
    }));
  }

  /** GET /v1/customers/{id}/balance-transactions: newest first unless asked otherwise. */
  async list<O extends ListOptions = Counted>(ctx: RequestContext, customerId: string, query: unknown, options?: O): Promise<PageFor<BalanceTransaction, O>> {
    requirePermission(ctx, 'customers', 'read');
    const input = parseInput(listBalanceTransactionsInput, query);
    if (!(await this.store.customerExists(ctx, customerId))) throw notFound('customer', customerId);
    return this.store.list(ctx, customerId, input, options);
  }

  /**
   * The newest `limit` transactions of several customers in one statement (GraphQL's
   * Customer.balanceTransactions); with `after`, those older than that transaction, of its
   * customer only.
   */
  async forCustomers(ctx: RequestContext, customerIds: readonly string[], limit: number, after?: string): Promise<Map<string, BalanceTransaction[]>> {
    requirePermission(ctx, 'customers', 'read');
    return this.store.newestPerCustomer(ctx, customerIds, limit, after);
  }

  /** The customer's `updatedAt` moves to `now` and `customer.updated` carries it with its balances as `t` leaves them. */
  private async customerChanged(t: Transaction, ctx: RequestContext, customerId: string, now: Date): Promise<void> {
    const scope: Scope = ctx;
    const row = await this.store.touchCustomer(t, scope, customerId, now);
    if (!row) throw notFound('customer', customerId, 'customerId');
    const balances = await this.store.balancesOf(scope, [customerId], t);
    const customer = toApiCustomer(row, balances.get(customerId) ?? {});
    await this.events.record(ctx, t, 'customer.updated', customer);
  }

  /** Several balance transactions by id (GraphQL's `node`, batched), read as a customer's list is (customers:read). */
  async findMany(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, BalanceTransaction>> {
    requirePermission(ctx, 'customers', 'read');
    return new Map((await this.store.findMany(ctx, ids)).map((b) => [b.id, b]));
  }
}
