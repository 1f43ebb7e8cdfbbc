import type { Database } from '../../db/database';
import { Filter, listPage, newestPerParent } from '../../db/list';
import type { Counted, ListOptions, ListParams, PageFor } from '../../core/pagination';

type Scope = { accountId: string; mode: string };

/** A saved card as stored: its gateway token, never the number. */
export interface PaymentMethodRow {
  id: string;
  mode: string;
  customer_id: string;
  gateway_id: string;
  gateway_token: string;
  brand: string;
  last4: string;
  exp_month: number;
  exp_year: number;
  fingerprint: string;
  created_at: unknown;
  updated_at: unknown;
}

const COLUMNS = 'id, mode, customer_id, gateway_id, gateway_token, brand, last4, exp_month, exp_year, fingerprint, created_at, updated_at';

/**
 * Where saved payment methods are read. `find` is on the charge path (a payment naming a saved
 * method or a customer's default): one bound statement each, scoped to the account and mode.
 */
export class PaymentMethodStore {
  constructor(private readonly db: Database) {}

  /** Several saved methods of one account and mode by id: one statement whatever their number. */
  async findMany(scope: Scope, ids: readonly string[]): Promise<PaymentMethodRow[]> {
    if (ids.length === 0) return [];
    return this.db.select<PaymentMethodRow>(
      `SELECT ${COLUMNS} FROM payment_methods WHERE ${this.db.inJsonList('id', '$1')} AND account_id = $2 AND mode = $3`,
      [JSON.stringify([...new Set(ids)]), scope.accountId, scope.mode],
    );
  }

  async find(scope: Scope, id: string): Promise<PaymentMethodRow | null> {
    const [row] = await this.db.select<PaymentMethodRow>(`SELECT ${COLUMNS} FROM payment_methods WHERE id = $1 AND account_id = $2 AND mode = $3`, [
      id, scope.accountId, scope.mode,
    ]);
    return row ?? null;
  }

  /** The id of the customer's default method (null when it has none, or there is no such customer here). */
  async defaultIdFor(scope: Scope, customerId: string): Promise<string | null> {
    const [row] = await this.db.select<{ default_payment_method_id: string | null }>(
      'SELECT default_payment_method_id FROM customers WHERE id = $1 AND account_id = $2 AND mode = $3',
      [customerId, scope.accountId, scope.mode],
    );
    return row?.default_payment_method_id ?? null;
  }

  /** A page of the customer's saved methods, each mapped by `toApi`. */
  async list<T, O extends ListOptions = Counted>(
    scope: Scope, customerId: string, input: ListParams<'createdAt'>, toApi: (row: PaymentMethodRow) => T, options?: O,
  ): Promise<PageFor<T, O>> {
    const filter = new Filter({ account_id: scope.accountId, mode: scope.mode, customer_id: customerId });
    return listPage(this.db, { table: 'payment_methods', columns: COLUMNS, filter, params: input, sortColumns: { createdAt: 'created_at' }, toApi }, options);
  }

  /** The newest methods of several customers (at most `limit` each) in one statement, each with its customer's default. */
  async forCustomers(scope: Scope, customerIds: readonly string[], limit: number): Promise<Array<PaymentMethodRow & { default_payment_method_id: string | null }>> {
    return newestPerParent(this.db, {
      columns: `${COLUMNS.split(', ').map((c) => `pm.${c}`).join(', ')}, c.default_payment_method_id`,
      from: 'payment_methods pm JOIN customers c ON c.id = pm.customer_id', prefix: 'pm.', parentColumn: 'customer_id',
      accountId: scope.accountId, mode: scope.mode, parentIds: customerIds, limit,
    });
  }

  /** Several saved methods by id in one statement, each with its customer's default (GraphQL's `node` and links). */
  async findManyWithDefault(scope: Scope, ids: readonly string[]): Promise<Array<PaymentMethodRow & { default_payment_method_id: string | null }>> {
    if (ids.length === 0) return [];
    return this.db.select(
      `SELECT ${COLUMNS.split(', ').map((c) => `pm.${c}`).join(', ')}, c.default_payment_method_id
         FROM payment_methods pm JOIN customers c ON c.id = pm.customer_id
        WHERE ${this.db.inJsonList('pm.id', '$1')} AND pm.account_id = $2 AND pm.mode = $3`,
      [JSON.stringify([...new Set(ids)]), scope.accountId, scope.mode],
    );
  }
}
