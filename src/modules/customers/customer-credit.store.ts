import type { Transaction } from 'sequelize';
import type { Database } from '../../db/database';
import { isoTime } from '../../db/database';
import { Filter, groupBy, listPage, modelSource, newestPerParent } from '../../db/list';
import type { Counted, ListOptions, ListParams, PageFor } from '../../core/pagination';
import { CustomerModel } from './customer.model';
import type { BalanceTransactionType } from './customer-credit.inputs';

type Scope = { accountId: string; mode: string };
type Row = Record<string, unknown>;

/** One change of a customer's credit balance, as the API returns it. */
export interface BalanceTransaction {
  id: string;
  object: 'balance_transaction';
  livemode: boolean;
  customerId: string;
  currency: string;
  /** Positive adds credit, negative takes it away. */
  amount: number;
  type: BalanceTransactionType;
  invoiceId: string | null;
  description: string | null;
  createdAt: string;
  /** A balance transaction never changes: always `createdAt`. */
  updatedAt: string;
}

/** A balance transaction to write: the API object's own fields, its time as a Date. */
export type NewBalanceTransaction = Omit<BalanceTransaction, 'object' | 'livemode' | 'createdAt' | 'updatedAt'> & { createdAt: Date };

const COLUMNS = 'id, account_id, mode, customer_id, currency, amount, type, invoice_id, description, created_at';
const TABLE = 'customer_balance_transactions';

/**
 * The credit balances and their transactions (migration 0021): every statement of CustomerCredit,
 * with what differs between the dialects. A balance is only ever changed by a statement that
 * keeps it at 0 or more, in the transaction that writes the balance transaction saying why.
 */
export class CustomerCreditStore {
  constructor(private readonly db: Database) {}

  /** The customer's balance in `currency`, its row locked until `t` ends (FOR UPDATE on PostgreSQL; SQLite has one writer); null when it has none. */
  async lockBalance(t: Transaction, scope: Scope, customerId: string, currency: string): Promise<number | null> {
    const [row] = await this.db.select<{ amount: number | string }>(
      `SELECT amount FROM customer_balances WHERE customer_id = $1 AND currency = $2 AND account_id = $3 AND mode = $4${this.db.forUpdate}`,
      [customerId, currency, scope.accountId, scope.mode], t,
    );
    return row ? Number(row.amount) : null;
  }

  /**
   * Adds `delta` to the customer's balance in `currency` and returns the new balance, or null
   * (nothing written) when that would take it below 0. Credit creates the row when there is
   * none; a debit changes an existing row only, in one statement that checks and writes, so
   * concurrent debits can never together take more than the balance (PostgreSQL re-checks the
   * condition on the row a concurrent writer left).
   */
  async addToBalance(t: Transaction, scope: Scope, customerId: string, currency: string, delta: number, now: Date): Promise<number | null> {
    if (delta > 0) {
      const [row] = await this.db.select<{ amount: number | string }>(
        `INSERT INTO customer_balances (customer_id, currency, account_id, mode, amount, updated_at) VALUES ($1, $2, $3, $4, $5, $6)
          ON CONFLICT (customer_id, currency) DO UPDATE SET amount = customer_balances.amount + excluded.amount, updated_at = excluded.updated_at
          RETURNING amount`,
        [customerId, currency, scope.accountId, scope.mode, delta, now], t,
      );
      return Number(row.amount);
    }
    const [row] = await this.db.select<{ amount: number | string }>(
      `UPDATE customer_balances SET amount = amount + $1, updated_at = $2
        WHERE customer_id = $3 AND currency = $4 AND account_id = $5 AND mode = $6 AND amount + $1 >= 0
        RETURNING amount`,
      [delta, now, customerId, currency, scope.accountId, scope.mode], t,
    );
    return row ? Number(row.amount) : null;
  }

  /** The customer's balance in `currency` as committed (0 when none); no lock. */
  async balance(scope: Scope, customerId: string, currency: string, t?: Transaction): Promise<number> {
    const [row] = await this.db.select<{ amount: number | string }>(
      'SELECT amount FROM customer_balances WHERE customer_id = $1 AND currency = $2 AND account_id = $3 AND mode = $4',
      [customerId, currency, scope.accountId, scope.mode], t,
    );
    return row ? Number(row.amount) : 0;
  }

  /**
   * Writes a balance transaction. One naming an invoice is written only if that invoice has no
   * transaction of its type yet (the unique index on (invoice_id, type)): false, nothing written,
   * when it has; a concurrent writer of the same one waits for the first to commit, then writes nothing.
   */
  async insertTransaction(t: Transaction, scope: Scope, row: NewBalanceTransaction): Promise<boolean> {
    const onInvoice = row.invoiceId === null ? '' : ' ON CONFLICT (invoice_id, type) WHERE invoice_id IS NOT NULL DO NOTHING';
    const written = await this.db.execute(
      `INSERT INTO ${TABLE} (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)${onInvoice}`,
      [row.id, scope.accountId, scope.mode, row.customerId, row.currency, row.amount, row.type, row.invoiceId, row.description, row.createdAt], t,
    );
    return written === 1;
  }

  /** The amount of the invoice's transaction of `type` (negative for an application), or null when it has none. */
  async forInvoice(t: Transaction, scope: Scope, invoiceId: string, type: BalanceTransactionType): Promise<number | null> {
    const [row] = await this.db.select<{ amount: number | string }>(
      `SELECT amount FROM ${TABLE} WHERE invoice_id = $1 AND type = $2 AND account_id = $3 AND mode = $4`,
      [invoiceId, type, scope.accountId, scope.mode], t,
    );
    return row ? Number(row.amount) : null;
  }

  /** The balances of several customers in one statement: customer id → {currency: amount}, only amounts above 0 (every id asked has an entry). */
  async balancesOf(scope: Scope, customerIds: readonly string[], t?: Transaction): Promise<Map<string, Record<string, number>>> {
    const ids = [...new Set(customerIds)];
    const out = new Map<string, Record<string, number>>(ids.map((id) => [id, {}]));
    if (ids.length === 0) return out;
    const rows = await this.db.select<{ customer_id: string; currency: string; amount: number | string }>(
      `SELECT customer_id, currency, amount FROM customer_balances
        WHERE account_id = $1 AND mode = $2 AND ${this.db.inJsonList('customer_id', '$3')} AND amount > 0
        ORDER BY customer_id, currency`,
      [scope.accountId, scope.mode, JSON.stringify(ids)], t,
    );
    for (const r of rows) (out.get(r.customer_id) as Record<string, number>)[r.currency] = Number(r.amount);
    return out;
  }

  /** Whether the account and mode has this customer. */
  async customerExists(scope: Scope, customerId: string, t?: Transaction): Promise<boolean> {
    const rows = await this.db.select('SELECT id FROM customers WHERE id = $1 AND account_id = $2 AND mode = $3', [customerId, scope.accountId, scope.mode], t);
    return rows.length > 0;
  }

  /**
   * Marks the customer changed (its balance moved) at `now` and returns its row as CustomerModel
   * reads it (attribute names), or null when the account and mode has no such customer.
   */
  async touchCustomer(t: Transaction, scope: Scope, customerId: string, now: Date): Promise<Row | null> {
    const [row] = await this.db.select<Row>(
      `UPDATE customers SET updated_at = $1 WHERE id = $2 AND account_id = $3 AND mode = $4 RETURNING ${modelSource(CustomerModel).columns}`,
      [now, customerId, scope.accountId, scope.mode], t,
    );
    return row ?? null;
  }

  /** A customer's transactions, a page in the list's order (newest first unless asked). */
  list<O extends ListOptions = Counted>(scope: Scope, customerId: string, params: ListParams<'createdAt'>, options?: O): Promise<PageFor<BalanceTransaction, O>> {
    const filter = new Filter({ account_id: scope.accountId, mode: scope.mode, customer_id: customerId });
    return listPage(this.db, { table: TABLE, columns: COLUMNS, filter, params, sortColumns: { createdAt: 'created_at' }, toApi: toBalanceTransaction }, options);
  }

  /**
   * The newest `limit` transactions of each of several customers in one statement (GraphQL's
   * Customer.balanceTransactions). With `after` (a transaction id), those older than it of its
   * own customer only: the other customers asked get none.
   */
  async newestPerCustomer(scope: Scope, customerIds: readonly string[], limit: number, after?: string): Promise<Map<string, BalanceTransaction[]>> {
    const ids = [...new Set(customerIds)];
    if (ids.length === 0) return new Map();
    const rows = after === undefined
      ? await newestPerParent<Row>(this.db, { columns: COLUMNS, from: TABLE, parentColumn: 'customer_id', accountId: scope.accountId, mode: scope.mode, parentIds: ids, limit })
      : await this.db.select<Row>(
        `SELECT ${COLUMNS} FROM ${TABLE}
          WHERE account_id = $1 AND mode = $2 AND ${this.db.inJsonList('customer_id', '$3')}
            AND customer_id = (SELECT c.customer_id FROM ${TABLE} c WHERE c.id = $4 AND c.account_id = $1 AND c.mode = $2)
            AND (created_at, id) < (SELECT c.created_at, c.id FROM ${TABLE} c WHERE c.id = $4)
          ORDER BY created_at DESC, id DESC LIMIT $5`,
        [scope.accountId, scope.mode, JSON.stringify(ids), after, limit],
      );
    return groupBy(rows.map(toBalanceTransaction), (b) => b.customerId);
  }

  /** Several balance transactions of the scope by id, in one statement whatever their number (GraphQL's `node`). */
  async findMany(scope: Scope, ids: readonly string[]): Promise<BalanceTransaction[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.select<Row>(
      `SELECT ${COLUMNS} FROM ${TABLE} WHERE ${this.db.inJsonList('id', '$1')} AND account_id = $2 AND mode = $3`,
      [JSON.stringify([...new Set(ids)]), scope.accountId, scope.mode],
    );
    return rows.map(toBalanceTransaction);
  }
}

/** A transaction as written, in the API's words (no read back). */
export function writtenTransaction(scope: Scope, row: NewBalanceTransaction): BalanceTransaction {
  const at = row.createdAt.toISOString();
  return {
    id: row.id, object: 'balance_transaction', livemode: scope.mode === 'live', customerId: row.customerId, currency: row.currency,
    amount: row.amount, type: row.type, invoiceId: row.invoiceId, description: row.description, createdAt: at, updatedAt: at,
  };
}

function toBalanceTransaction(row: Row): BalanceTransaction {
  const createdAt = isoTime(row.created_at) as string;
  return {
    id: row.id as string,
    object: 'balance_transaction',
    livemode: row.mode === 'live',
    customerId: row.customer_id as string,
    currency: row.currency as string,
    amount: Number(row.amount),
    type: row.type as BalanceTransactionType,
    invoiceId: (row.invoice_id as string | null) ?? null,
    description: (row.description as string | null) ?? null,
    createdAt,
    updatedAt: createdAt,
  };
}
